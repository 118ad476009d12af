/* pb_json.c -- protobuf wire bytes to JSON text in the shape Go's
 * json.Marshal gives the unmarshalled struct (pb_json.h). One pass finds
 * where each field's last value is (and how many a repeated field has);
 * the object is then written in Go struct order, repeated fields by
 * scanning the message again for their number. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base64.h"
#include "json_check.h"
#include "kin.h"
#include "pb_json.h"
#include "pb_schema.h"

#define MAX_DEPTH 64
#define STACK_FIELDS 24

typedef struct {
  kin__buf *out;
  char *err;
  size_t cap;
  int depth;
} jctx;

/* Where a field's values are: the last one (its bytes after the tag) and
 * how many came. */
typedef struct {
  const uint8_t *last;
  uint32_t count;
  uint8_t wt;
} occ;

static int fail(jctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(jctx *c, const char *fmt, ...) {
  if (!c->err[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->cap, fmt, ap);
    va_end(ap);
  }
  return KIN_EINVAL;
}

/* Appends n bytes; the common case (room) without a call. The buffer is
 * NUL-ended at the end of each public call (end_text). */
static inline int put(jctx *c, const char *s, size_t n) {
  kin__buf *b = c->out;
  if (b->len + n + 1 > b->cap) return kin__buf_add(b, s, n) ? KIN_ENOMEM : 0;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  return 0;
}

/* 1 for the bytes a JSON string cannot hold as they are (controls, '"',
 * '\\') or that start a UTF-8 sequence to check (>= 0x80). */
static const unsigned char str_special[256] = {
    [0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1};
#define PUTS(c, lit) put((c), (lit), sizeof(lit) - 1)

static int emit_msg(jctx *c, int msg, const uint8_t *p, size_t n);
static int object_json(jctx *c, const uint8_t *p, size_t n);

/* The wire type a field of kind is written with. */
static int wire_type_of(int kind) {
  switch (kind) {
    case KIN__PB_DOUBLE: return 1;
    case KIN__PB_FLOAT: return 5;
    case KIN__PB_STRING: case KIN__PB_BYTES: case KIN__PB_MESSAGE: return 2;
    default: return 0;
  }
}

/* Appends s (n bytes) as a JSON string; invalid UTF-8 becomes U+FFFD, as
 * Go's encoder writes it. */
static int put_str(jctx *c, const uint8_t *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  if (PUTS(c, "\"")) return KIN_ENOMEM;
  size_t run = 0, i = 0;
  while (i < n) {
    /* Eight plain bytes at a time (no control, '"', '\\' or byte >= 0x80
     * among them); a false alarm only sends one byte the slow way. */
    while (i + 8 <= n) {
      uint64_t w;
      memcpy(&w, s + i, 8);
      const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
      uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
      uint64_t hit = (w | ((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((bs - ones) & ~bs)) & highs;
      if (hit) break;
      run += 8;
      i += 8;
    }
    if (i >= n) break;
    uint8_t b = s[i];
    if (!str_special[b]) { /* the common byte: part of the run */
      run++;
      i++;
      continue;
    }
    const char *esc = NULL;
    char u[6];
    size_t adv = 1, bad = 0;
    if (b < 0x80) {
      if (b == '"') esc = "\\\"";
      else if (b == '\\') esc = "\\\\";
      else if (b == '\n') esc = "\\n";
      else if (b == '\r') esc = "\\r";
      else if (b == '\t') esc = "\\t";
      else if (b < 0x20) {
        memcpy(u, "\\u00", 4);
        u[4] = hex[b >> 4];
        u[5] = hex[b & 15];
      }
    } else {
      /* the length of a well-formed sequence at i, or bad */
      size_t len = b >= 0xf0 && b <= 0xf4 ? 4 : b >= 0xe0 ? 3 : b >= 0xc2 && b < 0xe0 ? 2 : 0;
      if (!len || i + len > n) bad = 1;
      for (size_t k = 1; !bad && k < len; k++)
        if ((s[i + k] & 0xc0) != 0x80) bad = 1;
      if (!bad && len == 3 && ((b == 0xe0 && s[i + 1] < 0xa0) || (b == 0xed && s[i + 1] >= 0xa0)))
        bad = 1;
      if (!bad && len == 4 && ((b == 0xf0 && s[i + 1] < 0x90) || (b == 0xf4 && s[i + 1] >= 0x90)))
        bad = 1;
      if (!bad) adv = len;
    }
    if (!esc && b >= 0x20 && !bad) {
      run += adv;
      i += adv;
      continue;
    }
    if (run && put(c, (const char *)s + i - run, run)) return KIN_ENOMEM;
    run = 0;
    if (bad) {
      if (PUTS(c, "\xef\xbf\xbd")) return KIN_ENOMEM;
    } else if (esc) {
      if (put(c, esc, strlen(esc))) return KIN_ENOMEM;
    } else if (put(c, u, 6)) {
      return KIN_ENOMEM;
    }
    i += adv;
  }
  if (run && put(c, (const char *)s + n - run, run)) return KIN_ENOMEM;
  return PUTS(c, "\"");
}

/* A float64 as Go's encoding/json writes it: integral values without a
 * fraction, others in the fewest digits that read back the same. */
static int put_double(jctx *c, double d, const char *go) {
  if (!isfinite(d)) return fail(c, "json: unsupported value: %g (field %s)", d, go);
  char b[40];
  if (d > -9007199254740992.0 && d < 9007199254740992.0 && d == (double)(long long)d) {
    snprintf(b, sizeof b, "%lld", (long long)d);
  } else {
    for (int prec = 1; prec <= 17; prec++) {
      snprintf(b, sizeof b, "%.*g", prec, d);
      if (strtod(b, NULL) == d) break;
    }
  }
  return put(c, b, strlen(b));
}

/* A scalar value of f at *p (wire type checked by the caller) into *out as
 * a number (ints, bools) for the special messages that need one. */
static int read_int(const uint8_t **p, const uint8_t *end, int64_t *out) {
  uint64_t v;
  if (kin__pb_varint(p, end, &v)) return -1;
  *out = (int64_t)v;
  return 0;
}

/* Writes one value of f at *p (advanced past it), or, with zero, f's zero
 * value. *is_zero (when not NULL) tells whether a scalar was its type's
 * zero (omitempty drops those). */
static int put_value(jctx *c, const kin__pb_field *f, const uint8_t **p, const uint8_t *end,
                     int *is_zero) {
  if (is_zero) *is_zero = 0;
  if (f->kind == KIN__PB_MESSAGE) {
    const uint8_t *s;
    size_t n;
    if (kin__pb_read_len(p, end, &s, &n)) return fail(c, "unexpected EOF");
    return emit_msg(c, f->msg, s, n);
  }
  char b[32];
  switch (f->kind) {
    case KIN__PB_DOUBLE: {
      if (end - *p < 8) return fail(c, "unexpected EOF");
      uint64_t u = 0;
      for (int i = 7; i >= 0; i--) u = u << 8 | (*p)[i];
      *p += 8;
      double d;
      memcpy(&d, &u, 8);
      if (is_zero) *is_zero = d == 0;
      return put_double(c, d, f->go);
    }
    case KIN__PB_FLOAT: {
      if (end - *p < 4) return fail(c, "unexpected EOF");
      uint32_t u = 0;
      for (int i = 3; i >= 0; i--) u = u << 8 | (*p)[i];
      *p += 4;
      float fl;
      memcpy(&fl, &u, 4);
      if (is_zero) *is_zero = fl == 0;
      return put_double(c, fl, f->go);
    }
    case KIN__PB_STRING:
    case KIN__PB_BYTES: {
      const uint8_t *s;
      size_t n;
      if (kin__pb_read_len(p, end, &s, &n)) return fail(c, "unexpected EOF");
      if (is_zero) *is_zero = n == 0;
      if (f->kind == KIN__PB_STRING) return put_str(c, s, n);
      char *b64 = kin__base64_encode(s, n);
      if (!b64) return KIN_ENOMEM;
      int rc = PUTS(c, "\"") || put(c, b64, strlen(b64)) || PUTS(c, "\"") ? KIN_ENOMEM : 0;
      free(b64);
      return rc;
    }
    default: {
      uint64_t v;
      if (kin__pb_varint(p, end, &v)) return fail(c, "unexpected EOF");
      if (is_zero) *is_zero = v == 0;
      switch (f->kind) {
        case KIN__PB_BOOL: return v ? PUTS(c, "true") : PUTS(c, "false");
        case KIN__PB_INT32: snprintf(b, sizeof b, "%d", (int32_t)v); break;
        case KIN__PB_UINT32: snprintf(b, sizeof b, "%u", (uint32_t)v); break;
        case KIN__PB_UINT64: snprintf(b, sizeof b, "%llu", (unsigned long long)v); break;
        default: snprintf(b, sizeof b, "%lld", (long long)(int64_t)v); break;
      }
      return put(c, b, strlen(b));
    }
  }
}

/* The zero value of f (a non-pointer field that did not come). */
static int put_zero(jctx *c, const kin__pb_field *f) {
  switch (f->kind) {
    case KIN__PB_MESSAGE: return emit_msg(c, f->msg, NULL, 0);
    case KIN__PB_STRING: case KIN__PB_BYTES: return PUTS(c, "\"\"");
    case KIN__PB_BOOL: return PUTS(c, "false");
    default: return PUTS(c, "0");
  }
}

/* Finds every field's values in the message's bytes. */
static int scan(jctx *c, const kin__pb_msg *m, const uint8_t *p, size_t n, occ *o) {
  const uint8_t *end = p + n;
  memset(o, 0, sizeof(*o) * (size_t)m->nfields);
  while (p < end) {
    uint64_t key;
    if (kin__pb_varint(&p, end, &key)) return fail(c, "unexpected EOF");
    int wt = (int)(key & 7);
    uint64_t num = key >> 3;
    if (!num) return fail(c, "proto: %s: illegal tag 0 (wire type %d)", m->name, wt);
    int fi = -1;
    for (int i = 0; i < m->nfields; i++)
      if (m->fields[i].num == num) {
        fi = i;
        break;
      }
    if (fi >= 0) {
      const kin__pb_field *f = &m->fields[fi];
      int want = wire_type_of(f->kind);
      int packed = (f->flags & KIN__PB_F_REPEATED) && want != 2 && wt == 2;
      if (wt != want && !packed) return fail(c, "proto: wrong wireType = %d for field %s", wt, f->go);
      o[fi].last = p;
      o[fi].count++;
      o[fi].wt = (uint8_t)wt;
    }
    if (kin__pb_skip(&p, end, wt)) return fail(c, "unexpected EOF");
  }
  return 0;
}

/* Calls put_value for each value of repeated field f (number num) in the
 * message's bytes, comma-separated. */
static int put_repeated(jctx *c, const kin__pb_field *f, const uint8_t *p, size_t n) {
  const uint8_t *end = p + n;
  int first = 1, want = wire_type_of(f->kind);
  while (p < end) {
    uint64_t key;
    if (kin__pb_varint(&p, end, &key)) return fail(c, "unexpected EOF");
    int wt = (int)(key & 7);
    if ((key >> 3) != f->num) {
      if (kin__pb_skip(&p, end, wt)) return fail(c, "unexpected EOF");
      continue;
    }
    const uint8_t *vend = end;
    if (wt == 2 && want != 2) { /* packed scalars */
      const uint8_t *s;
      size_t len;
      if (kin__pb_read_len(&p, end, &s, &len)) return fail(c, "unexpected EOF");
      p = s;
      vend = s + len;
    }
    do {
      if (!first && PUTS(c, ",")) return KIN_ENOMEM;
      first = 0;
      int rc = put_value(c, f, &p, vend, NULL);
      if (rc) return rc;
    } while (wt == 2 && want != 2 && p < vend);
  }
  return 0;
}

/* A map entry's key and value bytes, for sorting. */
typedef struct {
  const uint8_t *key, *val; /* val NULL: absent */
  size_t klen, vlen;
  size_t seq;
} entry;

static int entry_cmp(const void *a, const void *b) {
  const entry *x = a, *y = b;
  size_t n = x->klen < y->klen ? x->klen : y->klen;
  int r = memcmp(x->key, y->key, n);
  if (r) return r;
  if (x->klen != y->klen) return x->klen < y->klen ? -1 : 1;
  return x->seq < y->seq ? -1 : 1;
}

/* A map field as a JSON object with its keys sorted (Go's encoder), the
 * last of duplicate keys winning (Go's decoder). */
static int put_map(jctx *c, const kin__pb_field *f, uint32_t count, const uint8_t *p, size_t n) {
  const kin__pb_msg *em = &kin__pb_msgs[f->msg];
  entry *e = malloc(sizeof(*e) * count);
  if (!e) return KIN_ENOMEM;
  const uint8_t *end = p + n;
  size_t k = 0;
  int rc = 0;
  while (!rc && p < end) {
    uint64_t key;
    const uint8_t *s;
    size_t len;
    if (kin__pb_varint(&p, end, &key)) {
      rc = fail(c, "unexpected EOF");
      break;
    }
    if ((key >> 3) != f->num || (key & 7) != 2) {
      if (kin__pb_skip(&p, end, (int)(key & 7))) rc = fail(c, "unexpected EOF");
      continue;
    }
    if (kin__pb_read_len(&p, end, &s, &len) || k >= count) {
      rc = fail(c, "unexpected EOF");
      break;
    }
    entry *x = &e[k];
    memset(x, 0, sizeof(*x));
    x->key = (const uint8_t *)"";
    x->seq = k++;
    const uint8_t *q = s, *qend = s + len;
    while (q < qend) {
      uint64_t ek;
      const uint8_t *vs;
      size_t vl;
      if (kin__pb_varint(&q, qend, &ek)) {
        rc = fail(c, "unexpected EOF");
        break;
      }
      if ((ek & 7) == 2 && (ek >> 3) == 1 && em->fields[0].kind == KIN__PB_STRING) {
        if (kin__pb_read_len(&q, qend, &vs, &vl)) {
          rc = fail(c, "unexpected EOF");
          break;
        }
        x->key = vs;
        x->klen = vl;
      } else if ((ek >> 3) == 2 && em->nfields > 1) {
        const uint8_t *at = q;
        if (kin__pb_skip(&q, qend, (int)(ek & 7))) {
          rc = fail(c, "unexpected EOF");
          break;
        }
        if ((int)(ek & 7) != wire_type_of(em->fields[1].kind)) {
          rc = fail(c, "proto: wrong wireType = %d for field %s", (int)(ek & 7), em->fields[1].go);
          break;
        }
        x->val = at;
        x->vlen = (size_t)(q - at);
      } else if (kin__pb_skip(&q, qend, (int)(ek & 7))) {
        rc = fail(c, "unexpected EOF");
        break;
      }
    }
  }
  if (!rc) {
    qsort(e, k, sizeof(*e), entry_cmp);
    rc = PUTS(c, "{");
    int first = 1;
    for (size_t i = 0; !rc && i < k; i++) {
      if (i + 1 < k && e[i + 1].klen == e[i].klen && !memcmp(e[i + 1].key, e[i].key, e[i].klen))
        continue; /* a later duplicate wins */
      if (!first) rc = PUTS(c, ",");
      first = 0;
      if (!rc) rc = put_str(c, e[i].key, e[i].klen);
      if (!rc) rc = PUTS(c, ":");
      if (rc) break;
      if (em->nfields < 2) {
        rc = PUTS(c, "null");
      } else if (e[i].val) {
        const uint8_t *vp = e[i].val;
        rc = put_value(c, &em->fields[1], &vp, e[i].val + e[i].vlen, NULL);
      } else {
        rc = put_zero(c, &em->fields[1]);
      }
    }
    if (!rc) rc = PUTS(c, "}");
  }
  free(e);
  return rc;
}

/* RFC 3339 in UTC, as metav1.Time and MicroTime marshal. */
static int put_time(jctx *c, int64_t secs, int64_t nanos, int micro) {
  secs += nanos / 1000000000;
  nanos %= 1000000000;
  if (nanos < 0) {
    nanos += 1000000000;
    secs--;
  }
  if (secs < -62167219200LL || secs > 253402300799LL)
    return fail(c, "Time.MarshalJSON: year outside of range [0,9999]");
  /* days to a civil date (Howard Hinnant's days_from_civil inverse) */
  int64_t days = secs / 86400, sod = secs % 86400;
  if (sod < 0) sod += 86400, days--;
  days += 719468;
  int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  int64_t doe = days - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int d = (int)(doy - (153 * mp + 2) / 5 + 1), m = (int)(mp < 10 ? mp + 3 : mp - 9);
  int y = (int)(yoe + era * 400 + (m <= 2));
  char buf[40], *o = buf;
  int hh = (int)(sod / 3600), mi = (int)(sod / 60 % 60), ss = (int)(sod % 60);
  *o++ = '"';
  *o++ = (char)('0' + y / 1000), *o++ = (char)('0' + y / 100 % 10), *o++ = (char)('0' + y / 10 % 10),
  *o++ = (char)('0' + y % 10), *o++ = '-';
  *o++ = (char)('0' + m / 10), *o++ = (char)('0' + m % 10), *o++ = '-';
  *o++ = (char)('0' + d / 10), *o++ = (char)('0' + d % 10), *o++ = 'T';
  *o++ = (char)('0' + hh / 10), *o++ = (char)('0' + hh % 10), *o++ = ':';
  *o++ = (char)('0' + mi / 10), *o++ = (char)('0' + mi % 10), *o++ = ':';
  *o++ = (char)('0' + ss / 10), *o++ = (char)('0' + ss % 10);
  if (micro) {
    int us = (int)(nanos / 1000);
    *o++ = '.';
    for (int k = 100000; k; k /= 10) *o++ = (char)('0' + us / k % 10);
  }
  *o++ = 'Z';
  *o++ = '"';
  return put(c, buf, (size_t)(o - buf));
}

/* The bytes of field i's last value (after its tag), or NULL. */
static const uint8_t *last_of(const occ *o, int i) { return o[i].count ? o[i].last : NULL; }

/* A RawExtension's raw bytes: an enveloped object, JSON as it is, or null
 * when empty. */
static int put_raw(jctx *c, const uint8_t *s, size_t n) {
  while (n && strchr(" \t\r\n", s[0])) s++, n--;
  while (n && strchr(" \t\r\n", s[n - 1])) n--;
  if (!n) return PUTS(c, "null");
  if (kin__pb_is_enveloped(s, n)) {
    return object_json(c, s, n);
  }
  if (kin__json_check((const char *)s, n, NULL)) return fail(c, "RawExtension: the raw bytes are not JSON");
  return put(c, (const char *)s, n);
}

/* The JSON of a special message (its JSON is not an object of its
 * fields). */
static int emit_special(jctx *c, const kin__pb_msg *m, const uint8_t *p, size_t n, const occ *o) {
  const uint8_t *end = p + n, *v;
  int any = 0;
  for (int i = 0; i < m->nfields; i++) any |= o[i].count != 0;
  switch (m->special) {
    case KIN__PB_S_TIME:
    case KIN__PB_S_MICROTIME: {
      if (!n || !any) return PUTS(c, "null"); /* the zero Time */
      int64_t secs = 0, nanos = 0;
      if ((v = last_of(o, 0)) && read_int(&v, end, &secs)) return fail(c, "unexpected EOF");
      if (m->nfields > 1 && (v = last_of(o, 1)) && read_int(&v, end, &nanos))
        return fail(c, "unexpected EOF");
      return put_time(c, secs, (int32_t)nanos, m->special == KIN__PB_S_MICROTIME);
    }
    case KIN__PB_S_DURATION: {
      int64_t d = 0;
      if ((v = last_of(o, 0)) && read_int(&v, end, &d)) return fail(c, "unexpected EOF");
      char b[32];
      snprintf(b, sizeof b, "\"%lldns\"", (long long)d);
      return put(c, b, strlen(b));
    }
    case KIN__PB_S_QUANTITY: {
      const uint8_t *s;
      size_t len;
      if (!(v = last_of(o, 0))) return PUTS(c, "\"0\"");
      if (kin__pb_read_len(&v, end, &s, &len)) return fail(c, "unexpected EOF");
      return len ? put_str(c, s, len) : PUTS(c, "\"0\"");
    }
    case KIN__PB_S_INTORSTR: {
      int64_t type = 0;
      if ((v = last_of(o, 0)) && read_int(&v, end, &type)) return fail(c, "unexpected EOF");
      int fi = type == 1 ? 2 : 1;
      if (!(v = last_of(o, fi))) return type == 1 ? PUTS(c, "\"\"") : PUTS(c, "0");
      return put_value(c, &m->fields[fi], &v, end, NULL);
    }
    case KIN__PB_S_RAWEXT: {
      const uint8_t *s;
      size_t len;
      if (!(v = last_of(o, 0))) return PUTS(c, "null");
      if (kin__pb_read_len(&v, end, &s, &len)) return fail(c, "unexpected EOF");
      return put_raw(c, s, len);
    }
    case KIN__PB_S_WRAPPED_LIST:
      if (!o[0].count) return PUTS(c, "[]");
      if (PUTS(c, "[")) return KIN_ENOMEM;
      {
        int rc = put_repeated(c, &m->fields[0], p, n);
        return rc ? rc : PUTS(c, "]");
      }
    case KIN__PB_S_PROPS_OR_ARRAY:
    case KIN__PB_S_PROPS_OR_STRARRAY:
      if ((v = last_of(o, 0))) return put_value(c, &m->fields[0], &v, end, NULL);
      if (m->nfields > 1 && o[1].count) {
        if (PUTS(c, "[")) return KIN_ENOMEM;
        int rc = put_repeated(c, &m->fields[1], p, n);
        return rc ? rc : PUTS(c, "]");
      }
      return PUTS(c, "null");
    case KIN__PB_S_PROPS_OR_BOOL: {
      if (m->nfields > 1 && (v = last_of(o, 1))) return put_value(c, &m->fields[1], &v, end, NULL);
      int64_t b = 0;
      if ((v = last_of(o, 0)) && read_int(&v, end, &b)) return fail(c, "unexpected EOF");
      return b ? PUTS(c, "true") : PUTS(c, "false");
    }
  }
  return PUTS(c, "null");
}

/* Writes the members of message m (no braces) after *first members. */
static int emit_members(jctx *c, const kin__pb_msg *m, const uint8_t *p, size_t n, const occ *o,
                        int *first);

/* Writes field f's member into the object being written, under Go's rules
 * for absent, zero, pointer and omitempty values. */
static int emit_field(jctx *c, const kin__pb_field *f, const occ *oc, const uint8_t *p, size_t n,
                      int *first) {
  int omit = f->flags & KIN__PB_F_OMITEMPTY, ptr = f->flags & KIN__PB_F_POINTER;
  if (f->flags & KIN__PB_F_INLINE) {
    if (f->kind != KIN__PB_MESSAGE) return 0;
    const kin__pb_msg *im = &kin__pb_msgs[f->msg];
    const uint8_t *s = NULL;
    size_t len = 0;
    if (oc->count) {
      const uint8_t *v = oc->last;
      if (kin__pb_read_len(&v, p + n, &s, &len)) return fail(c, "unexpected EOF");
    }
    if (im->special != KIN__PB_S_NONE) return 0; /* inlines only objects */
    occ st[STACK_FIELDS], *io = im->nfields <= STACK_FIELDS ? st : malloc(sizeof(occ) * (size_t)im->nfields);
    if (!io) return KIN_ENOMEM;
    int rc = scan(c, im, s ? s : (const uint8_t *)"", len, io);
    if (!rc) rc = emit_members(c, im, s ? s : (const uint8_t *)"", len, io, first);
    if (io != st) free(io);
    return rc;
  }
  if (!oc->count) {
    if ((f->flags & KIN__PB_F_REPEATED) || ptr || f->kind != KIN__PB_MESSAGE) {
      if (omit) return 0;
    }
  }
  size_t mark = c->out->len;
  int rc = 0;
  /* the schema's JSON names are plain ASCII: written as they are */
  size_t kl = strlen(f->json);
  if (!*first) rc = PUTS(c, ",");
  if (!rc) rc = PUTS(c, "\"");
  if (!rc) rc = put(c, f->json, kl);
  if (!rc) rc = PUTS(c, "\":");
  if (rc) return rc;
  size_t vstart = c->out->len;
  int drop = 0;
  if (f->flags & KIN__PB_F_REPEATED) {
    if (!oc->count) {
      rc = PUTS(c, "null");
    } else if (f->flags & KIN__PB_F_MAP) {
      rc = put_map(c, f, oc->count, p, n);
    } else {
      rc = PUTS(c, "[");
      if (!rc) rc = put_repeated(c, f, p, n);
      if (!rc) rc = PUTS(c, "]");
    }
  } else if (f->kind == KIN__PB_MESSAGE) {
    if (oc->count) {
      const uint8_t *v = oc->last;
      rc = put_value(c, f, &v, p + n, NULL);
      if (!rc && ptr && omit && c->out->len - vstart == 4 && !memcmp(c->out->p + vstart, "null", 4))
        drop = 1; /* a set pointer to an empty RawExtension/FieldsV1: as unset */
    } else if (ptr) {
      rc = PUTS(c, "null");
    } else {
      rc = put_zero(c, f); /* the zero struct */
    }
    if (!rc && (f->flags & KIN__PB_F_OMITZERO)) {
      size_t vl = c->out->len - vstart;
      const char *vp = c->out->p + vstart;
      if ((vl == 4 && !memcmp(vp, "null", 4)) || (vl == 2 && !memcmp(vp, "{}", 2))) drop = 1;
    }
  } else if (oc->count) {
    int zero;
    const uint8_t *v = oc->last;
    rc = put_value(c, f, &v, p + n, &zero);
    if (!rc && omit && !ptr && zero) drop = 1;
  } else {
    rc = ptr ? PUTS(c, "null") : put_zero(c, f);
  }
  if (rc) return rc;
  if (drop) {
    c->out->len = mark;
    return 0;
  }
  *first = 0;
  return 0;
}

static int emit_members(jctx *c, const kin__pb_msg *m, const uint8_t *p, size_t n, const occ *o,
                        int *first) {
  for (int i = 0; i < m->nfields; i++) {
    int fi = m->json_order ? m->json_order[i] : i;
    int rc = emit_field(c, &m->fields[fi], &o[fi], p, n, first);
    if (rc) return rc;
  }
  return 0;
}

/* Writes the JSON of the n bytes at p (NULL: the zero message) as message
 * msg. */
static int emit_msg(jctx *c, int msg, const uint8_t *p, size_t n) {
  if (msg < 0 || msg >= kin__pb_nmsgs) return fail(c, "proto: no message %d", msg);
  if (c->depth >= MAX_DEPTH) return fail(c, "proto: nesting deeper than %d", MAX_DEPTH);
  c->depth++;
  const kin__pb_msg *m = &kin__pb_msgs[msg];
  if (!p) p = (const uint8_t *)"", n = 0;
  occ st[STACK_FIELDS], *o = m->nfields <= STACK_FIELDS ? st : malloc(sizeof(occ) * (size_t)m->nfields);
  int rc = o ? scan(c, m, p, n, o) : KIN_ENOMEM;
  if (!rc) {
    if (m->special != KIN__PB_S_NONE && m->special != KIN__PB_S_MAP_ENTRY) {
      rc = emit_special(c, m, p, n, o);
    } else {
      int first = 1;
      rc = PUTS(c, "{");
      if (!rc) rc = emit_members(c, m, p, n, o, &first);
      if (!rc) rc = PUTS(c, "}");
    }
  }
  if (o != st) free(o);
  c->depth--;
  return rc;
}

int kin__pb_json(int msg, const uint8_t *p, size_t n, kin__buf *out, char *err, size_t cap) {
  jctx c = {out, err, cap, 0};
  err[0] = 0;
  int rc = emit_msg(&c, msg, p, n);
  if (!rc && kin__buf_add(out, "", 0)) rc = KIN_ENOMEM; /* NUL-ended */
  if (rc == KIN_ENOMEM && !err[0]) snprintf(err, cap, "out of memory");
  return rc;
}

/* An enveloped object's JSON with kind and apiVersion first. */
static int object_json(jctx *c, const uint8_t *p, size_t n) {
  kin__pb_unknown u;
  char e[256];
  if (kin__pb_envelope(p, n, &u, e, sizeof e)) return fail(c, "%s", e);
  int msg = kin__pb_root_msg(u.api_version, u.kind);
  if (msg < 0)
    return fail(c, "no kind \"%s\" is registered for version \"%s\"", u.kind, u.api_version);
  if (kin__pb_msgs[msg].special != KIN__PB_S_NONE) return fail(c, "the protobuf body is not an object");
  if (c->depth >= MAX_DEPTH) return fail(c, "proto: nesting deeper than %d", MAX_DEPTH);
  c->depth++;
  const kin__pb_msg *m = &kin__pb_msgs[msg];
  const uint8_t *raw = u.raw ? u.raw : (const uint8_t *)"";
  occ st[STACK_FIELDS], *o = m->nfields <= STACK_FIELDS ? st : malloc(sizeof(occ) * (size_t)m->nfields);
  int rc = o ? scan(c, m, raw, u.raw_len, o) : KIN_ENOMEM;
  int first = 1;
  if (!rc) rc = PUTS(c, "{\"kind\":");
  if (!rc) rc = put_str(c, (const uint8_t *)u.kind, strlen(u.kind));
  if (!rc) rc = PUTS(c, ",\"apiVersion\":");
  if (!rc) rc = put_str(c, (const uint8_t *)u.api_version, strlen(u.api_version));
  first = 0;
  if (!rc) rc = emit_members(c, m, raw, u.raw_len, o, &first);
  if (!rc) rc = PUTS(c, "}");
  if (o != st) free(o);
  c->depth--;
  return rc;
}

int kin__pb_object_json(const uint8_t *p, size_t n, kin__buf *out, char *err, size_t cap) {
  jctx c = {out, err, cap, 0};
  err[0] = 0;
  int rc = object_json(&c, p, n);
  if (!rc && kin__buf_add(out, "", 0)) rc = KIN_ENOMEM; /* NUL-ended */
  if (rc == KIN_ENOMEM && !err[0]) snprintf(err, cap, "out of memory");
  return rc;
}

void kin__pb_body_to_json(char **body, size_t *len, char **content_type) {
  if (!*body || !kin__pb_is_enveloped(*body, *len)) return;
  kin__buf js = {0};
  char err[128];
  if (kin__pb_object_json((const uint8_t *)*body, *len, &js, err, sizeof err) || js.oom ||
      kin__buf_add(&js, "", 1)) {
    kin__buf_free(&js);
    return;
  }
  free(*body);
  *body = js.p;
  *len = js.len - 1; /* NUL-ended, as response bodies are */
  if (content_type) {
    char *ct = strdup("application/json");
    if (ct) {
      free(*content_type);
      *content_type = ct;
    }
  }
}
