/* reflector_watch.c -- one watch of the reflector: the request, the
 * stream decoded on the IO thread, its events applied to the FIFO on the
 * reflector thread, and how it ended (client-go's Reflector.watch /
 * handleAnyWatch).
 *
 * The IO thread only decodes: the events of each received chunk are
 * appended to the watch's queue (under r->mu, one broadcast of r->cond per
 * chunk), and nothing that can block (the FIFO lock, a transform, a Lua
 * state) runs there. The reflector thread, waiting in kin__rfl_watch_wait,
 * takes the whole queue at once, applies the events in order and advances
 * the last RV after each, so a watch that breaks at any byte resumes
 * exactly after the last event applied. When queue_max bytes of events
 * wait, on_data refuses the next chunk with KIN_IO_PAUSE (curl keeps it and
 * stops reading that transfer) and the reflector thread resumes the
 * transfer when it takes the queue; a paused watch is not idle. Once an
 * event could not be read (malformed, too large, cut off) nothing after it
 * is queued: the stream is abandoned and re-established from the last RV,
 * so the skipped event is sent again.
 *
 * A response that is not a watch stream (a Status for 410/429/..., an
 * HTML page from a proxy) is recognised by its first bytes, before any of
 * it reaches the decoder, and kept to be read as a Status at the end.
 *
 * WatchList: the initial events are collected (as client-go's temporary
 * store: a key's last state, none for a deleted one) until the bookmark
 * annotated k8s.io/initial-events-end, which replaces the FIFO with them
 * (on the reflector thread, in queue order, so no later event can
 * overtake the Replace); the stream then goes on as an ordinary watch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "delta_fifo_int.h"
#include "log.h"
#include "pb_json.h"
#include "reflector_int.h"

#define LOG "reflector"

#define WATCH_ACCEPT_METADATA \
  "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
/* A body this long that does not start like an event is a stream anyway. */
#define SNIFF_MAX (64 * 1024)

enum { SNIFF = 0, STREAM, BODY, PROTO };

/* client-go's typed clients' Accept: protobuf, else JSON */
#define WATCH_ACCEPT_PROTOBUF "application/vnd.kubernetes.protobuf,application/json"
/* A protobuf frame longer than this (and than the client's response cap)
 * is taken for garbage. */
#define PROTO_FRAME_MAX (64u << 20)

/* One decoded event waiting for the reflector thread. */
typedef struct rfl_ev {
  struct rfl_ev *next;
  kin_watch_event_type type; /* ADDED, MODIFIED, DELETED or BOOKMARK */
  int initial_events_end;    /* BOOKMARK: annotated k8s.io/initial-events-end */
  kin_obj *obj;              /* owned reference */
} rfl_ev;

struct kin__rfl_watch {
  kin_reflector *r;
  kin_io_handle *h; /* the reflector thread's */

  /* The IO thread's until done is published under r->mu. */
  kin_watch_decoder *dec;
  int mode;          /* SNIFF, STREAM, BODY or PROTO (length-prefixed frames) */
  kin__buf pbf;      /* PROTO: bytes of frames not yet whole */
  kin__buf pbline;   /* PROTO: a frame's JSON watch line */
  uint64_t frames;   /* PROTO: frames read */
  kin__buf head;     /* bytes not yet known to be a stream / the error body */
  int abort;         /* queue nothing more: the stream is given up */
  int lost;          /* an event could not be read */
  int error_event;   /* an ERROR event ended the stream; st holds it */
  long http;         /* HTTP status, 0 when no response came */
  kin__rfl_status st;
  rfl_ev *pend, *pend_tail; /* decoded from the current chunk, not yet queued */
  size_t pend_bytes;
  int full;          /* the queue was full after the last chunk */

