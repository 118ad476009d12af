/* controller_history.c -- the bounded per-key history of a controller
 * (controller_history.h): a hash map from key to a record holding a ring
 * of fixed-size entries, the records on an LRU list for eviction.
 *
 * Recording is on the hot path (every enqueue and every reconcile), so it
 * allocates nothing in the steady state: a record carries its key inline
 * (the map borrows it), and the record evicted to make room for a new key
 * becomes the new key's record, ring and all. The lock is an adaptive
 * mutex (kin_mutex_init_hot) held for a map lookup and a copy. */
#include "controller_history.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "hmap.h"
#include "kin.h"
#include "reconcile.h"

_Static_assert(sizeof(kin_hist_entry) == 128, "history entries are 128 bytes");

#define MIN_RING 4

typedef struct krec krec;
struct krec {
  krec *prev, *next;   /* LRU list: head is the most recent */
  kin_hist_entry *ring;
  uint32_t cap, head, n; /* head: index of the oldest entry */
  uint64_t hash;       /* kin__hash(key) */
  size_t klen, kcap;   /* strlen(key); room in key */
  char key[];          /* the map's key (borrowed by h->map) */
};

struct kin_history {
  pthread_mutex_t mu; /* guards everything below */
  kin__hmap map;      /* key -> krec* (keys borrowed: krec.key) */
  krec *lru_head, *lru_tail;
  int max_entries, max_keys;
  size_t entries, ring_bytes, key_bytes;
  uint64_t evictions;
};

static uint64_t wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int kin_history_new(int max_entries, int max_keys, kin_history **out) {
  *out = NULL;
  kin_history *h = calloc(1, sizeof(*h));
  if (!h) return KIN_ENOMEM;
  if (kin_mutex_init_hot(&h->mu) != 0) {
    free(h);
    return KIN_ENOMEM;
  }
  if (max_entries <= 0) max_entries = KIN_HISTORY_DEFAULT_ENTRIES;
  if (max_entries > 1 << 16) max_entries = 1 << 16;
  int p = MIN_RING;
  while (p < max_entries) p *= 2;
  h->max_entries = p;
  h->max_keys = max_keys > 0 ? max_keys : KIN_HISTORY_DEFAULT_KEYS;
  kin__hmap_init_borrowed(&h->map);
  *out = h;
  return 0;
}

static void rec_free(kin_history *h, krec *r) {
  h->ring_bytes -= (size_t)r->cap * sizeof(kin_hist_entry);
  free(r->ring);
  free(r);
}

void kin_history_free(kin_history *h) {
  if (!h) return;
  for (krec *r = h->lru_head, *nx; r; r = nx) {
    nx = r->next;
    rec_free(h, r);
  }
  kin__hmap_free(&h->map);
  pthread_mutex_destroy(&h->mu);
  free(h);
}

static void lru_unlink(kin_history *h, krec *r) {
  if (r->prev) r->prev->next = r->next;
  else h->lru_head = r->next;
  if (r->next) r->next->prev = r->prev;
  else h->lru_tail = r->prev;
  r->prev = r->next = NULL;
}

static void lru_push(kin_history *h, krec *r) {
  r->next = h->lru_head;
  r->prev = NULL;
  if (h->lru_head) h->lru_head->prev = r;
  h->lru_head = r;
  if (!h->lru_tail) h->lru_tail = r;
}

/* Unlinks the least recently recorded key and returns its record (its
 * ring kept, its entries dropped), or NULL when there is none. */
static krec *evict_one(kin_history *h) {
  krec *r = h->lru_tail;
  if (!r) return NULL;
  lru_unlink(h, r);
  h->entries -= r->n;
  h->key_bytes -= r->klen + 1;
  kin__hmap_del_h(&h->map, r->key, r->klen, r->hash, NULL);
  r->n = r->head = 0;
  h->evictions++;
  return r;
}


/* The record of key (n bytes, hash hv), made when missing: the evicted
 * one when the history is full (reused when its key fits), else a fresh
 * one. NULL when out of memory. Under mu. */
static krec *rec_for(kin_history *h, const char *key, size_t n, uint64_t hv) {
  void **v = kin__hmap_get_h(&h->map, key, n, hv);
  if (v) return *v;
  krec *r = NULL;
  while (kin__hmap_len(&h->map) >= (size_t)h->max_keys) {
    if (r) rec_free(h, r);
    if (!(r = evict_one(h))) break;
  }
  if (r && r->kcap <= n) {
    rec_free(h, r);
    r = NULL;
  }
  if (!r) {
    size_t kcap = (n + 1 + 31) & ~(size_t)31;
    if (!(r = calloc(1, sizeof(*r) + kcap))) return NULL;
    if (!(r->ring = malloc(MIN_RING * sizeof(kin_hist_entry)))) {
      free(r);
      return NULL;
    }
    r->cap = MIN_RING;
    r->kcap = kcap;
    h->ring_bytes += MIN_RING * sizeof(kin_hist_entry);
  }
  memcpy(r->key, key, n + 1);
  r->klen = n;
  r->hash = hv;
  if (kin__hmap_put_h(&h->map, r->key, n, hv, r, NULL) < 0) {
    rec_free(h, r);
    return NULL;
  }
  h->key_bytes += n + 1;
  lru_push(h, r);
  return r;
}

