/* ljson.c -- JSON text <-> Lua values for the binding (see ljson.h): a
 * one-pass recursive-descent decoder that builds the Lua tables as it
 * reads, and an encoder that writes into a growing userdata (so a Lua
 * memory error, which longjmps, leaks nothing). Neither depends on the
 * locale: number text goes through lua_stringtonumber, which handles it. */
#include "ljson.h"

#include <lauxlib.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_str.h"
#include "kin.h"
#include "laux.h"

#define NOINLINE __attribute__((noinline))

void lkin_json_push_array_mt(lua_State *L) {
  luaL_newmetatable(L, LKIN_JSON_ARRAY_MT); /* sets __name on creation */
}

/* ---- decoding ------------------------------------------------------------ */

typedef struct {
  lua_State *L;
  const char *s;   /* the document */
  const char *p;   /* the cursor */
  const char *end; /* one past its last byte */
  int mt;          /* stack index of the array metatable */
  int depth;
  int rc;           /* KIN_EINVAL or KIN_ENOMEM once failed */
  const char *what; /* static text of the failure */
  size_t at;        /* its offset */
} dec;

static int dec_value(dec *d);

/* Notes a failure at p. Returns -1, for the caller to return. */
static int dec_fail(dec *d, const char *p, const char *what) {
  d->rc = KIN_EINVAL;
  d->what = what;
  d->at = (size_t)(p - d->s);
  return -1;
}

static int dec_oom(dec *d) {
  d->rc = KIN_ENOMEM;
  d->what = "not enough memory (Lua stack)";
  d->at = (size_t)(d->p - d->s);
  return -1;
}

static inline const char *skip_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  return p;
}

static inline int is_digit(char c) {
  return c >= '0' && c <= '9';
}

/* Reports why the string at d->p is not valid JSON: q is where
 * kin__json_str_end stopped (json_str.c's rule). Returns -1. */
static NOINLINE int dec_string_fail(dec *d, const char *q) {
  if (q >= d->end || (*q == '\\' && q + 1 >= d->end)) return dec_fail(d, d->p, "unterminated string");
  if ((unsigned char)*q < 0x20) return dec_fail(d, q, "control character in string");
  return dec_fail(d, q, q[1] == 'u' ? "invalid \\u escape" : "invalid escape in string");
}

/* The body s[0..n) of a checked string with escapes, decoded by
 * kin__json_unescape (json_str.h: the core's rule, so a lone UTF-16
 * surrogate becomes U+FFFD, as Go's encoding/json does, and \u0000 a 0
 * byte). Pushes it and returns 0, or returns -1 (the buffer's stack slot
 * is left for the caller's settop). Kept out of line so that its
 * luaL_Buffer does not sit in every recursive frame. */
static NOINLINE int dec_string_escaped(dec *d, const char *s, size_t n) {
  size_t len;
  luaL_Buffer b;
  char *o = luaL_buffinitsize(d->L, &b, n);
  if (kin__json_unescape(s, n, o, &len) < 0) return dec_fail(d, s + len, "invalid escape in string");
  luaL_pushresultsize(&b, len);
  return 0;
}

/* The string at d->p (a '"'): its end found by kin__json_str_end, the one
 * rule of the core. Pushes it and returns 0, or returns -1. */
static int dec_string(dec *d) {
  size_t base = (size_t)(d->p - d->s), pos = base;
  size_t n = (size_t)(d->end - d->s);
  int escaped;
  if (kin__json_str_end(d->s, n, &pos, &escaped) < 0) return dec_string_fail(d, d->s + pos);
  const char *s = d->p + 1;
  size_t len = pos - base - 2;
  if (escaped && dec_string_escaped(d, s, len) < 0) return -1;
  if (!escaped) lua_pushlstring(d->L, s, len);
  d->p = d->s + pos;
  return 0;
}

/* Pushes the float (or out-of-range integer) spelled by s[0..n), already
 * checked against the JSON grammar. Returns 0, or -1 if Lua refuses it. */
