/* event_recorder.h -- Kubernetes Events for controllers:
 * client-go's event broadcaster and recorder (tools/events for
 * events.k8s.io/v1, tools/record for core v1) in one object.
 *
 * kin_event_record only copies the event into a bounded queue and returns;
 * the recorder's own writer thread (never the IO thread) runs client-go's
 * correlator on it (identical events counted into one, similar events
 * aggregated, a spam filter per source and object: see
 * csrc/core/events/event_correlator.h) and writes it with the kin_client:
 * an events.k8s.io/v1 Event (reportingController, reportingInstance,
 * action, regarding, note, eventTime, a series patch for repeats) when
 * discovery lists events.k8s.io/v1 events, else a core v1 Event
 * (involvedObject, source, first/lastTimestamp, count, a patch of count for
 * repeats). When the queue is full the event is dropped and logged (at most
 * one line per 10 s, naming the object and reason).
 *
 * Thread-safety: every function may be called from any thread but the IO
 * thread; kin_event_recorder_free only once nothing else calls. Locks:
 * kin_event_recorder.mu guards the queue, the stop flag, the stats and the
 * drop-log time; the correlator and the chosen API belong to the writer
 * thread alone. No lock is held during a REST call. */
#ifndef KIN_EVENT_RECORDER_H
#define KIN_EVENT_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "event_types.h"
#include "rest_client.h"

typedef struct kin_event_recorder kin_event_recorder;

typedef struct {
  size_t queue_size;       /* events waiting for the writer; 0: 1000 (client-go's
                              maxQueuedEvents) */
  const char *instance;    /* reportingInstance / source.host; NULL: the host name */
  kin_events_api api;
  long request_timeout_ms; /* per REST call; 0: 10 s */
  int max_tries;           /* per event on transport errors; 0: 12 (client-go) */
  long retry_ms;           /* between tries; 0: 10 s (client-go) */
  /* The leadership fence (call_ctx.h; borrowed, must outlive the recorder;
   * NULL: not fenced): an event carries the epoch open when it was
   * recorded and is not written (counted failed, logged "write refused:
   * leadership ended") once that epoch ended, so a deposed leader's
   * events, and those recorded while not leading, never reach the server. */
  const kin_fence *fence;
} kin_event_recorder_opts;

typedef struct {
  uint64_t queued;        /* accepted by kin_event_record */
  uint64_t dropped;       /* refused: the queue was full (or the recorder stopping) */
  uint64_t created;       /* Events created */
  uint64_t patched;       /* repeats written as a count / series patch */
  uint64_t spam_filtered; /* dropped by the spam filter */
  uint64_t failed;        /* given up (server refused, tries used up) */
  int api;                /* the API in use: KIN_EVENTS_API_EVENTS_V1, _CORE_V1, or
                             KIN_EVENTS_API_AUTO before the first write */
} kin_event_recorder_stats;

/* Creates a recorder writing through c (borrowed: it must outlive the
 * recorder) and starts its writer thread. opts may be NULL. Returns 0 and
 * *out, KIN_ENOMEM, or a negated errno when the thread cannot start. */
int kin_event_recorder_new(kin_client *c, const kin_event_recorder_opts *opts,
                           kin_event_recorder **out);

/* Stops the writer: events still queued are written for up to flush_ms
 * (no retries); then the request in flight is cancelled and the rest
 * dropped (counted, not logged); then frees r. Returns after at most about
 * flush_ms. NULL is a no-op. */
void kin_event_recorder_free(kin_event_recorder *r, long flush_ms);

/* Queues one event of component (the reportingController / source
 * component) about obj: type "Normal" or "Warning", reason (CamelCase),
 * action (NULL or "": the reason) and message (NULL: ""). Copies
 * everything; never blocks on the network. Returns 0 when queued,
 * KIN_EINVAL for a bad type or a reference without kind or name (or an
 * empty component or reason), KIN_EBUSY when the queue is full or the
 * recorder stopping (the event is dropped and logged, rate-limited), or
 * KIN_ENOMEM. */
int kin_event_record(kin_event_recorder *r, const char *component, const kin_event_ref *obj,
                     const char *type, const char *reason, const char *action,
                     const char *message);

/* Waits up to timeout_ms of real time until the queue is empty and the
 * writer idle. Returns 0 or KIN_ETIMEDOUT. */
int kin_event_recorder_flush(kin_event_recorder *r, long timeout_ms);

/* A snapshot of the counters. */
void kin_event_recorder_get_stats(kin_event_recorder *r, kin_event_recorder_stats *out);

#endif
