/* metrics.c -- the registry: families (name, type, label names, buckets)
 * with their children (one per label-value set) in an open-addressing
 * table, collectors, and the scrape that renders both.
 *
 * Locks: r->mu guards r->fams and r->cols (and is held through a whole
 * render, so a removed collector never runs again once removal returned);
 * m->mu guards m's children table and every child's values. Lock order:
 * r->mu before m->mu. */
#include "metrics_int.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"

const double kin_metrics_default_buckets[11] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                 0.5,   1,    2.5,   5,    10};

typedef struct {
  uint64_t hash;
  char **values;    /* nlabels strings */
  double value;     /* counter/gauge */
  uint64_t *counts; /* histogram: per bucket (not cumulative), nbuckets of them */
  uint64_t count;   /* histogram */
  double sum;       /* histogram */
} child;

struct kin_metric {
  /* immutable after registration */
  char *name, *help;
  kin_metric_type type;
  char **labels;
  int nlabels;
  double *bounds;
  int nbounds;

  pthread_mutex_t mu;
  child **slots; /* open addressing, cap a power of two, at most half full */
  size_t cap, n;
  child *solo; /* the one child of a metric without labels, once made */
};

typedef struct {
  int id;
  kin_metrics_collect_fn fn;
  void *ud;
  void (*free_ud)(void *);
} collector;

struct kin_metrics_registry {
  pthread_mutex_t mu;
  kin_metric **fams;
  size_t nfams, capfams;
  collector *cols;
  size_t ncols, capcols;
  int next_id;
};

int kin_metrics_registry_new(kin_metrics_registry **out) {
  kin_metrics_registry *r = calloc(1, sizeof *r);
  if (!r) return KIN_ENOMEM;
  pthread_mutex_init(&r->mu, NULL);
  *out = r;
  return 0;
}

static kin_metrics_registry *default_reg;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static void make_default(void) { kin_metrics_registry_new(&default_reg); }

kin_metrics_registry *kin_metrics_default(void) {
  pthread_once(&default_once, make_default);
  return default_reg;
}

/* Doubles the array *p of *cap elements of size sz (16 when empty).
 * Returns the new array (also stored in *p), or NULL with *p unchanged. */
static void *grow(void *p, size_t *cap, size_t sz) {
  size_t n = *cap ? *cap * 2 : 16;
  void *q = realloc(p, n * sz);
  if (q) *cap = n;
  return q;
}

static void free_strv(char **v, int n) {
  if (!v) return;
  for (int i = 0; i < n; i++) free(v[i]);
  free(v);
}

