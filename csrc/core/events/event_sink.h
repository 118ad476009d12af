/* event_sink.h -- internal: writing one correlated event to the API
 * server (the writer thread's REST part, client-go's EventSink and
 * recordEvent): create, or patch the count / series of a repeat (a patch
 * answered 404 creates it again), as events.k8s.io/v1 or core v1, and the
 * discovery check that picks between them. */
#ifndef KIN_EVENT_SINK_H
#define KIN_EVENT_SINK_H

#include <stdint.h>

#include "event_correlator.h"
#include "event_types.h"
#include "rest_client.h"

/* One queued event; every string is owned by the item. */
typedef struct kin__event_item {
  kin_event_ref ref;
  char *component, *host, *type, *reason, *action, *message;
  uint64_t wall_ns; /* when it was recorded (CLOCK_REALTIME) */
  uint64_t epoch;   /* the recorder's fence epoch when it was recorded */
  struct kin__event_item *next;
} kin__event_item;

void kin__event_item_free(kin__event_item *it);

/* Asks discovery (GET /apis/events.k8s.io/v1) which API to write: returns
 * KIN_EVENTS_API_EVENTS_V1 when the server lists events.k8s.io/v1 events,
 * KIN_EVENTS_API_CORE_V1 when it does not (404 or no such resource), or
 * the request's negative error (transport, KIN_ECANCELED through cancel,
 * which may be NULL). */
int kin__event_sink_detect(kin_client *c, kin_io_canceler *cancel, long timeout_ms);

/* Writes it as correlated into o with api (not AUTO) under ctx (its
 * deadline, canceler and leadership fence: KIN_EFENCED once the epoch the
 * event was recorded in ended). Returns 0, or the verb's error with *res
 * holding the answer (the caller frees res in every case). */
int kin__event_sink_write(kin_client *c, const kin_call_ctx *ctx, int api,
                          const kin__event_item *it, const kin__event_out *o, kin_result *res);

/* Formats wall-clock ns as RFC 3339 with microseconds (MicroTime,
 * micro != 0) or seconds (Time) into buf (at least 32 bytes). */
void kin__event_time(uint64_t wall_ns, int micro, char *buf, size_t n);

#endif
