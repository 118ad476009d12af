/* watch_decoder.h -- incremental decoder of a Kubernetes watch response body
 * (client-go's watch.StreamWatcher + the JSON framer, in one piece).
 *
 * The body is a stream of JSON objects {"type": ..., "object": {...}},
 * normally one per line, but the decoder assumes neither one event per
 * read nor a newline between events: a small state machine (in string /
 * escape / depth) finds the end of each top-level value, resumes across
 * feeds without rescanning, and buffers only the current partial event.
 *
 * Bad input never stops the stream: a malformed event, an oversized event
 * or bytes outside any event (an HTML error page) are reported through the
 * error callback and decoding continues with the next event. A compact
 * line broken off in the middle is detected when a raw newline appears
 * inside a string, or when a line starting with {"type" begins while the
 * previous event is still open; either way the broken event is reported
 * and the next one decoded.
 *
 * Not thread-safe: one decoder belongs to the thread feeding it (the IO
 * thread). */
#ifndef KIN_WATCH_DECODER_H
#define KIN_WATCH_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "kobj.h"

#define KIN_WATCH_DEFAULT_MAX_EVENT_SIZE ((size_t)64 << 20) /* 64 MiB */
#define KIN_WATCH_SNIPPET_MAX 200

typedef enum {
  KIN_WATCH_ADDED = 0,
  KIN_WATCH_MODIFIED,
  KIN_WATCH_DELETED,
  KIN_WATCH_BOOKMARK,
  KIN_WATCH_ERROR
} kin_watch_event_type;

/* One decoded event, valid during the callback only. */
typedef struct {
  kin_watch_event_type type;
  /* Borrowed: kin_obj_ref it to keep it. Parsed with kin_obj_parse for
   * ADDED/MODIFIED/DELETED (so it has metadata.name), kin_obj_parse_any for
   * BOOKMARK and ERROR. */
  kin_obj *obj;
  /* BOOKMARK: metadata.resourceVersion ("" when absent) and whether the
   * annotation k8s.io/initial-events-end is "true" (WatchList). */
  const char *resource_version;
  int initial_events_end;
  /* ERROR: the Status fields (0 / "" when absent). */
  int code;
  const char *reason;
  const char *message;
  /* 1-based position of the event in the stream, for logs. */
  uint64_t event_no;
  uint64_t line;
} kin_watch_event;

typedef enum {
  KIN_WATCH_ERR_MALFORMED = 0, /* bad JSON, unknown type, missing object or name */
  KIN_WATCH_ERR_TOO_LARGE,     /* event larger than the configured maximum */
  KIN_WATCH_ERR_GARBAGE,       /* bytes outside any event (e.g. an HTML page) */
  KIN_WATCH_ERR_TRUNCATED      /* the stream ended inside an event */
} kin_watch_error_kind;

/* One decoding problem, valid during the callback only. */
typedef struct {
  kin_watch_error_kind kind;
  const char *what;      /* static description of the problem */
  uint64_t event_no;     /* number of the bad event (GARBAGE: events before it) */
  uint64_t line;         /* line where the bad event or bytes start */
  const char *type;      /* the event's "type" when known, else NULL */
  /* The first bytes of the event / garbage, not NUL-terminated, for a
   * program to inspect: never log them (an event can hold a Secret's
   * data). */
  const char *snippet;
  size_t snippet_len;    /* <= KIN_WATCH_SNIPPET_MAX */
  uint64_t offset;       /* where the bad event / bytes start in the stream */
  /* The event's object when it could be read that far ("" otherwise):
   * its kind, "namespace/name" and metadata.resourceVersion. */
  const char *kind_name;
  const char *key;
  const char *resource_version;
} kin_watch_decode_error;

/* Writes where e happened into buf (always NUL-terminated), for a log
 * line: "event 3 (line 3, offset 412, type ADDED, Secret default/s,
 * resourceVersion 12)". It holds no byte of the event. */
void kin_watch_decode_error_where(const kin_watch_decode_error *e, char *buf, size_t n);

/* Returns 0 to go on; anything else stops the decoder (feed returns
 * KIN_ECANCELED and the decoder accepts no more bytes). */
typedef int (*kin_watch_event_cb)(void *ud, const kin_watch_event *ev);
typedef void (*kin_watch_error_cb)(void *ud, const kin_watch_decode_error *err);

typedef struct kin_watch_decoder kin_watch_decoder;

/* Creates a decoder in *out (the caller frees it with
 * kin_watch_decoder_free). on_error may be NULL: problems are then logged
 * at WARN, naming event, line, offset, the reason and, when known, the
 * object's kind, key and resourceVersion, never its bytes. Returns KIN_EINVAL without on_event, KIN_ENOMEM. */
int kin_watch_decoder_new(kin_watch_event_cb on_event, kin_watch_error_cb on_error, void *ud,
                          kin_watch_decoder **out);
void kin_watch_decoder_free(kin_watch_decoder *d);

/* Events larger than max bytes are reported as TOO_LARGE and skipped
 * (default KIN_WATCH_DEFAULT_MAX_EVENT_SIZE). */
void kin_watch_decoder_set_max_event_size(kin_watch_decoder *d, size_t max);

/* Decodes n more bytes (copied as needed; the caller keeps them), calling
 * on_event once per complete event. Returns 0; KIN_ECANCELED when a
 * callback stopped the decoder; KIN_ENOMEM when an event could not be
 * decoded for lack of memory (it is reported, the rest of the bytes are
 * still decoded, and the caller should treat the watch as broken). */
int kin_watch_decoder_feed(kin_watch_decoder *d, const char *bytes, size_t n);

/* Decodes e[0..n), one whole event the caller has framed itself (the JSON
 * line of a protobuf watch frame), as kin_watch_decoder_feed would once it
 * found that event's end, without scanning the bytes for it: the same
 * callbacks, counts and returns. The decoder must hold no partial event
 * from feed. An event over the maximum event size is reported TOO_LARGE
 * and skipped. Not thread-safe, as feed. */
int kin_watch_decoder_event(kin_watch_decoder *d, const char *e, size_t n);

/* Ends the stream: a partial event still buffered is reported as TRUNCATED
 * and KIN_EINVAL returned; pending garbage is reported. The decoder is then
 * reset and may decode a new stream. Returns 0, KIN_EINVAL, KIN_ECANCELED. */
int kin_watch_decoder_finish(kin_watch_decoder *d);

/* Number of events delivered to on_event so far. */
uint64_t kin_watch_decoder_events(const kin_watch_decoder *d);

#endif
