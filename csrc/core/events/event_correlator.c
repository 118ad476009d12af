/* event_correlator.c -- client-go's EventCorrelator (event_correlator.h):
 * the aggregator, the logger and the spam filter, each over an LRU cache
 * of at most max_entries keys. Pure: no I/O, no clock, no lock (one owner). */
#include "event_correlator.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "hmap.h"
#include "kin.h"

/* ---- a small LRU: hmap from key to node, nodes in a list, newest first ---- */

typedef struct lru_node {
  struct lru_node *prev, *next;
  char *key; /* the map's own copy is separate; this one is for eviction */
  void *val;
} lru_node;

typedef struct {
  kin__hmap map; /* key -> lru_node* */
  lru_node *head, *tail;
  unsigned max;
  void (*free_val)(void *);
} lru;

static void lru_unlink(lru *l, lru_node *n) {
  if (n->prev) n->prev->next = n->next; else l->head = n->next;
  if (n->next) n->next->prev = n->prev; else l->tail = n->prev;
  n->prev = n->next = NULL;
}

static void lru_push_front(lru *l, lru_node *n) {
  n->prev = NULL;
  n->next = l->head;
  if (l->head) l->head->prev = n;
  l->head = n;
  if (!l->tail) l->tail = n;
}

/* Returns the value under key (marking it most recently used) or NULL. */
static void *lru_get(lru *l, const char *key) {
  void **p = kin__hmap_get(&l->map, key);
  if (!p) return NULL;
  lru_node *n = *p;
  lru_unlink(l, n);
  lru_push_front(l, n);
  return n->val;
}

/* Stores val (owned by the cache from now on, also on failure) under a key
 * that is not there yet, evicting the least recently used key when full.
 * Returns 0 or KIN_ENOMEM. */
static int lru_add(lru *l, const char *key, void *val) {
  lru_node *n = calloc(1, sizeof(*n));
  char *k = strdup(key);
  if (!n || !k || kin__hmap_put(&l->map, key, n, NULL) < 0) {
    free(n);
    free(k);
    l->free_val(val);
    return KIN_ENOMEM;
  }
  n->key = k;
  n->val = val;
  lru_push_front(l, n);
  if (kin__hmap_len(&l->map) > l->max) {
    lru_node *old = l->tail;
    lru_unlink(l, old);
    kin__hmap_del(&l->map, old->key, NULL);
    l->free_val(old->val);
    free(old->key);
    free(old);
  }
  return 0;
}

static void lru_free(lru *l) {
  while (l->head) {
    lru_node *n = l->head;
    lru_unlink(l, n);
    l->free_val(n->val);
    free(n->key);
    free(n);
  }
  kin__hmap_free(&l->map);
}

/* ---- cache values ------------------------------------------------------- */

#define MAX_SIMILAR_CAP 64

/* aggregateRecord: the distinct messages seen (a set of at most
 * max_similar) and when the last similar event came. */
typedef struct {
  char *msgs[MAX_SIMILAR_CAP];
  unsigned n;
  uint64_t last_ns;
} agg_rec;

/* eventLog: the Event a key was last written as. */
typedef struct {
  unsigned count;
  uint64_t first_ns;
  char *name;
} log_rec;

/* spamRecord: a passive token bucket. */
typedef struct {
  double tokens;
  uint64_t last_ns;
} spam_rec;

static void agg_free(void *p) {
  agg_rec *a = p;
  if (!a) return;
  for (unsigned i = 0; i < a->n; i++) free(a->msgs[i]);
  free(a);
}

static void log_free(void *p) {
  log_rec *r = p;
  if (!r) return;
  free(r->name);
  free(r);
}

struct kin__event_correlator {
  kin__event_correlator_opts o;
  lru agg, log, spam;
};

kin__event_correlator *kin__event_correlator_new(const kin__event_correlator_opts *opts) {
  kin__event_correlator *c = calloc(1, sizeof(*c));
  if (!c) return NULL;
  if (opts) c->o = *opts;
  if (!c->o.max_similar) c->o.max_similar = 10;
  if (c->o.max_similar > MAX_SIMILAR_CAP) c->o.max_similar = MAX_SIMILAR_CAP;
  if (!c->o.interval_ns) c->o.interval_ns = 600 * KIN_NSEC_PER_SEC;
  if (!c->o.spam_burst) c->o.spam_burst = 25;
  if (!c->o.spam_refill_ns) c->o.spam_refill_ns = 300 * KIN_NSEC_PER_SEC;
  if (!c->o.max_entries) c->o.max_entries = 4096;
  lru *all[] = {&c->agg, &c->log, &c->spam};
  void (*frees[])(void *) = {agg_free, log_free, free};
  for (int i = 0; i < 3; i++) {
    kin__hmap_init(&all[i]->map);
    all[i]->max = c->o.max_entries;
    all[i]->free_val = frees[i];
  }
  return c;
}

void kin__event_correlator_free(kin__event_correlator *c) {
  if (!c) return;
  lru_free(&c->agg);
  lru_free(&c->log);
  lru_free(&c->spam);
  free(c);
}

void kin__event_out_free(kin__event_out *o) {
  if (!o) return;
  free(o->name);
  free(o->message);
  memset(o, 0, sizeof(*o));
}

/* ---- keys ----------------------------------------------------------------- */

static const char *s(const char *v) { return v ? v : ""; }

/* Appends each part followed by a separator byte that cannot appear in
 * names (0x1f), so "a"+"bc" and "ab"+"c" differ. */
static void key_part(kin__buf *b, const char *v) {
  kin__buf_puts(b, s(v));
  kin__buf_add(b, "\x1f", 1);
}

