/* reflector_int.h -- internal: the reflector's state, shared by reflector.c (the
 * ListAndWatch loop, resourceVersion rules, backoff), reflector_list.c
 * (paged LIST) and reflector_watch.c (the watch stream: decoded on the IO
 * thread, applied on the reflector thread) (internal). */
#ifndef KIN_REFLECTOR_INT_H
#define KIN_REFLECTOR_INT_H

#include <pthread.h>
#include <stdlib.h>

#include "backoff.h"
#include "buf.h"
#include "hmap.h"
#include "kin.h"
#include "reflector.h"
#include "watch_decoder.h"

/* What a failed request or an ERROR event said, as the reflector needs it
 * to choose between relist, re-watch and backoff. */
typedef struct {
  int err;                 /* transport error (KIN_EIO, ...) or 0 */
  long code;               /* HTTP status or Status.code; 0: no answer */
  char reason[64];         /* Status.reason */
  char message[512];       /* Status.message or the transport error */
  int too_large;           /* cause ResourceVersionTooLarge / "Too large resource version" */
  int page_cap;            /* a LIST page passed max_response_bytes (its bytes, not a count) */
  int refused;             /* connection refused (for the log) */
  uint64_t retry_after_ns; /* Retry-After header or details.retryAfterSeconds */
} kin__rfl_status;

typedef struct kin__rfl_watch kin__rfl_watch;

/* Objects collected for a Replace (a LIST's pages, a WatchList's initial
 * events): owned references in arrival order. */
typedef struct {
  kin_obj **v;
  size_t len, cap;
} kin__rfl_objs;

/* Releases every reference and the array; o is left empty. */
static inline void kin__rfl_objs_clear(kin__rfl_objs *o) {
  for (size_t i = 0; i < o->len; i++) kin_obj_unref(o->v[i]);
  free(o->v);
  o->v = NULL;
  o->len = o->cap = 0;
}

/* Appends obj, taking over the caller's reference; 0, or KIN_ENOMEM with
 * o unchanged and obj still the caller's. */
static inline int kin__rfl_objs_push(kin__rfl_objs *o, kin_obj *obj) {
  if (o->len == o->cap) {
    size_t cap = o->cap ? o->cap * 2 : 256;
    kin_obj **v = realloc(o->v, cap * sizeof(*v));
    if (!v) return KIN_ENOMEM;
    o->v = v;
    o->cap = cap;
  }
  o->v[o->len++] = obj;
  return 0;
}

struct kin_reflector {
  /* Immutable after kin_reflector_new. */
  kin_client *client;
  char *path;            /* collection path, e.g. /api/v1/namespaces/x/pods */
  char *label_selector;  /* NULL: none */
  char *field_selector;
  char *name;            /* for logs */
  int metadata_only;
  int watch_list;
  int proto;     /* ask for protobuf first (kin_reflector_config.content_type) */
  long page_size;        /* as configured: 0 default, < 0 no paging */
  long max_pages;        /* pages of one LIST (KIN_REFLECTOR_MAX_PAGES) */
  uint64_t idle_ns;
  long read_idle_ms, ping_ms; /* the watch's health check (kin_client_stream_opts) */
  size_t queue_max;      /* bytes of queued watch events before a pause */
  kin_delta_fifo *fifo;  /* borrowed */
  kin_clock *clock;      /* borrowed */

  /* The reflector thread's alone. */
  kin_backoff_manager backoff;
  int paginated_result;  /* the first list at "0" came back paged */
  int whole_too_big;     /* a list served whole (the watch cache ignores limit at
                          * "0" and at an exact RV) passed max_response_bytes:
                          * list at "" in pages from then on */
  uint64_t rng;          /* for timeoutSeconds */
  pthread_t thread;
  /* Fired by kin_reflector_stop to end a LIST page in flight; it has its
   * own lock. */
  kin_io_canceler list_cancel;

  /* mu guards everything below, and the event queue of the watch in
   * flight; cond is broadcast when a watch queues events or ends, and on
   * stop. Never held while calling the FIFO or the IO engine. */
  pthread_mutex_t mu;
  pthread_cond_t cond;
  char *last_rv;         /* last synced resourceVersion, "" before the first list */
  size_t last_rv_cap;
  int rv_unavailable;    /* last_rv got 410 / too large: relist at "" */
  int stopping;
  int started, joined;
  kin__rfl_watch *watch; /* the watch in flight or NULL */
  kin_reflector_stats st;
  /* Sharding: the selector as last set (NULL: none), bumped shard_gen;
   * reshard asks the loop to list again at once (set with the selector). */
  char *shard;
  uint64_t shard_gen;
  int reshard;
  int shard_warned;      /* the "server ignored shardSelector" warning logged */