  /* The reflector thread's. */
  int initial;       /* WatchList: collecting the initial events */
  /* The initial events' objects (owned references, prepared): in arrival
   * order in tv while none was DELETED (a key twice is settled by the
   * Replace), in temp from the first DELETED on (tv is then empty). The
   * order keeps the Replace reading the objects as they were allocated,
   * and no map is built for what kube-apiserver sends: ADDED only. */
  kin__rfl_objs tv;
  int temp_map;      /* temp holds them */
  kin__hmap temp;    /* key -> kin_obj; borrows the object's key */
  int rfl_abort;     /* apply nothing more (the transfer is cut) */
  int rfl_lost;      /* an event could not be applied: resume from the last RV */

  /* Guarded by r->mu. */
  int done, initial_done, cancelled, idle;
  int resharded; /* cancelled because the shard selector changed */
  int cut;           /* given up by the reflector thread: on_data aborts */
  int paused;        /* on_data returned KIN_IO_PAUSE; not yet resumed */
  rfl_ev *q, *q_tail; /* decoded events, oldest first, owned */
  size_t q_bytes;    /* their JSON bytes (compared with r->queue_max) */
  uint64_t events, started_ns, last_byte_ns;
};

static void ev_free_list(rfl_ev *e) {
  while (e) {
    rfl_ev *next = e->next;
    kin_obj_unref(e->obj);
    free(e);
    e = next;
  }
}

/* ---- reflector thread: applying queued events ---------------------------- */

/* Moves the collected objects from tv into temp (a key given twice keeps
 * its later object). Returns 0 or KIN_ENOMEM (what was not moved stays in
 * tv, and temp_clear releases both). */
static int temp_to_map(kin__rfl_watch *w) {
  kin__rfl_objs *tv = &w->tv;
  int rc = kin__hmap_reserve(&w->temp, tv->len);
  if (rc < 0) return rc;
  for (size_t i = 0; i < tv->len; i++) {
    void *old = NULL;
    rc = kin__hmap_put(&w->temp, kin_obj_key(tv->v[i]), tv->v[i], &old);
    if (rc < 0) {
      memmove(tv->v, tv->v + i, (tv->len - i) * sizeof(*tv->v));
      tv->len -= i;
      return rc;
    }
    if (rc == 0) kin_obj_unref(old);
  }
  tv->len = 0; /* temp holds the references now */
  kin__rfl_objs_clear(tv);
  w->temp_map = 1;
  return 0;
}

static int temp_apply(kin__rfl_watch *w, const rfl_ev *ev) {
  void *old = NULL;
  int rc;
  if (ev->type == KIN_WATCH_DELETED) {
    if (!w->temp_map && (rc = temp_to_map(w)) < 0) return rc;
    if (kin__hmap_del(&w->temp, kin_obj_key(ev->obj), &old) == 1) kin_obj_unref(old);
    return 0;
  }
  /* Prepared now (delta_fifo_int.h): an unchanged object is not held
   * twice until the initial-events-end bookmark. */
  kin_obj *obj = kin_obj_ref(ev->obj);
  rc = kin__delta_fifo_prepare(w->r->fifo, &obj, 1);
  if (rc < 0) {
    kin_log(KIN_LOG_WARN, LOG, "%s: unable to sync watch-list result: %s", w->r->name,
            kin_strerror(rc));
    kin_obj_unref(obj);
    return rc;
  }
  if (!w->temp_map) {
    rc = kin__rfl_objs_push(&w->tv, obj);
    if (rc < 0) kin_obj_unref(obj);
    return rc;
  }
  rc = kin__hmap_put(&w->temp, kin_obj_key(obj), obj, &old); /* temp borrows obj's key */
  if (rc < 0) {
    kin_obj_unref(obj);
    return rc;
  }
  if (rc == 0) kin_obj_unref(old);
  return 0;
}

static void temp_clear(kin__rfl_watch *w) {
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&w->temp, &pos))) kin_obj_unref(e->val);
  kin__hmap_free(&w->temp);
  kin__hmap_init_borrowed(&w->temp);
  kin__rfl_objs_clear(&w->tv);
  w->temp_map = 0;
}

