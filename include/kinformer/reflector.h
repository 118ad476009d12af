/* reflector.h -- client-go's Reflector (tools/cache/reflector.go): keeps a
 * DeltaFIFO equal to the server's state of one resource by LIST (paged)
 * then WATCH from the list's resourceVersion, relisting when the watch
 * cannot resume.
 *
 * Behaviour (see ../shared/conformance/client-go.md, each pinned by
 * spec/c/test_reflector*.c):
 * - first LIST at resourceVersion "0"; later relists at the last synced RV,
 *   or at "" once that RV is known unavailable (410 Gone / Expired / "too
 *   large resource version"); paging with limit (500) and continue; a 410 on
 *   a later page falls back to one full list at the original RV;
 * - WATCH from the last RV with allowWatchBookmarks and timeoutSeconds
 *   random in [300, 600); a clean end of the stream re-watches from the
 *   last RV without relisting, unless it lasted under a second without any
 *   event (client-go's "very short watch": relist after a backoff); an
 *   ERROR event 410 / expired relists; 429 (or a 5xx with Retry-After) and
 *   connection refused back off, honouring Retry-After, and re-watch (so
 *   does any other failure before a response, where client-go relists);
 * - BOOKMARK only advances the RV; WatchList (sendInitialEvents) collects
 *   the initial events until the bookmark annotated
 *   k8s.io/initial-events-end and replaces the FIFO with them; its failure
 *   other than expiry falls back to LIST;
 * - backoff between rounds 800 ms doubling to 30 s, jitter 1.0, reset after
 *   2 minutes without failure; Retry-After honoured;
 * - beyond client-go: a watch that delivers no byte for idle_timeout (5
 *   minutes by default; servers bookmark about once a minute) is treated as
 *   dead and re-established from the last RV;
 * - decoding problems are logged with their position: bytes between
 *   events (an HTML error page from a proxy) are skipped; after a malformed,
 *   oversized or truncated event nothing more of that stream is applied and
 *   the watch is re-established from the last RV delivered, so the event
 *   comes again and nothing is lost (with a backoff when the same place
 *   fails twice in a row);
 * - LIST items without kind/apiVersion (typed lists) get the list's, as
 *   the dynamic client's UnstructuredList does.
 *
 * Threads: one reflector thread runs ListAndWatch. Watch bytes are decoded
 * on the IO thread, which only queues the events (one wake-up per received
 * chunk); the reflector thread applies them to the FIFO (so transforms run
 * there, never on the IO thread), advances the RV and counts them. When
 * more than queue_max_bytes of events wait, the transfer is paused
 * (KIN_IO_PAUSE) until the reflector thread takes them. Locks:
 * kin_reflector.mu guards the last synced RV, the state, the stop flag,
 * the current watch handle, the event queue and the stats; the FIFO has
 * its own lock and is never called with mu held. */
#ifndef KIN_REFLECTOR_H
#define KIN_REFLECTOR_H

#include <stdint.h>

#include "clock.h"
#include "delta_fifo.h"
#include "rest_client.h"

#define KIN_REFLECTOR_PAGE_SIZE 500
#define KIN_REFLECTOR_MIN_WATCH_TIMEOUT_S 300
#define KIN_REFLECTOR_BACKOFF_INITIAL_NS (800 * KIN_NSEC_PER_MSEC)
#define KIN_REFLECTOR_BACKOFF_MAX_NS (30 * KIN_NSEC_PER_SEC)
#define KIN_REFLECTOR_BACKOFF_RESET_NS (120 * KIN_NSEC_PER_SEC)
#define KIN_REFLECTOR_IDLE_TIMEOUT_NS (300 * KIN_NSEC_PER_SEC)
#define KIN_REFLECTOR_QUEUE_MAX_BYTES ((size_t)64 << 20) /* 64 MiB of events */
#define KIN_REFLECTOR_MAX_PAGES 20000 /* pages of one LIST (10M objects at 500) */

typedef struct kin_reflector kin_reflector;

/* The encoding a reflector asks for in LIST, WATCH and WatchList (as
 * client-go's typed clients: protobuf for the built-in types, JSON for the
 * rest). AUTO asks for `application/vnd.kubernetes.protobuf` (with
 * application/json as the fallback in the same Accept header) when the
 * resource's group-version is one of the built-in ones the core's protobuf
 * schema knows, and for JSON otherwise (CRDs, aggregated APIs); the
 * environment variable KIN_CONTENT_TYPE=json|protobuf changes what AUTO
 * means for the whole process (the test tier runs every test in both).
 * JSON asks for JSON only. PROTOBUF asks for protobuf first whatever the
 * group (a server that does not serve it answers JSON, which is read).
 * metadata_only always asks for JSON (PartialObjectMetadata). Whatever
 * comes, the cache holds the object as JSON (kobj.h). */
typedef enum { KIN_CONTENT_AUTO = 0, KIN_CONTENT_JSON = 1, KIN_CONTENT_PROTOBUF = 2 } kin_content_type;

