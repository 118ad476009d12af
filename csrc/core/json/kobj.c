/* kobj.c -- parsing a Kubernetes object into an immutable kin_obj.
 *
 * One pass over the bytes: the strict syntax check (kin__json_scan,
 * json_check.c) reports members, scalars and containers to a visitor here
 * that keeps the spans of the fields kin_obj exposes (apiVersion, kind,
 * metadata's names, labels, owner references; the spans of labels,
 * annotations, finalizers, spec and status). Only after the pass, when
 * every size is known, is the single block allocated: header, label
 * pointer table, JSON copy, then the unescaped strings. */
#include "kobj.h"
#include "kobj_int.h"
#include "intern.h"
#include "json_check.h"
#include "json_str.h"
#include "kin.h"

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The header, then one block: the controller reference (when there is
 * one), the label table, the strings, the JSON copy. Strings and labels
 * are found by 32-bit offsets into data rather than pointers, which keeps
 * the header at 104 bytes (it was 192; a tombstone keeps its last state at
 * the start of data, and the label table follows the controller reference
 * without an offset of its own), and the strings sit before the
 * JSON so that cutting a member out of the JSON (kin__obj_cut) leaves
 * every offset as it was. */
#define NO_STR UINT32_MAX /* an absent string: "" */
/* An offset with KIN__INTERN_BIT set is an intern.h id instead: the
 * strings many objects repeat (apiVersion, kind, namespace, label keys and
 * values, the controller reference's fields) are kept once per process. */

struct kin_obj {
  atomic_int refs;
  uint8_t kind;
  uint8_t being_deleted;
  uint8_t has_controller;    /* data starts with the kin_owner_ref */
  uint8_t pad_;
  uint32_t nlabels;          /* the table after the controller reference: key, value offsets */
  uint32_t json_off, json_len;
  uint32_t key, ns, name, uid, rv, api_version, kind_name; /* offsets or NO_STR */
  int64_t generation;
  kin_span labels_span, annotations_span, finalizers_span, spec_span, status_span;
  kin_span mf_cut; /* kobj_int.h: bytes to cut to drop metadata.managedFields */
  char data[];
};

static inline const char *str_at(const kin_obj *o, uint32_t off) {
  return off == NO_STR ? "" : (off & KIN__INTERN_BIT) ? kin__intern_str(off) : o->data + off;
}

static inline const uint32_t *label_table(const kin_obj *o) {
  return (const uint32_t *)(const void *)(o->data + (o->has_controller ? sizeof(kin_owner_ref) : 0));
}

/* A tombstone's data: its last known state (may be NULL), then its key. */
static inline kin_obj **last_slot(const kin_obj *o) {
  return (kin_obj **)(void *)(((kin_obj *)o)->data);
}

/* ---- the visitor ------------------------------------------------------
 * A span is a byte range of the input, end exclusive; s < 0: absent. For a
 * string it is the body (still escaped), for anything else the raw text. */
typedef struct {
  int32_t s, e;
} span;
static const span NO_SPAN = {-1, -1};

/* One label whose value is a string: the key's and the value's bodies. */
typedef struct {
  span k, v;
  uint32_t ik, iv; /* intern ids (0: copied), set after the scan */
} label_span;

/* The labels of the object being parsed live in a per-thread array (kept
 * between parses, so steady state allocates nothing; released by a pthread
 * key when the thread exits, and after use when grown past 64k labels). */
static pthread_key_t lab_key;
static pthread_once_t lab_once = PTHREAD_ONCE_INIT;
static __thread label_span *tl_labs;
static __thread size_t tl_labcap;
#define LAB_KEEP_MAX ((size_t)1 << 16)

static void lab_free(void *p) { free(p); }
static void lab_init(void) { pthread_key_create(&lab_key, lab_free); }

static void lab_trim(void) {
  if (tl_labcap > LAB_KEEP_MAX) {
    free(tl_labs);
    tl_labs = NULL;
    tl_labcap = 0;
    pthread_setspecific(lab_key, NULL);
  }
}

/* What a container is, for the fields found in it. */
enum { C_OTHER, C_TOP, C_META, C_LABELS, C_OWNERS, C_OWNER, C_SPAN };