/* The initial-events-end bookmark: the collected state replaces the FIFO
 * and the stream becomes an ordinary watch. Returns 0 to go on, 1 when the
 * Replace failed (the stream is given up). */
static int initial_events_end(kin__rfl_watch *w, const char *rv) {
  kin_reflector *r = w->r;
  int rc = KIN_ENOMEM;
  if (!w->temp_map) {
    rc = kin__delta_fifo_replace_collected(r->fifo, w->tv.v, w->tv.len, rv);
  } else {
    size_t n = kin__hmap_len(&w->temp), i = 0, pos = 0;
    kin_obj **v = malloc((n ? n : 1) * sizeof(*v));
    if (v) {
      kin__hmap_entry *e;
      while ((e = kin__hmap_next(&w->temp, &pos))) v[i++] = e->val;
      rc = kin__delta_fifo_replace_prepared(r->fifo, v, n, rv);
      free(v);
    }
  }
  temp_clear(w);
  w->initial = 0;
  if (rc) {
    kin_log(KIN_LOG_WARN, LOG, "%s: unable to sync watch-list result: %s", r->name,
            kin_strerror(rc));
    w->rfl_abort = 1;
    return 1;
  }
  pthread_mutex_lock(&r->mu);
  kin__rfl_set_rv_locked(r, rv);
  r->rv_unavailable = 0;
  r->st.synced = 1;
  r->st.watch_list_used = 1;
  w->initial_done = 1;
  w->events++;
  pthread_cond_broadcast(&r->cond);
  pthread_mutex_unlock(&r->mu);
  return 0;
}

/* Applies one queued event to the FIFO (or, during a WatchList's initial
 * events, to temp) and advances the RV after it. Returns 0 to go on, 1
 * when the stream must be given up (w->rfl_abort is then set). */
static int apply_event(kin__rfl_watch *w, const rfl_ev *ev) {
  kin_reflector *r = w->r;
  const char *rv = kin_obj_resource_version(ev->obj);
  int rc = 0;
  switch (ev->type) {
  case KIN_WATCH_ADDED:
  case KIN_WATCH_MODIFIED:
  case KIN_WATCH_DELETED:
    /* outside this replica's ranges (a server that ignored shardSelector):
     * never cached; the RV still advances below */
    if (!kin__rfl_shard_keep(r, ev->obj)) break;
    if (w->initial) {
      if (temp_apply(w, ev)) {
        w->rfl_abort = w->rfl_lost = 1;
        return 1;
      }
      break;
    }
    rc = ev->type == KIN_WATCH_ADDED      ? kin_delta_fifo_add(r->fifo, ev->obj)
         : ev->type == KIN_WATCH_MODIFIED ? kin_delta_fifo_update(r->fifo, ev->obj)
                                          : kin_delta_fifo_delete(r->fifo, ev->obj);
    if (rc && rc != KIN_ECLOSED)
      kin_log(KIN_LOG_WARN, LOG, "%s: unable to apply watch event %s of %s: %s", r->name,
              ev->type == KIN_WATCH_ADDED ? "ADDED" : ev->type == KIN_WATCH_MODIFIED ? "MODIFIED"
                                                                                     : "DELETED",
              kin_obj_key(ev->obj), kin_strerror(rc));
    break;
  default: /* KIN_WATCH_BOOKMARK */
    if (!rv) rv = "";
    if (w->initial && ev->initial_events_end) return initial_events_end(w, rv);
    break;
  }
  pthread_mutex_lock(&r->mu);
  w->events++;
  if (w->initial) {
    if (ev->type != KIN_WATCH_BOOKMARK) r->st.listed_items++;
  } else {
    /* Not synchronised with the FIFO (as client-go's): it only has to be
     * no newer than what was applied, which holds since it follows it. */
    if (rv && *rv) kin__rfl_set_rv_locked(r, rv);
    if (ev->type == KIN_WATCH_BOOKMARK) r->st.bookmarks++;
    else r->st.watch_events++;
  }
  pthread_mutex_unlock(&r->mu);
  return 0;
}

