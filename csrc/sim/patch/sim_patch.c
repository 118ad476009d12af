/* sim_patch.c -- JSON merge patch (RFC 7386) and JSON patch (RFC 6902).
 *
 * JSON patch follows the library kube-apiserver applies it with
 * (gopkg.in/evanphx/json-patch.v4), behaviour and messages, because the sim
 * must answer like the real server; it is a superset of RFC 6902:
 *   - negative array indices count from the end ("/a/-1");
 *   - "replace" of a missing object member adds it, "copy" from a missing
 *     member and "add" without "value" store null;
 *   - "test" treats a missing member and null alike;
 *   - "add" and "remove" at the root ("") fail, "replace" and "test" there
 *     act on the whole document;
 *   - a path not starting with '/' loses its first segment ("a/b" is "/b").
 * Numbers compare by type and value (1 and 1.0 differ, as upstream compares
 * their text); upstream compares number text, so 1.0 and 1.00 differ there
 * and are equal here. */
#include "sim_patch.h"
#include "kin.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- RFC 7386 --------------------------------------------------------- */

json_t *kin_sim_merge_patch(const json_t *target, const json_t *patch) {
  if (!json_is_object(patch)) return json_deep_copy(patch);
  json_t *out = json_is_object(target) ? json_deep_copy(target) : json_object();
  if (!out) return NULL;
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)patch, k, v) {
    if (json_is_null(v)) {
      json_object_del(out, k);
      continue;
    }
    json_t *merged = kin_sim_merge_patch(json_object_get(out, k), v);
    if (!merged || json_object_set_new(out, k, merged) < 0) {
      json_decref(out);
      return NULL;
    }
  }
  return out;
}

/* ---- errors ----------------------------------------------------------- */


/* Go's strconv.Quote for the bytes of s (enough for error messages). */
static void go_quote(const char *s, char *out, size_t cap) {
  static const char hex[] = "0123456789abcdef";
  size_t n = 0;
#define PUT(c)                                                                                     \
  do {                                                                                             \
    if (n + 1 < cap) out[n] = (c);                                                                 \
    n++;                                                                                           \
  } while (0)
  PUT('"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      PUT('\\');
      PUT((char)*p);
    } else if (*p >= 0x20 && *p != 0x7f) {
      PUT((char)*p);
    } else if (*p == '\n' || *p == '\t' || *p == '\r') {
      PUT('\\');
      PUT(*p == '\n' ? 'n' : *p == '\t' ? 't' : 'r');
    } else {
      PUT('\\');
      PUT('x');
      PUT(hex[*p >> 4]);
      PUT(hex[*p & 15]);
    }
  }
  PUT('"');
#undef PUT
  out[n < cap ? n : cap - 1] = 0;
}

/* Go's JSON type names, for "json: cannot unmarshal X into ..." */
static const char *go_json_kind(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "object";
  case JSON_ARRAY: return "array";
  case JSON_STRING: return "string";
  case JSON_INTEGER:
  case JSON_REAL: return "number";
  case JSON_TRUE:
  case JSON_FALSE: return "bool";
  default: return "null";
  }
}

/* strconv.Atoi on a 64-bit platform. Returns 0, or -1 with the Go error
 * text in msg. */
static int go_atoi(const char *s, long long *out, char *msg, size_t cap) {
  char q[300];
  const char *p = s;
  int neg = 0;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  unsigned long long v = 0, lim = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
  int range = 0;
  if (!*p) goto syntax;
  for (; *p; p++) {
    if (*p < '0' || *p > '9') goto syntax;
    unsigned d = (unsigned)(*p - '0');
    if (v > (lim - d) / 10)
      range = 1;
    else
      v = v * 10 + d;
  }
  if (range) {
    go_quote(s, q, sizeof(q));
    snprintf(msg, cap, "strconv.Atoi: parsing %s: value out of range", q);
    return -1;
  }
  *out = neg ? (long long)(0 - v) : (long long)v;
  return 0;
syntax:
  go_quote(s, q, sizeof(q));
  snprintf(msg, cap, "strconv.Atoi: parsing %s: invalid syntax", q);
  return -1;
}

/* ---- RFC 6902, as evanphx/json-patch v4 applies it --------------------- */

#define MSG 1024

/* A container is an object or an array of the working document. */

/* Looks key up in c. Returns 0 and the member (NULL when missing; a JSON
 * null is returned as NULL too, as Go decodes it to a nil node), or -1 with
 * the reason in msg. */
