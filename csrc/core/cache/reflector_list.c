/* reflector_list.c -- the reflector's LIST (client-go's Reflector.list with
 * tools/pager): pages of `limit` items chained by continue tokens, all
 * collected before one Replace, as the pager does; a continue token that
 * expired falls back to one full list at the original resourceVersion.
 *
 * A page is split as it downloads (list_stream.h, kin_io_do_streamed):
 * each item is parsed into a kin_obj as soon as its bytes are in and
 * handed to the FIFO's prepare in small batches, so neither the body nor,
 * in a relist, a second copy of the unchanged objects is ever held whole.
 * The envelope (everything but the items) is then checked by one strict
 * pass (kin__json_scan with a visitor) that finds metadata.resourceVersion,
 * metadata.continue and remainingItemCount. Items of typed lists carry no
 * kind/apiVersion (the server omits them); they get the list's, as the
 * dynamic client's
 * UnstructuredList does, so every cached object says what it is.
 *
 * A protobuf page (asked for first for built-in types, as client-go's
 * typed clients do; the body's `k8s\0` magic tells) is read as it arrives
 * by kin__pb_list_stream, item by item into the same objects (pb_json.h:
 * each item's JSON, then kin_obj), holding only the bytes of the item not
 * yet whole (counted against the response cap); its ListMeta gives the
 * resourceVersion, continue token and remainingItemCount. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_check.h"
#include "kin.h"
#include "kobj_int.h"
#include "list_stream.h"
#include "log.h"
#include "pb_json.h"
#include "delta_fifo_int.h"
#include "reflector_int.h"

#define LOG "reflector"

/* client-go's typed clients' Accept: protobuf, else JSON */
#define LIST_ACCEPT_PROTOBUF "application/vnd.kubernetes.protobuf,application/json"

#define LIST_ACCEPT_METADATA \
  "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

/* One page as read: its RV and continue token (malloc'd, "" when absent). */
typedef struct {
  char *rv;
  char *cont;
} page_meta;

/* A byte range of the page, end exclusive; s < 0: absent. */
typedef struct {
  long s, e;
} pspan;

/* What the envelope scan keeps. The first of duplicate members counts. */
typedef struct {
  kin__json_visitor vis; /* first: the callbacks get &vis */
  const char *js;
  int bad;               /* 1: not a list; KIN_ENOMEM */
  int key1, key2;        /* the member being read at depth 1 / in metadata */
  int in_md, in_items;   /* inside the (first) metadata object / items array */
  int md_done, items_done; /* the first seen */
  pspan rv, cont, rem;
  int rv_str, cont_str, rem_num;
  int shard_info;        /* metadata.shardInfo is an object (KEP-5866) */
} page_scan;

enum { P_OTHER, P_METADATA, P_ITEMS, P_RV, P_CONTINUE, P_REMAINING, P_SHARDINFO };

#define PKEY(js, s, e, lit) ((e) - (s) == sizeof(lit) - 1 && !memcmp((js) + (s), lit, sizeof(lit) - 1))

static void pg_key(kin__json_visitor *v, size_t d, size_t s, size_t e) {
  page_scan *ps = (page_scan *)v;
  const char *js = ps->js;
  if (d == 1) {
    ps->key1 = PKEY(js, s, e, "metadata") ? P_METADATA : PKEY(js, s, e, "items") ? P_ITEMS
             : P_OTHER;
  } else if (d == 2 && ps->in_md) {
    ps->key2 = PKEY(js, s, e, "resourceVersion") ? P_RV : PKEY(js, s, e, "continue") ? P_CONTINUE
             : PKEY(js, s, e, "remainingItemCount") ? P_REMAINING
             : PKEY(js, s, e, "shardInfo") ? P_SHARDINFO : P_OTHER;
  }
}

/* Records the first value of a member of the metadata: its span and
 * whether it had the wanted type (ok). */