typedef struct {
  kin_client *client;        /* borrowed; must outlive the reflector */
  kin_resource resource;     /* strings borrowed (e.g. from the client's discovery) */
  const char *namespace;     /* NULL or "": every namespace */
  const char *label_selector;
  const char *field_selector;
  /* A shard selector (shard_selector.h; NULL or "": none): sent as
   * ?shardSelector= on every LIST and WATCH, and applied on the client
   * too (objects outside it never reach the FIFO), so the cache is right
   * whether or not the server honours it (gate ShardedListAndWatch).
   * kin_reflector_new fails with KIN_EINVAL on a malformed one. */
  const char *shard_selector;
  int metadata_only;         /* ask for PartialObjectMetadata(List) */
  int watch_list;            /* try WatchList (sendInitialEvents) before LIST */
  int content_type;          /* kin_content_type; 0: AUTO */
  long page_size;            /* 0: KIN_REFLECTOR_PAGE_SIZE; negative: no paging */
  /* Bounds on what one LIST may bring (each breach fails the LIST with
   * KIN_ETOOBIG, logged once with the URL, the cap and what came; the
   * reflector then backs off and lists again): the client's
   * max_response_bytes caps each page's body and, for the items parsed
   * from it, their bytes plus a fixed charge per item (so millions of tiny
   * items cannot fill memory); a page may hold at most the limit asked for,
   * except the first page at resourceVersion "0", which kube-apiserver's
   * watch cache serves whole whatever the limit; a continue token seen
   * before in the same LIST, or more than max_pages pages, ends it.
   * max_pages 0: KIN_REFLECTOR_MAX_PAGES. */
  long max_pages;
  uint64_t idle_timeout_ns;  /* 0: KIN_REFLECTOR_IDLE_TIMEOUT_NS */
  /* The HTTP/2 connection health check while the watch runs
   * (kin_client_stream_opts, io_engine.h): the watch's connection is
   * probed after read_idle_ms without a byte, and closed when the probe
   * gets none within ping_timeout_ms, or sooner when another request on it
   * asks for less. 0: the engine's; read_idle_ms negative: no probe for
   * this watch's sake. */
  long read_idle_ms;
  long ping_timeout_ms;
  uint64_t backoff_initial_ns; /* 0: the defaults above (tests shorten them) */
  uint64_t backoff_max_ns;
  /* Decoded watch events (bytes of their JSON) that may wait for the
   * reflector thread before the transfer is paused; 0:
   * KIN_REFLECTOR_QUEUE_MAX_BYTES. */
  size_t queue_max_bytes;
  kin_delta_fifo *fifo;      /* borrowed: the store the reflector fills */
  kin_clock *clock;          /* NULL: real clock */
  const char *name;          /* for logs, e.g. "v1/pods" */
} kin_reflector_config;

/* Creates a stopped reflector (strings of cfg are copied). Returns 0,
 * KIN_EINVAL (no client, resource or fifo) or KIN_ENOMEM. */
int kin_reflector_new(const kin_reflector_config *cfg, kin_reflector **out);

/* Starts the reflector thread. Returns 0 or KIN_EBUSY when already run. */
int kin_reflector_run(kin_reflector *r);

/* Cancels the watch in flight (a LIST page in flight is waited for: the
 * rest client has no cancellation), stops the thread and joins it.
 * Idempotent; the reflector cannot be run again. */
void kin_reflector_stop(kin_reflector *r);

/* Stops and frees. NULL is a no-op. */
void kin_reflector_free(kin_reflector *r);

/* Copies the last synced resourceVersion ("" before the first list) into
 * buf (truncated to n). */
void kin_reflector_last_sync_rv(kin_reflector *r, char *buf, size_t n);

/* Counters, for tests, logs and the CLI's progress line. */
typedef struct {
  uint64_t lists;           /* LIST rounds started (pages not counted) */
  uint64_t pages;           /* LIST pages fetched */
  uint64_t relists_expired; /* relists caused by 410 / too large RV */
  uint64_t watches;         /* WATCH requests started */
  uint64_t watch_events;    /* ADDED/MODIFIED/DELETED applied */
  uint64_t bookmarks;
  uint64_t decode_errors;   /* malformed / truncated / garbage reported */
  uint64_t idle_timeouts;   /* watches dropped as stalled */
  uint64_t backoffs;        /* waits before a retry */
  uint64_t last_backoff_ns; /* length of the latest of those waits */
  uint64_t watch_pauses;    /* watch transfers paused: too many events queued */
  uint64_t listed_items;    /* items seen by the LIST in progress (progress line) */
  uint64_t expected_items;  /* listed_items + the last page's remainingItemCount
                               (the whole list once its last page came); 0: unknown */
  int synced;               /* the first list (or WatchList) completed */
  int watch_list_used;      /* the initial state came from a WatchList */
  int content_type_used;    /* KIN_CONTENT_JSON or _PROTOBUF: what the last
                               LIST or watch response was (0: none yet) */
  /* Sharding: -1 no selector or no list with one yet; 1 the last list
   * came back with metadata.shardInfo (the server filtered); 0 without
   * (the server ignored ?shardSelector=: the client filters, memory is not
   * split) */
  int shard_server_filtered;
  uint64_t shard_client_dropped; /* objects the client-side filter dropped */
  uint64_t shard_relists;        /* re-lists after kin_reflector_set_shard_selector */
} kin_reflector_stats;

/* Changes the shard selector (NULL or "": none) of a reflector, new or
 * running: a running one ends its watch (or the LIST in flight) and lists
 * again with it, a Replace that deletes from the FIFO what left the
 * ranges and adds what entered. Returns 0, or KIN_EINVAL with the
 * parser's message in err (the selector unchanged), KIN_ENOMEM. Any
 * thread. */
int kin_reflector_set_shard_selector(kin_reflector *r, const char *selector, char *err,
                                     size_t errlen);

/* The current shard selector into buf like snprintf ("" when none);
 * returns its length. Any thread. */
size_t kin_reflector_shard_selector(kin_reflector *r, char *buf, size_t cap);

void kin_reflector_get_stats(kin_reflector *r, kin_reflector_stats *st);

#endif