/* Appends e to r's ring: grows it while under the cap, else overwrites
 * the oldest. Returns 0 or KIN_ENOMEM. Under mu. */
static int ring_append(kin_history *h, krec *r, const kin_hist_entry *e, uint64_t now) {
  if (r->n == r->cap && r->cap < (uint32_t)h->max_entries) {
    kin_hist_entry *g = malloc((size_t)r->cap * 2 * sizeof(*g));
    if (!g) return KIN_ENOMEM;
    for (uint32_t i = 0; i < r->n; i++) g[i] = r->ring[(r->head + i) % r->cap];
    free(r->ring);
    h->ring_bytes += (size_t)r->cap * sizeof(*g);
    r->ring = g;
    r->head = 0;
    r->cap *= 2;
  }
  kin_hist_entry *slot;
  if (r->n < r->cap) {
    slot = &r->ring[(r->head + r->n) % r->cap];
    r->n++;
    h->entries++;
  } else {
    slot = &r->ring[r->head];
    r->head = (r->head + 1) % r->cap;
  }
  *slot = *e;
  slot->text[KIN_HIST_TEXT - 1] = 0;
  if (!slot->wall_ns) slot->wall_ns = now;
  return 0;
}

int kin_history_record_n(kin_history *h, const char *key, const kin_hist_entry *e, size_t n) {
  if (!h || !key) return 0;
  /* the clock and the hash before the lock */
  uint64_t now = 0;
  for (size_t i = 0; i < n && !now; i++)
    if (!e[i].wall_ns) now = wall_now();
  size_t klen = strlen(key);
  uint64_t hv = kin__hash(key, klen);
  pthread_mutex_lock(&h->mu);
  krec *r = rec_for(h, key, klen, hv);
  int rc = r ? 0 : KIN_ENOMEM;
  for (size_t i = 0; rc == 0 && i < n; i++) rc = ring_append(h, r, &e[i], now);
  if (r && r != h->lru_head) {
    lru_unlink(h, r);
    lru_push(h, r);
  }
  pthread_mutex_unlock(&h->mu);
  return rc;
}

int kin_history_record(kin_history *h, const char *key, const kin_hist_entry *e) {
  return kin_history_record_n(h, key, e, 1);
}

/* The length of the group starting at v[i]: a reconcile with the writes
 * and the requeue event recorded with it, or one entry. */
static size_t group_len(const kin_hist_entry *v, size_t n, size_t i) {
  if (v[i].type != KIN_HIST_RECONCILE) return 1;
  size_t j = i + 1;
  while (j < n && (v[j].type == KIN_HIST_WRITE || v[j].type == KIN_HIST_DENIAL) &&
         v[j].seq == v[i].seq)
    j++;
  if (j < n && v[j].type == KIN_HIST_EVENT && v[j].seq == v[i].seq &&
      v[j].cause >= KIN_CAUSE_REQUEUE && v[j].cause <= KIN_CAUSE_RETRY)
    j++;
  return j - i;
}

/* Puts the n entries of v in time order: a reconcile is recorded when it
 * ends, so its group moves back before the events recorded while it ran
 * (stable: entries with equal times keep their order). Returns 0 or
 * KIN_ENOMEM (v unchanged). */
static int chronological(kin_hist_entry *v, size_t n) {
  size_t *start = malloc(n * sizeof(*start)), ng = 0;
  kin_hist_entry *tmp = malloc(n * sizeof(*tmp));
  if (!start || !tmp) {
    free(start);
    free(tmp);
    return KIN_ENOMEM;
  }
  for (size_t i = 0; i < n; i += group_len(v, n, i)) start[ng++] = i;
  /* insertion sort of the groups by their first entry's time: nearly sorted */
  for (size_t g = 1; g < ng; g++) {
    size_t s = start[g], k = g;
    while (k > 0 && v[start[k - 1]].wall_ns > v[s].wall_ns) {
      start[k] = start[k - 1];
      k--;
    }
    start[k] = s;
  }
  size_t m = 0;
  for (size_t g = 0; g < ng; g++) {
    size_t len = group_len(v, n, start[g]);
    memcpy(&tmp[m], &v[start[g]], len * sizeof(*tmp));
    m += len;
  }
  memcpy(v, tmp, n * sizeof(*v));
  free(start);
  free(tmp);
  return 0;
}

