/* reflector_list.c -- the reflector's LIST (client-go's Reflector.list with
 * tools/pager): pages of `limit` items chained by continue tokens, all
 * collected before one Replace, as the pager does; a continue token that
 * expired falls back to one full list at the original resourceVersion.
 *
 * A page is split without a DOM: one strict pass (kin__json_scan with a
 * visitor) finds metadata.resourceVersion, metadata.continue and the span
 * of each item, and each span becomes a kin_obj. Items of typed lists carry no kind/apiVersion (the server
 * omits them); they get the list's, as the dynamic client's
 * UnstructuredList does, so every cached object says what it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_check.h"
#include "kin.h"
#include "log.h"
#include "reflector_int.h"

#define LOG "reflector"

#define LIST_ACCEPT_METADATA \
  "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

/* The objects listed so far, owned. */
typedef struct {
  kin_obj **v;
  size_t len, cap;
} objs;

static void objs_clear(objs *o) {
  for (size_t i = 0; i < o->len; i++) kin_obj_unref(o->v[i]);
  free(o->v);
  memset(o, 0, sizeof(*o));
}

static int objs_push(objs *o, kin_obj *obj) {
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

/* One page as read: its RV and continue token (malloc'd, "" when absent). */
typedef struct {
  char *rv;
  char *cont;
} page_meta;

/* A byte range of the page, end exclusive; s < 0: absent. */
typedef struct {
  long s, e;
} pspan;

/* One item of the page: its span (braces included), whether it has a
 * top-level "kind" member and any member at all. */
typedef struct {
  pspan sp;
  int has_kind, has_members;
} item_span;

/* What the page scan keeps. As for the jsmn lookups this replaces, the
 * first of duplicate members counts. */
typedef struct {
  kin__json_visitor vis; /* first: the callbacks get &vis */
  const char *js;
  int bad;               /* 1: not a list; KIN_ENOMEM */
  int key1, key2;        /* the member being read at depth 1 / in metadata */
  int in_md, in_items;   /* inside the (first) metadata object / items array */
  int md_done, items_done, kind_done, av_done; /* the first seen */
  pspan rv, cont, rem, kind, av;
  int rv_str, cont_str, rem_num, kind_str, av_str;
  item_span *items;
  size_t nitems, cap;
  int item_open;
} page_scan;

enum { P_OTHER, P_METADATA, P_KIND, P_API_VERSION, P_ITEMS, P_RV, P_CONTINUE, P_REMAINING };

#define PKEY(js, s, e, lit) ((e) - (s) == sizeof(lit) - 1 && !memcmp((js) + (s), lit, sizeof(lit) - 1))

static void pg_key(kin__json_visitor *v, size_t d, size_t s, size_t e) {
  page_scan *ps = (page_scan *)v;
  const char *js = ps->js;
  if (d == 1) {
    ps->key1 = PKEY(js, s, e, "metadata") ? P_METADATA : PKEY(js, s, e, "kind") ? P_KIND
             : PKEY(js, s, e, "apiVersion") ? P_API_VERSION : PKEY(js, s, e, "items") ? P_ITEMS
             : P_OTHER;
  } else if (d == 2 && ps->in_md) {
    ps->key2 = PKEY(js, s, e, "resourceVersion") ? P_RV : PKEY(js, s, e, "continue") ? P_CONTINUE
             : PKEY(js, s, e, "remainingItemCount") ? P_REMAINING : P_OTHER;
  } else if (d == 3 && ps->item_open) {
    ps->items[ps->nitems].has_members = 1;
    if (PKEY(js, s, e, "kind")) ps->items[ps->nitems].has_kind = 1;
  }
}

/* Records the first value of a member: *done guards the first, *sp takes
 * the span, *is_type whether it had the wanted type. */
static void first(int *done, pspan *sp, int *is_type, int ok, size_t s, size_t e) {
  if (*done) return;
  *done = 1;
  sp->s = (long)s;
  sp->e = (long)e;
  *is_type = ok;
}

/* Appends an item slot; sp.s < 0 marks an item that is no object. */
static item_span *push_item(page_scan *ps, long start) {
  if (ps->nitems == ps->cap) {
    size_t cap = ps->cap ? ps->cap * 2 : 256;
    item_span *n = realloc(ps->items, cap * sizeof(*n));
    if (!n) {
      ps->bad = KIN_ENOMEM;
      return NULL;
    }
    ps->items = n;
    ps->cap = cap;
  }
  item_span *it = &ps->items[ps->nitems];
  *it = (item_span){{start, -1}, 0, 0};
  return it;
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
    if (ps->key1 == P_KIND) first(&ps->kind_done, &ps->kind, &ps->kind_str, type == '"', s, e);
    else if (ps->key1 == P_API_VERSION) first(&ps->av_done, &ps->av, &ps->av_str, type == '"', s, e);
    else if (ps->key1 == P_METADATA) ps->md_done = 1;
    else if (ps->key1 == P_ITEMS && !ps->items_done) ps->bad = 1, ps->items_done = 1;
  } else if (d == 2 && ps->in_md) {
    if (ps->key2 == P_RV) md_first(&ps->rv, &ps->rv_str, type == '"', s, e);
    else if (ps->key2 == P_CONTINUE) md_first(&ps->cont, &ps->cont_str, type == '"', s, e);
    else if (ps->key2 == P_REMAINING) md_first(&ps->rem, &ps->rem_num, type == '0', s, e);
  } else if (d == 2 && ps->in_items) {
    if (push_item(ps, -1)) ps->nitems++; /* no object: reported when read */
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
    } else if (ps->key1 == P_KIND) {
      first(&ps->kind_done, &ps->kind, &ps->kind_str, 0, s, s);
    } else if (ps->key1 == P_API_VERSION) {
      first(&ps->av_done, &ps->av, &ps->av_str, 0, s, s);
    }
  } else if (d == 2 && ps->in_md) {
    /* a container where a scalar belongs: present, of the wrong type */
    if (ps->key2 == P_RV) md_first(&ps->rv, &ps->rv_str, 0, s, s);
    else if (ps->key2 == P_CONTINUE) md_first(&ps->cont, &ps->cont_str, 0, s, s);
    else if (ps->key2 == P_REMAINING) md_first(&ps->rem, &ps->rem_num, 0, s, s);
  } else if (d == 2 && ps->in_items) {
    if (!push_item(ps, type == '{' ? (long)s : -1)) return;
    if (type == '{') ps->item_open = 1;
    else ps->nitems++; /* no object: reported when read */
  }
}