static void family_free(kin_metric *m) {
  for (size_t i = 0; i < m->cap; i++) {
    child *c = m->slots[i];
    if (!c) continue;
    free_strv(c->values, m->nlabels);
    free(c->counts);
    free(c);
  }
  free(m->slots);
  free(m->name);
  free(m->help);
  free_strv(m->labels, m->nlabels);
  free(m->bounds);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

void kin_metrics_registry_free(kin_metrics_registry *r) {
  if (!r) return;
  for (size_t i = 0; i < r->nfams; i++) family_free(r->fams[i]);
  for (size_t i = 0; i < r->ncols; i++)
    if (r->cols[i].free_ud) r->cols[i].free_ud(r->cols[i].ud);
  free(r->fams);
  free(r->cols);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

/* ---- registration ----------------------------------------------------- */

static int valid_name(const char *s, int colon) {
  if (!s || !*s) return 0;
  for (const char *p = s; *p; p++) {
    char ch = *p;
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
             (colon && ch == ':') || (p > s && ch >= '0' && ch <= '9');
    if (!ok) return 0;
  }
  return 1;
}

static int fail(char *msg, size_t msglen, int rc, const char *fmt, ...) {
  if (msg && msglen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msglen, fmt, ap);
    va_end(ap);
  }
  return rc;
}

static int check_opts(const kin_metric_opts *o, char *msg, size_t msglen) {
  if (!valid_name(o->name, 1))
    return fail(msg, msglen, KIN_EINVAL, "invalid metric name \"%s\"", o->name ? o->name : "");
  if (o->type != KIN_METRIC_COUNTER && o->type != KIN_METRIC_GAUGE &&
      o->type != KIN_METRIC_HISTOGRAM)
    return fail(msg, msglen, KIN_EINVAL, "%s: unknown metric type", o->name);
  if (o->nlabels < 0 || o->nlabels > KIN_METRIC_MAX_LABELS || (o->nlabels && !o->labels))
    return fail(msg, msglen, KIN_EINVAL, "%s: at most %d labels", o->name, KIN_METRIC_MAX_LABELS);
  for (int i = 0; i < o->nlabels; i++) {
    const char *l = o->labels[i];
    if (!valid_name(l, 0) || strncmp(l, "__", 2) == 0)
      return fail(msg, msglen, KIN_EINVAL, "%s: invalid label name \"%s\"", o->name, l ? l : "");
    if (o->type == KIN_METRIC_HISTOGRAM && strcmp(l, "le") == 0)
      return fail(msg, msglen, KIN_EINVAL, "%s: a histogram cannot have a label \"le\"", o->name);
    for (int j = 0; j < i; j++)
      if (strcmp(o->labels[j], l) == 0)
        return fail(msg, msglen, KIN_EINVAL, "%s: label \"%s\" twice", o->name, l);
  }
  if (o->type == KIN_METRIC_HISTOGRAM && o->buckets) {
    if (o->nbuckets < 1 || o->nbuckets > KIN_METRIC_MAX_BUCKETS)
      return fail(msg, msglen, KIN_EINVAL, "%s: 1 to %d buckets", o->name, KIN_METRIC_MAX_BUCKETS);
    for (int i = 0; i < o->nbuckets; i++)
      if (isnan(o->buckets[i]) || (i > 0 && !(o->buckets[i] > o->buckets[i - 1])))
        return fail(msg, msglen, KIN_EINVAL, "%s: buckets must increase strictly", o->name);
  }
  return 0;
}

/* 1 when m has o's shape (o already checked). */
static int same_shape(const kin_metric *m, const kin_metric_opts *o) {
  if (m->type != o->type || m->nlabels != o->nlabels) return 0;
  if (strcmp(m->help, o->help ? o->help : "") != 0) return 0;
  for (int i = 0; i < o->nlabels; i++)
    if (strcmp(m->labels[i], o->labels[i]) != 0) return 0;
  if (m->type != KIN_METRIC_HISTOGRAM) return 1;
  const double *b = o->buckets ? o->buckets : kin_metrics_default_buckets;
  int nb = o->buckets ? o->nbuckets : 11;
  if (nb != m->nbounds) return 0;
  for (int i = 0; i < nb; i++)
    if (b[i] != m->bounds[i]) return 0;
  return 1;
}

static kin_metric *find_locked(kin_metrics_registry *r, const char *name) {
  for (size_t i = 0; i < r->nfams; i++)
    if (strcmp(r->fams[i]->name, name) == 0) return r->fams[i];
  return NULL;
}

kin_metric *kin_metrics_find(kin_metrics_registry *r, const char *name) {
  pthread_mutex_lock(&r->mu);
  kin_metric *m = find_locked(r, name);
  pthread_mutex_unlock(&r->mu);
  return m;
}

static kin_metric *family_new(const kin_metric_opts *o) {
  kin_metric *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  pthread_mutex_init(&m->mu, NULL);
  m->type = o->type;
  m->nlabels = o->nlabels;
  m->name = strdup(o->name);
  m->help = strdup(o->help ? o->help : "");
  int ok = m->name && m->help;
  if (ok && o->nlabels && (m->labels = calloc((size_t)o->nlabels, sizeof(char *)))) {
    for (int i = 0; i < o->nlabels; i++) ok = ok && (m->labels[i] = strdup(o->labels[i]));
  } else if (o->nlabels) {
    ok = 0;
  }
  if (ok && o->type == KIN_METRIC_HISTOGRAM) {
    const double *b = o->buckets ? o->buckets : kin_metrics_default_buckets;
    m->nbounds = o->buckets ? o->nbuckets : 11;
    if ((m->bounds = malloc((size_t)m->nbounds * sizeof(double))))
      memcpy(m->bounds, b, (size_t)m->nbounds * sizeof(double));
    else
      ok = 0;
  }
  if (!ok) {
    family_free(m);
    return NULL;
  }
  return m;
}

int kin_metrics_register(kin_metrics_registry *r, const kin_metric_opts *o, kin_metric **out,
                         char *msg, size_t msglen) {
  if (msg && msglen) msg[0] = 0;
  if (!r || !o || !out) return KIN_EINVAL;
  int rc = check_opts(o, msg, msglen);
  if (rc) return rc;
  pthread_mutex_lock(&r->mu);
  kin_metric *m = find_locked(r, o->name);
  if (m) {
    rc = same_shape(m, o) ? 0
                          : fail(msg, msglen, KIN_EEXIST,
                                 "metric %s is already registered with another type, help, "
                                 "label names or buckets",
                                 o->name);
  } else {
    void *p = r->nfams < r->capfams ? r->fams : grow(r->fams, &r->capfams, sizeof *r->fams);
    if (p) r->fams = p;
    if (!p || !(m = family_new(o)))
      rc = KIN_ENOMEM;
    else
      r->fams[r->nfams++] = m;
  }
  pthread_mutex_unlock(&r->mu);
  if (rc == 0) *out = m;
  return rc;
}

kin_metric_type kin_metric_get_type(const kin_metric *m) { return m->type; }
int kin_metric_nlabels(const kin_metric *m) { return m->nlabels; }
const char *kin_metric_label(const kin_metric *m, int i) { return m->labels[i]; }
const char *kin_metric_name(const kin_metric *m) { return m->name; }

/* ---- children ------------------------------------------------------------ */

static uint64_t hash_values(const char *const *v, int n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a, a 0xff between values */
  for (int i = 0; i < n; i++) {
    for (const unsigned char *p = (const unsigned char *)(v[i] ? v[i] : ""); *p; p++)
      h = (h ^ *p) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  }
  return h;
}

static int same_values(const child *c, const char *const *v, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(c->values[i], v[i] ? v[i] : "") != 0) return 0;
  return 1;
}

