/* json_tok.c -- small jsmn field lookups (see json_tok.h). */
#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS /* without parent links jsmn is quadratic in the body size */
#include <jsmn.h>

#include "json_tok.h"

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

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 0;
}

/* Appends the UTF-8 encoding of code point cp at w; returns the new end. */
static char *put_utf8(char *w, unsigned cp) {
  if (cp < 0x80) {
    *w++ = (char)cp;
  } else if (cp < 0x800) {
    *w++ = (char)(0xC0 | cp >> 6);
    *w++ = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *w++ = (char)(0xE0 | cp >> 12);
    *w++ = (char)(0x80 | (cp >> 6 & 0x3F));
    *w++ = (char)(0x80 | (cp & 0x3F));
  } else {
    *w++ = (char)(0xF0 | cp >> 18);
    *w++ = (char)(0x80 | (cp >> 12 & 0x3F));
    *w++ = (char)(0x80 | (cp >> 6 & 0x3F));
    *w++ = (char)(0x80 | (cp & 0x3F));
  }
  return w;
}

static unsigned hex4(const char *s) {
  unsigned v = 0;
  for (int k = 0; k < 4; k++) v = v << 4 | (unsigned)hexval(s[k]);
  return v;
}

int kin__json_is_object(const kin__json *j, int i) {
  return i >= 0 && i < j->n && TOK(j)[i].type == JSMN_OBJECT;
}

char *kin__json_strdup(const kin__json *j, int i) { return kin__json_strdup_oom(j, i, NULL); }

char *kin__json_strdup_oom(const kin__json *j, int i, int *oom) {
  if (i < 0 || i >= j->n || TOK(j)[i].type != JSMN_STRING) return NULL;
  const char *s = j->js + TOK(j)[i].start, *e = j->js + TOK(j)[i].end;
  /* Unescaping never grows: \uXXXX (6 bytes) gives at most 3 bytes, a
   * surrogate pair (12) 4. */
  char *o = malloc((size_t)(e - s) + 1), *w = o;
  if (!o) {
    if (oom) *oom = 1;
    return NULL;
  }
  while (s < e) {
    if (*s != '\\' || s + 1 >= e) {
      *w++ = *s++;
      continue;
    }
    char c = s[1];
    s += 2;
    switch (c) {
    case 'n': *w++ = '\n'; break;
    case 't': *w++ = '\t'; break;
    case 'r': *w++ = '\r'; break;
    case 'b': *w++ = '\b'; break;
    case 'f': *w++ = '\f'; break;
    case 'u': {
      if (e - s < 4) break; /* JSMN_STRICT rejects this; be safe anyway */
      unsigned cp = hex4(s);
      s += 4;
      if (cp >= 0xD800 && cp < 0xDC00 && e - s >= 6 && s[0] == '\\' && s[1] == 'u') {
        unsigned lo = hex4(s + 2);
        if (lo >= 0xDC00 && lo < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          s += 6;
        }
      }
      w = put_utf8(w, cp);
      break;
    }
    default: *w++ = c; break; /* \" \\ \/ */
    }
  }
  *w = 0;
  return o;
}