static void pg_close(kin__json_visitor *v, size_t d, size_t e) {
  page_scan *ps = (page_scan *)v;
  if (d == 1) {
    ps->in_md = 0;
    ps->in_items = 0;
  } else if (d == 2 && ps->item_open) {
    ps->items[ps->nitems++].sp.e = (long)e;
    ps->item_open = 0;
  }
}

static char *dup_span(const char *js, pspan sp, int ok) {
  if (sp.s < 0 || !ok) return strdup("");
  return strndup(js + sp.s, (size_t)(sp.e - sp.s));
}

/* Parses one item of the page into *out, giving it the list's kind and
 * apiVersion when it has none. */
static int parse_item(const char *js, const item_span *it, const char *kind, size_t kind_len,
                      const char *api_version, size_t av_len, kin_obj **out) {
  if (it->sp.s < 0) return KIN_EINVAL; /* not an object */
  const char *p = js + it->sp.s;
  size_t len = (size_t)(it->sp.e - it->sp.s);
  if (!kind_len || it->has_kind) return kin_obj_parse(p, len, out);
  size_t extra = kind_len + av_len + 32;
  char *buf = malloc(len + extra);
  if (!buf) return KIN_ENOMEM;
  int k = snprintf(buf, extra, "{\"kind\":\"%.*s\",\"apiVersion\":\"%.*s\"%s", (int)kind_len, kind,
                   (int)av_len, api_version, it->has_members ? "," : "");
  memcpy(buf + k, p + 1, len - 1);
  int rc = kin_obj_parse(buf, (size_t)k + len - 1, out);
  free(buf);
  return rc;
}