static void md_first(pspan *sp, int *is_type, int ok, size_t s, size_t e) {
  if (sp->s >= 0) return;
  *sp = (pspan){(long)s, (long)e};
  *is_type = ok;
}

static void pg_scalar(kin__json_visitor *v, size_t d, char type, size_t s, size_t e) {
  page_scan *ps = (page_scan *)v;
  if (d == 0) {
    ps->bad = 1;
  } else if (d == 1) {
    if (ps->key1 == P_METADATA) ps->md_done = 1;
    else if (ps->key1 == P_ITEMS && !ps->items_done) ps->bad = 1, ps->items_done = 1;
  } else if (d == 2 && ps->in_md) {
    if (ps->key2 == P_RV) md_first(&ps->rv, &ps->rv_str, type == '"', s, e);
    else if (ps->key2 == P_CONTINUE) md_first(&ps->cont, &ps->cont_str, type == '"', s, e);
    else if (ps->key2 == P_REMAINING) md_first(&ps->rem, &ps->rem_num, type == '0', s, e);
  } else if (d == 2 && ps->in_items) {
    ps->bad = 1; /* the items were split out: the envelope holds none */
  }
}

static void pg_open(kin__json_visitor *v, size_t d, char type, size_t s) {
  page_scan *ps = (page_scan *)v;
  if (d == 0) {
    if (type != '{') ps->bad = 1;
  } else if (d == 1) {
    if (ps->key1 == P_METADATA && !ps->md_done) {
      ps->md_done = 1;
      ps->in_md = type == '{';
      ps->key2 = P_OTHER;
    } else if (ps->key1 == P_ITEMS && !ps->items_done) {
      ps->items_done = 1;
      if (type == '[') ps->in_items = 1;
      else ps->bad = 1;
    }
  } else if (d == 2 && ps->in_md) {
    /* a container where a scalar belongs: present, of the wrong type */
    if (ps->key2 == P_RV) md_first(&ps->rv, &ps->rv_str, 0, s, s);
    else if (ps->key2 == P_CONTINUE) md_first(&ps->cont, &ps->cont_str, 0, s, s);
    else if (ps->key2 == P_REMAINING) md_first(&ps->rem, &ps->rem_num, 0, s, s);
    else if (ps->key2 == P_SHARDINFO && type == '{') ps->shard_info = 1;
  } else if (d == 2 && ps->in_items) {
    ps->bad = 1; /* the items were split out: the envelope holds none */
  }
}

static void pg_close(kin__json_visitor *v, size_t d, size_t e) {
  page_scan *ps = (page_scan *)v;
  (void)e;
  if (d == 1) {
    ps->in_md = 0;
    ps->in_items = 0;
  }
}

static char *dup_span(const char *js, pspan sp, int ok) {
  if (sp.s < 0 || !ok) return strdup("");
  return strndup(js + sp.s, (size_t)(sp.e - sp.s));
}

/* Listed objects go to kin__delta_fifo_prepare this many at a time, so an
 * unchanged object's second copy, or an object's state before the
 * transform, lives only until its batch is prepared (delta_fifo_int.h). */
#define PREPARE_BATCH 64

/* What each listed item is charged against the client's response cap
 * besides its bytes: about what a small parsed object costs (kin_obj,
 * its index and key strings, the pointer in the page), so a page of
 * millions of tiny items passes the cap long before its objects fill
 * memory. */
#define ITEM_CHARGE 384