/* getSpamKey: source and object. */
static void spam_key(kin__buf *b, const kin__event_in *ev) {
  const kin_event_ref *r = ev->ref;
  key_part(b, ev->component);
  key_part(b, ev->host);
  key_part(b, r->kind);
  key_part(b, r->namespace_);
  key_part(b, r->name);
  key_part(b, r->uid);
  key_part(b, r->api_version);
}

/* EventAggregatorByReasonFunc's aggregate key: source, object, type, reason. */
static void agg_key(kin__buf *b, const kin__event_in *ev) {
  spam_key(b, ev);
  key_part(b, ev->type);
  key_part(b, ev->reason);
}

/* getEventKey: source, object (with fieldPath), type, reason, message. */
static void event_key(kin__buf *b, const kin__event_in *ev) {
  agg_key(b, ev);
  key_part(b, ev->ref->field_path);
  key_part(b, ev->message);
}

/* ---- the three steps ------------------------------------------------------ */

/* EventAggregate: returns 1 when ev is to be combined (then the key is the
 * aggregate key), 0 when it stays itself, KIN_ENOMEM. */
static int aggregate(kin__event_correlator *c, const char *akey, const char *msg,
                     uint64_t now_ns) {
  agg_rec *a = lru_get(&c->agg, akey);
  if (a && a->last_ns + c->o.interval_ns < now_ns) {
    /* older than the interval: start over */
    for (unsigned i = 0; i < a->n; i++) free(a->msgs[i]);
    a->n = 0;
  }
  if (!a) {
    a = calloc(1, sizeof(*a));
    if (!a) return KIN_ENOMEM;
    if (lru_add(&c->agg, akey, a)) return KIN_ENOMEM;
  }
  a->last_ns = now_ns;
  int seen = 0;
  for (unsigned i = 0; i < a->n && !seen; i++) seen = !strcmp(a->msgs[i], msg);
  if (!seen) {
    char *m = strdup(msg);
    if (!m) return KIN_ENOMEM;
    a->msgs[a->n++] = m;
  }
  if (a->n < c->o.max_similar) return 0;
  /* keep the set below the maximum (client-go's localKeys.PopAny) */
  free(a->msgs[--a->n]);
  return 1;
}

/* The name client-go gives a new Event: "<object name>.<unix ns in hex>". */
static char *event_name(const char *obj, uint64_t now_ns) {
  char *n = NULL;
  if (asprintf(&n, "%s.%" PRIx64, obj, now_ns) < 0) return NULL;
  return n;
}

/* eventObserve: fills out's repeat, name, count, first_ns. Returns 0 or
 * KIN_ENOMEM. */
static int observe(kin__event_correlator *c, const char *key, const kin__event_in *ev,
                   uint64_t now_ns, kin__event_out *out) {
  log_rec *r = lru_get(&c->log, key);
  if (r) {
    r->count++;
    out->repeat = 1;
    out->count = r->count;
    out->first_ns = r->first_ns;
    out->name = strdup(r->name);
    return out->name ? 0 : KIN_ENOMEM;
  }
  r = calloc(1, sizeof(*r));
  if (!r) return KIN_ENOMEM;
  r->count = 1;
  r->first_ns = now_ns;
  r->name = event_name(ev->ref->name, now_ns);
  out->name = r->name ? strdup(r->name) : NULL;
  if (!out->name) {
    log_free(r);
    return KIN_ENOMEM;
  }
  out->repeat = 0;
  out->count = 1;
  out->first_ns = now_ns;
  return lru_add(&c->log, key, r);
}

/* EventSourceObjectSpamFilter.Filter: returns 1 to skip. */
static int spam_filtered(kin__event_correlator *c, const char *key, uint64_t now_ns, int *err) {
  spam_rec *r = lru_get(&c->spam, key);
  if (!r) {
    r = malloc(sizeof(*r));
    if (!r || lru_add(&c->spam, key, r)) {
      *err = KIN_ENOMEM;
      return 0;
    }
    r->tokens = c->o.spam_burst;
    r->last_ns = now_ns;
  }
  if (now_ns > r->last_ns) {
    r->tokens += (double)(now_ns - r->last_ns) / (double)c->o.spam_refill_ns;
    if (r->tokens > c->o.spam_burst) r->tokens = c->o.spam_burst;
    r->last_ns = now_ns;
  }
  if (r->tokens >= 1.0) {
    r->tokens -= 1.0;
    return 0;
  }
  return 1;
}

int kin__event_correlate(kin__event_correlator *c, const kin__event_in *ev, uint64_t now_ns,
                         kin__event_out *out) {
  memset(out, 0, sizeof(*out));
  kin__buf ak = {0}, ek = {0}, sk = {0};
  const char *msg = s(ev->message);
  int rc = 0;
  agg_key(&ak, ev);
  event_key(&ek, ev);
  spam_key(&sk, ev);
  if (ak.oom || ek.oom || sk.oom) {
    rc = KIN_ENOMEM;
    goto done;
  }
  int combined = aggregate(c, ak.p, msg, now_ns);
  if (combined < 0) {
    rc = combined;
    goto done;
  }
  if (combined) {
    if (asprintf(&out->message, "(combined from similar events): %s", msg) < 0) out->message = NULL;
  } else {
    out->message = strdup(msg);
  }
  if (!out->message) {
    rc = KIN_ENOMEM;
    goto done;
  }
  rc = observe(c, combined ? ak.p : ek.p, ev, now_ns, out);
  if (rc) goto done;
  out->last_ns = now_ns;
  int err = 0;
  if (spam_filtered(c, sk.p, now_ns, &err)) {
    kin__event_out_free(out);
    out->skip = 1;
  }
  rc = err;
done:
  kin__buf_free(&ak);
  kin__buf_free(&ek);
  kin__buf_free(&sk);
  if (rc) kin__event_out_free(out);
  return rc;
}
