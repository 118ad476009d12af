/* controller_history.h -- "why did this run": a bounded per-key history of
 * a controller (kin_controller_history), answering for each request key
 * what enqueued it (an add, update, delete or resync seen by a For
 * handler, an owned object's event, a map function's result, a requeue,
 * a requeue_after, a retry after an error, a manual enqueue), the
 * predicates' verdicts (events they dropped are recorded too, under the
 * key the event would have enqueued), and each reconcile: its start (wall
 * time), duration, result and message, and the writes (mutating REST
 * calls: method, path, HTTP status) it made, with the message of a write
 * an admission webhook denied.
 *
 * Memory is capped. Entries have a fixed size (sizeof(kin_hist_entry),
 * 128 bytes; strings are truncated to fit). A key keeps its newest
 * max_entries entries (default 32) in a ring that starts at 4 entries and
 * doubles as it fills, so a key costs 128 bytes per ring slot plus about
 * 110 bytes of bookkeeping (its record, its copied key, its share of the
 * hash table): measured with kin_history_get_stats over 10,000 keys
 * "default/object-NNNNN", 620 bytes per key holding up to 4 entries and
 * 4,204 bytes per key with a full ring of 32 (malloc's own headers not
 * counted). At most max_keys keys (default 10,000) are kept: recording
 * for a new key when the history is full evicts the whole history of the
 * key recorded least recently. Worst case with the defaults: about 42 MB
 * per controller; kin_history_get_stats reports what is held.
 *
 * Thread-safety: every function may be called from any thread; one mutex
 * guards the whole history and each record is one append under it (no
 * allocation unless the key is new or its ring grows). */
#ifndef KIN_CONTROLLER_HISTORY_H
#define KIN_CONTROLLER_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#define KIN_HISTORY_DEFAULT_ENTRIES 32
#define KIN_HISTORY_DEFAULT_KEYS 10000

typedef enum {
  KIN_HIST_EVENT = 0, /* something asked for the key (cause), pred says what the
                         predicates said; an event they dropped enqueued nothing */
  KIN_HIST_RECONCILE, /* a finished reconcile (cause is its kin_result_kind) */
  KIN_HIST_WRITE,     /* a mutating REST call of the reconcile recorded before it */
  KIN_HIST_DENIAL     /* an admission webhook's denial of the WRITE before it:
                         text "<webhook>\t<message>", continued in the DENIAL
                         entries that follow it (kin_hist_denial) */
} kin_hist_type;

/* The most DENIAL entries one denial takes (its text is cut beyond). */
#define KIN_HIST_DENIAL_MAX 2

typedef enum {
  KIN_CAUSE_ADD = 0,
  KIN_CAUSE_UPDATE,
  KIN_CAUSE_DELETE,
  KIN_CAUSE_RESYNC,        /* an update whose old and new resourceVersion are equal */
  KIN_CAUSE_OWNER,         /* an event of an owned object (text names it) */
  KIN_CAUSE_MAP,           /* a map function's result for an object (text names it) */
  KIN_CAUSE_REQUEUE,       /* the reconcile asked for a rate-limited requeue */
  KIN_CAUSE_REQUEUE_AFTER, /* ... for a requeue after dur_ns */
  KIN_CAUSE_RETRY,         /* the reconcile failed; text is the error */
  KIN_CAUSE_MANUAL,        /* kin_controller_enqueue (ctl:enqueue) */
  KIN_CAUSE_HANDOVER       /* sharding: the key's range moved to or from this
                              replica (text says which); a request dequeued
                              after its range left is not reconciled */
} kin_hist_cause;

typedef enum { KIN_PRED_NONE = 0, KIN_PRED_PASSED, KIN_PRED_DROPPED } kin_hist_pred;

#define KIN_HIST_TEXT 100