static NOINLINE int dec_float(dec *d, const char *s, size_t n) {
  char tmp[72];
  size_t ok;
  if (n < sizeof(tmp)) {
    memcpy(tmp, s, n);
    tmp[n] = 0;
    ok = lua_stringtonumber(d->L, tmp);
  } else {
    lua_pushlstring(d->L, s, n);
    ok = lua_stringtonumber(d->L, lua_tostring(d->L, -1));
    if (ok) lua_remove(d->L, -2);
  }
  if (!ok) return dec_fail(d, s, "number out of range");
  if (lua_isinteger(d->L, -1)) { /* cannot happen for checked text; be sure */
    lua_Number v = (lua_Number)lua_tointeger(d->L, -1);
    lua_pop(d->L, 1);
    lua_pushnumber(d->L, v);
  }
  return 0;
}

/* The number at d->p. Pushes a Lua integer when it has no fraction and no
 * exponent and fits in int64, else a float. Returns 0 or -1. */
static int dec_number(dec *d) {
  const char *start = d->p, *p = start, *end = d->end;
  int neg = 0, isfloat = 0;
  uint64_t u = 0;
  if (*p == '-') {
    neg = 1;
    p++;
  }
  if (p == end || !is_digit(*p)) return dec_fail(d, start, "invalid number");
  if (*p == '0') {
    p++;
    if (p < end && is_digit(*p)) return dec_fail(d, start, "invalid number (leading zero)");
  } else {
    for (; p < end && is_digit(*p); p++) {
      unsigned dd = (unsigned)(*p - '0');
      if (u > (UINT64_MAX - dd) / 10) isfloat = 1;
      else u = u * 10 + dd;
    }
  }
  if (p < end && *p == '.') {
    p++;
    if (p == end || !is_digit(*p)) return dec_fail(d, start, "invalid number");
    while (p < end && is_digit(*p)) p++;
    isfloat = 1;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    if (p == end || !is_digit(*p)) return dec_fail(d, start, "invalid number");
    while (p < end && is_digit(*p)) p++;
    isfloat = 1;
  }
  d->p = p;
  if (!isfloat && !neg && u <= (uint64_t)INT64_MAX) {
    lua_pushinteger(d->L, (lua_Integer)u);
    return 0;
  }
  if (!isfloat && neg && u <= (uint64_t)INT64_MAX + 1) {
    /* two's complement wrap: 2^63 becomes INT64_MIN */
    lua_pushinteger(d->L, u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(lua_Integer)u);
    return 0;
  }
  return dec_float(d, start, (size_t)(p - start));
}

static int dec_literal(dec *d, const char *word, size_t n) {
  if ((size_t)(d->end - d->p) < n || memcmp(d->p, word, n) != 0)
    return dec_fail(d, d->p, "invalid literal");
  d->p += n;
  return 0;
}

/* Enters one level of nesting. Returns 0 or -1. */
static int dec_enter(dec *d) {
  if (++d->depth > LKIN_JSON_MAX_DEPTH) return dec_fail(d, d->p, "nesting deeper than 512");
  if (!lua_checkstack(d->L, 4)) return dec_oom(d);
  return 0;
}

static int dec_object(dec *d) {
  lua_State *L = d->L;
  if (dec_enter(d) < 0) return -1;
  lua_createtable(L, 0, 0);
  d->p = skip_ws(d->p + 1, d->end);
  if (d->p < d->end && *d->p == '}') {
    d->p++;
    d->depth--;
    return 0;
  }
  for (;;) {
    if (d->p == d->end) return dec_fail(d, d->p, "unexpected end of input in object");
    if (*d->p != '"') return dec_fail(d, d->p, "expected a string key");
    if (dec_string(d) < 0) return -1;
    d->p = skip_ws(d->p, d->end);
    if (d->p == d->end || *d->p != ':') return dec_fail(d, d->p, "expected ':'");
    d->p++;
    if (dec_value(d) < 0) return -1;
    lua_rawset(L, -3);
    d->p = skip_ws(d->p, d->end);
    if (d->p == d->end) return dec_fail(d, d->p, "unexpected end of input in object");
    if (*d->p == '}') break;
    if (*d->p != ',') return dec_fail(d, d->p, "expected ',' or '}'");
    d->p = skip_ws(d->p + 1, d->end);
  }
  d->p++;
  d->depth--;
  return 0;
}

