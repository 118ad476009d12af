/* reflector_list.c -- the reflector's LIST (client-go's Reflector.list with
 * tools/pager): pages of `limit` items chained by continue tokens, all
 * collected before one Replace, as the pager does; a continue token that
 * expired falls back to one full list at the original resourceVersion.
 *
 * A page is split without a DOM: jsmn finds metadata.resourceVersion,
 * metadata.continue and the span of each item, and each span becomes a
 * kin_obj. Items of typed lists carry no kind/apiVersion (the server
 * omits them); they get the list's, as the dynamic client's
 * UnstructuredList does, so every cached object says what it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_span.h"
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

static char *dup_string(const char *js, const jsmntok_t *t, int i) {
  if (i < 0 || t[i].type != JSMN_STRING) return strdup("");
  return strndup(js + t[i].start, (size_t)(t[i].end - t[i].start));
}

/* Parses item i of the page into *out, giving it the list's kind and
 * apiVersion when it has none. */
static int parse_item(const char *js, const jsmntok_t *t, int n, int i, const char *kind,
                      size_t kind_len, const char *api_version, size_t av_len, kin_obj **out) {
  const char *p = js + t[i].start;
  size_t len = (size_t)(t[i].end - t[i].start);
  if (t[i].type != JSMN_OBJECT) return KIN_EINVAL;
  if (!kind_len || kin__span_get(js, t, n, i, "kind") >= 0) return kin_obj_parse(p, len, out);
  size_t extra = kind_len + av_len + 32;
  char *buf = malloc(len + extra);
  if (!buf) return KIN_ENOMEM;
  int k = snprintf(buf, extra, "{\"kind\":\"%.*s\",\"apiVersion\":\"%.*s\"%s", (int)kind_len, kind,
                   (int)av_len, api_version, t[i].size ? "," : "");
  memcpy(buf + k, p + 1, len - 1);
  int rc = kin_obj_parse(buf, (size_t)k + len - 1, out);
  free(buf);
  return rc;
}

/* Splits one list body into items appended to o and its metadata. */
static int parse_page(kin_reflector *r, const char *js, size_t len, objs *o, page_meta *pm) {
  jsmntok_t *t;
  int n = kin__span_tokenize(js, len, &t);
  if (n < 0) return n;
  int rc = KIN_EINVAL;
  if (t[0].type != JSMN_OBJECT) goto out;
  int md = kin__span_get(js, t, n, 0, "metadata");
  pm->rv = dup_string(js, t, kin__span_get(js, t, n, md, "resourceVersion"));
  pm->cont = dup_string(js, t, kin__span_get(js, t, n, md, "continue"));
  if (!pm->rv || !pm->cont) {
    rc = KIN_ENOMEM;
    goto out;
  }
  /* "PodList" -> "Pod" for the items that lack a kind. */
  const char *kind = "", *av = "";
  size_t kind_len = 0, av_len = 0;
  int kt = kin__span_get(js, t, n, 0, "kind"), at = kin__span_get(js, t, n, 0, "apiVersion");
  if (kt >= 0 && at >= 0 && t[kt].type == JSMN_STRING && t[at].type == JSMN_STRING &&
      t[kt].end - t[kt].start > 4 && !memcmp(js + t[kt].end - 4, "List", 4) &&
      !memchr(js + t[kt].start, '\\', (size_t)(t[kt].end - t[kt].start)) &&
      !memchr(js + t[at].start, '\\', (size_t)(t[at].end - t[at].start))) {
    kind = js + t[kt].start;
    kind_len = (size_t)(t[kt].end - t[kt].start) - 4;
    av = js + t[at].start;
    av_len = (size_t)(t[at].end - t[at].start);
  }
  int items = kin__span_get(js, t, n, 0, "items");
  if (items >= 0 && t[items].type != JSMN_ARRAY) goto out;
  int count = items >= 0 ? t[items].size : 0;
  int i = items + 1;
  for (int k = 0; k < count; k++) {
    kin_obj *obj = NULL;
    rc = parse_item(js, t, n, i, kind, kind_len, av, av_len, &obj);
    if (rc == 0 && (rc = objs_push(o, obj))) kin_obj_unref(obj);
    if (rc) {
      kin_log(KIN_LOG_WARN, LOG, "%s: item %d of a list page cannot be read: %s", r->name, k,
              kin_strerror(rc));
      goto out;
    }
    i = kin__span_skip(t, n, i);
  }
  /* remainingItemCount is an estimate the server may omit (it does with
   * selectors); the last page makes the count exact. */
  int remt = kin__span_get(js, t, n, md, "remainingItemCount");
  long long remaining = remt >= 0 && t[remt].type == JSMN_PRIMITIVE ? strtoll(js + t[remt].start, NULL, 10) : -1;
  pthread_mutex_lock(&r->mu);
  r->st.listed_items += (uint64_t)count;
  if (!pm->cont[0]) r->st.expected_items = r->st.listed_items;
  else if (remaining >= 0) r->st.expected_items = r->st.listed_items + (uint64_t)remaining;
  pthread_mutex_unlock(&r->mu);
  rc = 0;
out:
  free(t);
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