/* Applies a batch taken from the queue, in order, and frees it; once the
 * stream is given up the rest is only freed. */
static void apply_batch(kin__rfl_watch *w, rfl_ev *batch) {
  while (batch) {
    rfl_ev *next = batch->next;
    if (!w->rfl_abort) apply_event(w, batch);
    kin_obj_unref(batch->obj);
    free(batch);
    batch = next;
  }
}

/* ---- IO thread: decoding -------------------------------------------------- */

/* Bytes a queued event counts for: its JSON and the queue entry. */
static size_t ev_bytes(const kin_obj *obj) {
  size_t len = 0;
  kin_obj_json(obj, &len);
  return len + sizeof(rfl_ev);
}

/* Decoder callback: keeps ADDED/MODIFIED/DELETED/BOOKMARK in w->pend (queued
 * at the end of the chunk); an ERROR event ends the stream here. */
static int on_event(void *ud, const kin_watch_event *ev) {
  kin__rfl_watch *w = ud;
  if (w->abort) return 1;
  if (ev->type == KIN_WATCH_ERROR) {
    size_t len;
    const char *js = kin_obj_json(ev->obj, &len);
    w->st.code = ev->code;
    snprintf(w->st.reason, sizeof(w->st.reason), "%s", ev->reason ? ev->reason : "");
    snprintf(w->st.message, sizeof(w->st.message), "%s", ev->message ? ev->message : "");
    kin__rfl_parse_status(js, len, &w->st);
    w->error_event = 1;
    w->abort = 1;
    return 1;
  }
  rfl_ev *e = malloc(sizeof(*e));
  if (!e) {
    w->abort = w->lost = 1;
    return 1;
  }
  e->next = NULL;
  e->type = ev->type;
  e->initial_events_end = ev->type == KIN_WATCH_BOOKMARK && ev->initial_events_end;
  e->obj = kin_obj_ref(ev->obj);
  if (w->pend_tail) w->pend_tail->next = e;
  else w->pend = e;
  w->pend_tail = e;
  w->pend_bytes += ev_bytes(e->obj);
  return 0;
}

/* Moves w->pend to the queue and wakes the reflector thread. Caller holds
 * r->mu. */
static void flush_locked(kin__rfl_watch *w) {
  if (!w->pend) return;
  if (w->q_tail) w->q_tail->next = w->pend;
  else w->q = w->pend;
  w->q_tail = w->pend_tail;
  w->q_bytes += w->pend_bytes;
  w->pend = w->pend_tail = NULL;
  w->pend_bytes = 0;
  pthread_cond_broadcast(&w->r->cond);
}

static void on_error(void *ud, const kin_watch_decode_error *e) {
  kin__rfl_watch *w = ud;
  kin_reflector *r = w->r;
  /* Bytes between events (an HTML page, a stray line) carry no event and
   * are skipped; anything else may have been one. */
  int lost = e->kind != KIN_WATCH_ERR_GARBAGE;
  char where[512];
  kin_watch_decode_error_where(e, where, sizeof where);
  kin_log(KIN_LOG_WARN, LOG, "%s: watch stream: %s at %s%s", r->name, e->what, where,
          lost && !w->abort ? " - resuming from the last resourceVersion" : "");
  pthread_mutex_lock(&r->mu);
  r->st.decode_errors++;
  pthread_mutex_unlock(&r->mu);
  if (lost) w->abort = w->lost = 1;
}

static void feed(kin__rfl_watch *w, const char *p, size_t n) {
  if (kin_watch_decoder_feed(w->dec, p, n) == KIN_ENOMEM) w->abort = w->lost = 1;
}

/* PROTO: reads every whole frame of the bytes so far (a 4-byte big-endian
 * length, then a metav1.WatchEvent) as its JSON watch line into the
 * decoder; keeps a partial frame for the next chunk. A frame that cannot
 * be read is logged with its number and the reason, counted, and loses the
 * stream (resumed from the last resourceVersion), as a malformed JSON
 * event does. */
