/* json_tok.h -- internal: reading a few fields out of a small JSON document with jsmn
 * (internal): Status objects, discovery documents. Tokens are allocated to
 * fit; lookups walk the token array without allocating. Not for the hot
 * path (kobj.c and watch_decoder.c have their own, allocation-free,
 * extraction). */
#ifndef KIN_JSON_TOK_H
#define KIN_JSON_TOK_H

#include <stddef.h>

typedef struct {
  const char *js; /* borrowed document */
  void *toks;     /* owned jsmntok_t array (jsmn stays private to json_tok.c) */
  int n;
} kin__json;

/* Tokenizes js[0..len) into j (kin__json_free releases it). Returns 0,
 * KIN_EINVAL when it is not JSON, KIN_ENOMEM. */
int kin__json_parse(kin__json *j, const char *js, size_t len);
void kin__json_free(kin__json *j);

/* Index of the token after the value at i (its whole subtree). */
int kin__json_next(const kin__json *j, int i);
/* Value token of key in the object at obj, or -1 (also when obj < 0 or
 * is not an object). */
int kin__json_get(const kin__json *j, int obj, const char *key);
/* 1 when token i is a string equal to s (raw comparison: no escapes). */
int kin__json_eq(const kin__json *j, int i, const char *s);
/* A new unescaped copy of string token i (the caller frees it), decoded by
 * kin__json_unescape (json_str.h: a lone surrogate gives U+FFFD, a \u0000
 * ends the copy there); NULL when i < 0, the token is not a string, on a
 * bad escape (jsmn strict rejects those first), or on OOM. */
char *kin__json_strdup(const kin__json *j, int i);
/* The same, telling OOM apart: sets *oom when the copy could not be made. */
char *kin__json_strdup_oom(const kin__json *j, int i, int *oom);
/* 1 when token i is an object. */
int kin__json_is_object(const kin__json *j, int i);
/* Number of elements of the array at i, or -1 when i is not an array
 * (walk them with i + 1 and kin__json_next). */
int kin__json_array_size(const kin__json *j, int i);
/* 1 when token i is the literal true. */
int kin__json_true(const kin__json *j, int i);

#endif