int kin_history_get(kin_history *h, const char *key, kin_hist_entry **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (!h || !key) return 0;
  int rc = 0;
  pthread_mutex_lock(&h->mu);
  void **v = kin__hmap_get(&h->map, key);
  krec *r = v ? *v : NULL;
  if (r && r->n) {
    kin_hist_entry *a = malloc((size_t)r->n * sizeof(*a));
    if (!a) rc = KIN_ENOMEM;
    for (uint32_t i = 0; a && i < r->n; i++) a[i] = r->ring[(r->head + i) % r->cap];
    if (a) {
      *out = a;
      *n = r->n;
    }
  }
  pthread_mutex_unlock(&h->mu);
  if (*out && chronological(*out, *n) < 0) {
    free(*out);
    *out = NULL;
    *n = 0;
    rc = KIN_ENOMEM;
  }
  return rc;
}

void kin_history_each_key(kin_history *h, int (*fn)(void *ud, const char *key, size_t nentries),
                          void *ud) {
  if (!h) return;
  pthread_mutex_lock(&h->mu);
  for (krec *r = h->lru_head; r; r = r->next)
    if (fn(ud, r->key, r->n)) break;
  pthread_mutex_unlock(&h->mu);
}

void kin_history_get_stats(kin_history *h, kin_history_stats *st) {
  memset(st, 0, sizeof(*st));
  if (!h) return;
  pthread_mutex_lock(&h->mu);
  st->keys = kin__hmap_len(&h->map);
  st->entries = h->entries;
  st->bytes = sizeof(*h) + h->ring_bytes + h->key_bytes + st->keys * sizeof(krec) +
              h->map.cap * sizeof(kin__hmap_entry);
  st->evictions = h->evictions;
  st->max_entries = h->max_entries;
  st->max_keys = h->max_keys;
  pthread_mutex_unlock(&h->mu);
}

const char *kin_hist_cause_name(int cause) {
  static const char *const names[] = {"add",     "update",        "delete", "resync", "owner",
                                      "map",     "requeue",       "requeue_after", "retry",
                                      "manual",  "handover"};
  return cause >= 0 && cause <= KIN_CAUSE_HANDOVER ? names[cause] : "?";
}

const char *kin_hist_result_name(int kind) {
  switch (kind) {
  case KIN_RESULT_DONE: return "success";
  case KIN_RESULT_REQUEUE: return "requeue";
  case KIN_RESULT_REQUEUE_AFTER: return "requeue_after";
  case KIN_RESULT_ERROR: return "error";
  case KIN_RESULT_TERMINAL_ERROR: return "terminal";
  default: return "?";
  }
}

/* ---- formatting ------------------------------------------------------------- */

/* "HH:MM:SS.mmm", local time. */
static void clock_text(uint64_t wall_ns, char *buf, size_t cap) {
  time_t s = (time_t)(wall_ns / 1000000000u);
  struct tm tm;
  localtime_r(&s, &tm);
  snprintf(buf, cap, "%02d:%02d:%02d.%03u", tm.tm_hour, tm.tm_min, tm.tm_sec,
           (unsigned)(wall_ns % 1000000000u / 1000000u));
}

/* A duration: "850 us", "3.1 ms", "1.20 s". */
static void dur_text(uint64_t ns, char *buf, size_t cap) {
  double s = (double)ns / 1e9;
  if (s < 1e-3) snprintf(buf, cap, "%.0f us", s * 1e6);
  else if (s < 1.0) snprintf(buf, cap, "%.1f ms", s * 1e3);
  else snprintf(buf, cap, "%.2f s", s);
}

/* A delay: "30s", "1.5s". */
static void delay_text(uint64_t ns, char *buf, size_t cap) {
  if (ns % 1000000000u == 0) snprintf(buf, cap, "%llus", (unsigned long long)(ns / 1000000000u));
  else snprintf(buf, cap, "%gs", (double)ns / 1e9);
}

/* Appends to buf at *used (bounded by cap). */
static void put(char *buf, size_t cap, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t cap, size_t *used, const char *fmt, ...) {
  if (*used >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *used, cap - *used, fmt, ap);
  va_end(ap);
  if (n > 0) *used = *used + (size_t)n < cap ? *used + (size_t)n : cap - 1;
}