static void feed_proto(kin__rfl_watch *w, const char *p, size_t n) {
  kin_reflector *r = w->r;
  if (kin__buf_add(&w->pbf, p, n)) {
    w->abort = w->lost = 1;
    return;
  }
  size_t off = 0, max = kin_client_max_response_bytes(r->client);
  if (!max || max > PROTO_FRAME_MAX) max = PROTO_FRAME_MAX;
  while (!w->abort && w->pbf.len - off >= 4) {
    const uint8_t *h = (const uint8_t *)w->pbf.p + off;
    size_t flen = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
    char err[256] = "";
    int rc = 0;
    if (flen > max) {
      snprintf(err, sizeof err, "a frame of %zu bytes, over the cap of %zu", flen, max);
      rc = KIN_EINVAL;
    } else if (w->pbf.len - off - 4 < flen) {
      break;
    } else {
      w->pbline.len = 0;
      rc = kin__pb_watch_event_json(h + 4, flen, &w->pbline, err, sizeof err);
    }
    w->frames++;
    if (rc) {
      if (rc == KIN_ENOMEM) {
        w->abort = w->lost = 1;
        break;
      }
      kin_log(KIN_LOG_WARN, LOG,
              "%s: watch stream: protobuf frame %llu cannot be read: %s - resuming from the "
              "last resourceVersion",
              r->name, (unsigned long long)w->frames, err);
      pthread_mutex_lock(&r->mu);
      r->st.decode_errors++;
      pthread_mutex_unlock(&r->mu);
      w->abort = w->lost = 1;
      break;
    }
    /* the line is one whole event already: no framing scan of it */
    if (kin_watch_decoder_event(w->dec, w->pbline.p, w->pbline.len) == KIN_ENOMEM)
      w->abort = w->lost = 1;
    off += 4 + flen;
  }
  if (off) {
    memmove(w->pbf.p, w->pbf.p + off, w->pbf.len - off);
    w->pbf.len -= off;
  }
}

/* Decides from the first bytes whether this is a watch stream. */
static void sniff(kin__rfl_watch *w) {
  if (w->r->proto && w->head.len && w->head.p[0] == '\0') {
    /* a frame's length: frames are under 16 MiB, JSON never starts so */
    w->mode = PROTO;
    return;
  }
  size_t i = 0;
  while (i < w->head.len && strchr(" \t\r\n", w->head.p[i])) i++;
  size_t m = w->head.len - i;
  if (!m) return;
  const char *s = w->head.p + i;
  if (s[0] != '{') w->mode = BODY;
  else if (m >= 7) w->mode = memcmp(s, "{\"type\"", 7) ? BODY : STREAM;
  if (w->mode == BODY && w->head.len > SNIFF_MAX) w->mode = STREAM;
}

/* Decodes a chunk into w->pend. */
static void take_chunk(kin__rfl_watch *w, const char *p, size_t n) {
  if (w->mode == STREAM) {
    feed(w, p, n);
    return;
  }
  if (w->mode == PROTO) {
    feed_proto(w, p, n);
    return;
  }
  if (kin__buf_add(&w->head, p, n)) {
    w->abort = w->lost = 1;
    return;
  }
  sniff(w);
  if (w->mode == STREAM) {
    feed(w, w->head.p, w->head.len);
    kin__buf_free(&w->head);
  } else if (w->mode == PROTO) {
    feed_proto(w, w->head.p, w->head.len);
    kin__buf_free(&w->head);
  }
}

/* Curl's data callback: decodes the chunk and queues its events with one
 * lock and one wake-up. Returns KIN_IO_PAUSE (the chunk is offered again
 * after kin_io_resume) while the queue is full, 1 to end the transfer. */
