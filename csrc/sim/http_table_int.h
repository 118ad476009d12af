/* http_table_int.h -- internal: the helpers of kinformer.sim's Table
 * output shared by http_table.c (conversion, custom resources) and
 * http_table_printers.c (the built-in types' printers): field access,
 * times and ages, label and container cells. */
#ifndef KIN_SIM_HTTP_TABLE_INT_H
#define KIN_SIM_HTTP_TABLE_INT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "http_int.h"
#include "kin.h"

typedef kin__sim_table_col table_col;
typedef void (*row_fn)(json_t *cells, json_t *row, const json_t *obj, time_t now);
/* The printer of a built-in resource, or NULL. */
typedef struct {
  const char *group, *resource;
  const table_col *cols;
  row_fn row;
} printer;
const printer *kin__sim_table_printer_of(const kin__sim_resource *r);
/* The default TableConvertor's row: Name, Created At. */
void kin__sim_table_default_row(json_t *cells, json_t *row, const json_t *obj, time_t now);

#define D_NAME kin__sim_table_desc_name
#define D_AGE kin__sim_table_desc_age

/* ---- helpers ---- */

/* The value at path (dot-separated keys) in o, or NULL. */
static __attribute__((unused)) const json_t *at(const json_t *o, const char *path) {
  char key[128];
  const json_t *cur = o;
  while (cur && *path) {
    const char *dot = strchr(path, '.');
    size_t n = dot ? (size_t)(dot - path) : strlen(path);
    if (n >= sizeof(key)) return NULL;
    memcpy(key, path, n);
    key[n] = 0;
    cur = json_object_get(cur, key);
    path += n + (dot ? 1 : 0);
  }
  return cur;
}

/* The string at path in o, or NULL when absent or not a string. */
static __attribute__((unused)) const char *str_at(const json_t *o, const char *path) {
  const json_t *v = at(o, path);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static __attribute__((unused)) long long int_at(const json_t *o, const char *path) {
  const json_t *v = at(o, path);
  return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

static __attribute__((unused)) const char *or_default(const char *s, const char *d) { return s && *s ? s : d; }

/* Parses an RFC 3339 time (Z or an offset, optional fraction); 0 when
 * absent or malformed. */
static __attribute__((unused)) int parse_time(const char *s, time_t *out) {
  if (!s || !*s) return 0;
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if (!p) return 0;
  if (*p == '.')
    for (p++; *p >= '0' && *p <= '9'; p++) {
    }
  time_t t = timegm(&tm);
  if (*p == '+' || *p == '-') {
    int hh = 0, mm = 0;
    if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2) return 0;
    long off = (hh * 60L + mm) * 60L;
    t = *p == '+' ? t - off : t + off;
  } else if (*p != 'Z' && *p != 'z') {
    return 0;
  }
  *out = t;
  return 1;
}

/* translateTimestampSince: "<unknown>" for a zero time. */
static __attribute__((unused)) json_t *since(const char *ts, time_t now) {
  time_t t;
  if (!parse_time(ts, &t)) return json_string("<unknown>");
  char buf[32];
  kin__sim_human_duration((long long)(now - t), buf, sizeof(buf));
  return json_string(buf);
}

static __attribute__((unused)) json_t *age(const json_t *obj, time_t now) {
  return since(str_at(obj, "metadata.creationTimestamp"), now);
}

static __attribute__((unused)) json_t *name_of(const json_t *obj) {
  return json_string(or_default(str_at(obj, "metadata.name"), ""));
}

/* labels.FormatLabels: sorted k=v pairs, "<none>" when empty. */
static __attribute__((unused)) int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}
static __attribute__((unused)) json_t *format_labels(const json_t *m) {
  size_t n = json_object_size(m);
  if (!n) return json_string("<none>");
  const char **keys = calloc(n, sizeof(*keys));
  if (!keys) return NULL;
  size_t i = 0;
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)m, k, v) keys[i++] = k;
  qsort(keys, n, sizeof(*keys), cmp_str);
  kin__buf b = {0};
  for (i = 0; i < n; i++) {
    const char *val = json_string_value(json_object_get(m, keys[i]));
    kin__buf_printf(&b, "%s%s=%s", i ? "," : "", keys[i], val ? val : "");
  }
  free(keys);
  json_t *s = json_stringn(b.p ? b.p : "", b.len);
  free(b.p);
  return s;
}

/* layoutContainerCells: names and images joined by commas. */
static __attribute__((unused)) void container_cells(json_t *cells, const json_t *containers) {
  kin__buf names = {0}, images = {0};
  size_t i;
  json_t *c;
  json_array_foreach((json_t *)containers, i, c) {
    kin__buf_printf(&names, "%s%s", i ? "," : "", or_default(kin__sim_jstr(c, "name", NULL), ""));
    kin__buf_printf(&images, "%s%s", i ? "," : "", or_default(kin__sim_jstr(c, "image", NULL), ""));
  }
  json_array_append_new(cells, json_stringn(names.p ? names.p : "", names.len));
  json_array_append_new(cells, json_stringn(images.p ? images.p : "", images.len));
  free(names.p);
  free(images.p);
}

/* selector.String() of metav1.LabelSelectorAsSelector; FormatLabelSelector
 * puts "<none>" for an empty one when none_if_empty. */
static __attribute__((unused)) json_t *selector_cell(const json_t *sel, int none_if_empty) {
  char *s = kin__sim_label_selector_string(sel);
  json_t *v = json_string(s && *s ? s : none_if_empty ? "<none>" : "");
  free(s);
  return v;
}

#endif
