/* json_span.h -- jsmn tokens as byte spans (internal), for code that cuts
 * or slices a JSON document without building a DOM: the reflector's list
 * pages (items handed one by one to kin_obj_parse) and the managedFields
 * transform. jsmn is compiled static into each includer, as in kobj.c.
 *
 * Tokens are allocated to fit (one counting pass, then the real one), so a
 * list page of any size is one allocation. */
#ifndef KIN_JSON_SPAN_H
#define KIN_JSON_SPAN_H

#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS /* without parent links jsmn is quadratic in the body size */
#include <jsmn.h>

#include <stdlib.h>
#include <string.h>

#include "kin.h"

/* Tokenizes js[0..len) into *out (malloc'd, the caller frees it) and
 * returns the token count, KIN_EINVAL when it is not JSON, or KIN_ENOMEM. */
static inline int kin__span_tokenize(const char *js, size_t len, jsmntok_t **out) {
  *out = NULL;
  jsmn_parser p;
  jsmn_init(&p);
  int n = jsmn_parse(&p, js, len, NULL, 0);
  if (n < 1) return KIN_EINVAL;
  jsmntok_t *t = malloc((size_t)n * sizeof(*t));
  if (!t) return KIN_ENOMEM;
  jsmn_init(&p);
  if (jsmn_parse(&p, js, len, t, (unsigned)n) != n) {
    free(t);
    return KIN_EINVAL;
  }
  *out = t;
  return n;
}

/* Index of the token after the value at i and everything nested in it. */
static inline int kin__span_skip(const jsmntok_t *t, int n, int i) {
  int pending = 1;
  for (; pending > 0 && i < n; i++) {
    if (t[i].type == JSMN_OBJECT) pending += 2 * t[i].size;
    else if (t[i].type == JSMN_ARRAY) pending += t[i].size;
    pending--;
  }
  return i;
}

/* First byte of token i's text, quote included for a string. */
static inline int kin__span_begin(const jsmntok_t *t) {
  return t->start - (t->type == JSMN_STRING);
}

/* Byte just past token i's text, quote included for a string. */
static inline int kin__span_end(const jsmntok_t *t) {
  return t->end + (t->type == JSMN_STRING);
}

/* 1 when token k is the string key (raw bytes: no escapes). */
static inline int kin__span_is(const char *js, const jsmntok_t *k, const char *key) {
  size_t n = strlen(key);
  return k->type == JSMN_STRING && (size_t)(k->end - k->start) == n &&
         memcmp(js + k->start, key, n) == 0;
}

/* The value token of member key in the object at obj, or -1. */
static inline int kin__span_get(const char *js, const jsmntok_t *t, int n, int obj,
                                const char *key) {
  if (obj < 0 || obj >= n || t[obj].type != JSMN_OBJECT) return -1;
  int i = obj + 1;
  for (int m = 0; m < t[obj].size && i + 1 < n; m++) {
    if (kin__span_is(js, &t[i], key)) return i + 1;
    i = kin__span_skip(t, n, i + 1);
  }
  return -1;
}

#endif