/* One page being read: the splitter and where its items go. */
typedef struct {
  kin_reflector *r;
  kin__rfl_objs *o;
  size_t from;    /* the first object of o not yet prepared */
  int failed;     /* an item could not be read or prepared (logged) */
  kin__list_stream ls;
  const char *path;   /* the request, for messages */
  long max_items;     /* the page may hold this many items; 0: no count cap */
  uint64_t cap;       /* bytes + ITEM_CHARGE per item allowed; 0: none */
  uint64_t charged;
  char breach[512];   /* set when a cap was passed (KIN_ETOOBIG); as st->message */
  int bytes_breach;   /* that cap was max_response_bytes (not the item count) */
  /* Protobuf: -1 not known yet (the first bytes are held in pb), 0 JSON,
   * 1 protobuf (read as it comes by pbs). */
  int pb_mode;
  kin__buf pb;
  kin__pb_list_stream pbs;
  const kin__pb_list_meta *pb_meta; /* while the protobuf items are read */
  char pb_err[320];                 /* why a protobuf page could not be read */
} page_sink;

/* Prepares the objects of o from s->from on. Returns 0 or the transform's
 * error, logged. */
static int prepare(page_sink *s) {
  kin_reflector *r = s->r;
  size_t n = s->o->len - s->from;
  int rc = n ? kin__delta_fifo_prepare(r->fifo, s->o->v + s->from, n) : 0;
  if (rc) {
    kin_log(KIN_LOG_WARN, LOG, "%s: unable to sync list result: %s", r->name, kin_strerror(rc));
    s->failed = 1;
    return rc;
  }
  s->from = s->o->len;
  pthread_mutex_lock(&r->mu);
  r->st.listed_items += (uint64_t)n;
  pthread_mutex_unlock(&r->mu);
  return 0;
}

/* list_stream callback: parses one item into the page's objects. */
static int sink_item(void *ud, const char *p, size_t len, size_t index) {
  page_sink *s = ud;
  const kin__list_stream *ls = &s->ls;
  s->charged += len + ITEM_CHARGE;
  if (s->max_items > 0 && index >= (size_t)s->max_items) {
    snprintf(s->breach, sizeof(s->breach),
             "GET %s%s: list page has more items than the limit=%ld asked for (item %zu came)",
             kin_client_host(s->r->client), s->path, s->max_items, index + 1);
    s->failed = 1;
    return KIN_ETOOBIG;
  }
  if (s->cap && s->charged > s->cap) {
    s->bytes_breach = 1;
    snprintf(s->breach, sizeof(s->breach),
             "GET %s%s: list page larger than its cap of %llu bytes (max_response_bytes; "
             "%zu items, charged %d bytes each besides their bytes, came)",
             kin_client_host(s->r->client), s->path, (unsigned long long)s->cap, index + 1,
             ITEM_CHARGE);
    s->failed = 1;
    return KIN_ETOOBIG;
  }
  kin__list_kind la = {.kind = ls->kind, .kind_len = ls->av_len ? ls->kind_len : 0,
                       .av = ls->api_version, .av_len = ls->av_len};
  if (s->pb_meta) {
    size_t kl = strlen(s->pb_meta->kind);
    la.kind = s->pb_meta->kind;
    la.kind_len = kl > 4 ? kl - 4 : 0; /* without "List" */
    la.av = s->pb_meta->api_version;
    la.av_len = strlen(la.av);
  }
  kin_obj *obj = NULL;
  int rc = kin__obj_parse_item(p, len, &la, &obj);
  if (rc == 0 && !kin__rfl_shard_keep(s->r, obj)) {
    kin_obj_unref(obj); /* outside this replica's ranges: the server did not filter */
    return 0;
  }
  if (rc == 0 && (rc = kin__rfl_objs_push(s->o, obj))) kin_obj_unref(obj);
  if (rc) {
    kin_log(KIN_LOG_WARN, LOG, "%s: item %zu of a list page cannot be read: %s", s->r->name, index,
            kin_strerror(rc));
    s->failed = 1;
    return rc;
  }
  return s->o->len - s->from >= PREPARE_BATCH ? prepare(s) : 0;
}

/* kin__pb_list_stream's callback: one item, as sink_item takes it. */
static int pb_item(void *ud, const char *json, size_t len, size_t index) {
  return sink_item(ud, json, len, index);
}

