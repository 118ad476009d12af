/* wl_util.c -- the workload controllers' shared helpers (wl.h): the
 * keyed work queue, owner references, label selectors, integers and
 * percents, the sim's wall time, conditions and the template hash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "wl.h"

/* ---- the work queue ---- */

void kin__simwl_queue_add_all(kin__simwl_queue *q, kin__simctl *m, const char *group,
                              const char *resource, int (*match)(void *ud, const json_t *obj),
                              uint64_t due) {
  json_t *all = kin__simctl_list(m, group, resource, NULL, match, NULL);
  size_t i;
  json_t *o;
  json_array_foreach(all, i, o) {
    char key[512];
    kin__simwl_key_of(o, key, sizeof(key));
    kin__simwl_queue_add(q, key, due);
  }
  json_decref(all);
}

/* qsort order of C strings. */
static int by_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

void kin__simwl_queue_add(kin__simwl_queue *q, const char *key, uint64_t due) {
  void **v = kin__hmap_get(&q->map, key);
  if (v) {
    uint64_t *d = *v;
    if (due < *d) *d = due;
    return;
  }
  uint64_t *d = malloc(sizeof(*d));
  if (!d) return;
  *d = due;
  if (kin__hmap_put(&q->map, key, d, NULL) != 1) free(d);
}

char **kin__simwl_queue_take(kin__simwl_queue *q, uint64_t now, size_t *n) {
  *n = 0;
  size_t cnt = 0, pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&q->map, &pos)))
    if (*(uint64_t *)e->val <= now) cnt++;
  if (!cnt) return NULL;
  char **out = malloc(cnt * sizeof(*out));
  if (!out) return NULL;
  pos = 0;
  while ((e = kin__hmap_next(&q->map, &pos)) && *n < cnt) {
    if (*(uint64_t *)e->val > now) continue;
    char *k = strdup(e->key);
    if (k) out[(*n)++] = k;
  }
  for (size_t i = 0; i < *n; i++) {
    void *old = NULL;
    kin__hmap_del(&q->map, out[i], &old);
    free(old);
  }
  /* in key order: the controllers work the same way every run */
  qsort(out, *n, sizeof(*out), by_str);
  return out;
}

uint64_t kin__simwl_queue_next(const kin__simwl_queue *q) {
  uint64_t next = KIN__SIMCTL_NEVER;
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&q->map, &pos)))
    if (*(uint64_t *)e->val < next) next = *(uint64_t *)e->val;
  return next;
}

void kin__simwl_queue_free(kin__simwl_queue *q) {
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&q->map, &pos))) free(e->val);
  kin__hmap_free(&q->map);
}

void kin__simwl_strv_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

/* ---- objects ---- */

const char *kin__simwl_key_split(const char *key, char *ns, size_t cap) {
  const char *slash = strchr(key, '/');
  size_t n = slash ? (size_t)(slash - key) : 0;
  if (!cap) return slash ? slash + 1 : key;
  if (n >= cap) n = cap - 1;
  memcpy(ns, key, n);
  ns[n] = 0;
  return slash ? slash + 1 : key;
}

void kin__simwl_key_of(const json_t *obj, char *out, size_t cap) {
  const char *ns = kin__sim_jstr(obj, "metadata", "namespace");
  const char *name = kin__sim_jstr(obj, "metadata", "name");
  if (ns && *ns)
    snprintf(out, cap, "%s/%s", ns, name ? name : "");
  else
    snprintf(out, cap, "%s", name ? name : "");
}

const json_t *kin__simwl_controller_ref(const json_t *obj) {
  const json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
  size_t i;
  const json_t *r;
  json_array_foreach(refs, i, r) {
    if (json_is_true(json_object_get(r, "controller"))) return r;
  }
  return NULL;
}

int kin__simwl_owner_key(const json_t *obj, const char *kind, char *out, size_t cap) {
  const json_t *r = kin__simwl_controller_ref(obj);
  const char *k = kin__sim_jstr(r, "kind", NULL);
  const char *name = kin__sim_jstr(r, "name", NULL);
  if (!k || !name || strcmp(k, kind)) return 0;
  const char *ns = kin__sim_jstr(obj, "metadata", "namespace");
  snprintf(out, cap, "%s/%s", ns ? ns : "", name);
  return 1;
}

/* The list filter of kin__simwl_list_owned: controller uid == ud. */
static int owned_match(void *ud, const json_t *obj) {
  const char *uid = kin__sim_jstr(kin__simwl_controller_ref(obj), "uid", NULL);
  return uid && !strcmp(uid, ud);
}

json_t *kin__simwl_list_owned(kin__simctl *m, const char *group, const char *resource,
                              const char *ns, const char *uid) {
  return kin__simctl_list(m, group, resource, ns, owned_match, (void *)uid);
}

json_t *kin__simwl_owner_ref(const char *api_version, const char *kind, const json_t *owner) {
  return json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "apiVersion", api_version, "kind", kind,
                   "name", kin__sim_jstr(owner, "metadata", "name"), "uid",
                   kin__sim_jstr(owner, "metadata", "uid"), "controller", 1,
                   "blockOwnerDeletion", 1);
}