/* The member names that matter, by the container they are found in. */
enum {
  K_OTHER, K_API_VERSION, K_KIND, K_METADATA, K_SPEC, K_STATUS, K_NAME, K_NAMESPACE, K_UID,
  K_RV, K_GENERATION, K_DTS, K_LABELS, K_ANNOTATIONS, K_FINALIZERS, K_OWNER_REFS,
  K_CONTROLLER, K_LABEL, K_MANAGED_FIELDS
};

/* Depths tracked: top object 0, metadata 1, labels and ownerReferences 2,
 * an owner reference 3, its members 4. Deeper containers are all C_OTHER. */
#define TRACK 6

typedef struct {
  kin__json_visitor vis; /* first: the callbacks get &vis */
  const char *js;
  int ctype[TRACK];      /* what the container at each depth is */
  int key[TRACK];        /* the member being read at each depth (K_*) */
  span *span_at[TRACK];  /* C_SPAN: the span its close completes */
  int top_ok, md_bad, bad;
  span api_version, kind, spec, status;
  span name, ns, uid, rv, gen, dts, labels, annotations, finalizers;
  span cur_av, cur_kind, cur_name, cur_uid; /* the owner reference being read */
  int cur_ctl;
  int has_controller;
  span own_av, own_kind, own_name, own_uid;
  span label_key;        /* the label whose value comes next */
  size_t nlabels;
  /* In the first metadata object: the end of its last member's value
   * (quote included), and for its first managedFields member the key's
   * opening quote, the value's end and the next key's opening quote. */
  int md_count;
  int32_t md_val_end, mf_key, mf_end, mf_next;
} scan;

#define KEY_EQ(js, sp, lit) \
  ((size_t)((sp).e - (sp).s) == sizeof(lit) - 1 && memcmp((js) + (sp).s, lit, sizeof(lit) - 1) == 0)

/* Which member a name is, in a container of type ct. Names are compared
 * as written (escaped), as kube-apiserver's own output always is. */
static int classify(const char *js, int ct, span k) {
  switch (ct) {
  case C_TOP:
    if (KEY_EQ(js, k, "metadata")) return K_METADATA;
    if (KEY_EQ(js, k, "apiVersion")) return K_API_VERSION;
    if (KEY_EQ(js, k, "kind")) return K_KIND;
    if (KEY_EQ(js, k, "spec")) return K_SPEC;
    if (KEY_EQ(js, k, "status")) return K_STATUS;
    return K_OTHER;
  case C_META:
    if (KEY_EQ(js, k, "name")) return K_NAME;
    if (KEY_EQ(js, k, "namespace")) return K_NAMESPACE;
    if (KEY_EQ(js, k, "uid")) return K_UID;
    if (KEY_EQ(js, k, "resourceVersion")) return K_RV;
    if (KEY_EQ(js, k, "generation")) return K_GENERATION;
    if (KEY_EQ(js, k, "deletionTimestamp")) return K_DTS;
    if (KEY_EQ(js, k, "labels")) return K_LABELS;
    if (KEY_EQ(js, k, "annotations")) return K_ANNOTATIONS;
    if (KEY_EQ(js, k, "finalizers")) return K_FINALIZERS;
    if (KEY_EQ(js, k, "ownerReferences")) return K_OWNER_REFS;
    if (KEY_EQ(js, k, "managedFields")) return K_MANAGED_FIELDS;
    return K_OTHER;
  case C_OWNER:
    if (KEY_EQ(js, k, "controller")) return K_CONTROLLER;
    if (KEY_EQ(js, k, "apiVersion")) return K_API_VERSION;
    if (KEY_EQ(js, k, "kind")) return K_KIND;
    if (KEY_EQ(js, k, "name")) return K_NAME;
    if (KEY_EQ(js, k, "uid")) return K_UID;
    return K_OTHER;
  case C_LABELS: return K_LABEL;
  default: return K_OTHER;
  }
}

/* A new metadata object replaces everything an earlier one gave (the last
 * of duplicate members wins, as in Go's decoder). */
static void reset_metadata(scan *sc) {
  sc->name = sc->ns = sc->uid = sc->rv = sc->gen = sc->dts = NO_SPAN;
  sc->labels = sc->annotations = sc->finalizers = NO_SPAN;
  sc->own_av = sc->own_kind = sc->own_name = sc->own_uid = NO_SPAN;
  sc->has_controller = 0;
  sc->nlabels = 0;
}

