/* event_correlator.h -- internal: client-go's EventCorrelator
 * (tools/record/events_cache.go) as a pure unit: no REST, no clock of its
 * own (the caller passes the event's wall-clock time), so tests drive it
 * with any times.
 *
 * For each event, in client-go's order:
 *   1. aggregator: events alike but for the message (same source, object,
 *      type, reason) are counted per 10 minutes (reset when the last one is
 *      older); from the 10th distinct message on, the event becomes
 *      "(combined from similar events): <message>", keyed without the
 *      message so that later ones count into it;
 *   2. logger (observer): an event seen before under its key (identical:
 *      source, object, type, reason, message; or the aggregate) repeats
 *      the earlier Event: same name, first time, count + 1;
 *   3. spam filter: a token bucket per source and object (burst 25, one
 *      token per 5 minutes); no token: skip (the count in 2 still grew, as
 *      in client-go).
 * Each cache keeps at most 4096 keys, the least recently used evicted.
 *
 * Not thread-safe: one owner (the recorder's writer thread). */
#ifndef KIN_EVENT_CORRELATOR_H
#define KIN_EVENT_CORRELATOR_H

#include <stdint.h>

#include "event_types.h"

typedef struct kin__event_correlator kin__event_correlator;

typedef struct {
  unsigned max_similar;     /* 0: 10 (defaultAggregateMaxEvents) */
  uint64_t interval_ns;     /* 0: 600 s (defaultAggregateIntervalInSeconds) */
  unsigned spam_burst;      /* 0: 25 (defaultSpamBurst) */
  uint64_t spam_refill_ns;  /* one token per; 0: 300 s (defaultSpamQPS 1/300) */
  unsigned max_entries;     /* per cache; 0: 4096 (maxLruCacheEntries) */
} kin__event_correlator_opts;

/* One event as recorded (borrowed strings). */
typedef struct {
  const char *component, *host; /* source */
  const kin_event_ref *ref;
  const char *type, *reason, *message;
} kin__event_in;

typedef struct {
  int skip;        /* the spam filter dropped it: write nothing */
  int repeat;      /* 1: a repeat of the Event named name (patch count/series);
                      0: a new Event named name (create) */
  char *name;      /* the Event's metadata.name (malloc'd; the caller frees) */
  char *message;   /* the message to write (malloc'd; the caller frees) */
  unsigned count;  /* occurrences so far, 1 for a new Event */
  uint64_t first_ns, last_ns; /* wall-clock ns of the first and this one */
} kin__event_out;

/* Returns a new correlator (opts may be NULL) or NULL when out of memory. */
kin__event_correlator *kin__event_correlator_new(const kin__event_correlator_opts *opts);
void kin__event_correlator_free(kin__event_correlator *c);

/* Correlates ev observed at now_ns (wall clock, ns since the epoch).
 * Fills *out (free with kin__event_out_free; on skip name and message are
 * NULL). Returns 0 or KIN_ENOMEM (*out then empty). */
int kin__event_correlate(kin__event_correlator *c, const kin__event_in *ev, uint64_t now_ns,
                         kin__event_out *out);

void kin__event_out_free(kin__event_out *o);

#endif