/* sink_body of a protobuf page: the n bytes at p go to the streaming
 * reader, whose items are read as they complete. The bytes it holds (an
 * item not yet whole, or a body held whole) count against the cap. */
static int pb_body(page_sink *s, const char *p, size_t n) {
  kin__pb_list_stream *ps = &s->pbs;
  if (!s->pb_meta) {
    kin__pb_list_stream_init(ps, pb_item, s);
    s->pb_meta = &ps->meta;
  }
  int rc = kin__pb_list_stream_feed(ps, p, n);
  if (rc) {
    if (rc == KIN_EINVAL && !s->failed)
      snprintf(s->pb_err, sizeof(s->pb_err), "a protobuf list that cannot be read: %s", ps->err);
    s->failed = 1;
    return rc;
  }
  size_t held = ps->held.len - ps->off;
  if (s->cap && held > s->cap) {
    s->bytes_breach = 1;
    snprintf(s->breach, sizeof(s->breach),
             "GET %s%s: list page larger than its cap of %llu bytes (max_response_bytes; "
             "%zu bytes of protobuf held unread)",
             kin_client_host(s->r->client), s->path, (unsigned long long)s->cap, held);
    s->failed = 1;
    return KIN_ETOOBIG;
  }
  return 0;
}

/* kin_client_request.on_body: the next piece of a 2xx list body. */
static int sink_body(void *ud, const char *p, size_t n) {
  page_sink *s = ud;
  if (s->pb_mode == 1) return pb_body(s, p, n);
  if (s->pb_mode != 0) {
    /* held until the magic is known, then (protobuf) to its end */
    if (kin__buf_add(&s->pb, p, n)) {
      s->failed = 1;
      return KIN_ENOMEM;
    }
    if (s->pb_mode < 0 && s->pb.len >= 4) s->pb_mode = kin__pb_is_enveloped(s->pb.p, s->pb.len);
    if (s->pb_mode == 1) {
      int rc = pb_body(s, s->pb.p, s->pb.len);
      kin__buf_free(&s->pb);
      return rc;
    }
    if (s->pb_mode < 0) return 0;
    p = s->pb.p; /* JSON after all: what was held goes to the splitter */
    n = s->pb.len;
  }
  int rc = kin__list_stream_feed(&s->ls, p, n);
  if (s->pb.p) kin__buf_free(&s->pb);
  if (rc && !s->failed) {
    s->failed = 1;
    if (s->ls.bad_item)
      kin_log(KIN_LOG_WARN, LOG, "%s: item %zu of a list page cannot be read: not an object",
              s->r->name, s->ls.bad_item - 1);
  }
  return rc;
}


/* finish_page of a protobuf page: its items into the page's objects, its
 * ListMeta into *pm. Fills s->breach-free errors into s->pb_err. */
static int finish_pb_page(page_sink *s, page_meta *pm) {
  kin_reflector *r = s->r;
  kin__pb_list_stream *ps = &s->pbs;
  int rc = kin__pb_list_stream_finish(ps);
  if (rc == 0) rc = prepare(s);
  if (rc) {
    if (rc == KIN_EINVAL && !s->failed)
      snprintf(s->pb_err, sizeof(s->pb_err), "a protobuf list that cannot be read: %s", ps->err);
    return rc;
  }
  kin__pb_list_meta meta = ps->meta;
  ps->meta.resource_version = ps->meta.cont = NULL; /* taken */
  pm->rv = meta.resource_version;
  pm->cont = meta.cont;
  if (meta.shard_info) r->shard_info_seen = 1;
  pthread_mutex_lock(&r->mu);
  r->st.content_type_used = KIN_CONTENT_PROTOBUF;
  if (!pm->cont[0]) r->st.expected_items = r->st.listed_items;
  else if (meta.remaining >= 0) r->st.expected_items = r->st.listed_items + (uint64_t)meta.remaining;
  pthread_mutex_unlock(&r->mu);
  return 0;
}