/* The slot a member's value goes to when it is a string (NULL: none). */
static span *string_slot(scan *sc, int ct, int k) {
  if (ct == C_TOP) return k == K_API_VERSION ? &sc->api_version : k == K_KIND ? &sc->kind : NULL;
  if (ct == C_META) {
    switch (k) {
    case K_NAME: return &sc->name;
    case K_NAMESPACE: return &sc->ns;
    case K_UID: return &sc->uid;
    case K_RV: return &sc->rv;
    case K_DTS: return &sc->dts;
    default: return NULL;
    }
  }
  if (ct == C_OWNER) {
    switch (k) {
    case K_API_VERSION: return &sc->cur_av;
    case K_KIND: return &sc->cur_kind;
    case K_NAME: return &sc->cur_name;
    case K_UID: return &sc->cur_uid;
    default: return NULL;
    }
  }
  return NULL;
}

/* A value at depth d (d >= 1, d < TRACK) of any type: clears what only a
 * value of another type may set. Returns the member's K_* (K_OTHER in an
 * array or an untracked container). */
static int value_seen(scan *sc, size_t d, int is_string) {
  int ct = sc->ctype[d - 1], k = sc->key[d];
  if (ct == C_OWNERS || ct == C_OTHER || ct == C_SPAN) return K_OTHER;
  span *slot = string_slot(sc, ct, k);
  if (slot && !is_string) *slot = NO_SPAN;
  if (ct == C_META) {
    if (k == K_LABELS) sc->labels = NO_SPAN, sc->nlabels = 0;
    else if (k == K_ANNOTATIONS) sc->annotations = NO_SPAN;
    else if (k == K_FINALIZERS) sc->finalizers = NO_SPAN;
    else if (k == K_GENERATION) sc->gen = NO_SPAN;
  } else if (ct == C_OWNER && k == K_CONTROLLER) {
    sc->cur_ctl = 0;
  }
  return k;
}

static void on_key(kin__json_visitor *v, size_t d, size_t s, size_t e) {
  scan *sc = (scan *)v;
  if (d >= TRACK) return;
  span k = {(int32_t)s, (int32_t)e};
  sc->key[d] = classify(sc->js, sc->ctype[d - 1], k);
  if (sc->key[d] == K_LABEL) sc->label_key = k;
  if (d == 2 && sc->ctype[1] == C_META && sc->md_count == 1) {
    if (sc->mf_key >= 0 && sc->mf_next < 0 && sc->mf_end >= 0) sc->mf_next = (int32_t)s - 1;
    if (sc->key[d] == K_MANAGED_FIELDS && sc->mf_key < 0) sc->mf_key = (int32_t)s - 1;
  }
}

/* A member of the first metadata object ended at e (exclusive, closing
 * quote or bracket included). */
static void md_value_end(scan *sc, size_t d, size_t e) {
  if (d != 2 || sc->ctype[1] != C_META || sc->md_count != 1) return;
  if (sc->key[2] == K_MANAGED_FIELDS && sc->mf_end < 0 && sc->mf_key >= 0) sc->mf_end = (int32_t)e;
  else if (sc->mf_key < 0) sc->md_val_end = (int32_t)e;
}

static void on_scalar(kin__json_visitor *v, size_t d, char type, size_t s, size_t e) {
  scan *sc = (scan *)v;
  if (d == 0) {
    sc->bad = 1; /* not an object */
    return;
  }
  if (d >= TRACK) return;
  md_value_end(sc, d, type == '"' ? e + 1 : e);
  span val = {(int32_t)s, (int32_t)e};
  int ct = sc->ctype[d - 1];
  int k = value_seen(sc, d, type == '"');
  if (k == K_OTHER) return;
  span *slot = string_slot(sc, ct, k);
  if (slot) {
    if (type == '"') *slot = val;
    return;
  }
  switch (ct) {
  case C_TOP:
    if (k == K_METADATA) sc->md_bad = 1, sc->md_count++;
    else if (k == K_SPEC) sc->spec = val;
    else if (k == K_STATUS) sc->status = val;
    break;
  case C_META:
    if (k == K_GENERATION && type != '"') sc->gen = val;
    break;
  case C_OWNER:
    if (k == K_CONTROLLER) sc->cur_ctl = type == 't';
    break;
  case C_LABELS:
    if (type == '"') {
      if (sc->nlabels == tl_labcap) {
        size_t cap = tl_labcap ? tl_labcap * 2 : 64;
        label_span *n = realloc(tl_labs, cap * sizeof(*n));
        if (!n) {
          sc->bad = KIN_ENOMEM;
          return;
        }
        pthread_once(&lab_once, lab_init);
        tl_labs = n;
        tl_labcap = cap;
        pthread_setspecific(lab_key, n);
      }
      tl_labs[sc->nlabels++] = (label_span){sc->label_key, val, 0, 0};
    }
    break;
  }
}