static int c_get(json_t *c, const char *key, json_t **out, char *msg) {
  if (json_is_object(c)) {
    json_t *v = json_object_get(c, key);
    *out = json_is_null(v) ? NULL : v;
    return 0;
  }
  long long idx;
  if (go_atoi(key, &idx, msg, MSG) < 0) return -1;
  long long len = (long long)json_array_size(c);
  if (idx < 0) {
    if (idx < -len) goto bad;
    idx += len;
  }
  if (idx >= len) goto bad;
  json_t *v = json_array_get(c, (size_t)idx);
  *out = json_is_null(v) ? NULL : v;
  return 0;
bad:
  snprintf(msg, MSG, "Unable to access invalid index: %lld: invalid index referenced", idx);
  return -1;
}

/* Stores val (a new reference, consumed) under key: objects set the
 * member, arrays insert before the index ("-" appends). */
static int c_add(json_t *c, const char *key, json_t *val, char *msg) {
  if (json_is_object(c)) {
    if (json_object_set_new(c, key, val) < 0) return KIN_ENOMEM;
    return 0;
  }
  size_t len = json_array_size(c);
  if (strcmp(key, "-") == 0) {
    if (json_array_append_new(c, val) < 0) return KIN_ENOMEM;
    return 0;
  }
  long long idx;
  char why[320];
  if (go_atoi(key, &idx, why, sizeof(why)) < 0) {
    snprintf(msg, MSG, "value was not a proper array index: '%.600s': %s", key, why);
    json_decref(val);
    return -1;
  }
  long long sz = (long long)len + 1;
  if (idx >= sz || (idx < 0 && idx < -sz)) {
    snprintf(msg, MSG, "Unable to access invalid index: %lld: invalid index referenced", idx);
    json_decref(val);
    return -1;
  }
  if (idx < 0) idx += sz;
  if (json_array_insert_new(c, (size_t)idx, val) < 0) return KIN_ENOMEM;
  return 0;
}

/* Overwrites an existing element (callers checked it with c_get). */
static int c_set(json_t *c, const char *key, json_t *val) {
  if (json_is_object(c)) return json_object_set_new(c, key, val) < 0 ? KIN_ENOMEM : 0;
  long long idx;
  char why[MSG];
  if (go_atoi(key, &idx, why, sizeof(why)) < 0) {
    json_decref(val);
    return -1;
  }
  if (idx < 0) idx += (long long)json_array_size(c);
  return json_array_set_new(c, (size_t)idx, val) < 0 ? KIN_ENOMEM : 0;
}

static int c_remove(json_t *c, const char *key, char *msg) {
  if (json_is_object(c)) {
    if (!json_object_get(c, key)) {
      snprintf(msg, MSG, "Unable to remove nonexistent key: %s: missing value", key);
      return -1;
    }
    json_object_del(c, key);
    return 0;
  }
  long long idx;
  if (go_atoi(key, &idx, msg, MSG) < 0) return -1;
  long long len = (long long)json_array_size(c);
  if (idx >= len || (idx < 0 && idx < -len)) {
    snprintf(msg, MSG, "Unable to access invalid index: %lld: invalid index referenced", idx);
    return -1;
  }
  if (idx < 0) idx += len;
  json_array_remove(c, (size_t)idx);
  return 0;
}

/* Decodes one reference token: "~1" is '/', "~0" is '~', left to right. */
static void decode_token(const char *s, size_t n, char *out) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '~' && i + 1 < n && (s[i + 1] == '1' || s[i + 1] == '0')) {
      out[k++] = s[i + 1] == '1' ? '/' : '~';
      i++;
    } else {
      out[k++] = s[i];
    }
  }
  out[k] = 0;
}

/* findObject: walks every segment of path but the last from the root and
 * returns the container holding the last one (decoded into *key, which the
 * caller frees), or NULL when a segment is missing, null or a scalar. The
 * first segment (before the first '/') is skipped, as upstream does. */
static json_t *find_object(json_t *root, const char *path, char **key) {
  *key = NULL;
  const char *slash = strchr(path, '/');
  if (!slash) return NULL;
  json_t *doc = root;
  const char *seg = slash + 1;
  char *tok = malloc(strlen(path) + 1);
  if (!tok) return NULL;
  for (;;) {
    const char *end = strchr(seg, '/');
    if (!end) break;
    decode_token(seg, (size_t)(end - seg), tok);
    json_t *next = NULL;
    char why[MSG];
    if (c_get(doc, tok, &next, why) < 0 || !next || !(json_is_object(next) || json_is_array(next))) {
      free(tok);
      return NULL;
    }
    doc = next;
    seg = end + 1;
  }
  decode_token(seg, strlen(seg), tok);
  *key = tok;
  return doc;
}

/* Reads a string member of an operation. Returns 1 with the string, 0 when
 * missing or null, -1 when not a string (Go's decoding error in msg). */
static int op_string(const json_t *op, const char *name, const char **out, char *msg) {
  json_t *v = json_object_get(op, name);
  if (!v || json_is_null(v)) return 0;
  if (!json_is_string(v)) {
    snprintf(msg, MSG, "json: cannot unmarshal %s into Go value of type string", go_json_kind(v));
    return -1;
  }
  *out = json_string_value(v);
  return 1;
}

