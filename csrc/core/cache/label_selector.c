/* label_selector.c -- port of k8s.io/apimachinery pkg/labels Parse: the
 * lexer, the recursive-descent parser, NewRequirement's validation and the
 * content.IsLabelKey / IsLabelValue rules, with the API server's error
 * wording (v0.36), so a bad ?labelSelector= gets the same message from the
 * sim as from kube-apiserver. The Gt/Lt operators ("x>1", "x<5") are part
 * of the upstream grammar and are supported too. */
#include "label_selector.h"
#include "buf.h"
#include "kin.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Operators, named as selection.Operator. */
enum {
  OP_EXISTS,
  OP_DOES_NOT_EXIST,
  OP_EQUALS,
  OP_DOUBLE_EQUALS,
  OP_NOT_EQUALS,
  OP_IN,
  OP_NOT_IN,
  OP_GT,
  OP_LT
};

typedef struct {
  char *key;
  int op;
  size_t nvals;
  char **vals; /* sorted, unique (upstream builds them from a sets.String) */
} requirement;

struct kin_label_selector {
  size_t n;
  requirement *reqs; /* stably sorted by key */
};

/* ---- growable string for messages ---------------------------------- */

/* Appends s quoted as Go's %q does for the bytes that can occur here:
 * printable ASCII and valid UTF-8 as is, the rest escaped. */
static void sb_quote(kin__buf *b, const char *s) {
  static const char hex[] = "0123456789abcdef";
  kin__buf_add(b, "\"", 1);
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      kin__buf_add(b, e, 2);
      p++;
    } else if (c >= 0x20 && c < 0x7f) {
      kin__buf_add(b, (const char *)p, 1);
      p++;
    } else if (c < 0x80) {
      const char *esc = NULL;
      switch (c) {
      case '\a': esc = "\\a"; break;
      case '\b': esc = "\\b"; break;
      case '\f': esc = "\\f"; break;
      case '\n': esc = "\\n"; break;
      case '\r': esc = "\\r"; break;
      case '\t': esc = "\\t"; break;
      case '\v': esc = "\\v"; break;
      }
      if (esc) {
        kin__buf_puts(b, esc);
      } else {
        char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
        kin__buf_add(b, e, 4);
      }
      p++;
    } else {
      /* a well-formed multi-byte UTF-8 sequence is copied, a stray byte is
       * escaped (Go prints \xNN for invalid UTF-8) */
      size_t n = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
      size_t i = 1;
      while (n && i < n && (p[i] & 0xc0) == 0x80) i++;
      if (n && i == n) {
        kin__buf_add(b, (const char *)p, n);
        p += n;
      } else {
        char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
        kin__buf_add(b, e, 4);
        p++;
      }
    }
  }
  kin__buf_add(b, "\"", 1);
}

/* ---- validation (content.IsLabelKey, IsLabelValue) ------------------- */

#define LABEL_KEY_REGEX "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define LABEL_KEY_ERR                                                                      \
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with " \
  "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "     \
  "for validation is '" LABEL_KEY_REGEX "')"
#define LABEL_VALUE_ERR                                                                      \
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "   \
  "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "      \
  "'my_value',  or '12345', regex used for validation is '(" LABEL_KEY_REGEX ")?')"
#define DNS1123_SUBDOMAIN_ERR                                                                \
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "  \
  "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "      \
  "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"       \
  "[a-z0-9])?)*')"

static int is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] over s[0..n) */
static int match_label_name(const char *s, size_t n) {
  if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1])) return 0;
  for (size_t i = 1; i + 1 < n; i++)
    if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.') return 0;
  return 1;
}

static int is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)* */
static int match_dns1123_subdomain(const char *s, size_t n) {
  size_t start = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i == n || s[i] == '.') {
      size_t len = i - start;
      if (len == 0 || !is_lower_alnum(s[start]) || !is_lower_alnum(s[i - 1])) return 0;
      for (size_t j = start; j < i; j++)
        if (!is_lower_alnum(s[j]) && s[j] != '-') return 0;
      start = i + 1;
    }
  }
  return 1;
}

/* Appends one message of a "; "-joined list. */
static void msg_add(kin__buf *b, int *count, const char *m) {
  if ((*count)++) kin__buf_puts(b, "; ");
  kin__buf_puts(b, m);
}

