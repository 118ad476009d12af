/* projection.c -- keeping only an informer's `fields` paths of each object
 * (see projection.h). One pass over the JSON text: a member of the top
 * object is copied whole when a path names it, walked into when a path
 * goes below it, and skipped otherwise; apiVersion, kind and metadata are
 * always copied. Kept members keep their bytes and order. Objects that a
 * path goes into but that keep nothing are left out. */
#include "projection.h"

#include <stdlib.h>
#include <string.h>

#include "json_str.h"
#include "kin.h"
#include "util.h"

#define MAX_SEGS 64

struct kin__projection {
  char **paths; /* sorted, owned */
  size_t n;
};

typedef struct {
  char *p;
  size_t len, cap;
  int oom;
} buf;

static void put(buf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    while (c < b->len + n) c *= 2;
    char *q = realloc(b->p, c);
    if (!q) {
      b->oom = 1;
      return;
    }
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Checks one path; returns 0 or KIN_EINVAL with err set. */
static int check_path(const char *f, char *err, size_t errlen) {
  if (!*f) {
    kin__errf(err, errlen, "fields: a path is empty");
    return KIN_EINVAL;
  }
  int segs = 1;
  const char *prev = f - 1;
  for (const char *c = f;; c++) {
    if (*c == '.' || !*c) {
      if (c == prev + 1) {
        kin__errf(err, errlen, "fields: path \"%s\" has an empty segment", f);
        return KIN_EINVAL;
      }
      if (!*c) break;
      prev = c;
      segs++;
    } else if ((unsigned char)*c < 0x20 || *c == '"' || *c == '\\') {
      kin__errf(err, errlen, "fields: path \"%s\" has a character a field name cannot hold", f);
      return KIN_EINVAL;
    }
  }
  if (segs > MAX_SEGS) {
    kin__errf(err, errlen, "fields: path \"%s\" has over %d segments", f, MAX_SEGS);
    return KIN_EINVAL;
  }
  return 0;
}

void kin__projection_free(kin__projection *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n; i++) free(p->paths[i]);
  free(p->paths);
  free(p);
}

int kin__projection_new(const char *const *fields, kin__projection **out, char *err,
                        size_t errlen) {
  *out = NULL;
  size_t n = 0;
  while (fields && fields[n]) n++;
  if (!n) {
    kin__errf(err, errlen, "fields: the list is empty (leave it out to keep everything)");
    return KIN_EINVAL;
  }
  for (size_t i = 0; i < n; i++)
    if (check_path(fields[i], err, errlen)) return KIN_EINVAL;
  kin__projection *p = calloc(1, sizeof(*p));
  if (!p || !(p->paths = calloc(n, sizeof(char *)))) {
    free(p);
    return KIN_ENOMEM;
  }
  for (; p->n < n; p->n++)
    if (!(p->paths[p->n] = strdup(fields[p->n]))) {
      kin__projection_free(p);
      return KIN_ENOMEM;
    }
  qsort(p->paths, n, sizeof(char *), cmp_str);
  for (size_t i = 1; i < n; i++)
    if (!strcmp(p->paths[i - 1], p->paths[i])) {
      kin__errf(err, errlen, "fields: path \"%s\" is listed twice", p->paths[i]);
      kin__projection_free(p);
      return KIN_EINVAL;
    }
  *out = p;
  return 0;
}

int kin__projection_relation(const kin__projection *p, const char *path) {
  size_t pl = strlen(path);
  int partly = 0;
  for (size_t i = 0; i < p->n; i++) {
    const char *q = p->paths[i];
    size_t ql = strlen(q);
    /* q is path or above it: kept; path above q (or the object): partly */
    if (ql <= pl && !memcmp(q, path, ql) && (ql == pl || path[ql] == '.')) return KIN__PROJ_KEPT;
    if (!pl || (pl < ql && !memcmp(q, path, pl) && q[pl] == '.')) partly = 1;
  }
  return partly ? KIN__PROJ_PARTLY : KIN__PROJ_DROPPED;
}

size_t kin__projection_key(const kin__projection *p, char *dst, size_t n) {
  size_t need = 0;
  for (size_t i = 0; i < p->n; i++) {
    size_t l = strlen(p->paths[i]);
    for (size_t k = 0; k <= l; k++) {
      char c = k < l ? p->paths[i][k] : ',';
      if (need + 1 < n) dst[need] = c;
      need++;
    }
  }
  if (n) dst[need < n ? need : n - 1] = 0;
  return need;
}

static size_t ws(const char *s, size_t n, size_t i) {
  while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
  return i;
}

/* Returns the offset just past the JSON value at s[i], or n + 1 when it is
 * malformed or truncated (a shallow check: brackets and strings). */