static int dec_array(dec *d) {
  lua_State *L = d->L;
  if (dec_enter(d) < 0) return -1;
  lua_createtable(L, 0, 0);
  lua_pushvalue(L, d->mt);
  lua_setmetatable(L, -2);
  d->p = skip_ws(d->p + 1, d->end);
  if (d->p < d->end && *d->p == ']') {
    d->p++;
    d->depth--;
    return 0;
  }
  for (lua_Integer i = 1;; i++) {
    if (dec_value(d) < 0) return -1;
    lua_rawseti(L, -2, i);
    d->p = skip_ws(d->p, d->end);
    if (d->p == d->end) return dec_fail(d, d->p, "unexpected end of input in array");
    if (*d->p == ']') break;
    if (*d->p != ',') return dec_fail(d, d->p, "expected ',' or ']'");
    d->p++;
  }
  d->p++;
  d->depth--;
  return 0;
}

/* The value at d->p (after whitespace). Pushes it and returns 0, or
 * returns -1 with the failure noted in d. */
static int dec_value(dec *d) {
  d->p = skip_ws(d->p, d->end);
  if (d->p == d->end) return dec_fail(d, d->p, "unexpected end of input");
  switch (*d->p) {
  case '{': return dec_object(d);
  case '[': return dec_array(d);
  case '"': return dec_string(d);
  case 't':
    if (dec_literal(d, "true", 4) < 0) return -1;
    lua_pushboolean(d->L, 1);
    return 0;
  case 'f':
    if (dec_literal(d, "false", 5) < 0) return -1;
    lua_pushboolean(d->L, 0);
    return 0;
  case 'n':
    if (dec_literal(d, "null", 4) < 0) return -1;
    lua_pushlightuserdata(d->L, NULL);
    return 0;
  case '-':
  case '0': case '1': case '2': case '3': case '4':
  case '5': case '6': case '7': case '8': case '9':
    return dec_number(d);
  default: return dec_fail(d, d->p, "unexpected character");
  }
}

int lkin_json_push_msg(lua_State *L, const char *json, size_t len, char *msg, size_t msglen) {
  int top = lua_gettop(L);
  if (!lua_checkstack(L, 8)) {
    if (msglen) snprintf(msg, msglen, "not enough memory (Lua stack)");
    return KIN_ENOMEM;
  }
  lkin_json_push_array_mt(L);
  dec d = {L, json ? json : "", json ? json : "", (json ? json : "") + len, top + 1, 0, 0, NULL, 0};
  int r = dec_value(&d);
  if (r == 0) {
    d.p = skip_ws(d.p, d.end);
    if (d.p != d.end) r = dec_fail(&d, d.p, "unexpected characters after the value");
  }
  if (r < 0) {
    lua_settop(L, top);
    if (msglen) {
      unsigned char c = d.at < len ? (unsigned char)json[d.at] : 0;
      if (d.rc == KIN_ENOMEM) snprintf(msg, msglen, "%s", d.what);
      else if (c > 0x20 && c < 0x7f)
        snprintf(msg, msglen, "invalid JSON at offset %zu ('%c'): %s", d.at, c, d.what);
      else snprintf(msg, msglen, "invalid JSON at offset %zu: %s", d.at, d.what);
    }
    return d.rc;
  }
  lua_remove(L, top + 1);
  return 0;
}

int lkin_json_push(lua_State *L, const char *json, size_t len) {
  return lkin_json_push_msg(L, json, len, NULL, 0);
}