/* Appends the IsLabelKey messages for key to b; returns how many. */
static int label_key_errors(const char *key, kin__buf *b) {
  int n = 0;
  const char *slash = strchr(key, '/');
  const char *name = key;
  if (slash) {
    if (strchr(slash + 1, '/')) {
      msg_add(b, &n,
              "a valid label key " LABEL_KEY_ERR " with an optional DNS subdomain prefix and "
              "'/' (e.g. 'example.com/MyName')");
      return n;
    }
    size_t plen = (size_t)(slash - key);
    name = slash + 1;
    if (plen == 0) {
      msg_add(b, &n, "prefix part must be non-empty");
    } else {
      if (plen > 253) msg_add(b, &n, "prefix part must be no more than 253 bytes");
      if (!match_dns1123_subdomain(key, plen))
        msg_add(b, &n, "prefix part " DNS1123_SUBDOMAIN_ERR);
    }
  }
  size_t nlen = strlen(name);
  if (nlen == 0)
    msg_add(b, &n, "name part must be non-empty");
  else if (nlen > 63)
    msg_add(b, &n, "name part must be no more than 63 bytes");
  if (!match_label_name(name, nlen)) msg_add(b, &n, "name part " LABEL_KEY_ERR);
  return n;
}

/* Appends the IsLabelValue messages for v to b; returns how many. */
static int label_value_errors(const char *v, kin__buf *b) {
  int n = 0;
  size_t len = strlen(v);
  if (len > 63) msg_add(b, &n, "must be no more than 63 bytes");
  if (len > 0 && !match_label_name(v, len)) msg_add(b, &n, LABEL_VALUE_ERR);
  return n;
}

/* strconv.ParseInt(s, 10, 64) */
static int parse_int64(const char *s, int64_t *out) {
  const char *p = s;
  int neg = 0;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  if (!*p) return -1;
  uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    unsigned d = (unsigned)(*p - '0');
    if (v > (lim - d) / 10) return -1;
    v = v * 10 + d;
  }
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 0;
}

/* ---- lexer ------------------------------------------------------------ */

enum {
  T_ERROR,
  T_EOS,
  T_CLOSED_PAR,
  T_COMMA,
  T_DOES_NOT_EXIST,
  T_DOUBLE_EQUALS,
  T_EQUALS,
  T_GT,
  T_IDENT,
  T_IN,
  T_LT,
  T_NOT_EQUALS,
  T_NOT_IN,
  T_OPEN_PAR
};

typedef struct {
  int tok;
  const char *lit; /* points into the input; "" for end of string */
  size_t len;
} item;

static const struct {
  const char *s;
  int tok;
} string2token[] = {{")", T_CLOSED_PAR}, {",", T_COMMA},  {"!", T_DOES_NOT_EXIST},
                    {"==", T_DOUBLE_EQUALS}, {"=", T_EQUALS}, {">", T_GT},
                    {"in", T_IN},          {"<", T_LT},     {"!=", T_NOT_EQUALS},
                    {"notin", T_NOT_IN},   {"(", T_OPEN_PAR}};

