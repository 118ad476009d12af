/* proto_decode.c -- protobuf wire bytes to the sim's JSON form, as the Go
 * server's Unmarshal into its structs followed by json.Marshal: absent
 * non-pointer scalars are their zero values (dropped when omitempty),
 * absent pointers and slices null unless omitempty, structs always
 * present, Time/Quantity/IntOrString/RawExtension in their JSON shapes. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base64.h"
#include "pb_json.h"
#include "proto_int.h"

#define MAX_DEPTH 64

typedef struct {
  char *err;
  size_t cap;
  int depth;
} dctx;

/* Records the first error (later ones are its consequences); NULL. */
static json_t *fail(dctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static json_t *fail(dctx *c, const char *fmt, ...) {
  if (!c->err[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->cap, fmt, ap);
    va_end(ap);
  }
  return NULL;
}

static json_t *decode_msg(dctx *c, int msg, const uint8_t *p, size_t n);

/* The Go type name of m (the last part of its proto name). */
static const char *short_name(const kin__pb_msg *m) {
  const char *dot = strrchr(m->name, '.');
  return dot ? dot + 1 : m->name;
}

/* The wire type a field of kind is written with. */
static int wire_type_of(int kind) {
  switch (kind) {
    case KIN__PB_DOUBLE: return 1;
    case KIN__PB_FLOAT: return 5;
    case KIN__PB_STRING: case KIN__PB_BYTES: case KIN__PB_MESSAGE: return 2;
    default: return 0;
  }
}

/* A float64 as Go's encoding/json writes it: integral values without a
 * fraction (jansson would print 5 as 5.0). */
static json_t *number(double d) {
  if (d > -9007199254740992.0 && d < 9007199254740992.0 && d == (double)(long long)d)
    return json_integer((json_int_t)d);
  return json_real(d);
}

/* One scalar value of kind at *p (wire type already checked): a new JSON
 * value, or NULL at truncated data or a string that is not UTF-8. */
static json_t *scalar(dctx *c, const kin__pb_field *f, const uint8_t **p, const uint8_t *end) {
  uint64_t v;
  switch (f->kind) {
    case KIN__PB_DOUBLE: {
      if (end - *p < 8) return NULL;
      uint64_t u = 0;
      for (int i = 7; i >= 0; i--) u = u << 8 | (*p)[i];
      *p += 8;
      double d;
      memcpy(&d, &u, 8);
      if (!isfinite(d)) return fail(c, "json: unsupported value: %g (field %s)", d, f->go);
      return number(d);
    }
    case KIN__PB_FLOAT: {
      if (end - *p < 4) return NULL;
      uint32_t u = 0;
      for (int i = 3; i >= 0; i--) u = u << 8 | (*p)[i];
      *p += 4;
      float fl;
      memcpy(&fl, &u, 4);
      if (!isfinite(fl)) return fail(c, "json: unsupported value: %g (field %s)", fl, f->go);
      return number(fl);
    }
    case KIN__PB_STRING:
    case KIN__PB_BYTES: {
      if (kin__pb_varint(p, end, &v) || v > (uint64_t)(end - *p)) return NULL;
      const char *s = (const char *)*p;
      *p += v;
      if (f->kind == KIN__PB_STRING) {
        json_t *js = json_stringn(s, v);
        /* Go keeps invalid UTF-8 and json.Marshal replaces it by U+FFFD;
         * the sim stores only valid strings, so it refuses them. */
        if (!js) return fail(c, "proto: invalid UTF-8 in string field %u", (unsigned)f->num);
        return js;
      }
      char *b64 = kin__base64_encode((const unsigned char *)s, v);
      json_t *js = b64 ? json_string(b64) : NULL;
      free(b64);
      return js;
    }
    default:
      if (kin__pb_varint(p, end, &v)) return NULL;
      switch (f->kind) {
        case KIN__PB_BOOL: return json_boolean(v != 0);
        case KIN__PB_INT32: return json_integer((int32_t)v);
        case KIN__PB_UINT32: return json_integer((uint32_t)v);
        default: return json_integer((json_int_t)v);
      }
  }
}

/* The zero value of a non-pointer scalar. */
static json_t *zero_scalar(int kind) {
  switch (kind) {
    case KIN__PB_STRING: case KIN__PB_BYTES: return json_string("");
    case KIN__PB_BOOL: return json_false();
    case KIN__PB_DOUBLE: case KIN__PB_FLOAT: return json_real(0);
    default: return json_integer(0);
  }
}

/* 1 when v is the zero value of its scalar type (omitempty drops it). */
static int is_zero(const json_t *v) {
  return (json_is_string(v) && !json_string_length(v)) || json_is_false(v) ||
         (json_is_integer(v) && !json_integer_value(v)) ||
         (json_is_real(v) && json_real_value(v) == 0);
}

/* The value of a field read from the wire: a message (decoded), a map
 * entry as [key, value] or a scalar; appended for repeated fields. */
static json_t *field_value(dctx *c, const kin__pb_field *f, int wt, const uint8_t **p,
                           const uint8_t *end) {
  if (f->kind != KIN__PB_MESSAGE) return scalar(c, f, p, end);
  uint64_t len;
  if (wt != 2 || kin__pb_varint(p, end, &len) || len > (uint64_t)(end - *p)) return NULL;
  const uint8_t *q = *p;
  *p += len;
  return decode_msg(c, f->msg, q, len);
}

/* RFC 3339 in UTC of seconds (+ micros when micro), as metav1.Time and
 * MicroTime marshal; NULL for a year outside 0..9999 (Go's error too). */
static json_t *time_json(dctx *c, int64_t secs, int32_t nanos, int micro) {
  /* time.Unix carries nanoseconds outside [0, 1e9) into the seconds */
  secs += nanos / 1000000000;
  nanos %= 1000000000;
  if (nanos < 0) {
    nanos += 1000000000;
    secs--;
  }
  if (secs < -62167219200LL || secs > 253402300799LL)
    return fail(c, "Time.MarshalJSON: year outside of range [0,9999]");
  time_t t = (time_t)secs;
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[64];
  size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  if (micro)
    snprintf(buf + n, sizeof(buf) - n, ".%06dZ", nanos / 1000);
  else
    snprintf(buf + n, sizeof(buf) - n, "Z");
  return json_string(buf);
}

/* The JSON of a special message from its decoded fields (vals by field
 * index, borrowed; NULL when absent). */
static json_t *special_json(dctx *c, const kin__pb_msg *m, json_t **vals, size_t n) {
  switch (m->special) {
    case KIN__PB_S_TIME:
    case KIN__PB_S_MICROTIME:
      if (!n) return json_null(); /* the zero Time marshals to nothing */
      return time_json(c, vals[0] ? json_integer_value(vals[0]) : 0,
                       vals[1] ? (int32_t)json_integer_value(vals[1]) : 0,
                       m->special == KIN__PB_S_MICROTIME);
    case KIN__PB_S_DURATION: {
      char buf[32];
      snprintf(buf, sizeof(buf), "%lldns",
               (long long)(vals[0] ? json_integer_value(vals[0]) : 0));
      return json_string(buf);
    }
    case KIN__PB_S_QUANTITY:
      return vals[0] && json_string_length(vals[0]) ? json_incref(vals[0]) : json_string("0");
    case KIN__PB_S_INTORSTR: {
      json_int_t type = vals[0] ? json_integer_value(vals[0]) : 0;
      if (type == 1) return vals[2] ? json_incref(vals[2]) : json_string("");
      return vals[1] ? json_incref(vals[1]) : json_integer(0);
    }
    case KIN__PB_S_RAWEXT: {
      if (!vals[0]) return json_null();
      unsigned char *raw;
      size_t rawlen;
      const char *b64 = json_string_value(vals[0]);
      if (kin__base64_decode(b64, strlen(b64), &raw, &rawlen))
        return fail(c, "proto: bad bytes in %s", m->name);
      if (!rawlen) {
        free(raw);
        return json_null();
      }
      if (rawlen >= 4 && !memcmp(raw, "k8s\0", 4) && c->depth < MAX_DEPTH) {
        /* an enveloped object (a protobuf watch event's): its JSON */
        kin__sim_pb_type tm;
        json_t *v = kin__sim_pb_unwrap(raw, rawlen, -1, &tm, c->err, c->cap);
        free(raw);
        return v;
      }
      json_error_t jerr;
      json_t *v = json_loadb((const char *)raw, rawlen, JSON_DECODE_ANY, &jerr);
      free(raw);
      if (!v) return fail(c, "%s: the raw bytes are not JSON: %s", m->name, jerr.text);
      return v;
    }
    case KIN__PB_S_WRAPPED_LIST:
      return vals[0] ? json_incref(vals[0]) : json_array();
    case KIN__PB_S_PROPS_OR_ARRAY:
      /* JSONSchemaPropsOrArray: schema, or JSONSchemas */
      if (vals[0]) return json_incref(vals[0]);
      return vals[1] ? json_incref(vals[1]) : json_null();
    case KIN__PB_S_PROPS_OR_BOOL:
      if (vals[1]) return json_incref(vals[1]);
      return json_boolean(vals[0] && json_is_true(vals[0]));
    case KIN__PB_S_PROPS_OR_STRARRAY:
      if (vals[0]) return json_incref(vals[0]);
      return vals[1] ? json_incref(vals[1]) : json_null();
  }
  return json_null();
}

/* The JSON of field f given its wire value v (borrowed, NULL if absent),
 * merged into obj under Go's rules; -1 on ENOMEM or an error below. */
static int put_field(dctx *c, json_t *obj, const kin__pb_field *f, json_t *v) {
  int omit = f->flags & KIN__PB_F_OMITEMPTY;
  json_t *out;
  if (f->flags & KIN__PB_F_REPEATED) {
    if (!v) {
      if (omit) return 0;
      out = json_null();
    } else {
      out = json_incref(v);
    }
  } else if (f->kind == KIN__PB_MESSAGE) {
    if (v && json_is_null(v) && (f->flags & KIN__PB_F_POINTER) && omit) {
      return 0; /* a set pointer to an empty RawExtension/FieldsV1: as unset */
    } else if (v) {
      out = json_incref(v);
    } else if (f->flags & KIN__PB_F_POINTER) {
      if (omit) return 0;
      out = json_null();
    } else {
      out = decode_msg(c, f->msg, NULL, 0); /* the zero struct */
      if (!out) return -1;
    }
    if ((f->flags & KIN__PB_F_OMITZERO) &&
        (json_is_null(out) || (json_is_object(out) && !json_object_size(out)))) {
      json_decref(out);
      return 0;
    }
    if (f->flags & KIN__PB_F_INLINE) {
      int rc = json_is_object(out) ? json_object_update(obj, out) : 0;
      json_decref(out);
      return rc;
    }
  } else if (v) {
    if (omit && !(f->flags & KIN__PB_F_POINTER) && is_zero(v)) return 0;
    out = json_incref(v);
  } else if (f->flags & KIN__PB_F_POINTER) {
    if (omit) return 0;
    out = json_null();
  } else {
    if (omit) return 0;
    out = zero_scalar(f->kind);
  }
  return json_object_set_new(obj, f->json, out);
}

/* Sets acc[key] = value from a decoded map entry (an object of the entry
 * message's two fields; a later duplicate key wins, as in Go); 0 or -1. */
static int map_put(dctx *c, json_t *acc, const kin__pb_field *f, json_t *entry) {
  const kin__pb_msg *em = &kin__pb_msgs[f->msg];
  json_t *k = json_object_get(entry, em->fields[0].json);
  json_t *v = em->nfields > 1 ? json_object_get(entry, em->fields[1].json) : NULL;
  const char *ks = json_is_string(k) ? json_string_value(k) : "";
  return json_object_set(acc, ks, v ? v : json_null());
}

/* Decodes the n bytes at p (NULL: none, the zero message) as message msg:
 * a new reference in the message's JSON shape, or NULL with c->err set
 * (truncated data, a wrong wire type, nesting past MAX_DEPTH, ENOMEM).
 * Unknown fields are skipped; a repeated scalar may come packed. */
static json_t *decode_msg(dctx *c, int msg, const uint8_t *p, size_t n) {
  if (msg < 0 || msg >= kin__pb_nmsgs) return fail(c, "proto: no message %d", msg);
  if (++c->depth > MAX_DEPTH) {
    c->depth--;
    return fail(c, "proto: nesting deeper than %d", MAX_DEPTH);
  }
  const kin__pb_msg *m = &kin__pb_msgs[msg];
  json_t *stack_vals[16];
  json_t **vals = m->nfields <= 16 ? stack_vals : calloc((size_t)m->nfields, sizeof(json_t *));
  json_t *res = NULL;
  if (!vals) goto out_nomem;
  memset(vals, 0, sizeof(json_t *) * (size_t)m->nfields);
  static const uint8_t none;
  if (!p) p = &none, n = 0;
  const uint8_t *end = p + n;
  while (p < end) {
    uint64_t key;
    if (kin__pb_varint(&p, end, &key)) {
      fail(c, "unexpected EOF");
      goto out;
    }
    int wt = (int)(key & 7);
    uint64_t num = key >> 3;
    if (!num) {
      fail(c, "proto: %s: illegal tag 0 (wire type %d)", short_name(m), wt);
      goto out;
    }
    int fi = -1;
    for (int i = 0; i < m->nfields; i++)
      if (m->fields[i].num == num) fi = i;
    if (fi < 0) { /* unknown fields are skipped, as gogo's skipGenerated */
      if (kin__pb_skip(&p, end, wt)) {
        fail(c, "unexpected EOF");
        goto out;
      }
      continue;
    }
    const kin__pb_field *f = &m->fields[fi];
    int want = wire_type_of(f->kind);
    int packed = (f->flags & KIN__PB_F_REPEATED) && want != 2 && wt == 2;
    if (wt != want && !packed) {
      fail(c, "proto: wrong wireType = %d for field %s", wt, f->go);
      goto out;
    }
    const uint8_t *pend = end;
    if (packed) {
      uint64_t len;
      if (kin__pb_varint(&p, end, &len) || len > (uint64_t)(end - p)) {
        fail(c, "unexpected EOF");
        goto out;
      }
      pend = p + len;
    }
    do {
      json_t *v = field_value(c, f, wt == 2 && packed ? want : wt, &p, pend);
      if (!v) {
        fail(c, "unexpected EOF");
        goto out;
      }
      if (!(f->flags & KIN__PB_F_REPEATED)) {
        json_decref(vals[fi]);
        vals[fi] = v;
        continue;
      }
      if (!vals[fi]) vals[fi] = (f->flags & KIN__PB_F_MAP) ? json_object() : json_array();
      int rc = (f->flags & KIN__PB_F_MAP) ? map_put(c, vals[fi], f, v)
                                          : json_array_append(vals[fi], v);
      json_decref(v);
      if (rc) goto out_nomem;
    } while (packed && p < pend);
  }
  if (m->special == KIN__PB_S_MAP_ENTRY) {
    /* [key, value] as an object of the two names; an absent value is the
     * zero value of its type (a Quantity "0", a string ""). */
    res = json_object();
    for (int i = 0; res && i < m->nfields; i++) {
      json_t *v = vals[i] ? json_incref(vals[i])
                          : m->fields[i].kind == KIN__PB_MESSAGE
                                ? decode_msg(c, m->fields[i].msg, NULL, 0)
                                : zero_scalar(m->fields[i].kind);
      if (!v) {
        json_decref(res);
        res = NULL;
        goto out;
      }
      json_object_set_new(res, m->fields[i].json, v);
    }
  } else if (m->special != KIN__PB_S_NONE) {
    int any = 0;
    for (int i = 0; i < m->nfields; i++) any |= vals[i] != NULL;
    res = special_json(c, m, vals, (size_t)(n && any));
  } else {
    res = json_object();
    for (int i = 0; res && i < m->nfields; i++) {
      int fi = m->json_order[i];
      if (put_field(c, res, &m->fields[fi], vals[fi])) {
        json_decref(res);
        res = NULL;
      }
    }
  }
  goto out;
out_nomem:
  fail(c, "out of memory");
out:
  if (vals) {
    for (int i = 0; i < m->nfields; i++) json_decref(vals[i]);
    if (vals != stack_vals) free(vals);
  }
  c->depth--;
  if (!res && !c->err[0]) fail(c, "out of memory");
  return res;
}

json_t *kin__sim_pb_decode(int msg, const uint8_t *p, size_t n, char *err, size_t cap) {
  dctx c = {err, cap, 0};
  err[0] = 0;
  return decode_msg(&c, msg, p, n);
}

/* ---- the envelope: `k8s\0` + runtime.Unknown (written by proto_envelope.c) ---- */

json_t *kin__sim_pb_unwrap(const uint8_t *p, size_t n, int fallback_msg, kin__sim_pb_type *tm,
                           char *err, size_t cap) {
  err[0] = 0;
  memset(tm, 0, sizeof(*tm));
  char *av = tm->api_version, *kind = tm->kind;
  /* the envelope as the core reads it (csrc/core/proto/pb_json.h) */
  kin__pb_unknown u;
  int erc = kin__pb_envelope(p, n, &u, err, cap);
  tm->read = u.read;
  snprintf(av, sizeof(tm->api_version), "%s", u.api_version);
  snprintf(kind, sizeof(tm->kind), "%s", u.kind);
  if (erc) return NULL;
  const uint8_t *raw = u.raw;
  size_t rawlen = u.raw_len;
  int msg = kin__pb_root_msg(av, kind);
  if (msg < 0) msg = fallback_msg;
  if (msg < 0) {
    snprintf(err, cap, "no kind \"%s\" is registered for version \"%s\"", kind, av);
    return NULL;
  }
  json_t *obj = kin__sim_pb_decode(msg, raw, rawlen, err, cap);
  if (!obj) return NULL;
  if (!json_is_object(obj)) {
    json_decref(obj);
    snprintf(err, cap, "the protobuf body is not an object");
    return NULL;
  }
  /* apiVersion and kind first, as the Go server's JSON has them */
  json_t *res = json_object();
  if (res && kind[0]) json_object_set_new(res, "kind", json_string(kind));
  if (res && av[0]) json_object_set_new(res, "apiVersion", json_string(av));
  if (!res || json_object_update(res, obj)) {
    json_decref(res);
    json_decref(obj);
    snprintf(err, cap, "out of memory");
    return NULL;
  }
  json_decref(obj);
  return res;
}
