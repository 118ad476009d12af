/* selector_string.c -- a LabelSelector (matchLabels, matchExpressions)
 * as metav1.LabelSelectorAsSelector(sel).String() prints it: for the
 * scale subresource's status.selector, the Table's selector cells and
 * RBAC's field selector on names. */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "selector_string.h"
#include "sim_util.h"

/* One requirement of a label selector, as labels.Requirement prints it. */
typedef struct {
  const char *key;
  char *text; /* malloc'd */
} req_text;

static int cmp_req(const void *a, const void *b) {
  return strcmp(((const req_text *)a)->key, ((const req_text *)b)->key);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "key in (a,b)" with the values sorted, as labels.NewRequirement sorts them. */
static char *set_text(const char *key, const char *op, const json_t *values) {
  size_t n = json_array_size(values);
  const char **v = calloc(n ? n : 1, sizeof(*v));
  if (!v) return NULL;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const char *s = json_string_value(json_array_get(values, i));
    if (s) v[m++] = s;
  }
  qsort(v, m, sizeof(*v), cmp_str);
  kin__buf b = {0};
  kin__buf_printf(&b, "%s %s (", key, op);
  for (size_t i = 0; i < m; i++) kin__buf_printf(&b, "%s%s", i ? "," : "", v[i]);
  kin__buf_puts(&b, ")");
  free(v);
  if (b.oom) {
    kin__buf_free(&b);
    return NULL;
  }
  return b.p;
}

/* The string of metav1.LabelSelectorAsSelector(sel): requirements sorted
 * by key and joined by ",". Returns a malloc'd string ("" for an empty or
 * absent selector) or NULL (ENOMEM). */
char *kin__sim_label_selector_string(const json_t *sel) {
  const json_t *ml = json_object_get(sel, "matchLabels");
  const json_t *me = json_object_get(sel, "matchExpressions");
  size_t cap = json_object_size(ml) + json_array_size(me), n = 0;
  req_text *r = calloc(cap ? cap : 1, sizeof(*r));
  if (!r) return NULL;
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)ml, k, v) {
    kin__buf b = {0};
    kin__buf_printf(&b, "%s=%s", k, json_string_value(v) ? json_string_value(v) : "");
    r[n].key = k;
    r[n++].text = b.p;
  }
  size_t i;
  json_array_foreach(me, i, v) {
    const char *key = kin__sim_jstr(v, "key", NULL), *op = kin__sim_jstr(v, "operator", NULL);
    if (!key || !op) continue;
    const json_t *vals = json_object_get(v, "values");
    char *t = NULL;
    if (!strcmp(op, "In"))
      t = set_text(key, "in", vals);
    else if (!strcmp(op, "NotIn"))
      t = set_text(key, "notin", vals);
    else if (!strcmp(op, "Exists"))
      t = strdup(key);
    else if (!strcmp(op, "DoesNotExist")) {
      kin__buf b = {0};
      kin__buf_printf(&b, "!%s", key);
      t = b.p;
    }
    if (!t) continue;
    r[n].key = key;
    r[n++].text = t;
  }
  qsort(r, n, sizeof(*r), cmp_req);
  kin__buf out = {0};
  kin__buf_add(&out, "", 0);
  for (i = 0; i < n; i++) {
    if (r[i].text) kin__buf_printf(&out, "%s%s", out.len ? "," : "", r[i].text);
    free(r[i].text);
  }
  free(r);
  if (out.oom) {
    kin__buf_free(&out);
    return NULL;
  }
  return out.p ? out.p : strdup("");
}
