/* predicate.c -- controller-runtime's predicates as a tree of nodes (see
 * predicate.h), and the map comparison of labels and annotations. */
#include "predicate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "json_tok.h"
#include "kin.h"
#include "label_selector.h"

struct kin_predicate {
  kin_predicate_kind kind;
  kin_label_selector *selector; /* KIN_PREDICATE_LABEL_SELECTOR */
  size_t n;                     /* children of AND / OR / NOT */
  kin_predicate *child[];
};

static kin_predicate *node_new(kin_predicate_kind kind, size_t n) {
  kin_predicate *p = calloc(1, sizeof(*p) + n * sizeof(p->child[0]));
  if (p) {
    p->kind = kind;
    p->n = n;
  }
  return p;
}

int kin_predicate_new(kin_predicate_kind kind, kin_predicate **out) {
  *out = NULL;
  if (kind > KIN_PREDICATE_ANNOTATION_CHANGED) return KIN_EINVAL;
  *out = node_new(kind, 0);
  return *out ? 0 : KIN_ENOMEM;
}

static const struct {
  const char *name;
  kin_predicate_kind kind;
} names[] = {
    {"generation_changed", KIN_PREDICATE_GENERATION_CHANGED},
    {"resource_version_changed", KIN_PREDICATE_RESOURCE_VERSION_CHANGED},
    {"label_changed", KIN_PREDICATE_LABEL_CHANGED},
    {"labels_changed", KIN_PREDICATE_LABEL_CHANGED},
    {"annotation_changed", KIN_PREDICATE_ANNOTATION_CHANGED},
    {"annotations_changed", KIN_PREDICATE_ANNOTATION_CHANGED},
};

int kin_predicate_from_name(const char *name, kin_predicate **out) {
  *out = NULL;
  for (size_t i = 0; name && i < sizeof(names) / sizeof(names[0]); i++)
    if (strcmp(name, names[i].name) == 0) return kin_predicate_new(names[i].kind, out);
  return KIN_EINVAL;
}

int kin_predicate_label_selector(const char *selector, kin_predicate **out, char *err,
                                 size_t errlen) {
  *out = NULL;
  kin_predicate *p = node_new(KIN_PREDICATE_LABEL_SELECTOR, 0);
  if (!p) return KIN_ENOMEM;
  int rc = kin_label_selector_parse(selector, &p->selector, err, errlen);
  if (rc < 0) {
    free(p);
    return rc;
  }
  *out = p;
  return 0;
}

int kin_predicate_combine(kin_predicate_kind kind, kin_predicate **children, size_t n,
                          kin_predicate **out) {
  *out = NULL;
  kin_predicate *p = NULL;
  if (kind == KIN_PREDICATE_AND || kind == KIN_PREDICATE_OR) p = node_new(kind, n);
  if (!p) {
    for (size_t i = 0; i < n; i++) kin_predicate_free(children[i]);
    return kind == KIN_PREDICATE_AND || kind == KIN_PREDICATE_OR ? KIN_ENOMEM : KIN_EINVAL;
  }
  for (size_t i = 0; i < n; i++) p->child[i] = children[i];
  *out = p;
  return 0;
}

int kin_predicate_not(kin_predicate *child, kin_predicate **out) {
  *out = NULL;
  if (!child) return KIN_EINVAL;
  kin_predicate *p = node_new(KIN_PREDICATE_NOT, 1);
  if (!p) {
    kin_predicate_free(child);
    return KIN_ENOMEM;
  }
  p->child[0] = child;
  *out = p;
  return 0;
}

void kin_predicate_free(kin_predicate *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n; i++) kin_predicate_free(p->child[i]);
  kin_label_selector_free(p->selector);
  free(p);
}

kin_predicate_kind kin_predicate_kind_of(const kin_predicate *p) { return p->kind; }

/* ---- map comparison ----------------------------------------------------- */

