/* json_tok.c -- small jsmn field lookups (see json_tok.h). */
#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS /* without parent links jsmn is quadratic in the body size */
#include <jsmn.h>

#include "json_tok.h"
#include "json_str.h"

#include <stdlib.h>
#include <string.h>

#include "kin.h"

#define TOK(j) ((jsmntok_t *)(j)->toks)

int kin__json_parse(kin__json *j, const char *js, size_t len) {
  j->js = js;
  j->toks = NULL;
  j->n = 0;
  jsmn_parser p;
  jsmn_init(&p);
  int n = jsmn_parse(&p, js, len, NULL, 0);
  if (n < 1) return KIN_EINVAL;
  jsmntok_t *t = malloc((size_t)n * sizeof *t);
  if (!t) return KIN_ENOMEM;
  jsmn_init(&p);
  if (jsmn_parse(&p, js, len, t, (unsigned)n) != n) {
    free(t);
    return KIN_EINVAL;
  }
  j->toks = t;
  j->n = n;
  return 0;
}

void kin__json_free(kin__json *j) {
  free(j->toks);
  j->toks = NULL;
  j->n = 0;
}

int kin__json_next(const kin__json *j, int i) {
  const jsmntok_t *t = TOK(j);
  int pending = 1;
  while (pending > 0 && i < j->n) {
    if (t[i].type == JSMN_OBJECT) pending += t[i].size * 2;
    else if (t[i].type == JSMN_ARRAY) pending += t[i].size;
    pending--;
    i++;
  }
  return i;
}

int kin__json_eq(const kin__json *j, int i, const char *s) {
  if (i < 0 || i >= j->n) return 0;
  const jsmntok_t *t = &TOK(j)[i];
  size_t n = strlen(s);
  return t->type == JSMN_STRING && (size_t)(t->end - t->start) == n &&
         memcmp(j->js + t->start, s, n) == 0;
}

int kin__json_get(const kin__json *j, int obj, const char *key) {
  if (obj < 0 || obj >= j->n || TOK(j)[obj].type != JSMN_OBJECT) return -1;
  int i = obj + 1;
  for (int k = 0; k < TOK(j)[obj].size && i < j->n; k++) {
    if (kin__json_eq(j, i, key)) return i + 1 < j->n ? i + 1 : -1;
    i = kin__json_next(j, i + 1);
  }
  return -1;
}

int kin__json_array_size(const kin__json *j, int i) {
  if (i < 0 || i >= j->n || TOK(j)[i].type != JSMN_ARRAY) return -1;
  return TOK(j)[i].size;
}

int kin__json_true(const kin__json *j, int i) {
  if (i < 0 || i >= j->n) return 0;
  const jsmntok_t *t = &TOK(j)[i];
  return t->type == JSMN_PRIMITIVE && j->js[t->start] == 't';
}

int kin__json_is_object(const kin__json *j, int i) {
  return i >= 0 && i < j->n && TOK(j)[i].type == JSMN_OBJECT;
}

char *kin__json_strdup(const kin__json *j, int i) { return kin__json_strdup_oom(j, i, NULL); }

char *kin__json_strdup_oom(const kin__json *j, int i, int *oom) {
  if (i < 0 || i >= j->n || TOK(j)[i].type != JSMN_STRING) return NULL;
  char *o;
  int rc = kin__json_unescape_dup(j->js + TOK(j)[i].start,
                                  (size_t)(TOK(j)[i].end - TOK(j)[i].start), &o, NULL);
  if (rc == KIN_ENOMEM && oom) *oom = 1;
  return o;
}