/* ---- encoding ------------------------------------------------------------ */

typedef struct {
  const void *t; /* the table at this level, for cycles */
  int key;       /* stack index of its current string key, or 0 */
  lua_Integer i; /* else the current array index */
} enc_level;

typedef struct {
  lua_State *L;
  int box; /* stack index of the userdata holding buf */
  int mt;  /* stack index of the array metatable (or nil) */
  int vmt; /* stack index of the view metatable (or nil) */
  char *buf;
  size_t n, cap;
  int depth;
  int rc;
  char err[96]; /* what failed; the path is added when reporting */
  enc_level path[LKIN_JSON_MAX_DEPTH + 1];
} enc;

/* Makes room for need more bytes (replacing the box by a bigger one) and
 * returns where they go. Raises on memory errors only. */
static char *enc_reserve(enc *e, size_t need) {
  if (e->cap - e->n >= need) return e->buf + e->n;
  size_t cap = e->cap * 2;
  while (cap - e->n < need) cap *= 2;
  char *nb = lua_newuserdatauv(e->L, cap, 0);
  memcpy(nb, e->buf, e->n);
  lua_replace(e->L, e->box);
  e->buf = nb;
  e->cap = cap;
  return nb + e->n;
}

static inline void enc_put(enc *e, const char *s, size_t n) {
  memcpy(enc_reserve(e, n), s, n);
  e->n += n;
}

static inline void enc_putc(enc *e, char c) {
  *enc_reserve(e, 1) = c;
  e->n++;
}

static int enc_fail(enc *e, const char *what) {
  e->rc = KIN_EINVAL;
  snprintf(e->err, sizeof(e->err), "%s", what);
  return -1;
}

static void enc_int(enc *e, lua_Integer v) {
  char tmp[24], *o = tmp + sizeof(tmp);
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do {
    *--o = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) *--o = '-';
  enc_put(e, o, (size_t)(tmp + sizeof(tmp) - o));
}

/* Floats: integral values within int64 as integers (Go refuses 3.0 or
 * 1e+15 for an integer field), others with the fewest of 15..17
 * significant digits that read back exactly. */
static int enc_float(enc *e, lua_Number v) {
  if (isnan(v)) return enc_fail(e, "cannot encode nan");
  if (isinf(v)) return enc_fail(e, "cannot encode inf");
  if (v == floor(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0) {
    enc_int(e, (lua_Integer)v);
    return 0;
  }
  char tmp[48];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(tmp, sizeof(tmp), "%.*g", prec, (double)v);
    if (strtod(tmp, NULL) == (double)v) break; /* both in the current locale */
  }
  /* the locale's decimal point (any bytes) becomes '.' */
  char *o = enc_reserve(e, sizeof(tmp));
  size_t k = 0;
  int in_point = 0;
  for (const char *s = tmp; *s; s++) {
    char c = *s;
    if (is_digit(c) || c == '-' || c == '+' || c == 'e') {
      o[k++] = c;
      in_point = 0;
    } else if (!in_point) {
      o[k++] = '.';
      in_point = 1;
    }
  }
  e->n += k;
  return 0;
}

static void enc_string(enc *e, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  enc_putc(e, '"');
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    enc_put(e, s + run, i - run);
    run = i + 1;
    char esc[6] = {'\\', 0, 0, 0, 0, 0};
    size_t k = 2;
    switch (c) {
    case '"': esc[1] = '"'; break;
    case '\\': esc[1] = '\\'; break;
    case '\b': esc[1] = 'b'; break;
    case '\f': esc[1] = 'f'; break;
    case '\n': esc[1] = 'n'; break;
    case '\r': esc[1] = 'r'; break;
    case '\t': esc[1] = 't'; break;
    default:
      esc[1] = 'u';
      esc[2] = '0';
      esc[3] = '0';
      esc[4] = hex[c >> 4];
      esc[5] = hex[c & 15];
      k = 6;
    }
    enc_put(e, esc, k);
  }
  enc_put(e, s + run, n - run);
  enc_putc(e, '"');
}