/* The slot of values' child (or the empty slot where it belongs). Under m->mu. */
static child **slot_of(kin_metric *m, const char *const *v, uint64_t h) {
  size_t mask = m->cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    child *c = m->slots[i];
    if (!c || (c->hash == h && same_values(c, v, m->nlabels))) return &m->slots[i];
  }
}

static int grow_children(kin_metric *m) {
  size_t cap = m->cap ? m->cap * 2 : 8;
  child **old = m->slots;
  size_t oldcap = m->cap;
  child **slots = calloc(cap, sizeof *slots);
  if (!slots) return KIN_ENOMEM;
  m->slots = slots;
  m->cap = cap;
  for (size_t i = 0; i < oldcap; i++)
    if (old[i]) *slot_of(m, (const char *const *)old[i]->values, old[i]->hash) = old[i];
  free(old);
  return 0;
}

/* values' child, made when create is set and it is missing; NULL when
 * missing (or on ENOMEM with create). Under m->mu. */
static child *child_of(kin_metric *m, const char *const *v, int create) {
  if (m->solo) return m->solo; /* no labels: no hash, no probe */
  uint64_t h = hash_values(v, m->nlabels);
  child **s = m->cap ? slot_of(m, v, h) : NULL;
  if (s && *s) return *s;
  if (!create) return NULL;
  if ((m->n + 1) * 2 > m->cap) {
    if (grow_children(m)) return NULL;
    s = slot_of(m, v, h);
  }
  child *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->hash = h;
  int ok = 1;
  if (m->nlabels && (c->values = calloc((size_t)m->nlabels, sizeof(char *)))) {
    for (int i = 0; i < m->nlabels; i++) ok = ok && (c->values[i] = strdup(v[i] ? v[i] : ""));
  } else if (m->nlabels) {
    ok = 0;
  }
  if (ok && m->type == KIN_METRIC_HISTOGRAM)
    ok = (c->counts = calloc((size_t)m->nbounds, sizeof(uint64_t))) != NULL;
  if (!ok) {
    free_strv(c->values, m->nlabels);
    free(c);
    return NULL;
  }
  *s = c;
  m->n++;
  if (m->nlabels == 0) m->solo = c;
  return c;
}

static int update(kin_metric *m, const char *const *values, double v, int op) {
  if (!m || isnan(v)) return KIN_EINVAL;
  if (op == 'o' ? m->type != KIN_METRIC_HISTOGRAM
                : op == 's' ? m->type != KIN_METRIC_GAUGE
                            : m->type == KIN_METRIC_HISTOGRAM || (m->type == KIN_METRIC_COUNTER && v < 0))
    return KIN_EINVAL;
  pthread_mutex_lock(&m->mu);
  child *c = child_of(m, values, 1);
  if (c) {
    if (op == 'a') {
      c->value += v;
    } else if (op == 's') {
      c->value = v;
    } else {
      c->count++;
      c->sum += v;
      int i = 0; /* first bound >= v (there are few: a linear scan) */
      while (i < m->nbounds && v > m->bounds[i]) i++;
      if (i < m->nbounds) c->counts[i]++;
    }
  }
  pthread_mutex_unlock(&m->mu);
  return c ? 0 : KIN_ENOMEM;
}