static int lookup_token(const char *s, size_t n) {
  for (size_t i = 0; i < sizeof(string2token) / sizeof(string2token[0]); i++)
    if (strlen(string2token[i].s) == n && memcmp(string2token[i].s, s, n) == 0)
      return string2token[i].tok;
  return T_ERROR;
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static int is_special(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

/* Lex: the longest operator made of special symbols, or an identifier /
 * keyword running up to the next special symbol or blank. */
static item lex(const char **pp) {
  const char *p = *pp;
  while (is_ws(*p)) p++;
  item it = {T_EOS, "", 0};
  if (!*p) {
    *pp = p;
    return it;
  }
  if (is_special(*p)) {
    size_t n = 0, best = 0;
    int tok = T_ERROR;
    while (is_special(p[n])) {
      n++;
      int t = lookup_token(p, n);
      if (t != T_ERROR) {
        tok = t;
        best = n;
      } else if (tok != T_ERROR) {
        break;
      }
    }
    /* every single special symbol is a token, so best >= 1 */
    it.tok = tok;
    it.lit = p;
    it.len = best;
    *pp = p + best;
    return it;
  }
  size_t n = 0;
  while (p[n] && !is_special(p[n]) && !is_ws(p[n])) n++;
  int t = lookup_token(p, n);
  it.tok = t != T_ERROR ? t : T_IDENT;
  it.lit = p;
  it.len = n;
  *pp = p + n;
  return it;
}

/* ---- parser ----------------------------------------------------------- */

enum { CTX_KEY_AND_OPERATOR, CTX_VALUES };

typedef struct {
  item *items;
  size_t n, pos;
  kin__buf err;
} parser;

static item peek(parser *p, int ctx) {
  item it = p->items[p->pos < p->n ? p->pos : p->n - 1];
  if (ctx == CTX_VALUES && (it.tok == T_IN || it.tok == T_NOT_IN)) it.tok = T_IDENT;
  return it;
}

static item consume(parser *p, int ctx) {
  item it = peek(p, ctx);
  if (p->pos < p->n) p->pos++;
  return it;
}

static void found(parser *p, const item *it, const char *expected) {
  kin__buf_puts(&p->err, "found '");
  kin__buf_add(&p->err, it->lit, it->len);
  kin__buf_puts(&p->err, expected);
}

/* A sorted set of owned strings (sets.String). */
typedef struct {
  char **v;
  size_t n, cap;
} strset;

static int strset_insert(strset *s, const char *lit, size_t len) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    size_t ml = strlen(s->v[mid]);
    int c = memcmp(s->v[mid], lit, ml < len ? ml : len);
    if (c == 0) c = ml < len ? -1 : ml > len ? 1 : 0;
    if (c == 0) return 0;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (s->n == s->cap) {
    size_t nc = s->cap ? s->cap * 2 : 4;
    char **nv = realloc(s->v, nc * sizeof(*nv));
    if (!nv) return KIN_ENOMEM;
    s->v = nv;
    s->cap = nc;
  }
  char *c = malloc(len + 1);
  if (!c) return KIN_ENOMEM;
  memcpy(c, lit, len);
  c[len] = 0;
  memmove(s->v + lo + 1, s->v + lo, (s->n - lo) * sizeof(*s->v));
  s->v[lo] = c;
  s->n++;
  return 0;
}

static void strset_free(strset *s) {
  for (size_t i = 0; i < s->n; i++) free(s->v[i]);
  free(s->v);
  memset(s, 0, sizeof(*s));
}

/* Appends the field.Invalid message "path: Invalid value: "v": detail". */
static void field_invalid(kin__buf *b, const char *path, const char *v, const char *detail) {
  kin__buf_puts(b, path);
  kin__buf_puts(b, ": Invalid value: ");
  sb_quote(b, v);
  kin__buf_puts(b, ": ");
  kin__buf_puts(b, detail);
}

/* NewRequirement's checks for what the parser can produce: the integer
 * values of Gt/Lt, then every value as a label value. Messages are
 * aggregated as utilerrors.NewAggregate does ("[a, b]" when several,
 * duplicates dropped). Returns 0, KIN_EINVAL (message in p->err) or
 * KIN_ENOMEM. */
static int validate_requirement(parser *p, const char *key, int op, const strset *vals) {
  size_t nerr = 0, cap = 0;
  char **errs = NULL;
  int rc = 0;
  for (int pass = 0; pass < 2 && rc == 0; pass++) {
    for (size_t i = 0; i < vals->n && rc == 0; i++) {
      kin__buf e = {0};
      char path[64];
      if (pass == 0) {
        int64_t dummy;
        if (!(op == OP_GT || op == OP_LT) || parse_int64(vals->v[i], &dummy) == 0) continue;
        snprintf(path, sizeof(path), "values[%zu]", i);
        field_invalid(&e, path, vals->v[i], "for 'Gt', 'Lt' operators, the value must be an integer");
      } else {
        kin__buf d = {0};
        if (label_value_errors(vals->v[i], &d) == 0) {
          free(d.p);
          continue;
        }
        snprintf(path, sizeof(path), "values[%zu][", i);
        kin__buf fp = {0};
        kin__buf_puts(&fp, path);
        kin__buf_puts(&fp, key);
        kin__buf_puts(&fp, "]");
        if (!fp.oom && !d.oom) field_invalid(&e, fp.p, vals->v[i], d.p);
        if (fp.oom || d.oom) e.oom = 1;
        free(fp.p);
        free(d.p);
      }
      if (e.oom) {
        free(e.p);
        rc = KIN_ENOMEM;
        break;
      }
      int dup = 0;
      for (size_t j = 0; j < nerr; j++) dup |= strcmp(errs[j], e.p) == 0;
      if (dup) {
        free(e.p);
        continue;
      }
      if (nerr == cap) {
        size_t nc = cap ? cap * 2 : 4;
        char **ne = realloc(errs, nc * sizeof(*ne));
        if (!ne) {
          free(e.p);
          rc = KIN_ENOMEM;
          break;
        }
        errs = ne;
        cap = nc;
      }
      errs[nerr++] = e.p;
    }
  }
  if (rc == 0 && nerr) {
    if (nerr > 1) kin__buf_puts(&p->err, "[");
    for (size_t j = 0; j < nerr; j++) {
      if (j) kin__buf_puts(&p->err, ", ");
      kin__buf_puts(&p->err, errs[j]);
    }
    if (nerr > 1) kin__buf_puts(&p->err, "]");
    rc = KIN_EINVAL;
  }
  for (size_t j = 0; j < nerr; j++) free(errs[j]);
  free(errs);
  return rc;
}

/* parseValues: "(" a possibly empty, comma-separated list of possibly
 * empty identifiers ")". */
static int parse_values(parser *p, strset *s) {
  item it = consume(p, CTX_VALUES);
  if (it.tok != T_OPEN_PAR) {
    found(p, &it, "' expected: '('");
    return KIN_EINVAL;
  }
  item la = peek(p, CTX_VALUES);
  if (la.tok == T_CLOSED_PAR) {
    consume(p, CTX_VALUES);
    return strset_insert(s, "", 0);
  }
  if (la.tok != T_IDENT && la.tok != T_COMMA) {
    found(p, &la, "', expected: ',', ')' or identifier");
    return KIN_EINVAL;
  }
  for (;;) {
    it = consume(p, CTX_VALUES);
    if (it.tok == T_IDENT) {
      if (strset_insert(s, it.lit, it.len) < 0) return KIN_ENOMEM;
      item n2 = peek(p, CTX_VALUES);
      if (n2.tok == T_COMMA) continue;
      if (n2.tok == T_CLOSED_PAR) break;
      found(p, &n2, "', expected: ',' or ')'");
      return KIN_EINVAL;
    } else if (it.tok == T_COMMA) {
      /* "(,", ",)" and ",," each stand for an empty value */
      if (s->n == 0 && strset_insert(s, "", 0) < 0) return KIN_ENOMEM;
      item n2 = peek(p, CTX_VALUES);
      if (n2.tok == T_CLOSED_PAR) {
        if (strset_insert(s, "", 0) < 0) return KIN_ENOMEM;
        break;
      }
      if (n2.tok == T_COMMA && strset_insert(s, "", 0) < 0) return KIN_ENOMEM;
    } else {
      found(p, &it, "', expected: ',', or identifier");
      return KIN_EINVAL;
    }
  }
  consume(p, CTX_VALUES); /* the ')' just seen */
  return 0;
}

/* parseRequirement: [!] KEY [op value(s)]. On success appends to *reqs. */
static int parse_requirement(parser *p, requirement *r) {
  int op = -1;
  item it = consume(p, CTX_VALUES);
  if (it.tok == T_DOES_NOT_EXIST) {
    op = OP_DOES_NOT_EXIST;
    it = consume(p, CTX_VALUES);
  }
  if (it.tok != T_IDENT) {
    found(p, &it, "', expected: identifier");
    return KIN_EINVAL;
  }
  char *key = malloc(it.len + 1);
  if (!key) return KIN_ENOMEM;
  memcpy(key, it.lit, it.len);
  key[it.len] = 0;
  kin__buf kerr = {0};
  if (label_key_errors(key, &kerr) > 0) {
    /* the parser validates with a nil field path, printed "<nil>" */
    if (!kerr.oom) field_invalid(&p->err, "<nil>", key, kerr.p);
    int oom = kerr.oom;
    free(kerr.p);
    free(key);
    return oom ? KIN_ENOMEM : KIN_EINVAL;
  }
  free(kerr.p);
  item la = peek(p, CTX_VALUES);
  if ((la.tok == T_EOS || la.tok == T_COMMA) && op != OP_DOES_NOT_EXIST) op = OP_EXISTS;

  strset vals = {0};
  int rc = 0;
  if (op != OP_EXISTS && op != OP_DOES_NOT_EXIST) {
    item o = consume(p, CTX_KEY_AND_OPERATOR);
    switch (o.tok) {
    case T_IN: op = OP_IN; break;
    case T_EQUALS: op = OP_EQUALS; break;
    case T_DOUBLE_EQUALS: op = OP_DOUBLE_EQUALS; break;
    case T_GT: op = OP_GT; break;
    case T_LT: op = OP_LT; break;
    case T_NOT_IN: op = OP_NOT_IN; break;
    case T_NOT_EQUALS: op = OP_NOT_EQUALS; break;
    default:
      found(p, &o, "', expected: in, notin, =, ==, !=, gt, lt");
      free(key);
      return KIN_EINVAL;
    }
    if (op == OP_IN || op == OP_NOT_IN) {
      rc = parse_values(p, &vals);
    } else {
      item v = peek(p, CTX_VALUES);
      if (v.tok == T_EOS || v.tok == T_COMMA) {
        rc = strset_insert(&vals, "", 0);
      } else {
        v = consume(p, CTX_VALUES);
        if (v.tok == T_IDENT) {
          rc = strset_insert(&vals, v.lit, v.len);
        } else {
          found(p, &v, "', expected: identifier");
          rc = KIN_EINVAL;
        }
      }
    }
    if (rc == 0) rc = validate_requirement(p, key, op, &vals);
  }
  if (rc < 0) {
    strset_free(&vals);
    free(key);
    return rc;
  }
  r->key = key;
  r->op = op;
  r->nvals = vals.n;
  r->vals = vals.v;
  return 0;
}

static void requirement_free(requirement *r) {
  for (size_t i = 0; i < r->nvals; i++) free(r->vals[i]);
  free(r->vals);
  free(r->key);
}

void kin_label_selector_free(kin_label_selector *sel) {
  if (!sel) return;
  for (size_t i = 0; i < sel->n; i++) requirement_free(&sel->reqs[i]);
  free(sel->reqs);
  free(sel);
}

static void set_err(char *err, size_t errlen, const char *msg) {
  if (!err || !errlen) return;
  snprintf(err, errlen, "%s", msg ? msg : "out of memory");
}

/* The parse loop: requirements separated by commas, up to end of string. */
static int parse_all(parser *p, kin_label_selector *sel) {
  size_t cap = 0;
  for (;;) {
    item it = peek(p, CTX_VALUES);
    if (it.tok == T_EOS) return 0;
    if (it.tok != T_IDENT && it.tok != T_DOES_NOT_EXIST) {
      found(p, &it, "', expected: !, identifier, or 'end of string'");
      return KIN_EINVAL;
    }
    if (sel->n == cap) {
      size_t nc = cap ? cap * 2 : 4;
      requirement *nr = realloc(sel->reqs, nc * sizeof(*nr));
      if (!nr) return KIN_ENOMEM;
      sel->reqs = nr;
      cap = nc;
    }
    kin__buf inner = p->err;
    memset(&p->err, 0, sizeof(p->err));
    int rc = parse_requirement(p, &sel->reqs[sel->n]);
    if (rc < 0) {
      kin__buf msg = p->err;
      p->err = inner;
      if (rc == KIN_EINVAL) {
        kin__buf_puts(&p->err, "unable to parse requirement: ");
        if (msg.p) kin__buf_puts(&p->err, msg.p);
      }
      free(msg.p);
      return rc;
    }
    p->err = inner;
    sel->n++;
    item t = consume(p, CTX_VALUES);
    if (t.tok == T_EOS) return 0;
    if (t.tok == T_COMMA) {
      item t2 = peek(p, CTX_VALUES);
      if (t2.tok != T_IDENT && t2.tok != T_DOES_NOT_EXIST) {
        found(p, &t2, "', expected: identifier after ','");
        return KIN_EINVAL;
      }
    } else {
      found(p, &t, "', expected: ',' or 'end of string'");
      return KIN_EINVAL;
    }
  }
}

int kin_label_selector_parse(const char *s, kin_label_selector **out, char *err, size_t errlen) {
  *out = NULL;
  if (err && errlen) err[0] = 0;
  kin_label_selector *sel = calloc(1, sizeof(*sel));
  if (!sel) {
    set_err(err, errlen, NULL);
    return KIN_ENOMEM;
  }
  parser p = {0};
  size_t cap = 0;
  const char *cur = s ? s : "";
  for (;;) {
    if (p.n == cap) {
      size_t nc = cap ? cap * 2 : 16;
      item *ni = realloc(p.items, nc * sizeof(*ni));
      if (!ni) {
        free(p.items);
        kin_label_selector_free(sel);
        set_err(err, errlen, NULL);
        return KIN_ENOMEM;
      }
      p.items = ni;
      cap = nc;
    }
    item it = lex(&cur);
    p.items[p.n++] = it;
    if (it.tok == T_EOS) break;
  }
  int rc = parse_all(&p, sel);
  if (rc == 0 && p.err.oom) rc = KIN_ENOMEM;
  if (rc < 0) {
    set_err(err, errlen, rc == KIN_EINVAL && !p.err.oom ? (p.err.p ? p.err.p : "") : NULL);
    if (rc == KIN_EINVAL && p.err.oom) rc = KIN_ENOMEM;
    free(p.err.p);
    free(p.items);
    kin_label_selector_free(sel);
    return rc;
  }
  free(p.err.p);
  free(p.items);
  /* sort.Sort(ByKey) on the small slices of a selector is an insertion
   * sort, i.e. stable: requirements on the same key keep their order */
  for (size_t i = 1; i < sel->n; i++) {
    requirement r = sel->reqs[i];
    size_t j = i;
    while (j > 0 && strcmp(sel->reqs[j - 1].key, r.key) > 0) {
      sel->reqs[j] = sel->reqs[j - 1];
      j--;
    }
    sel->reqs[j] = r;
  }
  *out = sel;
  return 0;
}

static int has_value(const requirement *r, const char *v) {
  for (size_t i = 0; i < r->nvals; i++)
    if (strcmp(r->vals[i], v) == 0) return 1;
  return 0;
}

static int requirement_matches(const requirement *r, kin_label_getter get, void *ud) {
  const char *v = get(ud, r->key);
  switch (r->op) {
  case OP_IN:
  case OP_EQUALS:
  case OP_DOUBLE_EQUALS:
    return v && has_value(r, v);
  case OP_NOT_IN:
  case OP_NOT_EQUALS:
    return !v || !has_value(r, v);
  case OP_EXISTS:
    return v != NULL;
  case OP_DOES_NOT_EXIST:
    return v == NULL;
  case OP_GT:
  case OP_LT: {
    int64_t have, want;
    if (!v || r->nvals != 1 || parse_int64(v, &have) < 0 || parse_int64(r->vals[0], &want) < 0)
      return 0;
    return r->op == OP_GT ? have > want : have < want;
  }
  }
  return 0;
}

int kin_label_selector_matches(const kin_label_selector *sel, kin_label_getter get, void *ud) {
  for (size_t i = 0; sel && i < sel->n; i++)
    if (!requirement_matches(&sel->reqs[i], get, ud)) return 0;
  return 1;
}

int kin_label_selector_empty(const kin_label_selector *sel) { return sel == NULL || sel->n == 0; }

/* Appends to buf like snprintf; *len counts what the full string needs. */
static void out_put(char *buf, size_t cap, size_t *len, const char *s) {
  size_t n = strlen(s);
  if (*len < cap) {
    size_t room = cap - *len - 1;
    memcpy(buf + *len, s, n < room ? n : room);
  }
  *len += n;
}

size_t kin_label_selector_string(const kin_label_selector *sel, char *buf, size_t cap) {
  static const char *const opstr[] = {"", "", "=", "==", "!=", " in ", " notin ", ">", "<"};
  size_t len = 0;
  for (size_t i = 0; sel && i < sel->n; i++) {
    const requirement *r = &sel->reqs[i];
    if (i) out_put(buf, cap, &len, ",");
    if (r->op == OP_DOES_NOT_EXIST) out_put(buf, cap, &len, "!");
    out_put(buf, cap, &len, r->key);
    if (r->op == OP_EXISTS || r->op == OP_DOES_NOT_EXIST) continue;
    out_put(buf, cap, &len, opstr[r->op]);
    int set = r->op == OP_IN || r->op == OP_NOT_IN;
    if (set) out_put(buf, cap, &len, "(");
    for (size_t j = 0; j < r->nvals; j++) {
      if (j) out_put(buf, cap, &len, ",");
      out_put(buf, cap, &len, r->vals[j]);
    }
    if (set) out_put(buf, cap, &len, ")");
  }
  if (cap) buf[len < cap ? len : cap - 1] = 0;
  return len;
}