int kin_obj_labels_equal(const kin_obj *a, const kin_obj *b) {
  size_t n = kin_obj_label_count(a);
  if (n != kin_obj_label_count(b)) return 0;
  for (size_t i = 0; i < n; i++) {
    const char *k, *v;
    if (kin_obj_label_at(a, i, &k, &v) < 0) return 0;
    const char *w = kin_obj_label(b, k);
    if (!w || strcmp(v, w) != 0) return 0;
  }
  return 1;
}

static void map_free(kin__hmap *m) {
  size_t pos = 0;
  for (kin__hmap_entry *e; (e = kin__hmap_next(m, &pos));) free(e->val);
  kin__hmap_free(m);
}

/* Loads the annotations of o into m as unescaped key -> value copies (a
 * repeated key keeps its last value, as Go's decoder does); the caller
 * frees m with map_free. Returns 0, or KIN_EINVAL (m left empty) when a
 * value is not a string or memory ran out. */
static int annotations_load(const kin_obj *o, kin__hmap *m) {
  kin__hmap_init(m);
  kin_span sp = kin_obj_annotations_span(o);
  const char *js = kin_obj_json(o, NULL);
  if (sp.len == 0 || !js) return 0;
  kin__json j;
  int rc = kin__json_parse(&j, js + sp.off, sp.len);
  if (rc < 0) return rc;
  int end = kin__json_next(&j, 0);
  for (int i = 1; i < end && rc == 0; i = kin__json_next(&j, i + 1)) {
    char *k = kin__json_strdup(&j, i);
    char *v = kin__json_strdup(&j, i + 1);
    void *old = NULL;
    if (!k || !v) rc = KIN_EINVAL; /* not a string, or out of memory */
    else if (kin__hmap_put(m, k, v, &old) < 0) rc = KIN_ENOMEM;
    else v = old; /* a repeated key: free the value it replaced */
    free(k);
    free(v);
  }
  kin__json_free(&j);
  if (rc < 0) map_free(m);
  return rc;
}

static int spans_equal(const kin_obj *a, kin_span sa, const kin_obj *b, kin_span sb) {
  if (sa.len != sb.len) return 0;
  if (sa.len == 0) return 1;
  return memcmp(kin_obj_json(a, NULL) + sa.off, kin_obj_json(b, NULL) + sb.off, sa.len) == 0;
}

int kin_obj_annotations_equal(const kin_obj *a, const kin_obj *b) {
  kin_span sa = kin_obj_annotations_span(a), sb = kin_obj_annotations_span(b);
  /* Identical bytes are the same map; most updates leave them untouched. */
  if (spans_equal(a, sa, b, sb)) return 1;
  kin__hmap ma, mb;
  if (annotations_load(a, &ma) < 0) return 0;
  if (annotations_load(b, &mb) < 0) {
    map_free(&ma);
    return 0;
  }
  int eq = kin__hmap_len(&ma) == kin__hmap_len(&mb);
  size_t pos = 0;
  for (kin__hmap_entry *e; eq && (e = kin__hmap_next(&ma, &pos));) {
    void **w = kin__hmap_get(&mb, e->key);
    eq = w && strcmp(e->val, *w) == 0;
  }
  map_free(&ma);
  map_free(&mb);
  return eq;
}

/* ---- evaluation --------------------------------------------------------- */

static const char *label_of(void *ud, const char *key) { return kin_obj_label(ud, key); }

static int selects(const kin_predicate *p, const kin_obj *o) {
  return o && kin_label_selector_matches(p->selector, label_of, (void *)o);
}

typedef enum { EV_CREATE, EV_UPDATE, EV_DELETE } event_type;