static int on_data(void *ud, const char *p, size_t n) {
  kin__rfl_watch *w = ud;
  kin_reflector *r = w->r;
  if (w->full) {
    pthread_mutex_lock(&r->mu);
    if (!w->cut && w->q_bytes >= r->queue_max) {
      if (!w->paused) r->st.watch_pauses++;
      w->paused = 1;
      pthread_mutex_unlock(&r->mu);
      return KIN_IO_PAUSE;
    }
    pthread_mutex_unlock(&r->mu);
    w->full = 0;
  }
  if (!w->abort) take_chunk(w, p, n);
  pthread_mutex_lock(&r->mu);
  if (w->mode == PROTO || w->mode == STREAM)
    r->st.content_type_used = w->mode == PROTO ? KIN_CONTENT_PROTOBUF : KIN_CONTENT_JSON;
  w->last_byte_ns = kin_clock_now(r->clock);
  flush_locked(w);
  w->full = w->q_bytes >= r->queue_max;
  int cut = w->cut;
  pthread_mutex_unlock(&r->mu);
  return w->abort || cut;
}

static void on_done(void *ud, kin_io_response *res) {
  kin__rfl_watch *w = ud;
  kin_reflector *r = w->r;
  int ok = res->code >= 200 && res->code < 300;
  if (ok && w->mode == PROTO && !w->abort && w->pbf.len && res->err != KIN_ECANCELED) {
    /* the stream ended inside a frame */
    kin_log(KIN_LOG_WARN, LOG,
            "%s: watch stream: the stream ended inside protobuf frame %llu (%zu bytes of it "
            "came) - resuming from the last resourceVersion",
            r->name, (unsigned long long)w->frames + 1, w->pbf.len);
    pthread_mutex_lock(&r->mu);
    r->st.decode_errors++;
    pthread_mutex_unlock(&r->mu);
    w->abort = w->lost = 1;
  }
  if (ok && w->mode != STREAM && w->mode != PROTO && !w->abort && w->head.len) {
    /* A 200 whose body never looked like events: let the decoder report
     * it (as garbage) rather than drop it silently. */
    w->mode = STREAM;
    feed(w, w->head.p, w->head.len);
  }
  /* Cut off by us (stop, idle) or by the server: a partial event is
   * reported and counts as lost. */
  if (ok && (w->mode == STREAM || w->mode == PROTO) && !w->abort && res->err != KIN_ECANCELED)
    kin_watch_decoder_finish(w->dec);
  w->http = res->code;
  if (!ok && !w->error_event) {
    w->st.code = res->code;
    if (res->code) kin__rfl_parse_status(w->head.p, w->head.len, &w->st);
    if (res->code && !w->st.reason[0]) {
      /* Not a Status (a proxy's HTML page, an empty body): say so. */
      snprintf(w->st.reason, sizeof(w->st.reason), "%s", kin_status_reason_for_code(res->code));
      if (!w->st.message[0])
        kin_http_describe_body(res->code, res->content_type, w->head.p, w->head.len,
                               w->st.message, sizeof(w->st.message));
    }
  }
  w->st.err = res->err;
  if (res->err && !w->st.message[0])
    kin_client_describe_transport(r->client, res, w->st.message, sizeof(w->st.message));
  w->st.refused = kin_io_response_refused(res);
  if (res->retry_after) {
    char *end;
    unsigned long s = strtoul(res->retry_after, &end, 10);
    if (end != res->retry_after && (uint64_t)s * KIN_NSEC_PER_SEC > w->st.retry_after_ns)
      w->st.retry_after_ns = (uint64_t)s * KIN_NSEC_PER_SEC;
  }
  pthread_mutex_lock(&r->mu);
  flush_locked(w);
  w->done = 1;
  pthread_cond_broadcast(&r->cond);
  pthread_mutex_unlock(&r->mu);
  /* w belongs to the reflector thread from here on. */
}

/* ---- reflector thread ----------------------------------------------------- */