  /* The reflector thread's copy of the selector, taken at the start of each
   * LIST and WATCH (kin__rfl_shard_refresh): what it sends and filters by. */
  struct kin_shard_selector *shard_cur;
  char *shard_cur_str;
  uint64_t shard_cur_gen;
  int shard_info_seen;   /* a page of the LIST in progress had metadata.shardInfo */
  int reshard_round;     /* this round lists new ranges: unchanged objects stay quiet */
};

/* ---- reflector.c ---- */

/* Sets the last synced RV (caller holds mu); an allocation failure keeps
 * the old value, which is only older, so a resume replays more. */
void kin__rfl_set_rv_locked(kin_reflector *r, const char *rv);
/* A new copy of the last synced RV (the caller frees it), or NULL on OOM. */
char *kin__rfl_last_rv(kin_reflector *r);
/* Appends the collection path and the selectors (the caller adds more
 * parameters with kin__rfl_param). */
void kin__rfl_url(kin_reflector *r, kin__buf *b);
/* Appends "?name=value" or "&name=value", value percent-encoded. */
void kin__rfl_param(kin__buf *b, const char *name, const char *value);
/* Fills st from a Status document (a response body or an ERROR event's
 * object); fields absent from it are left as they are. */
void kin__rfl_parse_status(const char *js, size_t len, kin__rfl_status *st);
/* 410 Gone / reason Expired or Gone (client-go's isExpiredError). */
int kin__rfl_is_expired(const kin__rfl_status *st);
/* Waits d on the reflector's clock unless stop comes first; counts a
 * backoff. Returns 0, or KIN_ECANCELED when stopping. */
int kin__rfl_sleep(kin_reflector *r, uint64_t d);
int kin__rfl_stopping(kin_reflector *r);

/* Takes the current shard selector for the next request (reflector
 * thread). */
void kin__rfl_shard_refresh(kin_reflector *r);
/* 1 when o is inside the reflector thread's selector (or there is none);
 * 0 counts a dropped object. Reflector thread (or a LIST's body callback,
 * while the reflector thread waits for it). */
int kin__rfl_shard_keep(kin_reflector *r, const kin_obj *o);
/* 1 once kin_reflector_set_shard_selector asked for a re-list. */
int kin__rfl_reshard_pending(kin_reflector *r);
/* A LIST under a selector completed: shard_info says whether the server
 * filtered (metadata.shardInfo); logs once when it did not. url: the
 * request's path and query, for the log. Reflector thread. */
void kin__rfl_shard_listed(kin_reflector *r, int shard_info, const char *url);

/* ---- reflector_list.c ---- */

/* One LIST round (client-go's Reflector.list): pages through the
 * collection at the relist RV, retries at "" once when that RV is
 * unavailable, replaces the FIFO with the result and records its RV.
 * Returns 0, KIN_ECANCELED on stop, or the request error. */
int kin__rfl_list(kin_reflector *r);

/* ---- reflector_watch.c ---- */

/* Starts a watch from rv ("" or NULL: most recent); with initial, a
 * WatchList (sendInitialEvents) whose initial events replace the FIFO once
 * the initial-events-end bookmark arrives. *out is owned by the caller
 * (kin__rfl_watch_free after kin__rfl_watch_wait saw it end). Returns 0 or
 * the kin_client_stream error. */
int kin__rfl_watch_start(kin_reflector *r, const char *rv, int initial, kin__rfl_watch **out);

/* How a watch ended, for the loop in reflector.c. */
typedef enum {
  KIN__RFL_STOPPED = 0, /* stop requested */
  KIN__RFL_INITIAL,     /* WatchList: the initial state is in, the stream goes on */
  KIN__RFL_ENDED,       /* stream over (server timeout, drop, idle): watch again */
  KIN__RFL_LOST,        /* a malformed or truncated event: watch again from the last RV */
  KIN__RFL_SHORT,       /* ended within a second without any event: relist */
  KIN__RFL_RETRY,       /* 429, or no answer at all: back off, watch again */
  KIN__RFL_EXPIRED,     /* 410 / Expired: relist */
  KIN__RFL_UNAUTHORIZED,/* 401: refresh the credential */
  KIN__RFL_FAILED,      /* anything else: relist after a backoff */
  KIN__RFL_RESHARD      /* the shard selector changed: relist at once */
} kin__rfl_outcome;

/* Applies w's events to the FIFO as the IO thread queues them (so
 * transforms run on the calling reflector thread) until w ends,
 * cancelling it on stop or when no byte came for the idle timeout; with
 * until_initial it also returns once a WatchList's initial state has been
 * handed to the FIFO (the stream then stays open; later events wait in the
 * queue for the next call). Fills *st with what the server said when it
 * failed. */
kin__rfl_outcome kin__rfl_watch_wait(kin_reflector *r, kin__rfl_watch *w, int until_initial,
                                     kin__rfl_status *st);

/* Cancels w if it is still running, waits for its end and frees it. NULL
 * is a no-op. */
void kin__rfl_watch_free(kin_reflector *r, kin__rfl_watch *w);

#endif