static int eval(const kin_predicate *p, event_type ev, const kin_obj *old_obj,
                const kin_obj *obj) {
  if (!p) return 1;
  switch (p->kind) {
  case KIN_PREDICATE_LABEL_SELECTOR:
    return selects(p, obj);
  case KIN_PREDICATE_AND:
    for (size_t i = 0; i < p->n; i++)
      if (!eval(p->child[i], ev, old_obj, obj)) return 0;
    return 1;
  case KIN_PREDICATE_OR:
    for (size_t i = 0; i < p->n; i++)
      if (eval(p->child[i], ev, old_obj, obj)) return 1;
    return 0;
  case KIN_PREDICATE_NOT:
    return !eval(p->child[0], ev, old_obj, obj);
  default:
    break;
  }
  /* The "...Changed" predicates only look at updates. */
  if (ev != EV_UPDATE) return 1;
  if (!old_obj || !obj) return 0;
  switch (p->kind) {
  case KIN_PREDICATE_GENERATION_CHANGED:
    return kin_obj_generation(old_obj) != kin_obj_generation(obj);
  case KIN_PREDICATE_RESOURCE_VERSION_CHANGED:
    return strcmp(kin_obj_resource_version(old_obj), kin_obj_resource_version(obj)) != 0;
  case KIN_PREDICATE_LABEL_CHANGED:
    return !kin_obj_labels_equal(old_obj, obj);
  case KIN_PREDICATE_ANNOTATION_CHANGED:
    return !kin_obj_annotations_equal(old_obj, obj);
  default:
    return 0;
  }
}

int kin_predicate_create(const kin_predicate *p, const kin_obj *obj) {
  return eval(p, EV_CREATE, NULL, obj);
}

int kin_predicate_update(const kin_predicate *p, const kin_obj *old_obj, const kin_obj *new_obj) {
  return eval(p, EV_UPDATE, old_obj, new_obj);
}

int kin_predicate_delete(const kin_predicate *p, const kin_obj *obj) {
  return eval(p, EV_DELETE, NULL, obj);
}

/* ---- explanation (the per-key history) ------------------------------------ */

static const char *leaf_name(kin_predicate_kind k) {
  switch (k) {
  case KIN_PREDICATE_GENERATION_CHANGED: return "generation_changed";
  case KIN_PREDICATE_RESOURCE_VERSION_CHANGED: return "resource_version_changed";
  case KIN_PREDICATE_LABEL_CHANGED: return "labels_changed";
  case KIN_PREDICATE_ANNOTATION_CHANGED: return "annotations_changed";
  case KIN_PREDICATE_LABEL_SELECTOR: return "label_selector";
  case KIN_PREDICATE_AND: return "and";
  case KIN_PREDICATE_OR: return "or";
  default: return "not";
  }
}

/* The node that decided p's verdict v: the first child of an And that
 * failed, the first child of an Or that passed, else p itself. */
static const kin_predicate *culprit(const kin_predicate *p, event_type ev, const kin_obj *old_obj,
                                    const kin_obj *obj, int v) {
  /* a list of predicates is an And: name its only member */
  if ((p->kind == KIN_PREDICATE_AND || p->kind == KIN_PREDICATE_OR) && p->n == 1)
    return culprit(p->child[0], ev, old_obj, obj, v);
  if (p->kind == KIN_PREDICATE_AND && !v) {
    for (size_t i = 0; i < p->n; i++)
      if (!eval(p->child[i], ev, old_obj, obj)) return culprit(p->child[i], ev, old_obj, obj, 0);
  } else if (p->kind == KIN_PREDICATE_OR && v) {
    for (size_t i = 0; i < p->n; i++)
      if (eval(p->child[i], ev, old_obj, obj)) return culprit(p->child[i], ev, old_obj, obj, 1);
  }
  return p;
}

int kin_predicate_explain(const kin_predicate *p, kin_predicate_event ev, const kin_obj *old_obj,
                          const kin_obj *obj, char *buf, size_t cap) {
  event_type e = ev == KIN_PREDICATE_EV_CREATE ? EV_CREATE
                 : ev == KIN_PREDICATE_EV_UPDATE ? EV_UPDATE
                                                 : EV_DELETE;
  int v = eval(p, e, old_obj, obj);
  if (cap) buf[0] = 0;
  if (!p || !cap) return v;
  const kin_predicate *c = culprit(p, e, old_obj, obj, v);
  if (c->kind == KIN_PREDICATE_NOT && c->child[0]->kind < KIN_PREDICATE_AND)
    snprintf(buf, cap, "not %s", leaf_name(c->child[0]->kind));
  else
    snprintf(buf, cap, "%s", leaf_name(c->kind));
  return v;
}
