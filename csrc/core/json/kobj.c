/* kobj.c -- parsing a Kubernetes object into an immutable kin_obj.
 *
 * Parse in three steps: a strict syntax check (json_check.c), jsmn
 * tokenisation into a per-thread token buffer, then a walk over the
 * top-level and metadata members that records spans. Only after the walk,
 * when every size is known, is the single block allocated: header, label
 * pointer table, JSON copy, then the unescaped strings. */
#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#define JSMN_STRICT
#include <jsmn.h>

#include "kobj.h"
#include "json_check.h"
#include "json_str.h"
#include "kin.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct kin_obj {
  atomic_int refs;
  uint8_t kind;
  uint8_t being_deleted;
  uint8_t has_controller;
  uint32_t nlabels;
  int64_t generation;
  kin_obj *last;             /* tombstone: last known state, may be NULL */
  const char *json;
  size_t json_len;
  const char *key, *ns, *name, *uid, *rv, *api_version, *kind_name;
  const char **labels;       /* 2 * nlabels: key, value, key, value... */
  kin_owner_ref controller;
  kin_span labels_span, annotations_span, finalizers_span, spec_span, status_span;
  char data[];
};

/* ---- per-thread token buffer -------------------------------------------
 * Tokenising needs a token array proportional to the input. Keeping one per
 * thread makes parsing allocation-free in steady state; a pthread key frees
 * it when the thread exits. Buffers grown past 1M tokens are released after
 * use so one huge object does not pin memory forever. */
static pthread_key_t tok_key;
static pthread_once_t tok_once = PTHREAD_ONCE_INIT;
static __thread jsmntok_t *tl_toks;
static __thread unsigned tl_cap;
#define TOK_KEEP_MAX (1u << 20)

static void tok_free(void *p) { free(p); }
static void tok_init(void) { pthread_key_create(&tok_key, tok_free); }

static jsmntok_t *tok_reserve(unsigned want) {
  if (want <= tl_cap) return tl_toks;
  jsmntok_t *t = realloc(tl_toks, (size_t)want * sizeof(*t));
  if (!t) return NULL;
  pthread_once(&tok_once, tok_init);
  tl_toks = t;
  tl_cap = want;
  pthread_setspecific(tok_key, t);
  return t;
}

static void tok_trim(void) {
  if (tl_cap > TOK_KEEP_MAX) {
    free(tl_toks);
    tl_toks = NULL;
    tl_cap = 0;
    pthread_setspecific(tok_key, NULL);
  }
}

/* ---- token helpers ------------------------------------------------------ */

/* Byte offset just past token i's own text (strings: past the quote). */
static int raw_end(const jsmntok_t *t) { return t->end + (t->type == JSMN_STRING); }

/* Index of the token after i and everything nested under it (for an object
 * key: after its value). */
static int next_sibling(const jsmntok_t *t, int n, int i) {
  int e = (t[i].type == JSMN_STRING && t[i].size == 1 && i + 1 < n) ? raw_end(&t[i + 1])
                                                                     : raw_end(&t[i]);
  int j = i + 1;
  while (j < n && t[j].start < e) j++;
  return j;
}

static int key_is(const char *js, const jsmntok_t *k, const char *name, size_t len) {
  return k->type == JSMN_STRING && (size_t)(k->end - k->start) == len &&
         memcmp(js + k->start, name, len) == 0;
}
#define KEY_IS(js, k, lit) key_is(js, k, lit, sizeof(lit) - 1)

/* A string field found during the walk: its token, or -1. */
typedef struct {
  int tok;
} sfield;

typedef struct {
  sfield name, ns, uid, rv, api_version, kind, dts;
  sfield own_api_version, own_kind, own_name, own_uid;
  int has_controller;
  int gen_tok;
  int labels_tok, annotations_tok, finalizers_tok, spec_tok, status_tok;
  int nlabels;
} walk;

static int value_string(const jsmntok_t *t, int v) {
  return t[v].type == JSMN_STRING ? v : -1;
}

static void walk_owner_refs(const char *js, const jsmntok_t *t, int n, int arr, walk *w) {
  int i = arr + 1;
  for (int k = 0; k < t[arr].size && i < n; k++) {
    int ref = i;
    i = next_sibling(t, n, ref);
    if (t[ref].type != JSMN_OBJECT) continue;
    int is_ctl = 0;
    sfield av = {-1}, kd = {-1}, nm = {-1}, ud = {-1};
    int j = ref + 1;
    for (int m = 0; m < t[ref].size && j < n; m++) {
      int v = j + 1;
      if (KEY_IS(js, &t[j], "controller"))
        is_ctl = t[v].type == JSMN_PRIMITIVE && js[t[v].start] == 't';
      else if (KEY_IS(js, &t[j], "apiVersion")) av.tok = value_string(t, v);
      else if (KEY_IS(js, &t[j], "kind")) kd.tok = value_string(t, v);
      else if (KEY_IS(js, &t[j], "name")) nm.tok = value_string(t, v);
      else if (KEY_IS(js, &t[j], "uid")) ud.tok = value_string(t, v);
      j = next_sibling(t, n, j);
    }
    if (is_ctl && !w->has_controller) {
      w->has_controller = 1;
      w->own_api_version = av;
      w->own_kind = kd;
      w->own_name = nm;
      w->own_uid = ud;
    }
  }
}

