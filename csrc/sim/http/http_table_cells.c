/* http_table_cells.c -- the cells kube-apiserver's printers share
 * (k8s.io/kubernetes pkg/printers/internalversion): field access, times
 * and ages, label, selector and container cells. Used by http_table.c and
 * http_table_printers.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "buf.h"
#include "http_int.h"
#include "http_table_cells.h"
#include "kin.h"


/* duration.HumanDuration of k8s.io/apimachinery (seconds). */
void kin__sim_human_duration(long long secs, char *buf, size_t cap) {
  if (secs < -1) {
    snprintf(buf, cap, "<invalid>");
    return;
  }
  if (secs < 0) {
    snprintf(buf, cap, "0s");
    return;
  }
  if (secs < 120) {
    snprintf(buf, cap, "%llds", secs);
    return;
  }
  long long minutes = secs / 60;
  if (minutes < 10) {
    long long s = secs % 60;
    if (s == 0)
      snprintf(buf, cap, "%lldm", minutes);
    else
      snprintf(buf, cap, "%lldm%llds", minutes, s);
    return;
  }
  if (minutes < 60 * 3) {
    snprintf(buf, cap, "%lldm", minutes);
    return;
  }
  long long hours = secs / 3600;
  if (hours < 8) {
    long long m = minutes % 60;
    if (m == 0)
      snprintf(buf, cap, "%lldh", hours);
    else
      snprintf(buf, cap, "%lldh%lldm", hours, m);
  } else if (hours < 48) {
    snprintf(buf, cap, "%lldh", hours);
  } else if (hours < 24 * 8) {
    long long h = hours % 24;
    if (h == 0)
      snprintf(buf, cap, "%lldd", hours / 24);
    else
      snprintf(buf, cap, "%lldd%lldh", hours / 24, h);
  } else if (hours < 24 * 365 * 2) {
    snprintf(buf, cap, "%lldd", hours / 24);
  } else if (hours < 24 * 365 * 8) {
    long long dy = (hours / 24) % 365;
    if (dy == 0)
      snprintf(buf, cap, "%lldy", hours / 24 / 365);
    else
      snprintf(buf, cap, "%lldy%lldd", hours / 24 / 365, dy);
  } else {
    snprintf(buf, cap, "%lldy", hours / 24 / 365);
  }
}

/* The value at path (dot-separated keys) in o, or NULL. */
const json_t *kin__sim_tc_at(const json_t *o, const char *path) {
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
const char *kin__sim_tc_str_at(const json_t *o, const char *path) {
  const json_t *v = kin__sim_tc_at(o, path);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

long long kin__sim_tc_int_at(const json_t *o, const char *path) {
  const json_t *v = kin__sim_tc_at(o, path);
  return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

const char *kin__sim_tc_or_default(const char *s, const char *d) { return s && *s ? s : d; }

/* Parses an RFC 3339 time (Z or an offset, optional fraction); 0 when
 * absent or malformed. */
int kin__sim_tc_parse_time(const char *s, time_t *out) {
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
json_t *kin__sim_tc_since(const char *ts, time_t now) {
  time_t t;
  if (!kin__sim_tc_parse_time(ts, &t)) return json_string("<unknown>");
  char buf[32];
  kin__sim_human_duration((long long)(now - t), buf, sizeof(buf));
  return json_string(buf);
}

json_t *kin__sim_tc_age(const json_t *obj, time_t now) {
  return kin__sim_tc_since(kin__sim_tc_str_at(obj, "metadata.creationTimestamp"), now);
}

json_t *kin__sim_tc_name_of(const json_t *obj) {
  return json_string(kin__sim_tc_or_default(kin__sim_tc_str_at(obj, "metadata.name"), ""));
}

/* labels.FormatLabels: sorted k=v pairs, "<none>" when empty. */
int kin__sim_tc_cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}
json_t *kin__sim_tc_format_labels(const json_t *m) {
  size_t n = json_object_size(m);
  if (!n) return json_string("<none>");
  const char **keys = calloc(n, sizeof(*keys));
  if (!keys) return NULL;
  size_t i = 0;
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)m, k, v) keys[i++] = k;
  qsort(keys, n, sizeof(*keys), kin__sim_tc_cmp_str);
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
void kin__sim_tc_container_cells(json_t *cells, const json_t *containers) {
  kin__buf names = {0}, images = {0};
  size_t i;
  json_t *c;
  json_array_foreach((json_t *)containers, i, c) {
    kin__buf_printf(&names, "%s%s", i ? "," : "", kin__sim_tc_or_default(kin__sim_jstr(c, "name", NULL), ""));
    kin__buf_printf(&images, "%s%s", i ? "," : "", kin__sim_tc_or_default(kin__sim_jstr(c, "image", NULL), ""));
  }
  json_array_append_new(cells, json_stringn(names.p ? names.p : "", names.len));
  json_array_append_new(cells, json_stringn(images.p ? images.p : "", images.len));
  free(names.p);
  free(images.p);
}

/* selector.String() of metav1.LabelSelectorAsSelector; FormatLabelSelector
 * puts "<none>" for an empty one when none_if_empty. */
json_t *kin__sim_tc_selector_cell(const json_t *sel, int none_if_empty) {
  char *s = kin__sim_label_selector_string(sel);
  json_t *v = json_string(s && *s ? s : none_if_empty ? "<none>" : "");
  free(s);
  return v;
}