int kin_metric_add(kin_metric *m, const char *const *values, double v) {
  return update(m, values, v, 'a');
}
int kin_metric_set(kin_metric *m, const char *const *values, double v) {
  return update(m, values, v, 's');
}
int kin_metric_observe(kin_metric *m, const char *const *values, double v) {
  return update(m, values, v, 'o');
}

int kin_metric_get(kin_metric *m, const char *const *values, double *v) {
  pthread_mutex_lock(&m->mu);
  child *c = child_of(m, values, 0);
  if (c) *v = m->type == KIN_METRIC_HISTOGRAM ? (double)c->count : c->value;
  pthread_mutex_unlock(&m->mu);
  return c ? 0 : KIN_ENOENT;
}

/* ---- collectors and render ---------------------------------------------- */

int kin_metrics_add_collector(kin_metrics_registry *r, kin_metrics_collect_fn fn, void *ud,
                              void (*free_ud)(void *)) {
  if (!r || !fn) {
    if (free_ud) free_ud(ud);
    return KIN_EINVAL;
  }
  int id = KIN_ENOMEM;
  pthread_mutex_lock(&r->mu);
  void *p = r->ncols < r->capcols ? r->cols : grow(r->cols, &r->capcols, sizeof *r->cols);
  if (p) {
    r->cols = p;
    id = ++r->next_id;
    r->cols[r->ncols++] = (collector){id, fn, ud, free_ud};
  }
  pthread_mutex_unlock(&r->mu);
  if (id < 0 && free_ud) free_ud(ud);
  return id;
}

void kin_metrics_remove_collector(kin_metrics_registry *r, int id) {
  if (!r || id <= 0) return;
  collector gone = {0};
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->ncols; i++) {
    if (r->cols[i].id != id) continue;
    gone = r->cols[i];
    memmove(&r->cols[i], &r->cols[i + 1], (r->ncols - i - 1) * sizeof *r->cols);
    r->ncols--;
    break;
  }
  pthread_mutex_unlock(&r->mu);
  if (gone.free_ud) gone.free_ud(gone.ud);
}

static void emit_family(kin_metric *m, kin_metrics_sink *s) {
  const char *const *ln = (const char *const *)m->labels;
  pthread_mutex_lock(&m->mu);
  if (m->nlabels == 0 && m->n == 0) child_of(m, NULL, 1); /* a plain metric shows 0 */
  uint64_t cum[KIN_METRIC_MAX_BUCKETS];
  for (size_t i = 0; i < m->cap; i++) {
    child *c = m->slots[i];
    if (!c) continue;
    const char *const *lv = (const char *const *)c->values;
    if (m->type != KIN_METRIC_HISTOGRAM) {
      kin_metrics_emit(s, m->name, m->help, m->type, ln, lv, m->nlabels, c->value);
      continue;
    }
    uint64_t acc = 0;
    for (int b = 0; b < m->nbounds; b++) cum[b] = acc += c->counts[b];
    kin_metrics_emit_histogram(s, m->name, m->help, ln, lv, m->nlabels, m->bounds, cum,
                               m->nbounds, c->count, c->sum);
  }
  pthread_mutex_unlock(&m->mu);
}

int kin_metrics_render(kin_metrics_registry *r, char **out, size_t *len) {
  kin_metrics_sink s = {0};
  kin__buf b = {0};
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->nfams; i++) emit_family(r->fams[i], &s);
  for (size_t i = 0; i < r->ncols; i++) r->cols[i].fn(r->cols[i].ud, &s);
  pthread_mutex_unlock(&r->mu);
  int rc = kin__metrics_sink_write(&s, &b);
  kin__metrics_sink_free(&s);
  if (rc == 0 && !b.p) rc = kin__buf_puts(&b, "");
  if (rc) {
    kin__buf_free(&b);
    return rc;
  }
  *out = b.p;
  *len = b.len;
  return 0;
}