/* 1 when one expression of matchExpressions holds for labels. */
static int expr_match(const json_t *e, const json_t *labels) {
  const char *key = kin__sim_jstr(e, "key", NULL);
  const char *op = kin__sim_jstr(e, "operator", NULL);
  if (!key || !op) return 0;
  const char *v = kin__sim_jstr(labels, key, NULL);
  if (!strcmp(op, "Exists")) return v != NULL;
  if (!strcmp(op, "DoesNotExist")) return v == NULL;
  int in = 0;
  size_t i;
  const json_t *x;
  json_array_foreach(json_object_get(e, "values"), i, x) {
    if (v && json_is_string(x) && !strcmp(json_string_value(x), v)) in = 1;
  }
  if (!strcmp(op, "In")) return in;
  if (!strcmp(op, "NotIn")) return !in;
  return 0;
}

int kin__simwl_selector_match(const json_t *sel, const json_t *labels) {
  if (!json_is_object(sel)) return 0;
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)json_object_get(sel, "matchLabels"), k, v) {
    const char *have = kin__sim_jstr(labels, k, NULL);
    if (!have || !json_is_string(v) || strcmp(have, json_string_value(v))) return 0;
  }
  size_t i;
  const json_t *e;
  json_array_foreach(json_object_get(sel, "matchExpressions"), i, e) {
    if (!expr_match(e, labels)) return 0;
  }
  return 1;
}

json_int_t kin__simwl_int(const json_t *obj, const char *k1, const char *k2, json_int_t dflt) {
  const json_t *v = json_object_get(obj, k1);
  if (k2) v = json_object_get(v, k2);
  return json_is_integer(v) ? json_integer_value(v) : dflt;
}

int kin__simwl_int_or_percent(const json_t *v, int total, int round_up, int dflt) {
  if (json_is_integer(v)) return (int)json_integer_value(v);
  if (!json_is_string(v)) return dflt;
  int pct = atoi(json_string_value(v));
  long prod = (long)pct * total;
  return (int)(round_up ? (prod + 99) / 100 : prod / 100);
}

/* ---- time ---- */

time_t kin__simwl_parse_time(const char *s) {
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  if (!s || sscanf(s, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                   &tm.tm_min, &tm.tm_sec) != 6)
    return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return timegm(&tm);
}

void kin__simwl_fmt_time(time_t t, char out[32]) {
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

time_t kin__simwl_now(kin__simctl *m) {
  char buf[32];
  kin__simctl_wall_rfc3339(m, buf);
  return kin__simwl_parse_time(buf);
}

uint64_t kin__simwl_due_at(kin__simctl *m, uint64_t now_ms, time_t at) {
  time_t now = kin__simwl_now(m);
  if (at <= now) return now_ms;
  /* the wall clock ticks in whole seconds: the second after at */
  return now_ms + (uint64_t)(at - now) * 1000u - (now_ms % 1000u);
}

/* ---- conditions ---- */

json_t *kin__simwl_condition(const json_t *conds, const char *type) {
  size_t i;
  json_t *c;
  json_array_foreach(conds, i, c) {
    const char *t = kin__sim_jstr(c, "type", NULL);
    if (t && !strcmp(t, type)) return c;
  }
  return NULL;
}

void kin__simwl_set_condition(json_t *conds, json_t *cond, const char *now, int time_keys) {
  const char *type = kin__sim_jstr(cond, "type", NULL);
  json_t *cur = kin__simwl_condition(conds, type);
  const char *st = kin__sim_jstr(cond, "status", NULL);
  const char *reason = kin__sim_jstr(cond, "reason", NULL);
  const char *cst = kin__sim_jstr(cur, "status", NULL);
  const char *creason = kin__sim_jstr(cur, "reason", NULL);
  if (cur && cst && st && !strcmp(cst, st) && !strcmp(reason ? reason : "", creason ? creason : "")) {
    json_decref(cond);
    return;
  }
  /* the real order of the fields: type, status, times, reason, message */
  json_t *out = json_pack("{s:s, s:s}", "type", type, "status", st);
  const char *ltt = cur && cst && !strcmp(cst, st) ? kin__sim_jstr(cur, "lastTransitionTime", NULL)
                                                   : NULL;
  if (time_keys == 1) json_object_set_new(out, "lastUpdateTime", json_string(now));
  if (time_keys == 2) json_object_set_new(out, "lastProbeTime", json_string(now));
  json_object_set_new(out, "lastTransitionTime", json_string(ltt ? ltt : now));
  if (reason) json_object_set_new(out, "reason", json_string(reason));
  const char *msg = kin__sim_jstr(cond, "message", NULL);
  if (msg) json_object_set_new(out, "message", json_string(msg));
  json_decref(cond);
  size_t i;
  json_t *c;
  json_array_foreach(conds, i, c) {
    if (c == cur) {
      json_array_remove(conds, i);
      break;
    }
  }
  json_array_append_new(conds, out);
}

/* ---- the template hash ---- */

void kin__simwl_template_hash(const json_t *tmpl, json_int_t collision, char out[16]) {
  char *s = json_dumps(tmpl, JSON_COMPACT | JSON_SORT_KEYS);
  uint32_t h = 2166136261u;
  for (const char *p = s ? s : ""; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  if (collision) {
    char c[24];
    snprintf(c, sizeof(c), "%lld", (long long)collision);
    for (const char *p = c; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  }
  free(s);
  /* apimachinery's rand.SafeEncodeString of the decimal digits */
  static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
  char dec[16];
  snprintf(dec, sizeof(dec), "%u", h);
  size_t i = 0;
  for (; dec[i] && i < 15; i++) out[i] = alnum[(unsigned char)dec[i] % (sizeof(alnum) - 1)];
  out[i] = 0;
}
