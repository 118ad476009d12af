/* http_watch.c -- WATCH (k8s.io/apiserver handlers/watch.go served from
 * the watch cache): a chunked stream of one {"type","object"} JSON line per
 * event; resume from a resourceVersion by replaying the history, a 410
 * ERROR event when it is older than the history, periodic BOOKMARKs,
 * timeoutSeconds, and sendInitialEvents with the initial-events-end
 * bookmark. Events are copied out in batches under the store lock, then
 * handed to MHD without it, so one watcher sees well over 100k events/s. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_int.h"
#include "kin.h"

/* Stop filling a batch past this size; MHD drains it in several calls. */
#define BATCH_BYTES (512u * 1024u)

/* One open watch, owned by its MHD response (freed by watcher_free). Only
 * the connection thread touches it; store fields are read under mu, and
 * the references init holds are taken and dropped under mu. */
typedef struct {
  kin_sim *sim;
  kin__sim_resource *r;
  struct MHD_Connection *conn;
  char ns[256];
  kin__sim_selector sel;
  int filtered;      /* selectors or an apiVersion rewrite: build lines */
  int convert;       /* through the CRD's conversion webhook (admission/conversion.h) */
  uint64_t pos;      /* every event with rv <= pos has been considered */
  kin__buf buf;  /* bytes not yet handed to MHD, from off */
  size_t off;
  int done;          /* end the stream once buf is drained */
  int abort;         /* close without the final chunk once buf is drained */
  unsigned drop_gen, cut_gen, malformed_gen; /* fault generations seen */
  int bookmarks;
  uint64_t deadline, next_bookmark; /* CLOCK_MONOTONIC ns */
  const char *table;   /* "v1"/"v1beta1": events carry Tables (http_table.c) */
  int proto;           /* events are protobuf frames (http_proto.c) */
  int pre;             /* proto from the objects' kept bytes (--pre-encode,
                        * http_proto_pre.c): each line is framed as written */
  char prefix[400];    /* an object stored at the served version starts so */
  size_t prefixlen;
  char include[16];    /* includeObject of a Table watch */
  int headers_sent;    /* the first Table event carried the columns */
  kin__sim_obj **init; /* the initial state still to send as ADDED (a
                        * reference each), sent a batch at a time */
  size_t ninit, iinit;
  int init_bookmark;   /* the initial-events-end bookmark follows init */
  uint64_t init_rv;    /* the resourceVersion of that state */
} watcher;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * KIN_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* With pre: turns the JSON lines written from start into frames. */
static void pre_frames(watcher *w, size_t start) {
  if (w->pre) kin__sim_proto_watch_frames(&w->buf, start);
}

static void add_event(watcher *w, int type, const kin__sim_obj *o) {
  if (w->pre && o->pb && o->rawlen > w->prefixlen &&
      !memcmp(o->raw, w->prefix, w->prefixlen)) {
    kin__sim_proto_watch_event(&w->buf, kin__sim_event_type_name(type), o);
    return;
  }
  size_t start = w->buf.len;
  kin__buf_printf(&w->buf, "{\"type\":\"%s\",\"object\":", kin__sim_event_type_name(type));
  kin__sim_append_obj(&w->buf, w->r, o);
  kin__buf_add(&w->buf, "}\n", 2);
  pre_frames(w, start);
}

static int in_namespace(const watcher *w, const kin__sim_obj *o) {
  if (!w->ns[0]) return 1;
  size_t n = strlen(w->ns);
  return !strncmp(o->key, w->ns, n) && o->key[n] == '/';
}

static void add_bookmark(watcher *w, uint64_t rv, int initial_end) {
  char av[320];
  size_t start = w->buf.len;
  kin__sim_api_version(w->r, av, sizeof(av));
  kin__buf_printf(&w->buf,
                      "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\",\"apiVersion\":\"%s\","
                      "\"metadata\":{\"resourceVersion\":\"%llu\"%s}}}\n",
                      w->r->kind, av, (unsigned long long)rv, initial_end ? ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}"
                                  : "");
  pre_frames(w, start);
}