/* The page's body has ended: checks the envelope, reads its metadata into
 * *pm and prepares the last objects. */
static int finish_page(page_sink *s, page_meta *pm) {
  kin_reflector *r = s->r;
  if (s->pb_mode == 1) return finish_pb_page(s, pm);
  if (s->pb_mode < 0 && s->pb.len) {
    /* fewer than 4 bytes came: not protobuf */
    s->pb_mode = 0;
    int frc = kin__list_stream_feed(&s->ls, s->pb.p, s->pb.len);
    kin__buf_free(&s->pb);
    if (frc) return frc;
  }
  int rc = kin__list_stream_finish(&s->ls);
  page_scan ps;
  memset(&ps, 0, sizeof(ps));
  ps.vis.key = pg_key;
  ps.vis.scalar = pg_scalar;
  ps.vis.open = pg_open;
  ps.vis.close = pg_close;
  ps.js = s->ls.env;
  ps.rv = ps.cont = ps.rem = (pspan){-1, -1};
  if (rc == 0) rc = kin__json_scan(s->ls.env, s->ls.env_len, NULL, &ps.vis);
  if (rc == 0 && ps.bad) rc = ps.bad < 0 ? ps.bad : KIN_EINVAL;
  if (rc) return rc;
  if ((rc = prepare(s))) return rc;
  const char *js = s->ls.env;
  pm->rv = dup_span(js, ps.rv, ps.rv_str);
  pm->cont = dup_span(js, ps.cont, ps.cont_str);
  if (ps.shard_info) r->shard_info_seen = 1;
  if (!pm->rv || !pm->cont) return KIN_ENOMEM;
  /* remainingItemCount is an estimate the server may omit (it does with
   * selectors); the last page makes the count exact. */
  long long remaining = ps.rem.s >= 0 && ps.rem_num ? strtoll(js + ps.rem.s, NULL, 10) : -1;
  pthread_mutex_lock(&r->mu);
  r->st.content_type_used = KIN_CONTENT_JSON;
  if (!pm->cont[0]) r->st.expected_items = r->st.listed_items;
  else if (remaining >= 0) r->st.expected_items = r->st.listed_items + (uint64_t)remaining;
  pthread_mutex_unlock(&r->mu);
  return 0;
}

