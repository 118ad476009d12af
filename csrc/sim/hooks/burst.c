/* burst.c -- a benchmark helper: N updates of existing objects committed
 * in-process, so a watch benchmark measures its clients and not an HTTP
 * writer (a PUT costs a request, a JSON parse and a comparison on top of
 * the commit). Reachable from C (kin_sim_burst_updates) and over HTTP:
 * POST /kinformer-sim/burst {"resource":"v1/configmaps","count":N}. Each
 * update goes through kin__sim_commit under the store lock, as any write. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "kin.h"

#define BURST_ANNOTATION "kinformer-sim/burst"

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Collects the keys of st in ns (NULL or "": all) sorted, as malloc'd
 * copies the caller frees with free_keys; NULL with *n = 0 when there is
 * none or on ENOMEM (*oom set). Caller holds the store lock. */
static char **collect_keys(kin__sim_storage *st, const char *ns, size_t *n, int *oom) {
  size_t cap = kin__hmap_len(&st->objects), cnt = 0, pos = 0, nslen = ns ? strlen(ns) : 0;
  *n = 0;
  *oom = 0;
  if (!cap) return NULL;
  char **keys = malloc(cap * sizeof(*keys));
  if (!keys) {
    *oom = 1;
    return NULL;
  }
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&st->objects, &pos))) {
    if (nslen && (strncmp(e->key, ns, nslen) || e->key[nslen] != '/')) continue;
    if (!(keys[cnt] = strdup(e->key))) {
      *oom = 1;
      break;
    }
    cnt++;
  }
  if (*oom || !cnt) {
    for (size_t i = 0; i < cnt; i++) free(keys[i]);
    free(keys);
    return NULL;
  }
  qsort(keys, cnt, sizeof(*keys), cmp_str);
  *n = cnt;
  return keys;
}

static void free_keys(char **keys, size_t n) {
  for (size_t i = 0; i < n; i++) free(keys[i]);
  free(keys);
}

/* Commits one update of cur: a copy with the burst annotation set to the
 * new resourceVersion, so every update changes the object. Caller holds
 * the store lock. Returns 0 or KIN_ENOMEM. */
static int update_one(kin__sim_store *s, kin__sim_storage *st, kin__sim_obj *cur) {
  json_t *obj = kin__sim_obj_json(cur);
  if (!obj) return KIN_ENOMEM;
  json_t *md = json_object_get(obj, "metadata");
  json_t *ann = json_object_get(md, "annotations");
  if (!json_is_object(ann)) {
    ann = json_object();
    if (!ann || json_object_set_new(md, "annotations", ann)) {
      json_decref(obj);
      return KIN_ENOMEM;
    }
  }
  char v[24];
  snprintf(v, sizeof(v), "%llu", (unsigned long long)(s->rv + 1));
  if (json_object_set_new(ann, BURST_ANNOTATION, json_string(v))) {
    json_decref(obj);
    return KIN_ENOMEM;
  }
  return kin__sim_commit(s, st, KIN__SIM_MODIFIED, obj, cur->key, cur) ? 0 : KIN_ENOMEM;
}

int kin_sim_burst_updates(kin_sim *sim, const char *resource, const char *ns, unsigned count,
                          uint64_t *first_rv, uint64_t *last_rv) {
  if (first_rv) *first_rv = 0;
  if (last_rv) *last_rv = 0;
  if (!resource || !count) return KIN_EINVAL;
  char group[256] = "", version[64], res[256];
  const char *p1 = strchr(resource, '/'), *p2 = p1 ? strchr(p1 + 1, '/') : NULL;
  if (!p1) return KIN_EINVAL;
  if (p2) {
    if (sscanf(resource, "%255[^/]/%63[^/]/%255s", group, version, res) != 3) return KIN_EINVAL;
  } else if (sscanf(resource, "%63[^/]/%255s", version, res) != 2) {
    return KIN_EINVAL;
  }
  kin__sim_store *s = &sim->store;
  pthread_mutex_lock(&s->mu);
  /* No watcher copies anything while the burst holds the lock: a burst
   * larger than the history would expire every watch before it reads. */
  if (count > s->hcap) {
    pthread_mutex_unlock(&s->mu);
    return KIN_EINVAL;
  }
  kin__sim_resource *r = kin__sim_registry_find(s, group, version, res);
  kin__sim_storage *st = r && !r->removed ? r->storage : NULL;
  size_t nkeys = 0;
  int oom = 0;
  char **keys = st ? collect_keys(st, r->namespaced ? ns : NULL, &nkeys, &oom) : NULL;
  int rc = oom ? KIN_ENOMEM : nkeys ? 0 : KIN_ENOENT;
  uint64_t first = 0;
  for (unsigned i = 0; !rc && i < count; i++) {
    /* The lock is held throughout, so every key collected still exists. */
    kin__sim_obj *cur = *kin__hmap_get(&st->objects, keys[i % nkeys]);
    rc = update_one(s, st, cur);
    if (!rc && !first) first = s->rv;
  }
  if (first_rv) *first_rv = first;
  if (last_rv) *last_rv = first ? s->rv : 0;
  pthread_mutex_unlock(&s->mu);
  free_keys(keys, nkeys);
  return rc;
}

/* POST /kinformer-sim/burst {"resource": "[group/]version/resource",
 * "namespace": NS, "count": N}; answers {"resourceVersion":
 * last, "firstResourceVersion": first, "count": N}. */
int kin__sim_handle_burst(kin__sim_req *req, const char *url, enum MHD_Result *ret) {
  if (strcmp(url, "/kinformer-sim/burst")) return 0;
  kin__sim_result out = {0, NULL};
  json_t *b = kin__sim_post_json(req);
  const char *resource = json_string_value(json_object_get(b, "resource"));
  const char *ns = json_string_value(json_object_get(b, "namespace"));
  json_int_t count = json_integer_value(json_object_get(b, "count"));
  if (!json_is_object(b) || !resource || count <= 0 || count > UINT32_MAX) {
    kin__sim_err_bad_request(&out, "POST {\"resource\": \"[group/]version/resource\", "
                                   "\"count\": N > 0} to /kinformer-sim/burst");
  } else {
    uint64_t first = 0, last = 0;
    int rc = kin_sim_burst_updates(req->sim, resource, ns, (unsigned)count, &first,
                                   &last);
    if (rc == KIN_ENOENT) {
      kin__sim_err(&out, 404, "NotFound", NULL, "no %s to update%s%s", resource,
                   ns && *ns ? " in namespace " : "", ns && *ns ? ns : "");
    } else if (rc == KIN_EINVAL) {
      kin__sim_err_bad_request(&out, "resource must be [group/]version/resource and count "
                                     "at most the watch history (%zu)", req->sim->store.hcap);
    } else if (rc) {
      kin__sim_err(&out, 500, "InternalError", NULL, "burst: %s", kin_strerror(rc));
    } else {
      char f[24], l[24];
      snprintf(f, sizeof(f), "%llu", (unsigned long long)first);
      snprintf(l, sizeof(l), "%llu", (unsigned long long)last);
      out.code = 200;
      out.body = json_pack("{s:s, s:s, s:I}", "resourceVersion", l, "firstResourceVersion", f,
                           "count", count);
    }
  }
  json_decref(b);
  *ret = kin__sim_respond_result(req, &out);
  return 1;
}