static int enc_value(enc *e, int idx);

static int enc_table(enc *e, int idx) {
  lua_State *L = e->L;
  const void *t = lua_topointer(L, idx);
  if (e->depth >= LKIN_JSON_MAX_DEPTH) return enc_fail(e, "nesting deeper than 512");
  for (int i = 0; i < e->depth; i++)
    if (e->path[i].t == t) return enc_fail(e, "cannot encode a table that contains itself");
  if (!lua_checkstack(L, 6)) {
    e->rc = KIN_ENOMEM;
    snprintf(e->err, sizeof(e->err), "not enough memory (Lua stack)");
    return -1;
  }
  int is_array = 0;
  if (lua_getmetatable(L, idx)) {
    is_array = lua_rawequal(L, -1, e->mt);
    int view = !is_array && lua_rawequal(L, -1, e->vmt);
    lua_pop(L, 1);
    /* a lazy view: its __pairs decodes the rest into it, in place
     * (luaL_callmeta keeps one result) */
    if (view && luaL_callmeta(L, idx, "__pairs")) lua_pop(L, 1);
  }
  enc_level *lv = &e->path[e->depth];
  lv->t = t;
  lv->key = 0;
  lv->i = 0;
  lua_pushnil(L);
  if (!lua_next(L, idx)) {
    enc_put(e, is_array ? "[]" : "{}", 2);
    return 0;
  }
  if (!is_array && lua_type(L, -2) == LUA_TSTRING) {
    enc_putc(e, '{');
    int first = 1;
    do {
      if (lua_type(L, -2) != LUA_TSTRING) return enc_fail(e, "cannot encode table with mixed keys");
      if (!first) enc_putc(e, ',');
      first = 0;
      size_t kn;
      const char *k = lua_tolstring(L, -2, &kn);
      enc_string(e, k, kn);
      enc_putc(e, ':');
      lv->key = lua_absindex(L, -2);
      e->depth++;
      if (enc_value(e, lua_absindex(L, -1)) < 0) return -1;
      e->depth--;
      lua_pop(L, 1);
    } while (lua_next(L, idx));
    enc_putc(e, '}');
    return 0;
  }
  /* an array: positive integer keys exactly 1..n */
  lua_Integer count = 0, max = 0;
  do {
    if (!lua_isinteger(L, -2)) return enc_fail(e, "cannot encode table with mixed keys");
    lua_Integer k = lua_tointeger(L, -2);
    if (k < 1) return enc_fail(e, "cannot encode table with mixed keys");
    if (k > max) max = k;
    count++;
    lua_pop(L, 1);
  } while (lua_next(L, idx));
  if (max != count) return enc_fail(e, "cannot encode sparse array (keys are not 1..n)");
  enc_putc(e, '[');
  for (lua_Integer i = 1; i <= count; i++) {
    if (i > 1) enc_putc(e, ',');
    lua_rawgeti(L, idx, i);
    lv->i = i;
    e->depth++;
    if (enc_value(e, lua_absindex(L, -1)) < 0) return -1;
    e->depth--;
    lua_pop(L, 1);
  }
  enc_putc(e, ']');
  return 0;
}

/* Appends the value at idx (absolute). Returns 0, or -1 with the failure
 * in e (the stack is left for the caller's settop). */
static int enc_value(enc *e, int idx) {
  lua_State *L = e->L;
  switch (lua_type(L, idx)) {
  case LUA_TNIL: enc_put(e, "null", 4); return 0;
  case LUA_TBOOLEAN:
    if (lua_toboolean(L, idx)) enc_put(e, "true", 4);
    else enc_put(e, "false", 5);
    return 0;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) {
      enc_int(e, lua_tointeger(L, idx));
      return 0;
    }
    return enc_float(e, lua_tonumber(L, idx));
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    enc_string(e, s, n);
    return 0;
  }
  case LUA_TLIGHTUSERDATA:
    if (lua_touserdata(L, idx) == NULL) {
      enc_put(e, "null", 4);
      return 0;
    }
    return enc_fail(e, "cannot encode a lightuserdata other than null");
  case LUA_TTABLE: return enc_table(e, idx);
  default: {
    char what[64];
    snprintf(what, sizeof(what), "cannot encode a %s", luaL_typename(L, idx));
    return enc_fail(e, what);
  }
  }
}