/* Sends one LIST request; fills *st when it fails. */
static int list_page(kin_reflector *r, const char *rv, long limit, const char *cont, kin__rfl_objs *o,
                     page_meta *pm, kin__rfl_status *st) {
  kin__buf url = {0};
  kin__rfl_url(r, &url);
  if (limit > 0) {
    char lim[24];
    snprintf(lim, sizeof(lim), "%ld", limit);
    kin__rfl_param(&url, "limit", lim);
  }
  if (cont && *cont) kin__rfl_param(&url, "continue", cont);
  else if (rv && *rv) kin__rfl_param(&url, "resourceVersion", rv);
  if (url.oom) {
    kin__buf_free(&url);
    return KIN_ENOMEM;
  }
  /* kube-apiserver honours limit on every LIST but the first page at
   * resourceVersion "0", which its watch cache serves whole (cacher.go's
   * computeListLimit): count items only where limit binds. */
  int rv0 = !(cont && *cont) && rv && !strcmp(rv, "0");
  page_sink sink = {.r = r, .o = o, .from = o->len, .path = url.p,
                    .max_items = limit > 0 && !rv0 ? limit : 0,
                    .cap = kin_client_max_response_bytes(r->client),
                    .pb_mode = r->proto ? -1 : 0};
  kin__list_stream_init(&sink.ls, sink_item, &sink);
  kin_client_request req = {.method = "GET", .path = url.p, .idempotent = 1,
                            .cancel = &r->list_cancel,
                            .accept = r->metadata_only ? LIST_ACCEPT_METADATA
                                      : r->proto       ? LIST_ACCEPT_PROTOBUF
                                                       : NULL,
                            .on_body = sink_body, .body_ud = &sink};
  kin_result res;
  memset(&res, 0, sizeof(res));
  pthread_mutex_lock(&r->mu);
  r->st.pages++;
  pthread_mutex_unlock(&r->mu);
  int rc = kin_client_do(r->client, &req, &res);
  if (sink.breach[0]) {
    rc = st->err = KIN_ETOOBIG;
    st->page_cap = sink.bytes_breach;
    snprintf(st->message, sizeof(st->message), "%s", sink.breach);
  } else if (rc == 0 || sink.ls.err || sink.pb_err[0]) {
    if (rc == 0) rc = finish_page(&sink, pm);
    if (rc) {
      /* what came instead of a list: its type and first words (an HTML
       * page from a proxy, say), as for an error status */
      char what[400];
      if (sink.pb_err[0])
        snprintf(what, sizeof(what), "%s", sink.pb_err);
      else if (sink.ls.env_len && sink.ls.env[0] == '{')
        /* JSON that is no list may be an object (a Secret): no excerpt */
        snprintf(what, sizeof(what), "a JSON body that is not a list (%zu bytes outside items)",
                 sink.ls.env_len);
      else
        kin_http_describe_body(res.code ? res.code : 200, res.content_type, sink.ls.env,
                               sink.ls.env_len, what, sizeof(what));
      snprintf(st->message, sizeof(st->message), "unable to understand list result: %s", what);
    }
  } else {
    st->err = rc;
    st->page_cap = rc == KIN_ETOOBIG; /* the transport's body cap */
    st->code = res.code;
    snprintf(st->reason, sizeof(st->reason), "%s", res.reason ? res.reason : "");
    snprintf(st->message, sizeof(st->message), "%s", res.message ? res.message : "");
    if (res.code) kin__rfl_parse_status(res.body, res.body_len, st);
  }
  kin__buf_free(&url);
  kin_result_free(&res);
  kin__list_stream_free(&sink.ls);
  kin__buf_free(&sink.pb);
  if (sink.pb_meta) kin__pb_list_stream_free(&sink.pbs);
  return rc;
}

static void page_meta_clear(page_meta *pm) {
  free(pm->rv);
  free(pm->cont);
  pm->rv = pm->cont = NULL;
}

/* The continue tokens of one LIST, as 64-bit hashes in an open-addressed
 * set (a repeated token means the server sends the same pages again). */
typedef struct {
  uint64_t *v; /* 0: empty slot */
  size_t cap, len;
} token_set;

static uint64_t token_hash(const char *t) {
  uint64_t h = 1469598103934665603ULL;
  for (; *t; t++) h = (h ^ (unsigned char)*t) * 1099511628211ULL;
  return h ? h : 1;
}

/* Adds t: 0, 1 when it was there already, KIN_ENOMEM. */
static int token_seen(token_set *s, const char *t) {
  if (s->len * 2 + 2 > s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    uint64_t *v = calloc(cap, sizeof(*v));
    if (!v) return KIN_ENOMEM;
    for (size_t i = 0; i < s->cap; i++) {
      if (!s->v[i]) continue;
      size_t j = (size_t)(s->v[i] % cap);
      while (v[j]) j = (j + 1) % cap;
      v[j] = s->v[i];
    }
    free(s->v);
    s->v = v;
    s->cap = cap;
  }
  uint64_t h = token_hash(t);
  size_t j = (size_t)(h % s->cap);
  for (; s->v[j]; j = (j + 1) % s->cap)
    if (s->v[j] == h) return 1;
  s->v[j] = h;
  s->len++;
  return 0;
}

/* Fails the LIST of r (KIN_ETOOBIG) after pages pages: why in st. */
static int loop_breach(kin_reflector *r, kin__rfl_status *st, size_t pages, const char *why) {
  memset(st, 0, sizeof(*st));
  st->err = KIN_ETOOBIG;
  snprintf(st->message, sizeof(st->message), "GET %s%s: %s after %zu pages",
           kin_client_host(r->client), r->path, why, pages);
  return KIN_ETOOBIG;
}

