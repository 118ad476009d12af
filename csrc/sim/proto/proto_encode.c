/* proto_encode.c -- the sim's JSON form to protobuf wire bytes, as
 * gogo-protobuf's generated Marshal of the Go struct writes them: fields
 * by number, non-pointer fields always (their zero values included),
 * pointers and slices only when set, map entries sorted by key. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base64.h"
#include "kin.h"
#include "proto_int.h"

#define MAX_DEPTH 64

int kin__sim_pb_put_varint(kin__buf *b, uint64_t v) {
  char tmp[10];
  size_t n = 0;
  while (v >= 0x80) {
    tmp[n++] = (char)(v | 0x80);
    v >>= 7;
  }
  tmp[n++] = (char)v;
  return kin__buf_add(b, tmp, n);
}

int kin__sim_pb_put_tag(kin__buf *b, uint32_t num, int wt) {
  return kin__sim_pb_put_varint(b, (uint64_t)num << 3 | (uint64_t)wt);
}

int kin__sim_pb_put_bytes(kin__buf *b, uint32_t num, const void *p, size_t n) {
  if (kin__sim_pb_put_tag(b, num, 2) || kin__sim_pb_put_varint(b, n)) return KIN_ENOMEM;
  return n ? kin__buf_add(b, p, n) : 0;
}

typedef struct {
  char *err;
  size_t cap;
  int depth;
} ectx;

static int fail(ectx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records the first error; KIN_EINVAL. */
static int fail(ectx *c, const char *fmt, ...) {
  if (!c->err[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->cap, fmt, ap);
    va_end(ap);
  }
  return KIN_EINVAL;
}

static int encode_msg(ectx *c, int msg, const json_t *v, kin__buf *out);

/* Appends the message of field f (value v, NULL for the zero struct) with
 * its tag and length. */
static int put_msg_field(ectx *c, const kin__pb_field *f, const json_t *v, kin__buf *out) {
  kin__buf sub = {0};
  int rc = encode_msg(c, f->msg, v, &sub);
  if (!rc) rc = kin__sim_pb_put_bytes(out, f->num, sub.p, sub.len);
  kin__buf_free(&sub);
  return rc;
}

/* Appends one scalar of f from v (NULL: the zero value). */
static int put_scalar(ectx *c, const kin__pb_field *f, const json_t *v, kin__buf *out) {
  switch (f->kind) {
    case KIN__PB_STRING: {
      if (v && !json_is_string(v))
        return fail(c, "field %s: expected a string", f->json);
      return kin__sim_pb_put_bytes(out, f->num, v ? json_string_value(v) : "",
                                   v ? json_string_length(v) : 0);
    }
    case KIN__PB_BYTES: {
      if (!v) return kin__sim_pb_put_bytes(out, f->num, "", 0);
      if (!json_is_string(v)) return fail(c, "field %s: expected a base64 string", f->json);
      unsigned char *raw;
      size_t n;
      int rc = kin__base64_decode(json_string_value(v), json_string_length(v), &raw, &n);
      if (rc == KIN_EINVAL) return fail(c, "field %s: illegal base64 data", f->json);
      if (rc) return rc;
      rc = kin__sim_pb_put_bytes(out, f->num, raw, n);
      free(raw);
      return rc;
    }
    case KIN__PB_BOOL:
      if (v && !json_is_boolean(v)) return fail(c, "field %s: expected a boolean", f->json);
      if (kin__sim_pb_put_tag(out, f->num, 0)) return KIN_ENOMEM;
      return kin__sim_pb_put_varint(out, v && json_is_true(v));
    case KIN__PB_DOUBLE:
    case KIN__PB_FLOAT: {
      if (v && !json_is_number(v)) return fail(c, "field %s: expected a number", f->json);
      double d = v ? json_number_value(v) : 0;
      unsigned char tmp[8];
      int n = f->kind == KIN__PB_DOUBLE ? 8 : 4;
      uint64_t u;
      if (n == 8) {
        memcpy(&u, &d, 8);
      } else {
        float fl = (float)d;
        uint32_t u32;
        memcpy(&u32, &fl, 4);
        u = u32;
      }
      for (int i = 0; i < n; i++) tmp[i] = (unsigned char)(u >> (8 * i));
      if (kin__sim_pb_put_tag(out, f->num, n == 8 ? 1 : 5)) return KIN_ENOMEM;
      return kin__buf_add(out, (const char *)tmp, (size_t)n);
    }
    default: {
      json_int_t i = 0;
      if (v && json_is_integer(v))
        i = json_integer_value(v);
      else if (v && json_is_real(v) && json_real_value(v) == (double)(json_int_t)json_real_value(v))
        i = (json_int_t)json_real_value(v);
      else if (v)
        return fail(c, "field %s: expected an integer", f->json);
      if (kin__sim_pb_put_tag(out, f->num, 0)) return KIN_ENOMEM;
      /* int32 negatives are sign-extended to 64 bits, as Go writes them */
      uint64_t u = f->kind == KIN__PB_UINT32 ? (uint32_t)i
                   : f->kind == KIN__PB_INT32 ? (uint64_t)(int64_t)(int32_t)i
                                              : (uint64_t)i;
      return kin__sim_pb_put_varint(out, u);
    }
  }
}