/* Writes "$.a.b[2]" for the levels above e->depth into o (cut to cap). */
static void enc_path(enc *e, char *o, size_t cap) {
  size_t k = (size_t)snprintf(o, cap, "$");
  for (int i = 0; i < e->depth && k < cap; i++) {
    const enc_level *lv = &e->path[i];
    if (lv->key) k += (size_t)snprintf(o + k, cap - k, ".%.64s", lua_tostring(e->L, lv->key));
    else k += (size_t)snprintf(o + k, cap - k, "[%lld]", (long long)lv->i);
  }
}

int lkin_json_encode(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  int top = lua_gettop(L);
  if (!lua_checkstack(L, 8)) {
    lua_pushliteral(L, "not enough memory (Lua stack)");
    return KIN_ENOMEM;
  }
  enc e; /* ~12 KB of C stack; everything that can raise is Lua's */
  e.L = L;
  e.cap = 256;
  e.n = 0;
  e.depth = 0;
  e.rc = 0;
  e.buf = lua_newuserdatauv(L, e.cap, 0);
  e.box = top + 1;
  lua_getfield(L, LUA_REGISTRYINDEX, LKIN_JSON_ARRAY_MT);
  e.mt = top + 2;
  lua_getfield(L, LUA_REGISTRYINDEX, LKIN_JSON_VIEW_MT);
  e.vmt = top + 3;
  if (enc_value(&e, idx) < 0) {
    char path[256], msg[sizeof(e.err) + sizeof(path) + 8];
    enc_path(&e, path, sizeof(path));
    if (e.rc == KIN_ENOMEM) snprintf(msg, sizeof(msg), "%s", e.err);
    else snprintf(msg, sizeof(msg), "%s at %s", e.err, path);
    lua_settop(L, top);
    lua_pushstring(L, msg);
    return e.rc;
  }
  lua_pushlstring(L, e.buf, e.n);
  lua_replace(L, top + 1);
  lua_settop(L, top + 1);
  return 0;
}

/* ---- the Lua functions ----------------------------------------------------- */

/* core.json_decode(s) -> value | nil, message, code */
static int l_json_decode(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  char msg[192];
  int rc = lkin_json_push_msg(L, s, n, msg, sizeof(msg));
  if (rc == 0) return 1;
  lua_pushnil(L);
  lua_pushstring(L, msg);
  lua_pushstring(L, lkin_errname(rc));
  return 3;
}

/* core.json_encode(v) -> string | nil, message, code */
static int l_json_encode(lua_State *L) {
  luaL_checkany(L, 1);
  int rc = lkin_json_encode(L, 1);
  if (rc == 0) return 1;
  lua_pushnil(L);
  lua_insert(L, -2);
  lua_pushstring(L, lkin_errname(rc));
  return 3;
}

/* core.empty_array() -> a new empty table that encodes as [] */
static int l_empty_array(lua_State *L) {
  lua_createtable(L, 0, 0);
  lkin_json_push_array_mt(L);
  lua_setmetatable(L, -2);
  return 1;
}

void lkin_open_json(lua_State *L) {
  lua_pushcfunction(L, l_json_decode);
  lua_setfield(L, -2, "json_decode");
  lua_pushcfunction(L, l_json_encode);
  lua_setfield(L, -2, "json_encode");
  lua_pushcfunction(L, l_empty_array);
  lua_setfield(L, -2, "empty_array");
  lkin_json_push_array_mt(L);
  lua_setfield(L, -2, "array_mt");
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, -2, "null");
}