static void add_error(watcher *w, json_t *status) {
  char *s = json_dumps(status, JSON_COMPACT);
  json_decref(status);
  size_t start = w->buf.len;
  if (s) kin__buf_printf(&w->buf, "{\"type\":\"ERROR\",\"object\":%s}\n", s);
  free(s);
  pre_frames(w, start);
  w->done = 1;
}

static void add_too_old(watcher *w, uint64_t rv, uint64_t floor) {
  char msg[128];
  snprintf(msg, sizeof(msg), "too old resource version: %llu (%llu)", (unsigned long long)rv,
           (unsigned long long)floor);
  add_error(w, kin__sim_status(410, "Expired", msg, NULL));
}

/* An object that leaves the selection: DELETED with its previous content
 * under the event's resourceVersion, as cacheWatcher.convertToWatchEvent. */
static void add_left_selection(watcher *w, const kin__sim_event *e) {
  json_t *old = kin__sim_obj_json(e->prev);
  json_t *md = old ? json_copy(json_object_get(old, "metadata")) : NULL;
  if (!md) {
    json_decref(old);
    return;
  }
  char rv[24], av[320];
  snprintf(rv, sizeof(rv), "%llu", (unsigned long long)e->rv);
  json_object_set_new(md, "resourceVersion", json_string(rv));
  json_object_set_new(old, "metadata", md);
  if (w->r->convert_out) {
    json_t *conv = w->r->convert_out(old);
    json_decref(old);
    if (!(old = conv)) return;
  }
  kin__sim_api_version(w->r, av, sizeof(av));
  json_object_set_new(old, "apiVersion", json_string(av));
  char *s = json_dumps(old, JSON_COMPACT);
  json_decref(old);
  size_t start = w->buf.len;
  if (s) kin__buf_printf(&w->buf, "{\"type\":\"DELETED\",\"object\":%s}\n", s);
  free(s);
  pre_frames(w, start);
}

/* Copies the next batch of the initial state into w->buf, dropping the
 * references as it goes, then the initial-events-end bookmark. Caller
 * holds mu. */
static void fill_initial(watcher *w) {
  while (w->iinit < w->ninit && w->buf.len < BATCH_BYTES) {
    kin__sim_obj *o = w->init[w->iinit++];
    if (kin__sim_selector_matches_obj(&w->sel, o)) add_event(w, KIN__SIM_ADDED, o);
    kin__sim_obj_unref(o);
  }
  if (w->iinit < w->ninit) return;
  free(w->init);
  w->init = NULL;
  w->ninit = w->iinit = 0;
  if (w->init_bookmark) add_bookmark(w, w->init_rv, 1);
  w->init_bookmark = 0;
}

/* Copies the events after w->pos into w->buf: the initial state first,
 * in batches, then the history. Caller holds mu. */
static void fill(watcher *w, kin__sim_store *s) {
  if (w->init || w->init_bookmark) {
    fill_initial(w);
    return;
  }
  if (w->pos < s->floor) {
    add_too_old(w, w->pos, s->floor);
    return;
  }
  /* History rvs increase: binary search the first event after pos. */
  size_t lo = 0, hi = s->hlen;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->hist[(s->hstart + mid) % s->hcap].rv <= w->pos)
      lo = mid + 1;
    else
      hi = mid;
  }
  kin__sim_storage *st = w->r->storage;
  for (size_t i = lo; i < s->hlen && w->buf.len < BATCH_BYTES; i++) {
    kin__sim_event *e = &s->hist[(s->hstart + i) % s->hcap];
    w->pos = e->rv;
    if (e->st != st || !in_namespace(w, e->obj)) continue;
    if (!w->filtered && w->pre) {
      add_event(w, e->type, e->obj);
      continue;
    }
    if (!w->filtered) {
      /* The stored bytes as they are, in the event line. */
      static const char *const head[] = {NULL, "{\"type\":\"ADDED\",\"object\":",
                                         "{\"type\":\"MODIFIED\",\"object\":",
                                         "{\"type\":\"DELETED\",\"object\":"};
      static const size_t headlen[] = {0, 25, 28, 27};
      kin__buf_add(&w->buf, head[e->type], headlen[e->type]);
      kin__buf_add(&w->buf, e->obj->raw, e->obj->rawlen);
      kin__buf_add(&w->buf, "}\n", 2);
      continue;
    }
    /* A selector turns an object entering it into ADDED and one leaving it
     * into DELETED, as the watch cache does. */
    int cur = kin__sim_selector_matches_obj(&w->sel, e->obj);
    int prev = e->prev && e->type == KIN__SIM_MODIFIED
                   ? kin__sim_selector_matches_obj(&w->sel, e->prev)
                   : cur;
    int type = e->type;
    if (e->type == KIN__SIM_MODIFIED && cur != prev) type = cur ? KIN__SIM_ADDED : KIN__SIM_DELETED;
    if (!cur && !prev) continue;
    if (e->type == KIN__SIM_MODIFIED && !cur)
      add_left_selection(w, e);
    else
      add_event(w, type, e->obj);
  }
}