int kin__rfl_watch_start(kin_reflector *r, const char *rv, int initial, kin__rfl_watch **out) {
  *out = NULL;
  kin__rfl_watch *w = calloc(1, sizeof(*w));
  if (!w) return KIN_ENOMEM;
  w->r = r;
  w->initial = initial;
  kin__hmap_init_borrowed(&w->temp); /* keys are the objects' (kin_obj_key) */
  int rc = kin_watch_decoder_new(on_event, on_error, w, &w->dec);
  if (rc) {
    free(w);
    return rc;
  }
  /* Spread the reconnects of many clients: random in [300, 600) s. */
  long timeout_s = (long)(KIN_REFLECTOR_MIN_WATCH_TIMEOUT_S * (1.0 + kin_rand_float(&r->rng)));
  char ts[24];
  snprintf(ts, sizeof(ts), "%ld", timeout_s);
  kin__buf url = {0};
  kin__rfl_url(r, &url);
  kin__rfl_param(&url, "allowWatchBookmarks", "true");
  if (rv && *rv) kin__rfl_param(&url, "resourceVersion", rv);
  if (initial) {
    kin__rfl_param(&url, "resourceVersionMatch", "NotOlderThan");
    kin__rfl_param(&url, "sendInitialEvents", "true");
  }
  kin__rfl_param(&url, "timeoutSeconds", ts);
  kin__rfl_param(&url, "watch", "true");
  if (url.oom) {
    kin__buf_free(&url);
    kin_watch_decoder_free(w->dec);
    free(w);
    return KIN_ENOMEM;
  }
  pthread_mutex_lock(&r->mu);
  w->started_ns = w->last_byte_ns = kin_clock_now(r->clock);
  r->watch = w;
  r->st.watches++;
  if (initial) r->st.listed_items = 0;
  pthread_mutex_unlock(&r->mu);
  /* The server ends the stream at timeoutSeconds; the client's own bound
   * only catches one that does not. A dead connection is the idle check's. */
  kin_client_stream_opts so = {.accept = r->metadata_only ? WATCH_ACCEPT_METADATA
                                         : r->proto       ? WATCH_ACCEPT_PROTOBUF
                                                          : NULL,
                               .timeout_ms = (timeout_s + 30) * 1000,
                               .read_idle_ms = r->read_idle_ms,
                               .ping_timeout_ms = r->ping_ms};
  rc = kin_client_stream(r->client, url.p, &so, on_data, on_done, w, &w->h);
  kin__buf_free(&url);
  if (rc) {
    pthread_mutex_lock(&r->mu);
    r->watch = NULL;
    pthread_mutex_unlock(&r->mu);
    kin_watch_decoder_free(w->dec);
    free(w);
    return rc;
  }
  *out = w;
  return 0;
}

/* How a finished watch ended. Caller holds r->mu. */
static kin__rfl_outcome classify(kin_reflector *r, kin__rfl_watch *w) {
  if (w->cancelled && !w->idle) return KIN__RFL_STOPPED;
  const kin__rfl_status *st = &w->st;
  int retry = st->code == 429 || (st->code >= 500 && st->retry_after_ns);
  if (w->error_event || (w->http && (w->http < 200 || w->http >= 300))) {
    if (kin__rfl_is_expired(st)) return KIN__RFL_EXPIRED;
    if (retry) return KIN__RFL_RETRY;
    if (st->code == 401) return KIN__RFL_UNAUTHORIZED;
    return KIN__RFL_FAILED;
  }
  /* No answer at all: client-go retries "connection refused" only, and
   * relists on a reset or timeout; a relist would meet the same failure,
   * and a re-watch still learns (410) when the RV is gone, so any failure
   * before a response backs off and watches again. */
  if (!w->http && !w->idle && !w->cut) return KIN__RFL_RETRY;
  if (w->lost || w->rfl_lost) return KIN__RFL_LOST;
  if (!w->idle && !w->events && kin_clock_now(r->clock) - w->started_ns < KIN_NSEC_PER_SEC)
    return KIN__RFL_SHORT;
  return KIN__RFL_ENDED;
}

