/* shard_selector.c -- k8s.io/apiserver pkg/sharding Parse and
 * k8s.io/apimachinery pkg/sharding's selector, in C. The server parses the
 * expression with a CEL parser and walks the tree; only shardRange() calls
 * joined by || (parentheses allowed) survive the walk, so a small
 * recursive-descent parser of that subset accepts and refuses the same
 * strings. Messages are the server's; a CEL syntax error is worded by us
 * (cel-go's ANTLR messages are not reproduced). */
#include "shard_selector.h"
#include "kin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint64_t first, last; /* inclusive */
  char start[20], end[20]; /* as written: "0x" + 16 or 17 digits */
} range;

struct kin_shard_selector {
  kin_shard_key key;
  size_t n;
  range *r;
};

uint64_t kin_shard_hash(const char *s, size_t len) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)s[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

/* ---- the parser ------------------------------------------------------ */

/* cel-go's ast.ExprKind numbers, which the server prints with %v. */
enum { KIND_CALL = 1, KIND_IDENT = 3, KIND_LITERAL = 5, KIND_SELECT = 7 };

typedef struct {
  const char *s, *p;
  char *err;
  size_t errlen;
  int failed;
  int oom;
  int check; /* 0: the syntax and operators only; 1: the walk's checks too */
  kin_shard_key key;
  int have_key;
  size_t n, cap;
  range *r;
} parser;

/* A parsed argument: a field path, a literal or something else. */
typedef struct {
  int kind;           /* KIND_* */
  char path[64];      /* KIND_IDENT / KIND_SELECT: the dotted path */
  const char *lit;    /* KIND_LITERAL: a string's bytes (escapes kept) */
  size_t litlen;
  const char *type;   /* KIND_LITERAL: Go's %T of the value */
} arg;

static int fail(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parser *ps, const char *fmt, ...) {
  if (ps->failed) return -1;
  ps->failed = 1;
  if (ps->err && ps->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err, ps->errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static void skip_ws(parser *ps) {
  while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r') ps->p++;
}

static int is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_ident(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

static int syntax(parser *ps, const char *what) {
  size_t col = (size_t)(ps->p - ps->s);
  if (*ps->p) return fail(ps, "CEL parse error: Syntax error: %s at column %zu near '%.12s'", what, col, ps->p);
  return fail(ps, "CEL parse error: Syntax error: %s at the end of the expression", what);
}

static int parse_or(parser *ps);

/* Refuses a binary or ternary operator at ps->p by the name CEL gives its
 * call, as the server's tree walk does; returns 0 when there is none. */
static int other_operator(parser *ps) {
  static const struct {
    const char *tok, *fn;
  } ops[] = {{"&&", "_&&_"}, {"==", "_==_"}, {"!=", "_!=_"}, {"<=", "_<=_"}, {">=", "_>=_"},
             {"<", "_<_"},   {">", "_>_"},   {"+", "_+_"},   {"-", "_-_"},   {"*", "_*_"},
             {"/", "_/_"},   {"%", "_%_"},   {"?", "_?_:_"}, {"in ", "@in"}};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strncmp(ps->p, ops[i].tok, strlen(ops[i].tok)))
      return fail(ps, "unsupported function \"%s\"; only shardRange() and || are allowed",
                  ops[i].fn);
  return 0;
}

/* Reads one argument of a call into a. */
static int parse_arg(parser *ps, arg *a) {
  memset(a, 0, sizeof *a);
  skip_ws(ps);
  char c = *ps->p;
  if (c == '\'' || c == '"') {
    const char *q = ++ps->p;
    while (*ps->p && *ps->p != c) {
      if (*ps->p == '\\' && ps->p[1]) ps->p++;
      ps->p++;
    }
    if (*ps->p != c) return syntax(ps, "unterminated string literal");
    a->kind = KIND_LITERAL;
    a->type = "string";
    a->lit = q;
    a->litlen = (size_t)(ps->p - q);
    ps->p++;
    return 0;
  }
  if ((c >= '0' && c <= '9') || c == '-') {
    const char *q = ps->p++;
    int dbl = 0;
    while (is_ident(*ps->p) || *ps->p == '.') dbl |= *ps->p++ == '.';
    a->kind = KIND_LITERAL;
    a->type = dbl ? "float64" : ps->p[-1] == 'u' || ps->p[-1] == 'U' ? "uint64" : "int64";
    (void)q;
    return 0;
  }
  if (is_ident_start(c)) {
    size_t n = 0;
    a->kind = KIND_IDENT;
    for (;;) {
      const char *q = ps->p;
      while (is_ident(*ps->p)) ps->p++;
      size_t len = (size_t)(ps->p - q);
      if (n + len + 1 < sizeof a->path) {
        memcpy(a->path + n, q, len);
        n += len;
        a->path[n] = 0;
      }
      skip_ws(ps);
      if (*ps->p != '.') break;
      ps->p++;
      skip_ws(ps);
      if (!is_ident_start(*ps->p)) return syntax(ps, "expected a field name after '.'");
      if (n + 1 < sizeof a->path) a->path[n++] = '.';
      a->kind = KIND_SELECT;
    }
    if (*ps->p == '(') {
      /* a call as an argument: skip it, the caller names its kind */
      int depth = 0;
      do {
        if (*ps->p == '(') depth++;
        if (*ps->p == ')') depth--;
        ps->p++;
      } while (*ps->p && depth > 0);
      if (depth) return syntax(ps, "expected ')'");
      a->kind = KIND_CALL;
      return 0;
    }
    if (a->kind == KIND_IDENT && (!strcmp(a->path, "true") || !strcmp(a->path, "false"))) {
      a->kind = KIND_LITERAL;
      a->type = "bool";
    }
    return 0;
  }
  return syntax(ps, "expected an argument");
}

/* Checks a hex bound as extractHexLiteral does and stores it. */
static int hex_bound(parser *ps, const arg *a, const char *name, char out[20], uint64_t *v,
                     int *is_max) {
  if (a->kind != KIND_LITERAL)
    return fail(ps, "%s must be a string literal (e.g. '0xff'), got expression kind %d", name,
                a->kind);
  if (strcmp(a->type, "string"))
    return fail(ps, "%s must be a string literal, got %s", name, a->type);
  char s[64];
  size_t n = a->litlen < sizeof s - 1 ? a->litlen : sizeof s - 1;
  memcpy(s, a->lit, n);
  s[n] = 0;
  if (a->litlen < 2 || strncmp(s, "0x", 2)) return fail(ps, "%s must have '0x' prefix, got \"%s\"", name, s);
  const char *hex = s + 2;
  size_t len = a->litlen - 2;
  if (len == 0) return fail(ps, "%s: hex value is required after '0x'", name);
  if (len > 17) return fail(ps, "%s: hex value too long (%zu chars, max 17): \"%s\"", name, len, hex);
  for (size_t i = 0; i < len; i++)
    if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
      return fail(ps, "%s: invalid hex character \"%c\" in \"%s\"", name, hex[i], s);
  if (len == 17) {
    if (strcmp(s, "0x10000000000000000"))
      return fail(ps, "%s: 17-digit hex value must be '0x10000000000000000' (2^64), got \"%s\"",
                  name, s);
    *v = UINT64_MAX;
    *is_max = 1;
  } else if (len != 16) {
    return fail(ps, "%s must be a 0x-prefixed 16-digit hex value, got \"%s\" (did you mean \"0x%.*s%s\"?)",
                name, s, (int)(16 - len), "0000000000000000", hex);
  } else {
    *v = strtoull(hex, NULL, 16);
    *is_max = 0;
  }
  memcpy(out, s, len + 3);
  return 0;
}

/* Parses the arguments of shardRange( ... ) after the '('. */
static int parse_shard_range(parser *ps) {
  arg a[4];
  size_t n = 0;
  skip_ws(ps);
  if (*ps->p != ')') {
    for (;;) {
      arg tmp;
      if (parse_arg(ps, &tmp) < 0) return -1;
      if (n < 4) a[n] = tmp;
      n++;
      skip_ws(ps);
      if (*ps->p == ',') {
        ps->p++;
        continue;
      }
      break;
    }
  }
  if (*ps->p != ')') return syntax(ps, "expected ',' or ')'");
  ps->p++;
  if (!ps->check) return 0;
  if (n != 3) return fail(ps, "shardRange() requires exactly 3 arguments, got %zu", n);
  if (a[0].kind != KIND_IDENT && a[0].kind != KIND_SELECT)
    return fail(ps, "shardRange() first argument: expected field path (e.g. object.metadata.uid), got expression kind %d",
                a[0].kind);
  kin_shard_key key;
  if (!strcmp(a[0].path, "object.metadata.uid"))
    key = KIN_SHARD_KEY_UID;
  else if (!strcmp(a[0].path, "object.metadata.namespace"))
    key = KIN_SHARD_KEY_NAMESPACE;
  else
    return fail(ps, "unsupported field path \"%s\"; supported: object.metadata.uid, object.metadata.namespace",
                a[0].path);
  range r;
  uint64_t lo, hi;
  int lo_max, hi_max;
  if (hex_bound(ps, &a[1], "hexStart", r.start, &lo, &lo_max) < 0) return -1;
  if (hex_bound(ps, &a[2], "hexEnd", r.end, &hi, &hi_max) < 0) return -1;
  /* HexLess: start < end, with 2^64 above every 16-digit value */
  if (lo_max || (!hi_max && lo >= hi))
    return fail(ps, "shard range start %s must be less than end %s", r.start, r.end);
  r.first = lo;
  r.last = hi_max ? UINT64_MAX : hi - 1;
  if (ps->have_key && ps->key != key)
    return fail(ps, "all shard ranges must use the same field, got \"%s\" and \"%s\"",
                ps->key == KIN_SHARD_KEY_UID ? "object.metadata.uid" : "object.metadata.namespace",
                a[0].path);
  ps->key = key;
  ps->have_key = 1;
  if (ps->n == ps->cap) {
    size_t cap = ps->cap ? ps->cap * 2 : 4;
    range *nr = realloc(ps->r, cap * sizeof *nr);
    if (!nr) {
      ps->oom = 1;
      return fail(ps, "out of memory");
    }
    ps->r = nr;
    ps->cap = cap;
  }
  ps->r[ps->n++] = r;
  return 0;
}

/* primary := '(' or ')' | name '(' args ')' | other (refused) */
static int parse_primary(parser *ps) {
  skip_ws(ps);
  if (*ps->p == '(') {
    ps->p++;
    if (parse_or(ps) < 0) return -1;
    skip_ws(ps);
    if (*ps->p != ')') return syntax(ps, "expected ')'");
    ps->p++;
    return 0;
  }
  arg a;
  const char *at = ps->p;
  if (is_ident_start(*ps->p)) {
    const char *q = ps->p;
    while (is_ident(*ps->p) || *ps->p == '.') ps->p++;
    const char *dot = NULL;
    for (const char *d = q; d < ps->p; d++)
      if (*d == '.') dot = d;
    const char *fn = dot ? dot + 1 : q;
    size_t fnlen = (size_t)(ps->p - fn);
    skip_ws(ps);
    if (*ps->p == '(') {
      ps->p++;
      if (fnlen == 10 && !memcmp(fn, "shardRange", 10) && !dot) return parse_shard_range(ps);
      if (!ps->check) {
        ps->p--;
        arg skip;
        ps->p = at;
        return parse_arg(ps, &skip) < 0 ? -1 : other_operator(ps);
      }
      return fail(ps, "unsupported function \"%.*s\"; only shardRange() and || are allowed",
                  (int)fnlen, fn);
    }
    ps->p = at;
  }
  if (parse_arg(ps, &a) < 0) return -1;
  skip_ws(ps);
  if (other_operator(ps) < 0 || !ps->check) return ps->failed ? -1 : 0;
  return fail(ps, "unexpected expression kind %d; expected shardRange() call or || operator",
              a.kind);
}

/* or := primary ('||' primary)* ; any other operator is refused by name */
static int parse_or(parser *ps) {
  if (parse_primary(ps) < 0) return -1;
  for (;;) {
    skip_ws(ps);
    if (ps->p[0] == '|' && ps->p[1] == '|') {
      ps->p += 2;
      if (parse_primary(ps) < 0) return -1;
      continue;
    }
    return other_operator(ps);
  }
}

int kin_shard_selector_parse(const char *s, kin_shard_selector **out, char *err, size_t errlen) {
  *out = NULL;
  if (err && errlen) err[0] = 0;
  parser ps = {.s = s ? s : "", .err = err, .errlen = errlen};
  ps.p = ps.s;
  skip_ws(&ps);
  if (!*ps.p) {
    if (err && errlen)
      snprintf(err, errlen, "empty shard selector is not allowed; omit the parameter for unfiltered lists");
    return KIN_EINVAL;
  }
  /* The server parses the whole expression before it walks the tree, so a
   * syntax error or a refused operator is reported before a bad range:
   * the first pass checks only those, the second builds the ranges. */
  for (ps.check = 0; ps.check < 2 && !ps.failed; ps.check++) {
    ps.p = ps.s;
    if (parse_or(&ps) == 0) {
      skip_ws(&ps);
      if (*ps.p) syntax(&ps, "unexpected input");
    }
  }
  if (ps.failed) {
    free(ps.r);
    return ps.oom ? KIN_ENOMEM : KIN_EINVAL;
  }
  kin_shard_selector *sel = malloc(sizeof *sel);
  if (!sel) {
    free(ps.r);
    return KIN_ENOMEM;
  }
  sel->key = ps.key;
  sel->n = ps.n;
  sel->r = ps.r;
  *out = sel;
  return 0;
}

void kin_shard_selector_free(kin_shard_selector *sel) {
  if (!sel) return;
  free(sel->r);
  free(sel);
}

kin_shard_key kin_shard_selector_key(const kin_shard_selector *sel) { return sel->key; }

int kin_shard_selector_contains(const kin_shard_selector *sel, uint64_t hash) {
  for (size_t i = 0; i < sel->n; i++)
    if (hash >= sel->r[i].first && hash <= sel->r[i].last) return 1;
  return 0;
}

int kin_shard_selector_matches(const kin_shard_selector *sel, const char *uid,
                               const char *namespace_) {
  const char *v = sel->key == KIN_SHARD_KEY_UID ? uid : namespace_;
  if (!v) v = "";
  return kin_shard_selector_contains(sel, kin_shard_hash(v, strlen(v)));
}

size_t kin_shard_selector_nranges(const kin_shard_selector *sel) { return sel->n; }

void kin_shard_selector_range(const kin_shard_selector *sel, size_t i, uint64_t *first,
                              uint64_t *last) {
  *first = sel->r[i].first;
  *last = sel->r[i].last;
}

size_t kin_shard_selector_string(const kin_shard_selector *sel, char *buf, size_t cap) {
  const char *field =
      sel->key == KIN_SHARD_KEY_UID ? "object.metadata.uid" : "object.metadata.namespace";
  size_t total = 0;
  for (size_t i = 0; i < sel->n; i++) {
    char part[128];
    int n = snprintf(part, sizeof part, "%sshardRange(%s, '%s', '%s')", i ? " || " : "", field,
                     sel->r[i].start, sel->r[i].end);
    size_t len = (size_t)n;
    if (buf && total + 1 < cap) {
      size_t room = cap - 1 - total;
      memcpy(buf + total, part, len < room ? len : room);
    }
    total += len;
  }
  if (buf && cap) buf[total < cap ? total : cap - 1] = 0;
  return total;
}