/* One value of f (an element when repeated). */
static int put_value(ectx *c, const kin__pb_field *f, const json_t *v, kin__buf *out) {
  if (f->kind == KIN__PB_MESSAGE) return put_msg_field(c, f, v, out);
  return put_scalar(c, f, v, out);
}

/* qsort order of map keys: bytewise, as Go sorts strings. */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A map field: one entry message {key, value} per key, sorted. */
static int put_map(ectx *c, const kin__pb_field *f, const json_t *v, kin__buf *out) {
  if (!json_is_object(v)) return fail(c, "field %s: expected an object", f->json);
  size_t n = json_object_size(v), i = 0;
  if (!n) return 0;
  const char **keys = malloc(n * sizeof(*keys));
  if (!keys) return KIN_ENOMEM;
  const char *k;
  json_t *x;
  json_object_foreach((json_t *)v, k, x) keys[i++] = k;
  qsort(keys, n, sizeof(*keys), cmp_str);
  const kin__pb_msg *em = &kin__pb_msgs[f->msg];
  int rc = 0;
  for (i = 0; !rc && i < n; i++) {
    kin__buf e = {0};
    json_t *key = json_string(keys[i]);
    rc = key ? put_scalar(c, &em->fields[0], key, &e) : KIN_ENOMEM;
    json_decref(key);
    json_t *val = json_object_get(v, keys[i]);
    if (!rc) rc = put_value(c, &em->fields[1], json_is_null(val) ? NULL : val, &e);
    if (rc == KIN_EINVAL && !strncmp(c->err, "field value: ", 13)) {
      /* name the map and key rather than the entry's "value" */
      char why[256];
      snprintf(why, sizeof(why), "%s", c->err + 13);
      c->err[0] = 0;
      fail(c, "field %s[%s]: %s", f->json, keys[i], why);
    }
    if (!rc) rc = kin__sim_pb_put_bytes(out, f->num, e.p, e.len);
    kin__buf_free(&e);
  }
  free(keys);
  return rc;
}

/* Parses an RFC 3339 time ("2024-01-02T03:04:05Z", fraction and offset
 * optional) into seconds and nanoseconds; -1 when it is not one. */
static int parse_time(const char *s, int64_t *secs, int32_t *nanos) {
  struct tm tm = {0};
  const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if (!p) return -1;
  int32_t ns = 0;
  if (*p == '.') {
    int digits = 0;
    for (p++; *p >= '0' && *p <= '9'; p++, digits++)
      if (digits < 9) ns = ns * 10 + (*p - '0');
    if (!digits) return -1;
    for (; digits < 9; digits++) ns *= 10;
  }
  int64_t off = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int hh, mm;
    if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2) return -1;
    off = (hh * 3600 + mm * 60) * (*p == '-' ? -1 : 1);
    p += 6;
  } else {
    return -1;
  }
  if (*p) return -1;
  *secs = (int64_t)timegm(&tm) - off;
  *nanos = ns;
  return 0;
}