/* Returns a new reference to the operation's value; null when absent (Go
 * stores a nil node, written as null). */
static json_t *op_value(const json_t *op) {
  json_t *v = json_object_get(op, "value");
  return v ? json_deep_copy(v) : json_null();
}

enum { R_OK = 0, R_FAIL = -1 };

typedef struct {
  json_t *doc; /* the working document; replace "" swaps it */
  char msg[MSG];
} jp;

static int fail(jp *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->msg, sizeof(p->msg), fmt, ap);
  va_end(ap);
  return R_FAIL;
}

static int do_add(jp *p, const json_t *op) {
  const char *path = "unknown";
  char why[MSG];
  if (op_string(op, "path", &path, why) != 1) return fail(p, "add operation failed to decode path: missing value");
  char *key;
  json_t *con = find_object(p->doc, path, &key);
  if (!con) return fail(p, "add operation does not apply: doc is missing path: \"%s\": missing value", path);
  json_t *val = op_value(op);
  int rc = val ? c_add(con, key, val, why) : KIN_ENOMEM;
  free(key);
  if (rc == -1) return fail(p, "error in add for path: '%s': %s", path, why);
  return rc;
}

static int do_remove(jp *p, const json_t *op) {
  const char *path;
  char why[MSG];
  if (op_string(op, "path", &path, why) != 1)
    return fail(p, "remove operation failed to decode path: missing value");
  char *key;
  json_t *con = find_object(p->doc, path, &key);
  if (!con) return fail(p, "remove operation does not apply: doc is missing path: \"%s\": missing value", path);
  int rc = c_remove(con, key, why);
  free(key);
  if (rc < 0) return fail(p, "error in remove for path: '%s': %s", path, why);
  return 0;
}

static int do_replace(jp *p, const json_t *op) {
  const char *path;
  char why[MSG];
  int r = op_string(op, "path", &path, why);
  if (r == 0) return fail(p, "replace operation failed to decode path: operation missing path field: missing value");
  if (r < 0) return fail(p, "replace operation failed to decode path: %s", why);
  if (path[0] == 0) {
    json_t *v = json_object_get(op, "value");
    if (!json_is_object(v) && !json_is_array(v))
      return fail(p, "replace operation value must be object or array: %%!w(<nil>)");
    json_t *nd = json_deep_copy(v);
    if (!nd) return KIN_ENOMEM;
    json_decref(p->doc);
    p->doc = nd;
    return 0;
  }
  char *key;
  json_t *con = find_object(p->doc, path, &key);
  if (!con) return fail(p, "replace operation does not apply: doc is missing path: %s: missing value", path);
  json_t *cur;
  if (c_get(con, key, &cur, why) < 0) {
    free(key);
    return fail(p, "replace operation does not apply: doc is missing key: %s: missing value", path);
  }
  json_t *val = op_value(op);
  int rc = val ? c_set(con, key, val) : KIN_ENOMEM;
  free(key);
  return rc;
}

static int do_move(jp *p, const json_t *op) {
  const char *from, *path;
  char why[MSG];
  int r = op_string(op, "from", &from, why);
  if (r == 0) return fail(p, "move operation failed to decode from: operation, missing from field: missing value");
  if (r < 0) return fail(p, "move operation failed to decode from: %s", why);
  char *key;
  json_t *con = find_object(p->doc, from, &key);
  if (!con) return fail(p, "move operation does not apply: doc is missing from path: %s: missing value", from);
  json_t *val;
  if (c_get(con, key, &val, why) < 0) {
    fail(p, "error in move for path: '%s': %s", key, why);
    free(key);
    return R_FAIL;
  }
  /* a missing member fails in remove below; a null one moves as null */
  val = val ? json_incref(val) : json_null();
  if (c_remove(con, key, why) < 0) {
    fail(p, "error in move for path: '%s': %s", key, why);
    free(key);
    json_decref(val);
    return R_FAIL;
  }
  free(key);
  r = op_string(op, "path", &path, why);
  if (r <= 0) {
    json_decref(val);
    if (r == 0) return fail(p, "move operation failed to decode path: operation missing path field: missing value");
    return fail(p, "move operation failed to decode path: %s", why);
  }
  con = find_object(p->doc, path, &key);
  if (!con) {
    json_decref(val);
    return fail(p, "move operation does not apply: doc is missing destination path: %s: missing value", path);
  }
  int rc = c_add(con, key, val, why);
  free(key);
  if (rc == -1) return fail(p, "error in move for path: '%s': %s", path, why);
  return rc;
}