/* The pager: every page from rv with limit into o, the list's RV in *list_rv
 * (malloc'd). *paginated tells whether the server split the result. */
static int pager_pages(kin_reflector *r, const char *rv, long limit, kin__rfl_objs *o, char **list_rv,
                       int *paginated, kin__rfl_status *st, token_set *seen) {
  char *cont = NULL;
  *list_rv = NULL;
  *paginated = 0;
  size_t pages = 0;
  pthread_mutex_lock(&r->mu);
  r->st.listed_items = 0;
  r->st.expected_items = 0;
  pthread_mutex_unlock(&r->mu);
  for (;;) {
    page_meta pm = {NULL, NULL};
    memset(st, 0, sizeof(*st));
    int rc = list_page(r, rv, limit, cont, o, &pm, st);
    if (rc && cont && kin__rfl_is_expired(st)) {
      /* The snapshot of the first page was compacted away: one full list at
       * the RV asked for, instead of pages that would not fit together. */
      kin_log(KIN_LOG_INFO, LOG, "%s: continue token expired after %zu items, listing in full",
              r->name, o->len);
      kin__rfl_objs_clear(o);
      free(cont);
      cont = NULL;
      page_meta_clear(&pm);
      memset(st, 0, sizeof(*st));
      rc = list_page(r, rv, 0, NULL, o, &pm, st);
      if (rc == 0) {
        free(*list_rv);
        *list_rv = pm.rv;
        pm.rv = NULL;
      }
      page_meta_clear(&pm);
      return rc;
    }
    free(cont);
    cont = NULL;
    if (rc) {
      page_meta_clear(&pm);
      return rc;
    }
    if (!*list_rv) {
      *list_rv = pm.rv;
      pm.rv = NULL;
    }
    if (!*pm.cont) {
      page_meta_clear(&pm);
      return 0;
    }
    *paginated = 1;
    cont = pm.cont;
    pm.cont = NULL;
    page_meta_clear(&pm);
    int again = ++pages >= (size_t)r->max_pages ? 0 : token_seen(seen, cont);
    if (pages >= (size_t)r->max_pages || again) {
      char why[96];
      snprintf(why, sizeof(why), again > 0 ? "the server repeated a continue token"
                                 : again < 0 ? "out of memory"
                                             : "more pages than the cap of %ld",
               r->max_pages);
      free(cont);
      return again < 0 ? KIN_ENOMEM : loop_breach(r, st, pages, why);
    }
    if (kin__rfl_stopping(r)) {
      free(cont);
      return KIN_ECANCELED;
    }
  }
}

/* pager_pages with the set of continue tokens seen. */
static int pager_list(kin_reflector *r, const char *rv, long limit, kin__rfl_objs *o, char **list_rv,
                      int *paginated, kin__rfl_status *st) {
  token_set seen = {NULL, 0, 0};
  int rc = pager_pages(r, rv, limit, o, list_rv, paginated, st, &seen);
  free(seen.v);
  return rc;
}

/* The page size for a list at rv: client-go lists at an exact RV unpaged
 * so the watch cache can serve it, unless paging was asked for or the
 * first list showed the server pages anyway. */
static long page_size(kin_reflector *r, const char *rv) {
  if (r->page_size < 0) return 0;
  if (r->page_size > 0) return r->page_size;
  if (r->paginated_result || !*rv || !strcmp(rv, "0")) return KIN_REFLECTOR_PAGE_SIZE;
  return 0;
}

