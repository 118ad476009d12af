/* event_types.h -- the types the event recorder
 * (event_recorder.h) shares with its correlator and its writer: the
 * reference to the object an event is about, and the Events APIs.
 * layer: events */
#ifndef KIN_EVENT_TYPES_H
#define KIN_EVENT_TYPES_H

/* The object an event is about (an ObjectReference). Strings are borrowed
 * for the call; NULL or "" means absent. kind and name are required;
 * namespace absent means a cluster-scoped object (its events go to
 * "default", as the API server requires). */
typedef struct {
  const char *api_version, *kind, *namespace_, *name, *uid, *resource_version, *field_path;
} kin_event_ref;

typedef enum {
  KIN_EVENTS_API_AUTO = 0, /* events.k8s.io/v1 when discovery lists it, else v1 */
  KIN_EVENTS_API_EVENTS_V1, /* always events.k8s.io/v1 */
  KIN_EVENTS_API_CORE_V1    /* always core v1 */
} kin_events_api;

#endif