static void on_open(kin__json_visitor *v, size_t d, char type, size_t s) {
  scan *sc = (scan *)v;
  if (d == 0) {
    if (type != '{') sc->bad = 1;
    sc->ctype[0] = C_TOP;
    return;
  }
  if (d >= TRACK) return;
  int ct = sc->ctype[d - 1];
  int k = value_seen(sc, d, 0);
  int nt = C_OTHER;
  span *whole = NULL; /* the member's span runs from here to the close */
  if (ct == C_TOP) {
    if (k == K_METADATA) {
      if (type == '{') {
        reset_metadata(sc);
        sc->md_bad = 0;
        sc->md_count++;
        nt = C_META;
      } else {
        sc->md_bad = 1;
        sc->md_count++;
      }
    } else if (k == K_SPEC) {
      whole = &sc->spec;
    } else if (k == K_STATUS) {
      whole = &sc->status;
    }
  } else if (ct == C_META) {
    if (k == K_LABELS && type == '{') nt = C_LABELS, whole = &sc->labels;
    else if (k == K_ANNOTATIONS && type == '{') whole = &sc->annotations;
    else if (k == K_FINALIZERS && type == '[') whole = &sc->finalizers;
    else if (k == K_OWNER_REFS && type == '[') nt = C_OWNERS;
  } else if (ct == C_OWNERS && type == '{') {
    sc->cur_av = sc->cur_kind = sc->cur_name = sc->cur_uid = NO_SPAN;
    sc->cur_ctl = 0;
    nt = C_OWNER;
  }
  if (whole) {
    whole->s = (int32_t)s;
    whole->e = -1;
    if (nt == C_OTHER) nt = C_SPAN;
  }
  sc->ctype[d] = nt;
  sc->span_at[d] = whole;
}

static void on_close(kin__json_visitor *v, size_t d, size_t e) {
  scan *sc = (scan *)v;
  if (d >= TRACK) return;
  md_value_end(sc, d, e);
  if (sc->span_at[d]) sc->span_at[d]->e = (int32_t)e;
  if (sc->ctype[d] == C_OWNER && sc->cur_ctl && !sc->has_controller) {
    sc->has_controller = 1;
    sc->own_av = sc->cur_av;
    sc->own_kind = sc->cur_kind;
    sc->own_name = sc->cur_name;
    sc->own_uid = sc->cur_uid;
  }
}

/* ---- building the object ------------------------------------------------ */

/* Copies the string with body span sp (unescaped by kin__json_unescape,
 * NUL-terminated) at *cursor and returns its offset from base; NO_STR when
 * absent. Unescaping never grows the text, so the raw length bounds the
 * output. A \u0000 ends the C string there (json_str.h). A bad escape
 * cannot happen (the scan accepted the document); should it, the raw text
 * is kept. */
static uint32_t put_str(const char *js, span sp, const char *base, char **cursor) {
  if (sp.s < 0) return NO_STR;
  char *d = *cursor;
  const char *src = js + sp.s;
  size_t n = (size_t)(sp.e - sp.s), o = n;
  /* most fields have no escape: one memchr, no call (the hot path) */
  if (!memchr(src, '\\', n) || kin__json_unescape(src, n, d, &o) < 0) {
    memcpy(d, src, n);
    o = n;
  }
  d[o] = 0;
  *cursor = d + o + 1;
  return (uint32_t)(d - base);
}

static size_t str_len(span sp) { return sp.s < 0 ? 0 : (size_t)(sp.e - sp.s) + 1; }

