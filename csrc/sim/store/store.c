/* store.c -- the storage of kinformer.sim: objects per resource, the
 * global resourceVersion counter (strictly increasing, as etcd's revision)
 * and the bounded event history watches resume from (the watch cache).
 * Every function here runs with kin__sim_store.mu held unless it says
 * otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "store_int.h"

int kin__sim_store_init(kin__sim_store *s, size_t history, uint32_t bookmark_ms) {
  memset(s, 0, sizeof(*s));
  /* The lock first: kin__sim_store_free runs after any failure below. */
  pthread_mutex_init(&s->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cond, &ca);
  pthread_condattr_destroy(&ca);
  s->hcap = history ? history : 10000;
  s->hist = calloc(s->hcap, sizeof(*s->hist));
  if (!s->hist) return KIN_ENOMEM;
  s->bookmark_interval_ms = bookmark_ms ? bookmark_ms : 60000;
  /* rv 1 is the empty store; the first write gets 2. */
  s->rv = 1;
  s->floor = 1;
  return 0;
}

/* Drops one reference; frees the object with the last. */
void kin__sim_obj_unref(kin__sim_obj *o) {
  if (!o || --o->refs > 0) return;
  free(o->pb);
  free(o);
}

static void event_clear(kin__sim_event *e) {
  kin__sim_obj_unref(e->obj);
  kin__sim_obj_unref(e->prev);
  memset(e, 0, sizeof(*e));
}

void kin__sim_store_free(kin__sim_store *s) {
  for (size_t i = 0; i < s->hlen; i++) event_clear(&s->hist[(s->hstart + i) % s->hcap]);
  free(s->hist);
  json_decref(s->write_log);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cond);
}

/* Serializes obj (stolen, released here in every case) with key into one
 * block with one reference; NULL on ENOMEM. The tree is not kept: the
 * bytes are the object from now on. */
kin__sim_obj *kin__sim_obj_new(json_t *obj, uint64_t rv, const char *key) {
  char *raw = json_dumps(obj, JSON_COMPACT);
  json_decref(obj);
  if (!raw) return NULL;
  size_t keylen = strlen(key), rawlen = strlen(raw);
  kin__sim_obj *o = malloc(sizeof(*o) + keylen + 1 + rawlen + 1);
  if (!o) {
    free(raw);
    return NULL;
  }
  memcpy(o->data, key, keylen + 1);
  memcpy(o->data + keylen + 1, raw, rawlen + 1);
  free(raw);
  o->rv = rv;
  o->refs = 1;
  o->rawlen = rawlen;
  o->pb = NULL;
  o->pblen = o->pb_msg_off = o->pb_msg_len = 0;
  o->key = o->data;
  o->raw = o->data + keylen + 1;
  return o;
}

json_t *kin__sim_obj_json(const kin__sim_obj *o) {
  json_error_t jerr;
  /* JSON_ALLOW_NUL: the bytes are a dump, "\u0000" in a string included. */
  return json_loadb(o->raw, o->rawlen, JSON_ALLOW_NUL, &jerr);
}

/* Returns p past the JSON string starting at p (on its opening quote), or
 * NULL when it does not end before end. */
static const char *skip_string(const char *p, const char *end) {
  for (p++; p < end; p++) {
    if (*p == '\\')
      p++;
    else if (*p == '"')
      return p + 1;
  }
  return NULL;
}

/* Returns p past the JSON value starting at p, or NULL when malformed. */
static const char *skip_value(const char *p, const char *end) {
  if (p >= end) return NULL;
  if (*p == '"') return skip_string(p, end);
  if (*p != '{' && *p != '[') {
    while (p < end && *p != ',' && *p != '}' && *p != ']') p++;
    return p;
  }
  int depth = 0;
  while (p < end) {
    if (*p == '"') {
      if (!(p = skip_string(p, end))) return NULL;
      continue;
    }
    if (*p == '{' || *p == '[') depth++;
    if ((*p == '}' || *p == ']') && --depth == 0) return p + 1;
    p++;
  }
  return NULL;
}

const char *kin__sim_raw_member(const char *p, const char *end, const char *name, size_t nlen,
                                const char **vend) {
  /* Jansson's compact dump: no whitespace between tokens, and a member
   * name without escapes written as it is. */
  if (p >= end || *p != '{') return NULL;
  p++;
  while (p < end && *p == '"') {
    const char *k = p + 1, *kend = skip_string(p, end);
    if (!kend || kend >= end || *kend != ':') return NULL;
    const char *v = kend + 1, *ve = skip_value(v, end);
    if (!ve) return NULL;
    if ((size_t)(kend - 1 - k) == nlen && !memcmp(k, name, nlen)) {
      *vend = ve;
      return v;
    }
    p = ve;
    if (p < end && *p == ',') p++;
  }
  return NULL;
}

json_t *kin__sim_obj_member(const kin__sim_obj *o, const char *name) {
  const char *vend, *v = kin__sim_raw_member(o->raw, o->raw + o->rawlen, name, strlen(name), &vend);
  if (!v) return NULL;
  json_error_t jerr;
  return json_loadb(v, (size_t)(vend - v), JSON_ALLOW_NUL, &jerr);
}