static int do_test(jp *p, const json_t *op) {
  const char *path;
  char why[MSG];
  int r = op_string(op, "path", &path, why);
  if (r == 0) return fail(p, "test operation failed to decode path: operation missing path field: missing value");
  if (r < 0) return fail(p, "test operation failed to decode path: %s", why);
  json_t *want = json_object_get(op, "value");
  if (path[0] == 0) {
    if (want && json_equal(p->doc, want)) return 0;
    return fail(p, "testing value %s failed: test failed", path);
  }
  char *key;
  json_t *con = find_object(p->doc, path, &key);
  if (!con) return fail(p, "test operation does not apply: is missing path: %s: missing value", path);
  json_t *have;
  r = c_get(con, key, &have, why);
  free(key);
  if (r < 0) return fail(p, "error in test for path: '%s': %s", path, why);
  if (!have) {
    if (!want || json_is_null(want)) return 0;
    return fail(p, "testing value %s failed: test failed", path);
  }
  if (!want || !json_equal(have, want)) return fail(p, "testing value %s failed: test failed", path);
  return 0;
}

static int do_copy(jp *p, const json_t *op) {
  const char *from, *path;
  char why[MSG];
  int r = op_string(op, "from", &from, why);
  if (r == 0) return fail(p, "copy operation failed to decode from: operation, missing from field: missing value");
  if (r < 0) return fail(p, "copy operation failed to decode from: %s", why);
  char *key;
  json_t *con = find_object(p->doc, from, &key);
  if (!con) return fail(p, "copy operation does not apply: doc is missing from path: %s: missing value", from);
  json_t *val;
  r = c_get(con, key, &val, why);
  free(key);
  if (r < 0) return fail(p, "error in copy for from: '%s': %s", from, why);
  if (op_string(op, "path", &path, why) != 1) return fail(p, "copy operation failed to decode path: missing value");
  con = find_object(p->doc, path, &key);
  if (!con) return fail(p, "copy operation does not apply: doc is missing destination path: %s: missing value", path);
  json_t *cp = val ? json_deep_copy(val) : json_null();
  int rc = cp ? c_add(con, key, cp, why) : KIN_ENOMEM;
  free(key);
  if (rc == -1) return fail(p, "error while adding value during copy: %s", why);
  return rc;
}

int kin_sim_json_patch_malformed(const json_t *ops) {
  if (json_is_null(ops)) return 0;
  if (!json_is_array(ops)) return 1;
  size_t i;
  json_t *op;
  json_array_foreach(ops, i, op) if (!json_is_object(op) && !json_is_null(op)) return 1;
  return 0;
}

int kin_sim_json_patch(const json_t *doc, const json_t *ops, json_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (err && errlen) err[0] = 0;
  /* DecodePatch: the document must be an array of objects (null decodes to
   * an empty patch); anything else is a 400 from the API server */
  if (!json_is_array(ops) && !json_is_null(ops)) {
    kin__errf(err, errlen, "json: cannot unmarshal %s into Go value of type jsonpatch.Patch", go_json_kind(ops));
    return KIN_EINVAL;
  }
  size_t i;
  json_t *op;
  json_array_foreach(ops, i, op) {
    if (!json_is_object(op) && !json_is_null(op)) {
      kin__errf(err, errlen, "json: cannot unmarshal %s into Go value of type jsonpatch.Operation",
           go_json_kind(op));
      return KIN_EINVAL;
    }
  }
  if (!json_is_object(doc) && !json_is_array(doc)) {
    kin__errf(err, errlen, "json: cannot unmarshal %s into Go value of type jsonpatch.partialDoc",
         go_json_kind(doc));
    return KIN_EINVAL;
  }
  jp p;
  p.msg[0] = 0;
  p.doc = json_deep_copy(doc);
  if (!p.doc) return KIN_ENOMEM;
  json_array_foreach(ops, i, op) {
    const char *kind = "unknown";
    json_t *k = json_object_get(op, "op");
    if (json_is_string(k)) kind = json_string_value(k);
    int rc;
    if (strcmp(kind, "add") == 0)
      rc = do_add(&p, op);
    else if (strcmp(kind, "remove") == 0)
      rc = do_remove(&p, op);
    else if (strcmp(kind, "replace") == 0)
      rc = do_replace(&p, op);
    else if (strcmp(kind, "move") == 0)
      rc = do_move(&p, op);
    else if (strcmp(kind, "test") == 0)
      rc = do_test(&p, op);
    else if (strcmp(kind, "copy") == 0)
      rc = do_copy(&p, op);
    else
      rc = fail(&p, "Unexpected kind: %s", kind);
    if (rc != 0) {
      json_decref(p.doc);
      if (rc == KIN_ENOMEM) {
        kin__errf(err, errlen, "out of memory");
        return KIN_ENOMEM;
      }
      kin__errf(err, errlen, "%s", p.msg);
      return KIN_EINVAL;
    }
  }
  *out = p.doc;
  return 0;
}