/* The intern id of a string member as written (0: copy it): only strings
 * without escapes, whose bytes are their value. */
static uint32_t intern_span(const char *js, span sp) {
  if (sp.s < 0 || sp.e <= sp.s) return 0;
  size_t n = (size_t)(sp.e - sp.s);
  return memchr(js + sp.s, '\\', n) ? 0 : kin__intern(js + sp.s, n);
}
/* What a string takes in the block: nothing when interned. */
static size_t str_room(span sp, uint32_t id) { return id ? 0 : str_len(sp); }

static kin_span span_of(span sp) {
  if (sp.s < 0 || sp.e < sp.s) return (kin_span){0, 0};
  return (kin_span){(uint32_t)sp.s, (uint32_t)(sp.e - sp.s)};
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

/* Copies n bytes at p (no escapes) at *cursor, NUL-terminated; returns
 * the offset from base. */
static uint32_t put_raw(const char *p, size_t n, const char *base, char **cursor) {
  char *d = *cursor;
  memcpy(d, p, n);
  d[n] = 0;
  *cursor = d + n + 1;
  return (uint32_t)(d - base);
}

static kin_span span_shift(kin_span sp, uint32_t at, uint32_t by) {
  if (sp.len && sp.off >= at) sp.off += by;
  return sp;
}

/* parse, for an item of a list: la (NULL: none) gives the list's kind and
 * apiVersion, written at the front of the object when it has no kind of its
 * own (kin__obj_parse_item). */
static int parse_as(const char *json, size_t len, int need_name, const kin__list_kind *la,
                    kin_obj **out);

static int parse(const char *json, size_t len, int need_name, kin_obj **out) {
  return parse_as(json, len, need_name, NULL, out);
}

static int parse_as(const char *json, size_t len, int need_name, const kin__list_kind *la,
                    kin_obj **out) {
  *out = NULL;
  if (!json || len == 0 || len > INT32_MAX) return KIN_EINVAL;
  scan sc;
  memset(&sc, 0, sizeof(sc));
  sc.vis.key = on_key;
  sc.vis.scalar = on_scalar;
  sc.vis.open = on_open;
  sc.vis.close = on_close;
  sc.js = json;
  sc.api_version = sc.kind = sc.spec = sc.status = NO_SPAN;
  sc.md_val_end = sc.mf_key = sc.mf_end = sc.mf_next = -1;
  reset_metadata(&sc);
  int r = kin__json_scan(json, len, NULL, &sc.vis);
  if (r == 0 && sc.bad) r = sc.bad < 0 ? sc.bad : KIN_EINVAL;
  if (r == 0 && sc.md_bad) r = KIN_EINVAL;
  if (r == 0 && need_name && (sc.name.s < 0 || sc.name.e == sc.name.s)) r = KIN_EINVAL;
  if (r < 0) {
    lab_trim();
    return r;
  }

  /* An item without a kind gets the list's: "kind":K,"apiVersion":A, right
   * after its opening brace (where the item's own apiVersion, if any, comes
   * later and wins, as with duplicate members everywhere). */
  char pre[2 * KIN_LIST_KIND_MAX + 40];
  size_t plen = 0, brace = 0;
  int inject = la && la->kind_len && sc.kind.s < 0;
  if (inject) {
    while (brace < len && json[brace] != '{') brace++;
    size_t after = brace + 1;
    while (after < len && (json[after] == ' ' || json[after] == '\t' || json[after] == '\n' ||
                           json[after] == '\r'))
      after++;
    /* "kind":"K","apiVersion":"A", and a comma before the item's members
     * (memcpy: snprintf cost 1.3k instructions an item) */
#define PRE_ADD(p, n) (memcpy(pre + plen, (p), (n)), plen += (n))
#define PRE_LIT(lit) PRE_ADD(lit, sizeof(lit) - 1)
    PRE_LIT("\"kind\":\"");
    PRE_ADD(la->kind, la->kind_len);
    PRE_LIT("\",\"apiVersion\":\"");
    PRE_ADD(la->av, la->av_len);
    PRE_LIT("\"");
    if (!(after < len && json[after] == '}')) PRE_LIT(",");
#undef PRE_LIT
#undef PRE_ADD
  }
  int own_av = !inject || sc.api_version.s >= 0;

  /* The strings shared with other objects (intern.h), then the size of
   * the block: the controller reference, the label table, the strings
   * (unescaped, never longer than as written), the JSON. */
  uint32_t i_ns = intern_span(json, sc.ns);
  uint32_t i_av = own_av ? intern_span(json, sc.api_version) : kin__intern(la->av, la->av_len);
  uint32_t i_kind = inject ? kin__intern(la->kind, la->kind_len) : intern_span(json, sc.kind);
  uint32_t i_oav = 0, i_okind = 0, i_oname = 0, i_ouid = 0;
  size_t strbytes = str_room(sc.ns, i_ns) + str_len(sc.uid) + str_len(sc.rv) +
                    (i_av ? 0 : own_av ? str_len(sc.api_version) : la->av_len + 1) +
                    (i_kind ? 0 : inject ? la->kind_len + 1 : str_len(sc.kind));
  strbytes += str_len(sc.ns) + str_len(sc.name) + 1; /* the key, holding the name */
  if (sc.has_controller) {
    i_oav = intern_span(json, sc.own_av);
    i_okind = intern_span(json, sc.own_kind);
    i_oname = intern_span(json, sc.own_name);
    i_ouid = intern_span(json, sc.own_uid);
    strbytes += str_room(sc.own_av, i_oav) + str_room(sc.own_kind, i_okind) +
                str_room(sc.own_name, i_oname) + str_room(sc.own_uid, i_ouid);
  }
  for (size_t i = 0; i < sc.nlabels; i++) {
    label_span *l = &tl_labs[i];
    l->ik = intern_span(json, l->k);
    l->iv = intern_span(json, l->v);
    strbytes += str_room(l->k, l->ik) + str_room(l->v, l->iv);
  }
  size_t head = sc.has_controller ? sizeof(kin_owner_ref) : 0;
  size_t table = sc.nlabels * 2 * sizeof(uint32_t);
  size_t total = sizeof(kin_obj) + head + table + strbytes + len + plen + 1;
  kin_obj *o = total <= INT32_MAX ? malloc(total) : NULL; /* offsets below the intern bit */
  if (!o) {
    lab_trim();
    return KIN_ENOMEM;
  }
  memset(o, 0, sizeof(*o));
  atomic_init(&o->refs, 1);
  o->kind = KIN_OBJ_OBJECT;
  char *base = o->data, *cur = base + head + table;
#define PUT(sp) put_str(json, (sp), base, &cur)
#define PUTI(sp, id) ((id) ? (id) : PUT(sp))
  o->ns = PUTI(sc.ns, i_ns);
  o->uid = PUT(sc.uid);
  o->rv = PUT(sc.rv);
  o->api_version = i_av    ? i_av
                   : own_av ? PUT(sc.api_version)
                            : put_raw(la->av, la->av_len, base, &cur);
  o->kind_name = i_kind   ? i_kind
                 : inject ? put_raw(la->kind, la->kind_len, base, &cur)
                          : PUT(sc.kind);
  /* the key "ns/name" (or "name"), the name being its tail */
  {
    char *k = cur;
    const char *ns = str_at(o, o->ns);
    size_t a = strlen(ns);
    if (a) {
      memcpy(k, ns, a);
      k[a] = '/';
      cur = k + a + 1;
    }
    uint32_t nm = PUT(sc.name);
    if (nm == NO_STR) { /* no name (kin_obj_parse_any): an empty one */
      *cur++ = 0;
      nm = (uint32_t)(cur - 1 - base);
    }
    o->name = nm;
    o->key = (uint32_t)(k - base);
  }
  if (sc.gen.s >= 0) o->generation = parse_int(json + sc.gen.s, (size_t)(sc.gen.e - sc.gen.s));
  o->being_deleted = sc.dts.s >= 0;
  if (sc.has_controller) {
    o->has_controller = 1;
    kin_owner_ref *c = (kin_owner_ref *)(void *)base;
    c->api_version = str_at(o, PUTI(sc.own_av, i_oav));
    c->kind = str_at(o, PUTI(sc.own_kind, i_okind));
    c->name = str_at(o, PUTI(sc.own_name, i_oname));
    c->uid = str_at(o, PUTI(sc.own_uid, i_ouid));
  }
  uint32_t *lt = (uint32_t *)(void *)(base + head);
  for (size_t i = 0; i < sc.nlabels; i++) {
    lt[2 * i] = PUTI(tl_labs[i].k, tl_labs[i].ik);
    lt[2 * i + 1] = PUTI(tl_labs[i].v, tl_labs[i].iv);
    /* an empty key or value is "" at an offset of its own, not NO_STR */
  }
#undef PUTI
#undef PUT
  o->nlabels = (uint32_t)sc.nlabels;
  if (plen) {
    memcpy(cur, json, brace + 1);
    memcpy(cur + brace + 1, pre, plen);
    memcpy(cur + brace + 1 + plen, json + brace + 1, len - brace - 1);
  } else {
    memcpy(cur, json, len);
  }
  cur[len + plen] = 0;
  o->json_off = (uint32_t)(cur - base);
  o->json_len = (uint32_t)(len + plen);
  uint32_t at = (uint32_t)brace + 1, by = (uint32_t)plen;
  o->labels_span = span_shift(span_of(sc.labels), at, by);
  o->annotations_span = span_shift(span_of(sc.annotations), at, by);
  o->finalizers_span = span_shift(span_of(sc.finalizers), at, by);
  o->spec_span = span_shift(span_of(sc.spec), at, by);
  o->status_span = span_shift(span_of(sc.status), at, by);
  if (sc.mf_key >= 0 && sc.mf_end >= 0) {
    /* Not last: up to the next key, which takes the comma along; last:
     * from the end of the previous value, comma included. */
    int32_t from = sc.mf_key, to = sc.mf_end;
    if (sc.mf_next >= 0) to = sc.mf_next;
    else if (sc.md_val_end >= 0) from = sc.md_val_end;
    o->mf_cut = span_shift((kin_span){(uint32_t)from, (uint32_t)(to - from)}, at, by);
  }
  lab_trim();
  *out = o;
  return 0;
}

kin_span kin__obj_managed_fields_cut(const kin_obj *o) {
  return o->kind == KIN_OBJ_OBJECT ? o->mf_cut : (kin_span){0, 0};
}

/* A span of the JSON after the bytes [c.off, c.off + c.len) were cut out:
 * spans lie wholly before or after a cut member. An empty span keeps the
 * offset the parser gave it (a member that is not an object: "spec": ""),
 * so it moves too; an absent one is {0, 0}, before any cut. */
static kin_span shifted(kin_span s, kin_span c) {
  if (s.off >= c.off + c.len) s.off -= c.len;
  return s;
}

int kin__obj_cut(const kin_obj *o, kin_span c, kin_obj **out) {
  *out = NULL;
  if (o->kind != KIN_OBJ_OBJECT || !c.len || (size_t)c.off + c.len > o->json_len) return KIN_EINVAL;
  size_t len = o->json_len - c.len;
  kin_obj *n = malloc(sizeof(kin_obj) + o->json_off + len + 1);
  if (!n) return KIN_ENOMEM;
  /* everything but the count, which other threads may be changing; the
   * strings lie before the JSON, so their offsets stay */
  memcpy((char *)n + offsetof(kin_obj, kind), (const char *)o + offsetof(kin_obj, kind),
         sizeof(kin_obj) - offsetof(kin_obj, kind) + o->json_off);
  atomic_init(&n->refs, 1);
  char *jcopy = n->data + o->json_off;
  const char *js = o->data + o->json_off;
  memcpy(jcopy, js, c.off);
  memcpy(jcopy + c.off, js + c.off + c.len, o->json_len - c.off - c.len);
  jcopy[len] = 0;
  n->json_len = (uint32_t)len;
  if (n->has_controller) { /* its pointers point into o's block */
    kin_owner_ref *dst = (kin_owner_ref *)(void *)n->data;
    const kin_owner_ref *src = (const kin_owner_ref *)(const void *)o->data;
    /* (an interned string, outside the block, stays where it is) */
#define REBASE(f)                                                              \
  if (src->f >= o->data && src->f < o->data + o->json_off) dst->f = n->data + (src->f - o->data)
    REBASE(api_version);
    REBASE(kind);
    REBASE(name);
    REBASE(uid);
#undef REBASE
  }
  n->labels_span = shifted(o->labels_span, c);
  n->annotations_span = shifted(o->annotations_span, c);
  n->finalizers_span = shifted(o->finalizers_span, c);
  n->spec_span = shifted(o->spec_span, c);
  n->status_span = shifted(o->status_span, c);
  n->mf_cut = (kin_span){0, 0};
  *out = n;
  return 0;
}

int kin_obj_parse(const char *json, size_t len, kin_obj **out) {
  return parse(json, len, 1, out);
}

int kin_obj_parse_any(const char *json, size_t len, kin_obj **out) {
  return parse(json, len, 0, out);
}

int kin__obj_parse_item(const char *json, size_t len, const kin__list_kind *la, kin_obj **out) {
  if (la && (la->kind_len > KIN_LIST_KIND_MAX || la->av_len > KIN_LIST_KIND_MAX)) la = NULL;
  return parse_as(json, len, 1, la, out);
}

kin_obj *kin_obj_tombstone(const char *key, kin_obj *last) {
  size_t n = strlen(key);
  kin_obj *o = malloc(sizeof(kin_obj) + sizeof(kin_obj *) + n + 1);
  if (!o) return NULL;
  memset(o, 0, sizeof(*o));
  atomic_init(&o->refs, 1);
  o->kind = KIN_OBJ_TOMBSTONE;
  memcpy(o->data + sizeof(kin_obj *), key, n + 1);
  o->key = sizeof(kin_obj *);
  o->ns = o->name = o->uid = o->rv = o->api_version = o->kind_name = NO_STR;
  *last_slot(o) = last ? kin_obj_ref(last) : NULL;
  return o;
}

kin_obj *kin_obj_ref(kin_obj *o) {
  if (o) atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
  return o;
}

void kin_obj_unref(kin_obj *o) {
  if (!o) return;
  if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1) {
    if (o->kind == KIN_OBJ_TOMBSTONE) kin_obj_unref(*last_slot(o));
    free(o);
  }
}