kin__rfl_outcome kin__rfl_watch_wait(kin_reflector *r, kin__rfl_watch *w, int until_initial,
                                     kin__rfl_status *st) {
  memset(st, 0, sizeof(*st));
  pthread_mutex_lock(&r->mu);
  for (;;) {
    if (w->q && !r->stopping) {
      /* Take everything queued; a paused transfer resumes now (it was
       * silent because of us, not the server: not idle). */
      rfl_ev *batch = w->q;
      w->q = w->q_tail = NULL;
      w->q_bytes = 0;
      int resume = w->paused;
      w->paused = 0;
      if (resume) w->last_byte_ns = kin_clock_now(r->clock);
      pthread_mutex_unlock(&r->mu);
      if (resume) kin_io_resume(w->h);
      int was_abort = w->rfl_abort;
      apply_batch(w, batch);
      if (w->rfl_abort && !was_abort) {
        pthread_mutex_lock(&r->mu);
        w->cut = 1;
        pthread_mutex_unlock(&r->mu);
        kin_io_cancel(w->h);
      }
      pthread_mutex_lock(&r->mu);
      continue;
    }
    if (w->done || (until_initial && w->initial_done)) break;
    if (r->reshard && !w->cancelled) {
      /* new ranges (kin_reflector_set_shard_selector): end this stream */
      w->cancelled = w->resharded = 1;
      pthread_mutex_unlock(&r->mu);
      kin_io_cancel(w->h);
      pthread_mutex_lock(&r->mu);
      continue;
    }
    uint64_t deadline = w->last_byte_ns > UINT64_MAX - r->idle_ns ? UINT64_MAX - 1
                                                                  : w->last_byte_ns + r->idle_ns;
    if (!w->cancelled && (r->stopping || kin_clock_now(r->clock) >= deadline)) {
      w->cancelled = 1;
      if (!r->stopping) {
        w->idle = 1;
        r->st.idle_timeouts++;
        kin_log(KIN_LOG_WARN, LOG, "%s: no byte on the watch for %llu ms: re-establishing it",
                r->name, (unsigned long long)(r->idle_ns / KIN_NSEC_PER_MSEC));
      }
      pthread_mutex_unlock(&r->mu);
      kin_io_cancel(w->h);
      pthread_mutex_lock(&r->mu);
      continue;
    }
    kin_clock_wait(r->clock, &r->cond, &r->mu, w->cancelled ? KIN_FOREVER : deadline);
  }
  kin__rfl_outcome o;
  if (until_initial && w->initial_done) {
    o = KIN__RFL_INITIAL;
  } else if (w->resharded && !r->stopping) {
    o = KIN__RFL_RESHARD; /* events left unapplied: the relist replaces them */
  } else if (w->q && r->stopping) {
    o = KIN__RFL_STOPPED; /* events left unapplied on stop */
  } else {
    o = classify(r, w);
    *st = w->st;
  }
  pthread_mutex_unlock(&r->mu);
  return o;
}

void kin__rfl_watch_free(kin_reflector *r, kin__rfl_watch *w) {
  if (!w) return;
  pthread_mutex_lock(&r->mu);
  if (!w->done && !w->cancelled) {
    w->cancelled = 1;
    pthread_mutex_unlock(&r->mu);
    kin_io_cancel(w->h);
    pthread_mutex_lock(&r->mu);
  }
  while (!w->done) kin_clock_wait(r->clock, &r->cond, &r->mu, KIN_FOREVER);
  if (r->watch == w) r->watch = NULL;
  pthread_mutex_unlock(&r->mu);
  kin_io_handle_release(w->h);
  kin_watch_decoder_free(w->dec);
  temp_clear(w);
  kin__hmap_free(&w->temp);
  kin__buf_free(&w->head);
  kin__buf_free(&w->pbf);
  kin__buf_free(&w->pbline);
  ev_free_list(w->q);
  ev_free_list(w->pend);
  free(w);
}