typedef struct {
  uint64_t wall_ns;  /* CLOCK_REALTIME; for a reconcile, its start */
  uint64_t dur_ns;   /* RECONCILE: duration; REQUEUE_AFTER and RECONCILE with
                        that result: the delay */
  uint32_t seq;      /* RECONCILE, WRITE: the reconcile's number (1-based, per
                        controller) */
  int16_t worker;    /* RECONCILE: 0-based worker index */
  uint16_t code;     /* WRITE: HTTP status (0: no answer); RECONCILE: how many
                        writes it made (the ring keeps at most 8 of them) */
  uint8_t type;      /* kin_hist_type */
  uint8_t cause;     /* EVENT: kin_hist_cause; RECONCILE: kin_result_kind */
  uint8_t pred;      /* EVENT: kin_hist_pred */
  uint8_t truncated; /* text was cut */
  /* EVENT: "resourceVersion 41 -> 42; predicates: generation_changed
   * passed", "from ConfigMap default/child ..."; RECONCILE: the result's
   * message; WRITE: "PUT /apis/apps/v1/namespaces/default/deployments/web"
   * (no query string). NUL-terminated. */
  char text[KIN_HIST_TEXT];
} kin_hist_entry;

typedef struct kin_history kin_history;

/* Returns a new, empty history in *out keeping max_entries per key (<= 0:
 * the default; rounded up to a power of two, at least 4) for at most
 * max_keys keys (<= 0: the default). KIN_ENOMEM. */
int kin_history_new(int max_entries, int max_keys, kin_history **out);

/* Frees h and everything it holds; NULL is a no-op. */
void kin_history_free(kin_history *h);

/* Appends a copy of e under key (wall_ns set to now when 0). Evicts the
 * least recently recorded key when key is new and the history is full.
 * Returns 0, or KIN_ENOMEM (nothing recorded). h NULL: a no-op. */
int kin_history_record(kin_history *h, const char *key, const kin_hist_entry *e);

/* Appends n entries under key in one step (a reconcile and its writes), as
 * kin_history_record. */
int kin_history_record_n(kin_history *h, const char *key, const kin_hist_entry *e, size_t n);

/* Copies key's entries, oldest first (a reconcile, recorded when it ends,
 * is placed at its start with its writes and the requeue it caused right
 * after it), into a new array in *out (the caller
 * frees it; NULL when there are none) and their count in *n. Returns 0 or
 * KIN_ENOMEM. Reading does not refresh the key's place in the LRU order. */
int kin_history_get(kin_history *h, const char *key, kin_hist_entry **out, size_t *n);

/* Calls fn for every key held, most recently recorded first, under the
 * history's lock (fn must not call back into h); stops when fn returns
 * non-zero. */
void kin_history_each_key(kin_history *h, int (*fn)(void *ud, const char *key, size_t nentries),
                          void *ud);

typedef struct {
  size_t keys;        /* keys held */
  size_t entries;     /* entries held */
  size_t bytes;       /* memory held: rings, records, keys, hash slots */
  uint64_t evictions; /* keys evicted */
  int max_entries, max_keys;
} kin_history_stats;
void kin_history_get_stats(kin_history *h, kin_history_stats *st);

/* Formats the item starting at v[i] (of the n entries kin_history_get
 * returned) as text for people into buf (NUL-terminated, truncated to
 * cap) and returns the index of the next item: an event is one line,
 *   "12:00:01.234 enqueued: update (resourceVersion 41 -> 42; predicates:
 *    generation_changed passed)", "... dropped: ...", "... enqueued: retry
 *    after error: MSG", "... enqueued: requeue_after 30s";
 * a reconcile two, with the writes that follow it folded in,
 *   "12:00:01.240 reconcile #7 started (worker 1)\n12:00:01.243 reconcile
 *    #7 done in 3.1 ms: requeue_after 30s; writes: PUT /apis/... 200",
 * a denied write as "POST /apis/... 403 denied by admission webhook
 * \"X\": M".
 * A write whose reconcile the ring dropped formats as "" (skip it). Times
 * are local wall-clock times. */
size_t kin_hist_format(const kin_hist_entry *v, size_t n, size_t i, char *buf, size_t cap);

/* Fills out (room for max entries) with the DENIAL entries of message, a
 * failed write's error, when it is an admission webhook's denial
 * (kube-apiserver's "admission webhook \"X\" denied the request: M", or
 * "... denied the request without explanation"): the text "X\tM" split
 * over them in order, the last one's truncated flag set when it did not
 * fit, each with seq. Returns how many (0: not a denial, or max 0). */
size_t kin_hist_denial(const char *message, uint32_t seq, kin_hist_entry *out, size_t max);

/* Names for printing: "add", "update", ..., "manual"; "success", "error",
 * "terminal", "requeue", "requeue_after" for a kin_result_kind. */
const char *kin_hist_cause_name(int cause);
const char *kin_hist_result_name(int result_kind);

#endif