kin_obj_kind kin_obj_kind_of(const kin_obj *o) { return (kin_obj_kind)o->kind; }
kin_obj *kin_obj_last_state(const kin_obj *o) {
  return o->kind == KIN_OBJ_TOMBSTONE ? *last_slot(o) : NULL;
}

/* Metadata of a tombstone is its last state's. */
static const kin_obj *meta(const kin_obj *o) {
  return o->kind == KIN_OBJ_TOMBSTONE ? *last_slot(o) : o;
}
#define STR_ACCESSOR(fn, field)                                                \
  const char *fn(const kin_obj *o) {                                           \
    const kin_obj *m = meta(o);                                                \
    return m ? str_at(m, m->field) : "";                                       \
  }
STR_ACCESSOR(kin_obj_namespace, ns)
STR_ACCESSOR(kin_obj_name, name)
STR_ACCESSOR(kin_obj_uid, uid)
STR_ACCESSOR(kin_obj_resource_version, rv)
STR_ACCESSOR(kin_obj_api_version, api_version)
STR_ACCESSOR(kin_obj_kind_name, kind_name)

const char *kin_obj_key(const kin_obj *o) { return o->data + o->key; }

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
  const uint32_t *t = label_table(m);
  *k = str_at(m, t[2 * i]);
  *v = str_at(m, t[2 * i + 1]);
  return 0;
}

const char *kin_obj_label(const kin_obj *o, const char *k) {
  const kin_obj *m = meta(o);
  if (!m) return NULL;
  const uint32_t *t = label_table(m);
  for (uint32_t i = 0; i < m->nlabels; i++)
    if (strcmp(str_at(m, t[2 * i]), k) == 0) return str_at(m, t[2 * i + 1]);
  return NULL;
}

const kin_owner_ref *kin_obj_controller_ref(const kin_obj *o) {
  const kin_obj *m = meta(o);
  return m && m->has_controller ? (const kin_owner_ref *)(const void *)m->data : NULL;
}

const char *kin_obj_json(const kin_obj *o, size_t *len) {
  const kin_obj *m = meta(o);
  if (len) *len = m ? m->json_len : 0;
  return m ? m->data + m->json_off : NULL;
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