int kin__rfl_list(kin_reflector *r) {
  pthread_mutex_lock(&r->mu);
  r->st.lists++;
  char *rv = strdup(r->rv_unavailable || r->whole_too_big ? "" : *r->last_rv ? r->last_rv : "0");
  pthread_mutex_unlock(&r->mu);
  if (!rv) return KIN_ENOMEM;
  long limit = r->whole_too_big ? KIN_REFLECTOR_PAGE_SIZE : page_size(r, rv);
  kin__rfl_objs o = {NULL, 0, 0};
  r->shard_info_seen = 0;
  char *list_rv = NULL;
  int paginated = 0;
  kin__rfl_status st;
  int rc = pager_list(r, rv, limit, &o, &list_rv, &paginated, &st);
  if (rc && rc != KIN_ECANCELED && (kin__rfl_is_expired(&st) || st.too_large)) {
    /* The RV cannot be served (compacted, or ahead of this server): list
     * the most recent state at once. */
    kin_log(KIN_LOG_INFO, LOG, "%s: list at resourceVersion %s: %ld %s - relisting at \"\"",
            r->name, rv, st.code, st.reason);
    pthread_mutex_lock(&r->mu);
    r->rv_unavailable = 1;
    r->st.relists_expired++;
    pthread_mutex_unlock(&r->mu);
    kin__rfl_objs_clear(&o);
    free(list_rv);
    rc = pager_list(r, "", limit, &o, &list_rv, &paginated, &st);
  }
  if (rc == KIN_ETOOBIG && st.page_cap && r->page_size >= 0 && *rv &&
      (limit == 0 || !strcmp(rv, "0"))) {
    /* Served whole (kube-apiserver's watch cache ignores limit at "0" and
     * at an exact RV) and over the cap: the most recent state in pages,
     * each under the cap, as a consistent list honours limit. From now
     * on every list of this reflector does so. */
    kin_log(KIN_LOG_INFO, LOG, "%s: %s - listing at \"\" in pages of %d from now on", r->name,
            st.message, KIN_REFLECTOR_PAGE_SIZE);
    r->whole_too_big = 1;
    kin__rfl_objs_clear(&o);
    free(list_rv);
    list_rv = NULL;
    rc = pager_list(r, "", KIN_REFLECTOR_PAGE_SIZE, &o, &list_rv, &paginated, &st);
  }
  if (rc == 0 && !strcmp(rv, "0") && paginated) r->paginated_result = 1;
  free(rv);
  if (rc) {
    if (rc != KIN_ECANCELED && st.code)
      kin_log(KIN_LOG_WARN, LOG, "%s: failed to list: %ld %s%s%s", r->name, st.code, st.reason,
              st.message[0] ? ": " : "", st.message[0] ? st.message : kin_strerror(rc));
    else if (rc != KIN_ECANCELED) /* no answer: the transport error ("GET https://...: TLS: ...") */
      kin_log(KIN_LOG_WARN, LOG, "%s: failed to list: %s", r->name,
              st.message[0] ? st.message : kin_strerror(rc));
    kin__rfl_objs_clear(&o);
    free(list_rv);
    return rc;
  }
  pthread_mutex_lock(&r->mu);
  r->rv_unavailable = 0;
  pthread_mutex_unlock(&r->mu);
  /* before the Replace: whoever sees the informer synced sees whether the
   * server filtered too */
  kin__rfl_shard_listed(r, r->shard_info_seen, r->path);
  rc = r->reshard_round ? kin__delta_fifo_replace_changed(r->fifo, o.v, o.len, list_rv)
                        : kin__delta_fifo_replace_prepared(r->fifo, o.v, o.len, list_rv);
  if (rc == 0) r->reshard_round = 0; /* a later relist (410, a new round) is client-go's */
  if (rc)
    kin_log(KIN_LOG_WARN, LOG, "%s: unable to sync list result: %s", r->name, kin_strerror(rc));
  pthread_mutex_lock(&r->mu);
  if (rc == 0) {
    kin__rfl_set_rv_locked(r, list_rv);
    r->st.synced = 1;
  }
  pthread_mutex_unlock(&r->mu);
  kin__rfl_objs_clear(&o);
  free(list_rv);
  return rc;
}