static size_t skip_value(const char *s, size_t n, size_t i) {
  int depth = 0;
  i = ws(s, n, i);
  if (i >= n) return n + 1;
  do {
    if (i >= n) return n + 1;
    char c = s[i];
    if (c == '"') {
      size_t e = kin__json_str_skip(s, n, i);
      if (!e) return n + 1;
      i = e;
    } else if (c == '{' || c == '[') {
      depth++;
      i++;
    } else if (c == '}' || c == ']') {
      if (--depth < 0) return n + 1;
      i++;
    } else {
      i++;
      if (!depth) /* a scalar: up to a delimiter */
        while (i < n && !strchr(",}] \t\r\n", s[i])) i++;
    }
  } while (depth > 0);
  return i;
}

/* The paths (rests after the current prefix) as a slice of pointers. */
typedef struct {
  const char **rest;
  size_t n;
} set;

/* Copies the kept members of the object at s[*i] into b; *i ends past it.
 * top: the document's object (apiVersion, kind, metadata kept). Returns
 * the number of members written, or -1 when malformed. */
static long project_obj(const char *s, size_t n, size_t *i, set ps, int top, buf *b) {
  size_t p = ws(s, n, *i);
  if (p >= n || s[p] != '{') return -1;
  p++;
  long wrote = 0;
  const char **sub = malloc((ps.n ? ps.n : 1) * sizeof(char *));
  if (!sub) {
    b->oom = 1;
    return -1;
  }
  put(b, "{", 1);
  p = ws(s, n, p);
  if (p < n && s[p] == '}') {
    p++;
    goto done;
  }
  for (;;) {
    p = ws(s, n, p);
    if (p >= n || s[p] != '"') goto bad;
    size_t ks = p + 1, ke = kin__json_str_skip(s, n, p);
    if (!ke) goto bad;
    size_t klen = ke - 1 - ks; /* raw key bytes (escapes compared raw) */
    p = ws(s, n, ke);
    if (p >= n || s[p] != ':') goto bad;
    size_t vs = ws(s, n, p + 1), ve = skip_value(s, n, vs);
    if (ve > n) goto bad;
    int whole = top && ((klen == 10 && !memcmp(s + ks, "apiVersion", 10)) ||
                        (klen == 4 && !memcmp(s + ks, "kind", 4)) ||
                        (klen == 8 && !memcmp(s + ks, "metadata", 8)));
    size_t nsub = 0;
    for (size_t k = 0; k < ps.n && !whole; k++) {
      const char *r = ps.rest[k];
      if (strncmp(r, s + ks, klen)) continue;
      if (r[klen] == 0) whole = 1;
      else if (r[klen] == '.') sub[nsub++] = r + klen + 1;
    }
    if (whole || (nsub && s[vs] == '{')) {
      size_t mark = b->len;
      if (wrote) put(b, ",", 1);
      put(b, s + ks - 1, ke - ks + 1);
      put(b, ":", 1);
      if (whole) {
        put(b, s + vs, ve - vs);
        wrote++;
      } else {
        size_t q = vs;
        long w = project_obj(s, n, &q, (set){sub, nsub}, 0, b);
        if (w < 0) goto bad;
        if (w) wrote++;
        else if (!b->oom) b->len = mark; /* nothing kept below: leave it out */
      }
    }
    p = ws(s, n, ve);
    if (p < n && s[p] == ',') {
      p++;
      continue;
    }
    if (p < n && s[p] == '}') {
      p++;
      break;
    }
    goto bad;
  }
done:
  put(b, "}", 1);
  free(sub);
  *i = p;
  return wrote;
bad:
  free(sub);
  return -1;
}

int kin__projection_text(const kin__projection *p, const char *js, size_t len, char **out,
                         size_t *out_len) {
  *out = NULL;
  *out_len = 0;
  buf b = {0};
  size_t i = 0;
  long w = project_obj(js, len, &i, (set){(const char **)p->paths, p->n}, 1, &b);
  if (b.oom) {
    free(b.p);
    return KIN_ENOMEM;
  }
  if (w < 0 || ws(js, len, i) != len) {
    free(b.p);
    return KIN_EINVAL;
  }
  *out = b.p;
  *out_len = b.len;
  return 0;
}

int kin__projection_apply(const kin__projection *p, kin_obj *in, kin_obj **out) {
  *out = NULL;
  size_t len;
  const char *js = kin_obj_json(in, &len);
  if (kin_obj_is_tombstone(in) || !js) {
    *out = kin_obj_ref(in);
    return 0;
  }
  char *t;
  size_t tl;
  int rc = kin__projection_text(p, js, len, &t, &tl);
  if (rc) return rc;
  rc = kin_obj_parse(t, tl, out);
  free(t);
  return rc;
}