size_t kin_hist_format(const kin_hist_entry *v, size_t n, size_t i, char *buf, size_t cap) {
  size_t used = 0;
  if (cap) buf[0] = 0;
  if (i >= n || !cap) return n;
  const kin_hist_entry *e = &v[i];
  char t0[32], t1[32], d[32];
  clock_text(e->wall_ns, t0, sizeof(t0));
  if (e->type == KIN_HIST_EVENT) {
    put(buf, cap, &used, "%s %s: %s", t0, e->pred == KIN_PRED_DROPPED ? "dropped" : "enqueued",
        kin_hist_cause_name(e->cause));
    if (e->cause == KIN_CAUSE_REQUEUE_AFTER) {
      delay_text(e->dur_ns, d, sizeof(d));
      put(buf, cap, &used, " %s", d);
    }
    if (e->cause == KIN_CAUSE_RETRY) put(buf, cap, &used, " after error: %s", e->text);
    else if (e->text[0]) put(buf, cap, &used, " (%s)", e->text);
    return i + 1;
  }
  if (e->type != KIN_HIST_RECONCILE) return i + 1;
  clock_text(e->wall_ns + e->dur_ns, t1, sizeof(t1));
  dur_text(e->dur_ns, d, sizeof(d));
  put(buf, cap, &used, "%s reconcile #%u started (worker %d)\n%s reconcile #%u done in %s: %s", t0,
      (unsigned)e->seq, e->worker + 1, t1, (unsigned)e->seq, d, kin_hist_result_name(e->cause));
  size_t j = i + 1, kept = 0;
  for (; j < n && (v[j].type == KIN_HIST_WRITE || v[j].type == KIN_HIST_DENIAL) && v[j].seq == e->seq;
       j++)
    kept += v[j].type == KIN_HIST_WRITE;
  /* the requeue_after delay is on the event after the writes */
  if (j < n && v[j].seq == e->seq && v[j].type == KIN_HIST_EVENT &&
      v[j].cause == KIN_CAUSE_REQUEUE_AFTER) {
    delay_text(v[j].dur_ns, d, sizeof(d));
    put(buf, cap, &used, " %s", d);
  }
  if (e->text[0]) put(buf, cap, &used, ": %s", e->text);
  for (size_t k = i + 1; k < j; k++) {
    if (v[k].type == KIN_HIST_WRITE) {
      put(buf, cap, &used, "%s%s %u", k == i + 1 ? "; writes: " : ", ", v[k].text,
          (unsigned)v[k].code);
      continue;
    }
    /* a denial: its entries' texts joined, "<webhook>\t<message>" */
    char whole[KIN_HIST_TEXT * KIN_HIST_DENIAL_MAX + 4];
    size_t wl = 0;
    int cut = 0;
    for (; k < j && v[k].type == KIN_HIST_DENIAL; k++) {
      size_t tl = strnlen(v[k].text, sizeof(v[k].text));
      if (wl + tl >= sizeof(whole) - 4) tl = sizeof(whole) - 4 - wl;
      memcpy(whole + wl, v[k].text, tl);
      wl += tl;
      cut = v[k].truncated;
    }
    k--;
    if (cut) memcpy(whole + wl, "...", 3), wl += 3;
    whole[wl] = 0;
    char *tab = strchr(whole, '\t');
    if (tab) *tab = 0;
    put(buf, cap, &used, " denied by admission webhook \"%s\": %s", whole, tab ? tab + 1 : "");
  }
  if (e->code > kept) put(buf, cap, &used, " (+%u more)", (unsigned)(e->code - kept));
  return j;
}

size_t kin_hist_denial(const char *message, uint32_t seq, kin_hist_entry *out, size_t max) {
  static const char head[] = "admission webhook \"", tail[] = "\" denied the request";
  const char *p = message ? strstr(message, head) : NULL;
  if (!p || !max) return 0;
  const char *name = p + sizeof(head) - 1, *q = strstr(name, tail);
  if (!q) return 0;
  const char *msg = q + sizeof(tail) - 1;
  if (msg[0] == ':' && msg[1] == ' ') msg += 2;
  else if (!strncmp(msg, " without explanation", 20)) msg = "(without explanation)";
  /* "<name>\t<msg>" cut into entries of KIN_HIST_TEXT - 1 characters */
  size_t nl = (size_t)(q - name), ml = strlen(msg), total = nl + 1 + ml, off = 0, k = 0;
  for (; k < max && off < total; k++) {
    kin_hist_entry *e = &out[k];
    memset(e, 0, sizeof(*e));
    e->type = KIN_HIST_DENIAL;
    e->seq = seq;
    size_t take = total - off < KIN_HIST_TEXT - 1 ? total - off : KIN_HIST_TEXT - 1;
    for (size_t t = 0; t < take; t++, off++)
      e->text[t] = off < nl ? name[off] : off == nl ? '\t' : msg[off - nl - 1];
    e->text[take] = 0;
  }
  if (off < total) out[k - 1].truncated = 1;
  return k;
}
