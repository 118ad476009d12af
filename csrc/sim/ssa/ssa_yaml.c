/* ssa_yaml.c -- an apply body (application/apply-patch+yaml: YAML, or
 * JSON, which is YAML) to a jansson value, with libyaml, resolving plain
 * scalars as YAML 1.1 does in go-yaml v2 (what sigs.k8s.io/yaml uses):
 * null/~ and empty, true/false/yes/no/on/off/y/n, decimal, 0x, 0o/leading-0
 * octal and 0b integers, floats; quoted and block scalars are strings
 * (explicit tags are not read). Errors are worded as go-yaml words them ("yaml: line N: ..."). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "ssa.h"

#define MAX_DEPTH 128
#define MAX_VALUES 1000000 /* aliases cannot make a small body huge */

typedef struct {
  yaml_document_t *doc;
  size_t values;
  char *err;
  size_t errlen;
} conv;

/* 1 when s is one of the NULL-ended set. */
static int is_one_of(const char *s, const char *const *set) {
  for (; *set; set++)
    if (!strcmp(s, *set)) return 1;
  return 0;
}

/* Parses an integer with go-yaml v2's bases and underscores; 1 on success. */
static int parse_int(const char *s, json_int_t *out) {
  char buf[128];
  size_t n = 0;
  for (const char *p = s; *p && n < sizeof(buf) - 1; p++)
    if (*p != '_') buf[n++] = *p;
  buf[n] = 0;
  if (!n || strlen(s) >= sizeof(buf)) return 0;
  const char *p = buf;
  int neg = 0;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  int base = 10;
  if (!strncmp(p, "0x", 2)) {
    base = 16;
    p += 2;
  } else if (!strncmp(p, "0o", 2)) {
    base = 8;
    p += 2;
  } else if (!strncmp(p, "0b", 2)) {
    base = 2;
    p += 2;
  } else if (p[0] == '0' && p[1]) {
    base = 8;
    p++;
  }
  if (!*p) return 0;
  char *end;
  errno = 0;
  long long v = strtoll(p, &end, base);
  if (*end || errno) return 0;
  for (const char *q = p; *q; q++)
    if (!isalnum((unsigned char)*q)) return 0;
  *out = neg ? -v : v;
  return 1;
}

/* Parses a float as go-yaml v2 resolves one; 1 on success. */
static int parse_float(const char *s, double *out) {
  static const char *const inf[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL};
  static const char *const ninf[] = {"-.inf", "-.Inf", "-.INF", NULL};
  static const char *const nan_[] = {".nan", ".NaN", ".NAN", NULL};
  if (is_one_of(s, inf)) return *out = INFINITY, 1;
  if (is_one_of(s, ninf)) return *out = -INFINITY, 1;
  if (is_one_of(s, nan_)) return *out = NAN, 1;
  const char *p = s;
  if (*p == '+' || *p == '-') p++;
  if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1]))) return 0;
  char *end;
  errno = 0;
  *out = strtod(s, &end);
  return !*end && !errno;
}

/* The value of a plain scalar (YAML 1.1 resolution); new reference. */
static json_t *plain_scalar(const char *s) {
  static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
  static const char *const trues[] = {"true", "True", "TRUE", "y", "Y", "yes", "Yes",
                                      "YES", "on", "On", "ON", NULL};
  static const char *const falses[] = {"false", "False", "FALSE", "n", "N", "no", "No",
                                       "NO", "off", "Off", "OFF", NULL};
  if (is_one_of(s, nulls)) return json_null();
  if (is_one_of(s, trues)) return json_true();
  if (is_one_of(s, falses)) return json_false();
  json_int_t i;
  if (parse_int(s, &i)) return json_integer(i);
  double d;
  if (parse_float(s, &d) && isfinite(d)) return json_real(d);
  return json_string(s);
}

/* The value of a document node: a new reference, or NULL with c->err set
 * (too deep or too many values through aliases, a non-scalar map key, out
 * of memory). */
static json_t *node_value(conv *c, yaml_node_t *node, int depth) {
  if (!node) return json_null();
  if (depth > MAX_DEPTH || ++c->values > MAX_VALUES) {
    snprintf(c->err, c->errlen, "yaml: document too large or too deeply nested");
    return NULL;
  }
  if (node->type == YAML_SCALAR_NODE) {
    const char *v = (const char *)node->data.scalar.value;
    /* the loader tags every scalar; only the style tells a quoted one */
    if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
      return json_stringn(v, node->data.scalar.length);
    return plain_scalar(v);
  }
  if (node->type == YAML_SEQUENCE_NODE) {
    json_t *arr = json_array();
    for (yaml_node_item_t *it = node->data.sequence.items.start;
         arr && it < node->data.sequence.items.top; it++) {
      json_t *v = node_value(c, yaml_document_get_node(c->doc, *it), depth + 1);
      if (!v) {
        json_decref(arr);
        return NULL;
      }
      json_array_append_new(arr, v);
    }
    return arr;
  }
  json_t *obj = json_object();
  for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
       obj && p < node->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
    if (!k || k->type != YAML_SCALAR_NODE) {
      snprintf(c->err, c->errlen,
               "error converting YAML to JSON: yaml: invalid map key: a map or list");
      json_decref(obj);
      return NULL;
    }
    json_t *v = node_value(c, yaml_document_get_node(c->doc, p->value), depth + 1);
    if (!v) {
      json_decref(obj);
      return NULL;
    }
    /* sigs.k8s.io/yaml turns a plain key that resolves to a bool or an
     * integer into its JSON text: "y" is "true", "0x10" is "16" */
    const char *key = (const char *)k->data.scalar.value;
    char kbuf[32];
    if (k->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
      json_t *kv = plain_scalar(key);
      if (json_is_boolean(kv))
        key = json_is_true(kv) ? "true" : "false";
      else if (json_is_integer(kv) &&
               snprintf(kbuf, sizeof(kbuf), "%" JSON_INTEGER_FORMAT, json_integer_value(kv)) > 0)
        key = kbuf;
      json_decref(kv);
    }
    json_object_set_new(obj, key, v);
  }
  return obj;
}

json_t *kin__ssa_yaml_parse(const char *p, size_t n, char *err, size_t errlen) {
  yaml_parser_t parser;
  yaml_document_t doc;
  err[0] = 0;
  if (!yaml_parser_initialize(&parser)) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)p, n);
  if (!yaml_parser_load(&parser, &doc)) {
    /* go-yaml's parser.fail: scanner errors report the 1-based line */
    size_t line = parser.problem_mark.line;
    if (line && parser.error == YAML_SCANNER_ERROR)
      line++;
    else if (!line)
      line = parser.context_mark.line;
    char where[32] = "";
    if (line) snprintf(where, sizeof(where), "line %zu: ", line);
    snprintf(err, errlen, "error converting YAML to JSON: yaml: %s%s", where,
             parser.problem ? parser.problem : "unknown problem parsing YAML content");
    yaml_parser_delete(&parser);
    return NULL;
  }
  conv c = {&doc, 0, err, errlen};
  json_t *v = node_value(&c, yaml_document_get_root_node(&doc), 0);
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  if (!v && !err[0]) snprintf(err, errlen, "out of memory");
  return v;
}