static void walk_metadata(const char *js, const jsmntok_t *t, int n, int md, walk *w) {
  int j = md + 1;
  for (int m = 0; m < t[md].size && j < n; m++) {
    int v = j + 1;
    const jsmntok_t *k = &t[j];
    if (KEY_IS(js, k, "name")) w->name.tok = value_string(t, v);
    else if (KEY_IS(js, k, "namespace")) w->ns.tok = value_string(t, v);
    else if (KEY_IS(js, k, "uid")) w->uid.tok = value_string(t, v);
    else if (KEY_IS(js, k, "resourceVersion")) w->rv.tok = value_string(t, v);
    else if (KEY_IS(js, k, "generation")) w->gen_tok = t[v].type == JSMN_PRIMITIVE ? v : -1;
    else if (KEY_IS(js, k, "deletionTimestamp")) w->dts.tok = value_string(t, v);
    else if (KEY_IS(js, k, "labels")) w->labels_tok = t[v].type == JSMN_OBJECT ? v : -1;
    else if (KEY_IS(js, k, "annotations")) w->annotations_tok = t[v].type == JSMN_OBJECT ? v : -1;
    else if (KEY_IS(js, k, "finalizers")) w->finalizers_tok = t[v].type == JSMN_ARRAY ? v : -1;
    else if (KEY_IS(js, k, "ownerReferences") && t[v].type == JSMN_ARRAY)
      walk_owner_refs(js, t, n, v, w);
    j = next_sibling(t, n, j);
  }
}

/* Copies string token i (unescaped by kin__json_unescape, NUL-terminated)
 * at *cursor and returns it; "" when i < 0. Unescaping never grows the
 * text, so the raw length bounds the output. A \u0000 ends the C string
 * there (json_str.h). A bad escape cannot happen (kin__json_check accepted
 * the document); should it, the raw text is kept. */
static const char *put_str(const char *js, const jsmntok_t *t, int i, char **cursor) {
  if (i < 0) return "";
  char *d = *cursor;
  const char *src = js + t[i].start;
  size_t n = (size_t)(t[i].end - t[i].start), o = n;
  /* most fields have no escape: one memchr, no call (the hot path) */
  if (!memchr(src, '\\', n) || kin__json_unescape(src, n, d, &o) < 0) {
    memcpy(d, src, n);
    o = n;
  }
  d[o] = 0;
  *cursor = d + o + 1;
  return d;
}

static size_t tok_len(const jsmntok_t *t, int i) {
  return i < 0 ? 0 : (size_t)(t[i].end - t[i].start) + 1;
}

static kin_span span_of(const jsmntok_t *t, int i) {
  if (i < 0) return (kin_span){0, 0};
  return (kin_span){(uint32_t)t[i].start, (uint32_t)(t[i].end - t[i].start)};
}

static int64_t parse_int(const char *s, size_t n) {
  int64_t v = 0;
  size_t i = 0;
  int neg = 0;
  if (n && s[0] == '-') { neg = 1; i = 1; }
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
    if (v > (INT64_MAX - 9) / 10) return 0; /* out of range: treat as absent */
    v = v * 10 + (s[i] - '0');
  }
  if (i != n) return 0; /* fractional or exponent: not a generation */
  return neg ? -v : v;
}