/* The special messages, from their JSON shapes. */
static int encode_special(ectx *c, const kin__pb_msg *m, const json_t *v, kin__buf *out) {
  const kin__pb_field *f = m->fields;
  switch (m->special) {
    case KIN__PB_S_TIME:
    case KIN__PB_S_MICROTIME: {
      if (!v || json_is_null(v)) return 0; /* the zero Time: an empty message */
      int64_t secs;
      int32_t nanos;
      if (!json_is_string(v) || parse_time(json_string_value(v), &secs, &nanos))
        return fail(c, "%s: not an RFC 3339 time", m->name);
      if (m->special == KIN__PB_S_TIME) nanos = 0; /* JSON keeps seconds */
      if (kin__sim_pb_put_tag(out, 1, 0) || kin__sim_pb_put_varint(out, (uint64_t)secs) ||
          kin__sim_pb_put_tag(out, 2, 0) || kin__sim_pb_put_varint(out, (uint64_t)(int64_t)nanos))
        return KIN_ENOMEM;
      return 0;
    }
    case KIN__PB_S_QUANTITY: {
      char num[64];
      const char *s = "0";
      if (json_is_string(v)) {
        /* the length, not strlen: a JSON string may hold NUL */
        return kin__sim_pb_put_bytes(out, 1, json_string_value(v), json_string_length(v));
      } else if (json_is_integer(v)) {
        snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
        s = num;
      } else if (json_is_real(v)) {
        snprintf(num, sizeof(num), "%.17g", json_real_value(v));
        s = num;
      } else if (v && !json_is_null(v)) {
        return fail(c, "%s: not a quantity", m->name);
      }
      return kin__sim_pb_put_bytes(out, 1, s, strlen(s));
    }
    case KIN__PB_S_INTORSTR: {
      int is_str = json_is_string(v);
      if (v && !is_str && !json_is_integer(v) && !json_is_null(v))
        return fail(c, "%s: not an integer or a string", m->name);
      if (kin__sim_pb_put_tag(out, 1, 0) || kin__sim_pb_put_varint(out, (uint64_t)is_str) ||
          kin__sim_pb_put_tag(out, 2, 0) ||
          kin__sim_pb_put_varint(out, is_str || !v ? 0
                                                   : (uint64_t)(int64_t)(int32_t)json_integer_value(v)))
        return KIN_ENOMEM;
      return kin__sim_pb_put_bytes(out, 3, is_str ? json_string_value(v) : "",
                                   is_str ? json_string_length(v) : 0);
    }
    case KIN__PB_S_RAWEXT: {
      if (!v || json_is_null(v)) return 0;
      char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
      if (!s) return KIN_ENOMEM;
      int rc = kin__sim_pb_put_bytes(out, 1, s, strlen(s));
      free(s);
      return rc;
    }
    case KIN__PB_S_DURATION:
      return fail(c, "%s: durations are not supported", m->name);
    case KIN__PB_S_WRAPPED_LIST: { /* items = 1 */
      size_t i;
      json_t *x;
      if (v && !json_is_array(v) && !json_is_null(v))
        return fail(c, "%s: expected an array", m->name);
      json_array_foreach((json_t *)v, i, x) {
        int rc = put_value(c, &f[0], x, out);
        if (rc) return rc;
      }
      return 0;
    }
    case KIN__PB_S_PROPS_OR_ARRAY: /* schema = 1, JSONSchemas = 2 */
      if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)v, i, x) {
          int rc = put_msg_field(c, &f[1], x, out);
          if (rc) return rc;
        }
        return 0;
      }
      return v && !json_is_null(v) ? put_msg_field(c, &f[0], v, out) : 0;
    case KIN__PB_S_PROPS_OR_BOOL: { /* allows = 1, schema = 2 */
      int obj = json_is_object(v);
      json_t *allows = json_boolean(obj || json_is_true(v));
      int rc = put_scalar(c, &f[0], allows, out);
      json_decref(allows);
      return rc ? rc : obj ? put_msg_field(c, &f[1], v, out) : 0;
    }
    case KIN__PB_S_PROPS_OR_STRARRAY: /* schema = 1, property = 2 */
      if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)v, i, x) {
          int rc = put_scalar(c, &f[1], x, out);
          if (rc) return rc;
        }
        return 0;
      }
      return v && !json_is_null(v) ? put_msg_field(c, &f[0], v, out) : 0;
  }
  return fail(c, "%s: unsupported", m->name);
}

/* The fields of message m from the JSON object v (NULL: the zero struct;
 * an inlined field reads the same object). */
static int encode_fields(ectx *c, const kin__pb_msg *m, const json_t *v, kin__buf *out) {
  for (int i = 0; i < m->nfields; i++) {
    const kin__pb_field *f = &m->fields[i];
    int rc = 0;
    if (f->flags & KIN__PB_F_INLINE) {
      rc = put_msg_field(c, f, v, out);
      if (rc) return rc;
      continue;
    }
    const json_t *x = v ? json_object_get(v, f->json) : NULL;
    if (json_is_null(x)) x = NULL;
    if (f->flags & KIN__PB_F_MAP) {
      if (x) rc = put_map(c, f, x, out);
    } else if (f->flags & KIN__PB_F_REPEATED) {
      if (x && !json_is_array(x)) return fail(c, "field %s: expected an array", f->json);
      size_t j;
      json_t *e;
      json_array_foreach((json_t *)x, j, e) {
        if ((rc = put_value(c, f, json_is_null(e) ? NULL : e, out))) break;
      }
    } else if (x || !(f->flags & KIN__PB_F_POINTER)) {
      rc = put_value(c, f, x, out);
    }
    if (rc) return rc;
  }
  return 0;
}

/* Appends message msg of JSON value v (NULL: the zero message) to out;
 * 0, KIN_ENOMEM, or KIN_EINVAL with c->err (a value of the wrong type,
 * nesting past MAX_DEPTH). */
static int encode_msg(ectx *c, int msg, const json_t *v, kin__buf *out) {
  if (msg < 0 || msg >= kin__pb_nmsgs) return fail(c, "proto: no message %d", msg);
  if (++c->depth > MAX_DEPTH) {
    c->depth--;
    return fail(c, "proto: nesting deeper than %d", MAX_DEPTH);
  }
  const kin__pb_msg *m = &kin__pb_msgs[msg];
  int rc;
  if (m->special != KIN__PB_S_NONE && m->special != KIN__PB_S_MAP_ENTRY)
    rc = encode_special(c, m, v, out);
  else if (v && !json_is_object(v))
    rc = fail(c, "%s: expected an object", m->name);
  else
    rc = encode_fields(c, m, v, out);
  c->depth--;
  return rc;
}

int kin__sim_pb_encode(int msg, const json_t *v, kin__buf *out, char *err, size_t cap) {
  ectx c = {err, cap, 0};
  err[0] = 0;
  return encode_msg(&c, msg, json_is_null(v) ? NULL : v, out);
}