/* Splits one list body into items appended to o and its metadata. */
static int parse_page(kin_reflector *r, const char *js, size_t len, objs *o, page_meta *pm) {
  page_scan ps;
  memset(&ps, 0, sizeof(ps));
  ps.vis.key = pg_key;
  ps.vis.scalar = pg_scalar;
  ps.vis.open = pg_open;
  ps.vis.close = pg_close;
  ps.js = js;
  ps.rv = ps.cont = ps.rem = ps.kind = ps.av = (pspan){-1, -1};
  int rc = js && len ? kin__json_scan(js, len, NULL, &ps.vis) : KIN_EINVAL;
  if (rc == 0 && ps.bad) rc = ps.bad < 0 ? ps.bad : KIN_EINVAL;
  if (rc) goto out;
  pm->rv = dup_span(js, ps.rv, ps.rv_str);
  pm->cont = dup_span(js, ps.cont, ps.cont_str);
  if (!pm->rv || !pm->cont) {
    rc = KIN_ENOMEM;
    goto out;
  }
  /* "PodList" -> "Pod" for the items that lack a kind. */
  const char *kind = "", *av = "";
  size_t kind_len = 0, av_len = 0;
  if (ps.kind_str && ps.av_str && ps.kind.e - ps.kind.s > 4 && !memcmp(js + ps.kind.e - 4, "List", 4) &&
      !memchr(js + ps.kind.s, '\\', (size_t)(ps.kind.e - ps.kind.s)) &&
      !memchr(js + ps.av.s, '\\', (size_t)(ps.av.e - ps.av.s))) {
    kind = js + ps.kind.s;
    kind_len = (size_t)(ps.kind.e - ps.kind.s) - 4;
    av = js + ps.av.s;
    av_len = (size_t)(ps.av.e - ps.av.s);
  }
  for (size_t k = 0; k < ps.nitems; k++) {
    kin_obj *obj = NULL;
    rc = parse_item(js, &ps.items[k], kind, kind_len, av, av_len, &obj);
    if (rc == 0 && (rc = objs_push(o, obj))) kin_obj_unref(obj);
    if (rc) {
      kin_log(KIN_LOG_WARN, LOG, "%s: item %zu of a list page cannot be read: %s", r->name, k,
              kin_strerror(rc));
      goto out;
    }
  }
  /* remainingItemCount is an estimate the server may omit (it does with
   * selectors); the last page makes the count exact. */
  long long remaining = ps.rem.s >= 0 && ps.rem_num ? strtoll(js + ps.rem.s, NULL, 10) : -1;
  pthread_mutex_lock(&r->mu);
  r->st.listed_items += (uint64_t)ps.nitems;
  if (!pm->cont[0]) r->st.expected_items = r->st.listed_items;
  else if (remaining >= 0) r->st.expected_items = r->st.listed_items + (uint64_t)remaining;
  pthread_mutex_unlock(&r->mu);
  rc = 0;
out:
  free(ps.items);
  return rc;
}

/* Sends one LIST request; fills *st when it fails. */
static int list_page(kin_reflector *r, const char *rv, long limit, const char *cont, objs *o,
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
  kin_client_request req = {.method = "GET", .path = url.p, .idempotent = 1,
                            .cancel = &r->list_cancel,
                            .accept = r->metadata_only ? LIST_ACCEPT_METADATA : NULL};
  kin_result res;
  memset(&res, 0, sizeof(res));
  pthread_mutex_lock(&r->mu);
  r->st.pages++;
  pthread_mutex_unlock(&r->mu);
  int rc = kin_client_do(r->client, &req, &res);
  kin__buf_free(&url);
  if (rc == 0) {
    rc = parse_page(r, res.body ? res.body : "", res.body_len, o, pm);
    if (rc) snprintf(st->message, sizeof(st->message), "unable to understand list result");
  } else {
    st->err = rc;
    st->code = res.code;
    snprintf(st->reason, sizeof(st->reason), "%s", res.reason ? res.reason : "");
    snprintf(st->message, sizeof(st->message), "%s", res.message ? res.message : "");
    if (res.code) kin__rfl_parse_status(res.body, res.body_len, st);
  }
  kin_result_free(&res);
  return rc;
}

static void page_meta_clear(page_meta *pm) {
  free(pm->rv);
  free(pm->cont);
  pm->rv = pm->cont = NULL;
}

/* The pager: every page from rv with limit into o, the list's RV in *list_rv
 * (malloc'd). *paginated tells whether the server split the result. */
static int pager_list(kin_reflector *r, const char *rv, long limit, objs *o, char **list_rv,
                      int *paginated, kin__rfl_status *st) {
  char *cont = NULL;
  *list_rv = NULL;
  *paginated = 0;
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
      objs_clear(o);
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
    if (kin__rfl_stopping(r)) {
      free(cont);
      return KIN_ECANCELED;
    }
  }
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
  char *rv = strdup(r->rv_unavailable ? "" : *r->last_rv ? r->last_rv : "0");
  pthread_mutex_unlock(&r->mu);
  if (!rv) return KIN_ENOMEM;
  long limit = page_size(r, rv);
  objs o = {NULL, 0, 0};
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
    objs_clear(&o);
    free(list_rv);
    rc = pager_list(r, "", limit, &o, &list_rv, &paginated, &st);
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
    objs_clear(&o);
    free(list_rv);
    return rc;
  }
  pthread_mutex_lock(&r->mu);
  r->rv_unavailable = 0;
  pthread_mutex_unlock(&r->mu);
  rc = kin_delta_fifo_replace(r->fifo, o.v, o.len, list_rv);
  if (rc)
    kin_log(KIN_LOG_WARN, LOG, "%s: unable to sync list result: %s", r->name, kin_strerror(rc));
  pthread_mutex_lock(&r->mu);
  if (rc == 0) {
    kin__rfl_set_rv_locked(r, list_rv);
    r->st.synced = 1;
  }
  pthread_mutex_unlock(&r->mu);
  objs_clear(&o);
  free(list_rv);
  return rc;
}