static int parse(const char *json, size_t len, int need_name, kin_obj **out) {
  *out = NULL;
  if (!json || len == 0 || len > INT32_MAX) return KIN_EINVAL;
  if (kin__json_check(json, len, NULL) < 0) return KIN_EINVAL;

  unsigned want = (unsigned)(len / 6 + 64);
  jsmntok_t *t = tok_reserve(want > tl_cap ? want : tl_cap);
  if (!t) return KIN_ENOMEM;
  jsmn_parser p;
  jsmn_init(&p);
  int n = jsmn_parse(&p, json, len, t, tl_cap);
  if (n == JSMN_ERROR_NOMEM) {
    /* every token takes at least two bytes of input, so this is enough */
    t = tok_reserve((unsigned)(len / 2 + 64));
    if (!t) return KIN_ENOMEM;
    jsmn_init(&p);
    n = jsmn_parse(&p, json, len, t, tl_cap);
  }
  if (n < 1 || t[0].type != JSMN_OBJECT) {
    tok_trim();
    return KIN_EINVAL;
  }

  walk w;
  memset(&w, 0xff, sizeof(w)); /* every token index -1 */
  w.has_controller = 0;
  w.nlabels = 0;
  int md = -1;
  int j = 1;
  for (int m = 0; m < t[0].size && j < n; m++) {
    int v = j + 1;
    if (KEY_IS(json, &t[j], "metadata")) md = v;
    else if (KEY_IS(json, &t[j], "apiVersion")) w.api_version.tok = value_string(t, v);
    else if (KEY_IS(json, &t[j], "kind")) w.kind.tok = value_string(t, v);
    else if (KEY_IS(json, &t[j], "spec")) w.spec_tok = v;
    else if (KEY_IS(json, &t[j], "status")) w.status_tok = v;
    j = next_sibling(t, n, j);
  }
  if (md >= 0) {
    if (t[md].type != JSMN_OBJECT) {
      tok_trim();
      return KIN_EINVAL;
    }
    walk_metadata(json, t, n, md, &w);
  }
  if (need_name && (w.name.tok < 0 || t[w.name.tok].end == t[w.name.tok].start)) {
    tok_trim();
    return KIN_EINVAL;
  }

  /* Size the block. */
  size_t strbytes = tok_len(t, w.name.tok) + tok_len(t, w.ns.tok) + tok_len(t, w.uid.tok) +
                    tok_len(t, w.rv.tok) + tok_len(t, w.api_version.tok) +
                    tok_len(t, w.kind.tok) + tok_len(t, w.own_api_version.tok) +
                    tok_len(t, w.own_kind.tok) + tok_len(t, w.own_name.tok) +
                    tok_len(t, w.own_uid.tok);
  strbytes += tok_len(t, w.ns.tok) + tok_len(t, w.name.tok) + 1; /* the key */
  int lt = w.labels_tok;
  if (lt >= 0) {
    int k = lt + 1;
    for (int m = 0; m < t[lt].size && k < n; m++) {
      if (t[k + 1].type == JSMN_STRING) {
        w.nlabels++;
        strbytes += tok_len(t, k) + tok_len(t, k + 1);
      }
      k = next_sibling(t, n, k);
    }
  }
  size_t total = sizeof(kin_obj) + (size_t)w.nlabels * 2 * sizeof(char *) + len + 1 + strbytes;
  kin_obj *o = malloc(total);
  if (!o) {
    tok_trim();
    return KIN_ENOMEM;
  }
  memset(o, 0, sizeof(*o));
  atomic_init(&o->refs, 1);
  o->kind = KIN_OBJ_OBJECT;
  o->labels = (const char **)(void *)o->data;
  char *jcopy = o->data + (size_t)w.nlabels * 2 * sizeof(char *);
  memcpy(jcopy, json, len);
  jcopy[len] = 0;
  o->json = jcopy;
  o->json_len = len;
  char *cur = jcopy + len + 1;

  o->name = put_str(json, t, w.name.tok, &cur);
  o->ns = put_str(json, t, w.ns.tok, &cur);
  o->uid = put_str(json, t, w.uid.tok, &cur);
  o->rv = put_str(json, t, w.rv.tok, &cur);
  o->api_version = put_str(json, t, w.api_version.tok, &cur);
  o->kind_name = put_str(json, t, w.kind.tok, &cur);
  if (*o->ns) {
    char *k = cur;
    size_t a = strlen(o->ns), b = strlen(o->name);
    memcpy(k, o->ns, a);
    k[a] = '/';
    memcpy(k + a + 1, o->name, b + 1);
    cur += a + b + 2;
    o->key = k;
  } else {
    o->key = o->name;
  }
  if (w.gen_tok >= 0)
    o->generation = parse_int(json + t[w.gen_tok].start, (size_t)(t[w.gen_tok].end - t[w.gen_tok].start));
  o->being_deleted = w.dts.tok >= 0;
  if (w.has_controller) {
    o->has_controller = 1;
    o->controller.api_version = put_str(json, t, w.own_api_version.tok, &cur);
    o->controller.kind = put_str(json, t, w.own_kind.tok, &cur);
    o->controller.name = put_str(json, t, w.own_name.tok, &cur);
    o->controller.uid = put_str(json, t, w.own_uid.tok, &cur);
  }
  if (lt >= 0) {
    int k = lt + 1;
    uint32_t li = 0;
    for (int m = 0; m < t[lt].size && k < n; m++) {
      if (t[k + 1].type == JSMN_STRING) {
        o->labels[2 * li] = put_str(json, t, k, &cur);
        o->labels[2 * li + 1] = put_str(json, t, k + 1, &cur);
        li++;
      }
      k = next_sibling(t, n, k);
    }
    o->nlabels = li;
  }
  o->labels_span = span_of(t, w.labels_tok);
  o->annotations_span = span_of(t, w.annotations_tok);
  o->finalizers_span = span_of(t, w.finalizers_tok);
  o->spec_span = span_of(t, w.spec_tok);
  o->status_span = span_of(t, w.status_tok);
  tok_trim();
  *out = o;
  return 0;
}