static int connection_closed(watcher *w) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(w->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci) return 1;
  struct pollfd p = {ci->connect_fd, POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* Applies the injected watch faults (faults.c). Returns 1 when the watch
 * must not fill now: dropped, or stalled (then it waited a while). Caller
 * holds mu. */
static int apply_faults(watcher *w, kin__sim_store *s) {
  kin__sim_faults *f = &s->faults;
  if (w->drop_gen != f->drop_gen) {
    w->abort = 1;
    return 1;
  }
  uint64_t now = now_ns();
  if (now < f->stall_until && !s->stopping) {
    uint64_t until = now + 200 * KIN_NSEC_PER_MSEC;
    if (f->stall_until < until) until = f->stall_until;
    struct timespec ts = {(time_t)(until / KIN_NSEC_PER_SEC), (long)(until % KIN_NSEC_PER_SEC)};
    pthread_cond_timedwait(&s->cond, &s->mu, &ts);
    /* No bookmark may fall due inside a stall. */
    w->next_bookmark = now_ns() + (uint64_t)s->bookmark_interval_ms * KIN_NSEC_PER_MSEC;
    return 1;
  }
  if (w->malformed_gen != f->malformed_gen) {
    w->malformed_gen = f->malformed_gen;
    size_t start = w->buf.len;
    kin__buf_add(&w->buf, "{\"type\":\"ADDED\",\"object\":{\"kind\":\n", 34);
    pre_frames(w, start);
  }
  return 0;
}

static ssize_t watch_read(void *cls, uint64_t pos, char *out, size_t max) {
  watcher *w = cls;
  kin__sim_store *s = &w->sim->store;
  for (;;) {
    if (w->off < w->buf.len) {
      size_t n = w->buf.len - w->off;
      if (n > max) n = max;
      memcpy(out, w->buf.p + w->off, n);
      w->off += n;
      return (ssize_t)n;
    }
    w->buf.len = w->off = 0;
    if (w->abort) return MHD_CONTENT_READER_END_WITH_ERROR;
    if (w->done) return MHD_CONTENT_READER_END_OF_STREAM;
    pthread_mutex_lock(&s->mu);
    if (apply_faults(w, s)) {
      pthread_mutex_unlock(&s->mu);
      continue;
    }
    fill(w, s);
    if (w->convert && w->buf.len) {
      /* the conversion webhook is called without the store's lock */
      pthread_mutex_unlock(&s->mu);
      if (kin__sim_convert_watch_lines(w->sim, w->r, &w->buf)) w->done = 1;
      pthread_mutex_lock(&s->mu);
    }
    if (w->table)
      kin__sim_table_watch_lines(w->r, w->table, w->include, &w->headers_sent, &w->buf, 0);
    if (w->proto && !w->pre) kin__sim_proto_watch_frames(&w->buf, 0);
    if (w->buf.len && w->cut_gen != s->faults.cut_gen) {
      /* Cut inside the first event of this batch. */
      w->cut_gen = s->faults.cut_gen;
      char *nl = memchr(w->buf.p, '\n', w->buf.len);
      w->buf.len = nl ? (size_t)(nl - w->buf.p) / 2 + 1 : w->buf.len / 2 + 1;
      w->abort = 1;
    }
    if (!w->buf.len && !w->done) {
      uint64_t now = now_ns();
      if (s->stopping || now >= w->deadline) {
        w->done = 1;
      } else if (w->bookmarks && now >= w->next_bookmark) {
        add_bookmark(w, w->pos, 0);
        /* framed here: this line is served without passing the framing above */
        if (w->proto && !w->pre) kin__sim_proto_watch_frames(&w->buf, 0);
        w->next_bookmark = now + (uint64_t)s->bookmark_interval_ms * KIN_NSEC_PER_MSEC;
      } else {
        uint64_t until = now + 200 * KIN_NSEC_PER_MSEC; /* to notice a closed client */
        if (w->deadline < until) until = w->deadline;
        if (w->bookmarks && w->next_bookmark < until) until = w->next_bookmark;
        struct timespec ts = {(time_t)(until / KIN_NSEC_PER_SEC), (long)(until % KIN_NSEC_PER_SEC)};
        if (w->pos >= s->rv) pthread_cond_timedwait(&s->cond, &s->mu, &ts);
      }
    }
    pthread_mutex_unlock(&s->mu);
    if (!w->buf.len && !w->done && connection_closed(w))
      return MHD_CONTENT_READER_END_WITH_ERROR;
  }
}

static void watcher_free(void *cls) {
  watcher *w = cls;
  if (w->init) {
    /* MHD frees responses without the store lock held. */
    pthread_mutex_lock(&w->sim->store.mu);
    for (size_t i = w->iinit; i < w->ninit; i++) kin__sim_obj_unref(w->init[i]);
    pthread_mutex_unlock(&w->sim->store.mu);
    free(w->init);
  }
  kin__sim_selector_free(&w->sel);
  free(w->buf.p);
  free(w);
}

static void options_invalid(kin__sim_result *out, const char *field, const char *detail) {
  kin__sim_err_invalid(out, "meta.k8s.io", "ListOptions", "", field, "FieldValueForbidden",
                       detail);
}

enum MHD_Result kin__sim_handle_watch(kin__sim_req *req, kin__sim_resource *r,
                                      kin__sim_request_info *ri) {
  kin__sim_result out = {0, NULL};
  kin__sim_store *s = &req->sim->store;
  const char *rvq = kin__sim_query(req, "resourceVersion");
  const char *match = kin__sim_query(req, "resourceVersionMatch");
  const char *sie = kin__sim_query(req, "sendInitialEvents");
  const char *tq = kin__sim_query(req, "timeoutSeconds");
  int bookmarks = kin__sim_query_bool(kin__sim_query(req, "allowWatchBookmarks"));
  int initial = kin__sim_query_bool(sie);
  if (match && !*match) match = NULL;
  if (sie && initial && (!match || strcmp(match, "NotOlderThan"))) {
    options_invalid(&out, "resourceVersionMatch",
                    "Forbidden: sendInitialEvents requires setting resourceVersionMatch to "
                    "NotOlderThan");
    return kin__sim_respond_result(req, &out);
  }
  if (initial && !bookmarks) {
    options_invalid(&out, "allowWatchBookmarks",
                    "Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true");
    return kin__sim_respond_result(req, &out);
  }
  if (!sie && match) {
    options_invalid(&out, "resourceVersionMatch",
                    "Forbidden: resourceVersionMatch is forbidden for watch unless "
                    "sendInitialEvents is provided");
    return kin__sim_respond_result(req, &out);
  }
  unsigned long long rv = 0;
  int from_now = !rvq || !*rvq || !strcmp(rvq, "0");
  if (!from_now) {
    char *end;
    errno = 0;
    rv = strtoull(rvq, &end, 10);
    if (*end || errno) {
      /* kube-apiserver answers this one 500 without a reason. */
      kin__sim_err(&out, 500, NULL, NULL,
                   "resourceVersion: Invalid value: \"%s\": strconv.ParseUint: parsing \"%s\": "
                   "invalid syntax", rvq, rvq);
      return kin__sim_respond_result(req, &out);
    }
  }
  const char *table =
      kin__sim_table_accept(MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Accept"));
  const char *include = kin__sim_query(req, "includeObject");
  if (table && kin__sim_table_include_check(include, &out)) return kin__sim_respond_result(req, &out);
  watcher *w = calloc(1, sizeof(*w));
  if (!w) return MHD_NO;
  w->table = table;
  w->proto = req->proto;
  if (include) snprintf(w->include, sizeof(w->include), "%s", include);
  if (kin__sim_selector_parse(req, r, &w->sel, &out)) {
    free(w);
    return kin__sim_respond_result(req, &out);
  }
  w->sim = req->sim;
  w->r = r;
  w->conn = req->conn;
  if (r->namespaced) snprintf(w->ns, sizeof(w->ns), "%s", ri->ns);
  char av[320];
  kin__sim_api_version(r, av, sizeof(av));
  w->filtered = !kin__sim_selector_empty(&w->sel) || strcmp(av, r->storage->storage_version);
  w->bookmarks = bookmarks;
  w->convert = kin__sim_conversion_applies(req->sim, r);
  /* Tables and conversions are written as JSON lines first; the rest of a
   * protobuf watch can come from the kept bytes. */
  w->pre = w->proto && s->pre_encode && !w->table && !w->convert && !r->crd_name &&
           !r->convert_out;
  w->prefixlen = (size_t)snprintf(w->prefix, sizeof(w->prefix),
                                  "{\"kind\":\"%s\",\"apiVersion\":\"%s\",", r->kind, av);
  if (w->prefixlen >= sizeof(w->prefix)) w->pre = 0;
  long long timeout = tq ? strtoll(tq, NULL, 10) : 0;
  if (timeout <= 0) timeout = 1800;
  uint64_t now = now_ns();
  w->deadline = now + (uint64_t)timeout * KIN_NSEC_PER_SEC;
  pthread_mutex_lock(&s->mu);
  w->next_bookmark = now + (uint64_t)s->bookmark_interval_ms * KIN_NSEC_PER_MSEC;
  w->drop_gen = s->faults.drop_gen;
  w->cut_gen = s->faults.cut_gen;
  w->malformed_gen = s->faults.malformed_gen;
  if (sie && !initial) {
    /* sendInitialEvents=false: no synthetic ADDED, events after rv (or now). */
    if (from_now)
      w->pos = s->rv;
    else if (rv < s->floor)
      add_too_old(w, rv, s->floor);
    else
      w->pos = rv;
  } else if (from_now || initial) {
    /* rv "" and "0" start with the current state, as ADDED events, sent
     * in batches by fill: the watch holds a reference on each object
     * instead of a copy of the whole state in its buffer. */
    size_t n = 0, k = 0;
    int too_old;
    kin__sim_obj **arr = kin__sim_store_snapshot(s, r->storage, 0, &n, &too_old);
    for (size_t i = 0; i < n; i++) {
      if (!in_namespace(w, arr[i])) continue;
      arr[i]->refs++;
      arr[k++] = arr[i];
    }
    if (k) {
      w->init = arr;
      w->ninit = k;
    } else {
      free(arr);
    }
    w->pos = w->init_rv = s->rv;
    w->init_bookmark = initial;
  } else if (rv < s->floor) {
    add_too_old(w, rv, s->floor);
  } else {
    w->pos = rv;
  }
  if (w->table)
    kin__sim_table_watch_lines(r, w->table, w->include, &w->headers_sent, &w->buf, 0);
  if (w->proto && !w->pre) kin__sim_proto_watch_frames(&w->buf, 0);
  pthread_mutex_unlock(&s->mu);
  struct MHD_Response *resp =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, watch_read, w, watcher_free);
  if (!resp) {
    watcher_free(w);
    return MHD_NO;
  }
  MHD_add_response_header(resp, "Content-Type",
                          w->proto ? "application/vnd.kubernetes.protobuf;stream=watch"
                                   : "application/json");
  MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
  enum MHD_Result ret = kin__sim_queue_response(req, MHD_HTTP_OK, resp);
  MHD_destroy_response(resp);
  return ret;
}