const char *kin__sim_event_type_name(int type) {
  return type == KIN__SIM_ADDED ? "ADDED" : type == KIN__SIM_MODIFIED ? "MODIFIED" : "DELETED";
}

/* Appends an event (takes a reference on obj and prev), evicting the
 * oldest when the history is full, and wakes the watchers. Never fails. */
int kin__sim_history_append(kin__sim_store *s, int type, kin__sim_storage *st, kin__sim_obj *obj,
                            kin__sim_obj *prev) {
  if (s->hlen == s->hcap) {
    kin__sim_event *old = &s->hist[s->hstart];
    s->floor = old->rv;
    event_clear(old);
    s->hstart = (s->hstart + 1) % s->hcap;
    s->hlen--;
  }
  kin__sim_event *e = &s->hist[(s->hstart + s->hlen) % s->hcap];
  e->type = type;
  e->st = st;
  e->rv = obj->rv;
  e->obj = obj;
  obj->refs++;
  e->prev = prev;
  if (prev) prev->refs++;
  s->hlen++;
  pthread_cond_broadcast(&s->cond);
  return 0;
}

void kin__sim_store_compact(kin__sim_store *s) {
  while (s->hlen) {
    event_clear(&s->hist[s->hstart]);
    s->hstart = (s->hstart + 1) % s->hcap;
    s->hlen--;
  }
  s->floor = s->rv;
}

static int cmp_obj(const void *a, const void *b) {
  return strcmp((*(kin__sim_obj *const *)a)->key, (*(kin__sim_obj *const *)b)->key);
}

/* Keeps st->sorted equal to the objects sorted by key. */
static int sorted_refresh(kin__sim_storage *st) {
  if (!st->sorted_dirty && (st->sorted || !kin__hmap_len(&st->objects))) return 0;
  size_t n = kin__hmap_len(&st->objects);
  kin__sim_obj **arr = malloc((n ? n : 1) * sizeof(*arr));
  if (!arr) return KIN_ENOMEM;
  size_t pos = 0, i = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&st->objects, &pos))) arr[i++] = e->val;
  qsort(arr, n, sizeof(*arr), cmp_obj);
  free(st->sorted);
  st->sorted = arr;
  st->nsorted = n;
  st->sorted_dirty = 0;
  return 0;
}

/* Rebuilds the state at rv by undoing, newest first, the events of st
 * after rv (ADDED removes, MODIFIED and DELETED restore the previous). */
static kin__sim_obj **snapshot_past(kin__sim_store *s, kin__sim_storage *st, uint64_t rv,
                                    size_t *n) {
  kin__hmap m;
  kin__hmap_init(&m);
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&st->objects, &pos))) kin__hmap_put(&m, e->key, e->val, NULL);
  for (size_t i = s->hlen; i-- > 0;) {
    kin__sim_event *ev = &s->hist[(s->hstart + i) % s->hcap];
    if (ev->rv <= rv) break;
    if (ev->st != st) continue;
    if (ev->type == KIN__SIM_ADDED)
      kin__hmap_del(&m, ev->obj->key, NULL);
    else
      kin__hmap_put(&m, ev->prev->key, ev->prev, NULL);
  }
  size_t cnt = kin__hmap_len(&m), i = 0;
  kin__sim_obj **arr = malloc((cnt ? cnt : 1) * sizeof(*arr));
  if (arr) {
    pos = 0;
    while ((e = kin__hmap_next(&m, &pos))) arr[i++] = e->val;
    qsort(arr, cnt, sizeof(*arr), cmp_obj);
  }
  kin__hmap_free(&m);
  *n = arr ? cnt : 0;
  return arr;
}

kin__sim_obj **kin__sim_store_snapshot(kin__sim_store *s, kin__sim_storage *st, uint64_t rv,
                                       size_t *n, int *too_old) {
  *n = 0;
  *too_old = 0;
  if (rv && rv < s->rv) {
    if (rv < s->floor) {
      *too_old = 1;
      return NULL;
    }
    return snapshot_past(s, st, rv, n);
  }
  if (sorted_refresh(st)) return NULL;
  kin__sim_obj **arr = malloc((st->nsorted ? st->nsorted : 1) * sizeof(*arr));
  if (!arr) return NULL;
  if (st->nsorted) memcpy(arr, st->sorted, st->nsorted * sizeof(*arr));
  *n = st->nsorted;
  return arr;
}

/* ---- the public calls on the store (sim.h) ---- */

uint64_t kin_sim_resource_version(kin_sim *sim) {
  pthread_mutex_lock(&sim->store.mu);
  uint64_t rv = sim->store.rv;
  pthread_mutex_unlock(&sim->store.mu);
  return rv;
}

void kin_sim_compact(kin_sim *sim) {
  pthread_mutex_lock(&sim->store.mu);
  kin__sim_store_compact(&sim->store);
  pthread_mutex_unlock(&sim->store.mu);
}