int kin_obj_parse(const char *json, size_t len, kin_obj **out) {
  return parse(json, len, 1, out);
}

int kin_obj_parse_any(const char *json, size_t len, kin_obj **out) {
  return parse(json, len, 0, out);
}

kin_obj *kin_obj_tombstone(const char *key, kin_obj *last) {
  size_t n = strlen(key);
  kin_obj *o = malloc(sizeof(kin_obj) + n + 1);
  if (!o) return NULL;
  memset(o, 0, sizeof(*o));
  atomic_init(&o->refs, 1);
  o->kind = KIN_OBJ_TOMBSTONE;
  memcpy(o->data, key, n + 1);
  o->key = o->data;
  o->last = last ? kin_obj_ref(last) : NULL;
  return o;
}

kin_obj *kin_obj_ref(kin_obj *o) {
  if (o) atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
  return o;
}

void kin_obj_unref(kin_obj *o) {
  if (!o) return;
  if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1) {
    kin_obj_unref(o->last);
    free(o);
  }
}

kin_obj_kind kin_obj_kind_of(const kin_obj *o) { return (kin_obj_kind)o->kind; }
kin_obj *kin_obj_last_state(const kin_obj *o) { return o->last; }

/* Metadata of a tombstone is its last state's. */
static const kin_obj *meta(const kin_obj *o) {
  return o->kind == KIN_OBJ_TOMBSTONE ? o->last : o;
}
#define STR_ACCESSOR(fn, field)                                                \
  const char *fn(const kin_obj *o) {                                           \
    const kin_obj *m = meta(o);                                                \
    return m ? m->field : "";                                                  \
  }
STR_ACCESSOR(kin_obj_namespace, ns)
STR_ACCESSOR(kin_obj_name, name)
STR_ACCESSOR(kin_obj_uid, uid)
STR_ACCESSOR(kin_obj_resource_version, rv)
STR_ACCESSOR(kin_obj_api_version, api_version)
STR_ACCESSOR(kin_obj_kind_name, kind_name)

const char *kin_obj_key(const kin_obj *o) { return o->key; }

int64_t kin_obj_generation(const kin_obj *o) {
  const kin_obj *m = meta(o);
  return m ? m->generation : 0;
}

int kin_obj_being_deleted(const kin_obj *o) {
  const kin_obj *m = meta(o);
  return m ? m->being_deleted : 0;
}

size_t kin_obj_label_count(const kin_obj *o) {
  const kin_obj *m = meta(o);
  return m ? m->nlabels : 0;
}

int kin_obj_label_at(const kin_obj *o, size_t i, const char **k, const char **v) {
  const kin_obj *m = meta(o);
  if (!m || i >= m->nlabels) return KIN_ENOENT;
  *k = m->labels[2 * i];
  *v = m->labels[2 * i + 1];
  return 0;
}

const char *kin_obj_label(const kin_obj *o, const char *k) {
  const kin_obj *m = meta(o);
  if (!m) return NULL;
  for (uint32_t i = 0; i < m->nlabels; i++)
    if (strcmp(m->labels[2 * i], k) == 0) return m->labels[2 * i + 1];
  return NULL;
}

const kin_owner_ref *kin_obj_controller_ref(const kin_obj *o) {
  const kin_obj *m = meta(o);
  return m && m->has_controller ? &m->controller : NULL;
}

const char *kin_obj_json(const kin_obj *o, size_t *len) {
  const kin_obj *m = meta(o);
  if (len) *len = m ? m->json_len : 0;
  return m ? m->json : NULL;
}

#define SPAN_ACCESSOR(fn, field)                                               \
  kin_span fn(const kin_obj *o) {                                              \
    const kin_obj *m = meta(o);                                                \
    return m ? m->field : (kin_span){0, 0};                                    \
  }
SPAN_ACCESSOR(kin_obj_labels_span, labels_span)
SPAN_ACCESSOR(kin_obj_annotations_span, annotations_span)
SPAN_ACCESSOR(kin_obj_finalizers_span, finalizers_span)
SPAN_ACCESSOR(kin_obj_spec_span, spec_span)
SPAN_ACCESSOR(kin_obj_status_span, status_span)
