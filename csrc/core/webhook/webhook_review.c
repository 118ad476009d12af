/* webhook_review.c -- AdmissionReview v1 and ConversionReview v1 bodies
 * decoded into a kin_webhook_request (strict JSON check, then jsmn spans:
 * request.object, oldObject and objects parsed as kin_obj, strings
 * unescaped by json_str.h's rule), and the answers encoded in the shape
 * controller-runtime writes them (admission/response.go, conversion.go).
 * Also Go's time.ParseDuration for kube-apiserver's ?timeout=. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "json_check.h"
#include "json_span.h"
#include "json_str.h"
#include "kin.h"
#include "webhook_int.h"

/* The decoding under way: the document's tokens and where an error goes. */
typedef struct {
  kin__wh_review *rv;
  const char *js;
  jsmntok_t *t;
  int n;
  char *err;
  size_t errlen;
} dec;

/* Keeps s (malloc'd) for rv's lifetime. Returns s, or NULL (s freed) on OOM. */
static char *keep(kin__wh_review *rv, char *s) {
  if (rv->nstrs == rv->capstrs) {
    size_t cap = rv->capstrs ? rv->capstrs * 2 : 16;
    char **p = realloc(rv->strs, cap * sizeof *p);
    if (!p) {
      free(s);
      return NULL;
    }
    rv->strs = p;
    rv->capstrs = cap;
  }
  rv->strs[rv->nstrs++] = s;
  return s;
}

/* The string member key of the object at obj into *out: "" when absent or
 * null. Returns 0, KIN_EINVAL (not a string; err names where.key),
 * KIN_ENOMEM. */
static int get_str(dec *d, int obj, const char *where, const char *key, const char **out) {
  *out = "";
  int i = kin__span_get(d->js, d->t, d->n, obj, key);
  if (i < 0) return 0;
  const jsmntok_t *v = &d->t[i];
  if (v->type == JSMN_PRIMITIVE && d->js[v->start] == 'n') return 0;
  if (v->type != JSMN_STRING) {
    snprintf(d->err, d->errlen, "%s%s: not a string", where, key);
    return KIN_EINVAL;
  }
  char *s = NULL;
  int rc = kin__json_unescape_dup(d->js + v->start, (size_t)(v->end - v->start), &s, NULL);
  if (rc == KIN_EINVAL) snprintf(d->err, d->errlen, "%s%s: a bad escape", where, key);
  if (rc) return rc;
  if (!keep(d->rv, s)) return KIN_ENOMEM;
  *out = s;
  return 0;
}

/* The object member key of obj: its token index, -1 when absent or null.
 * Sets *rc to KIN_EINVAL (err) when it is present and not an object. */
static int get_obj(dec *d, int obj, const char *where, const char *key, int *rc) {
  int i = kin__span_get(d->js, d->t, d->n, obj, key);
  if (i < 0) return -1;
  if (d->t[i].type == JSMN_PRIMITIVE && d->js[d->t[i].start] == 'n') return -1;
  if (d->t[i].type != JSMN_OBJECT) {
    snprintf(d->err, d->errlen, "%s%s: not a JSON object", where, key);
    *rc = KIN_EINVAL;
    return -1;
  }
  return i;
}

/* Parses the object at token i into *out (NULL when i < 0). Returns 0,
 * KIN_EINVAL (err names what), KIN_ENOMEM. */
static int parse_obj(dec *d, int i, const char *what, kin_obj **out) {
  *out = NULL;
  if (i < 0) return 0;
  int b = kin__span_begin(&d->t[i]), e = kin__span_end(&d->t[i]);
  int rc = kin_obj_parse_any(d->js + b, (size_t)(e - b), out);
  if (rc == KIN_EINVAL) snprintf(d->err, d->errlen, "%s: not a Kubernetes object (metadata is not an object)", what);
  return rc;
}

/* Checks the review's apiVersion and kind against want_group/want_kind
 * (absent: defaulted, as controller-runtime's decoder defaults them) and
 * records the apiVersion to answer with. Returns 0 or KIN_EINVAL. */
static int check_type(dec *d, const char *want_group, const char *want_kind) {
  const char *av, *kind;
  int rc = get_str(d, 0, "", "apiVersion", &av);
  if (!rc) rc = get_str(d, 0, "", "kind", &kind);
  if (rc) return rc;
  char v1[40], v1b1[40];
  snprintf(v1, sizeof v1, "%s/v1", want_group);
  snprintf(v1b1, sizeof v1b1, "%s/v1beta1", want_group);
  if (*kind && strcmp(kind, want_kind) != 0) {
    snprintf(d->err, d->errlen, "kind \"%.60s\" is not %s: this webhook takes a %s %s",
             kind, want_kind, v1, want_kind);
    return KIN_EINVAL;
  }
  if (*av && strcmp(av, v1) != 0 && strcmp(av, v1b1) != 0) {
    snprintf(d->err, d->errlen, "apiVersion \"%.60s\" is not %s (or %s)", av, v1, v1b1);
    return KIN_EINVAL;
  }
  snprintf(d->rv->api_version, sizeof d->rv->api_version, "%s", *av ? av : v1);
  return 0;
}

/* request.kind / request.resource: a {group, version, <last>} object. */
static int get_gvk(dec *d, int req, const char *key, const char *last, const char **g,
                   const char **v, const char **k) {
  int rc = 0;
  char where[40];
  snprintf(where, sizeof where, "request.%s.", key);
  int o = get_obj(d, req, "request.", key, &rc);
  *g = *v = *k = "";
  if (rc || o < 0) return rc;
  if ((rc = get_str(d, o, where, "group", g)) || (rc = get_str(d, o, where, "version", v))) return rc;
  return get_str(d, o, where, last, k);
}

/* The raw text of member key of req into p and len, dflt when absent. */
static void get_raw(dec *d, int req, const char *key, const char *dflt, const char **p,
                    size_t *len) {
  int i = kin__span_get(d->js, d->t, d->n, req, key);
  if (i < 0) {
    *p = dflt;
    *len = strlen(dflt);
    return;
  }
  int b = kin__span_begin(&d->t[i]);
  *p = d->js + b;
  *len = (size_t)(kin__span_end(&d->t[i]) - b);
}

/* AdmissionReview's request into rv->req. */
static int decode_admission(dec *d, int req) {
  kin_webhook_request *r = &d->rv->req;
  int rc = 0;
  if ((rc = get_str(d, req, "request.", "uid", &r->uid)) ||
      (rc = get_str(d, req, "request.", "operation", &r->operation)) ||
      (rc = get_str(d, req, "request.", "subResource", &r->sub_resource)) ||
      (rc = get_str(d, req, "request.", "name", &r->name)) ||
      (rc = get_str(d, req, "request.", "namespace", &r->namespace_)) ||
      (rc = get_gvk(d, req, "kind", "kind", &r->kind_group, &r->kind_version, &r->kind)) ||
      (rc = get_gvk(d, req, "resource", "resource", &r->resource_group, &r->resource_version,
                    &r->resource)))
    return rc;
  int obj = get_obj(d, req, "request.", "object", &rc);
  int old = rc ? -1 : get_obj(d, req, "request.", "oldObject", &rc);
  int ui = rc ? -1 : get_obj(d, req, "request.", "userInfo", &rc);
  if (rc) return rc;
  int dry = kin__span_get(d->js, d->t, d->n, req, "dryRun");
  if (dry >= 0) {
    const jsmntok_t *v = &d->t[dry];
    if (v->type != JSMN_PRIMITIVE || !strchr("tfn", d->js[v->start])) {
      snprintf(d->err, d->errlen, "request.dryRun: not a boolean");
      return KIN_EINVAL;
    }
    r->dry_run = d->js[v->start] == 't';
  }
  if ((rc = parse_obj(d, obj, "request.object", &r->object)) ||
      (rc = parse_obj(d, old, "request.oldObject", &r->old_object)))
    return rc;
  if (ui >= 0) get_raw(d, req, "userInfo", "{}", &r->user_info, &r->user_info_len);
  else r->user_info = "{}", r->user_info_len = 2;
  get_raw(d, req, "options", "null", &r->options, &r->options_len);
  return 0;
}

/* ConversionReview's request into rv->req. */
static int decode_conversion(dec *d, int req) {
  kin_webhook_request *r = &d->rv->req;
  int rc;
  if ((rc = get_str(d, req, "request.", "uid", &r->uid)) ||
      (rc = get_str(d, req, "request.", "desiredAPIVersion", &r->desired_api_version)))
    return rc;
  if (!*r->desired_api_version) {
    snprintf(d->err, d->errlen, "request.desiredAPIVersion: missing");
    return KIN_EINVAL;
  }
  int a = kin__span_get(d->js, d->t, d->n, req, "objects");
  if (a < 0 || (d->t[a].type == JSMN_PRIMITIVE && d->js[d->t[a].start] == 'n')) return 0;
  if (d->t[a].type != JSMN_ARRAY) {
    snprintf(d->err, d->errlen, "request.objects: not an array");
    return KIN_EINVAL;
  }
  size_t n = (size_t)d->t[a].size;
  d->rv->objects = n ? calloc(n, sizeof(kin_obj *)) : NULL;
  if (n && !d->rv->objects) return KIN_ENOMEM;
  int i = a + 1;
  for (size_t k = 0; k < n; k++) {
    char what[48];
    snprintf(what, sizeof what, "request.objects[%zu]", k);
    if (d->t[i].type != JSMN_OBJECT) {
      snprintf(d->err, d->errlen, "%s: not a JSON object", what);
      return KIN_EINVAL;
    }
    if ((rc = parse_obj(d, i, what, &d->rv->objects[k])) != 0) return rc;
    r->nobjects = k + 1;
    i = kin__span_skip(d->t, d->n, i);
  }
  r->objects = d->rv->objects;
  return 0;
}

/* See webhook_int.h: 0 with rv filled, or KIN_EINVAL (err) / KIN_ENOMEM;
 * rv is freed with kin__wh_review_free either way. */
int kin__wh_review_decode(kin__wh_review *rv, kin_webhook_type type, const char *body,
                          size_t len, char *err, size_t errlen) {
  memset(rv, 0, sizeof *rv);
  kin_webhook_request *r = &rv->req;
  r->type = type;
  r->path = r->uid = r->operation = r->kind_group = r->kind_version = r->kind = "";
  r->resource_group = r->resource_version = r->resource = r->sub_resource = "";
  r->name = r->namespace_ = r->desired_api_version = "";
  r->user_info = "{}";
  r->user_info_len = 2;
  r->options = "null";
  r->options_len = 4;
  size_t off = 0;
  if (kin__json_check(body, len, &off) != 0) {
    snprintf(err, errlen, "the body is not JSON (error at byte %zu)", off);
    return KIN_EINVAL;
  }
  dec d = {.rv = rv, .js = body, .err = err, .errlen = errlen};
  d.n = kin__span_tokenize(body, len, &d.t);
  if (d.n == KIN_ENOMEM) return KIN_ENOMEM;
  if (d.n < 1 || d.t[0].type != JSMN_OBJECT) {
    snprintf(err, errlen, "the body is not a JSON object");
    free(d.t);
    return KIN_EINVAL;
  }
  int conv = type == KIN_WEBHOOK_CONVERSION;
  int rc = conv ? check_type(&d, "apiextensions.k8s.io", "ConversionReview")
                : check_type(&d, "admission.k8s.io", "AdmissionReview");
  int req = rc ? -1 : get_obj(&d, 0, "", "request", &rc);
  if (!rc && req < 0) {
    snprintf(err, errlen, conv ? "conversion request is nil" : "got an empty AdmissionRequest");
    rc = KIN_EINVAL;
  }
  if (!rc) rc = conv ? decode_conversion(&d, req) : decode_admission(&d, req);
  free(d.t);
  return rc;
}

/* Releases what rv owns (strings, objects) and zeroes it. */
void kin__wh_review_free(kin__wh_review *rv) {
  for (size_t i = 0; i < rv->nstrs; i++) free(rv->strs[i]);
  free(rv->strs);
  for (size_t i = 0; rv->objects && i < rv->req.nobjects; i++) kin_obj_unref(rv->objects[i]);
  free(rv->objects);
  kin_obj_unref(rv->req.object);
  kin_obj_unref(rv->req.old_object);
  memset(rv, 0, sizeof *rv);
}

/* 1 when the patch text is absent or an empty array. */
static int no_patch(const char *p, size_t n) {
  if (!p) return 1;
  size_t i = 0;
  while (i < n && strchr(" \t\r\n", p[i])) i++;
  if (i == n) return 1;
  if (p[i++] != '[') return 0;
  while (i < n && strchr(" \t\r\n", p[i])) i++;
  return i < n && p[i] == ']';
}

/* See webhook_int.h: appends the AdmissionReview to b; 0 or KIN_ENOMEM
 * (b's bytes then belong to the caller still). */
int kin__wh_answer_admission(kin__buf *b, const kin__wh_review *rv,
                             const kin_webhook_response *resp, int fn_rc, const char *dflt_msg) {
  kin__buf_printf(b, "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"%s\",\"response\":{\"uid\":",
                  rv->api_version);
  kin__buf_json_str(b, rv->req.uid);
  const char *msg = resp->message && *resp->message ? resp->message : NULL;
  if (fn_rc < 0) {
    kin__buf_puts(b, ",\"allowed\":false,\"status\":{\"metadata\":{},\"message\":");
    kin__buf_json_str(b, msg ? msg : dflt_msg);
    kin__buf_puts(b, ",\"code\":500}");
  } else if (resp->allowed) {
    kin__buf_puts(b, ",\"allowed\":true,\"status\":{\"metadata\":{}");
    if (msg) {
      kin__buf_puts(b, ",\"message\":");
      kin__buf_json_str(b, msg);
    }
    kin__buf_printf(b, ",\"code\":%d}", resp->code ? (int)resp->code : 200);
  } else {
    int code = resp->code ? (int)resp->code : 403;
    const char *reason = resp->reason ? resp->reason : code == 403 ? "Forbidden" : NULL;
    kin__buf_puts(b, ",\"allowed\":false,\"status\":{\"metadata\":{}");
    if (msg) {
      kin__buf_puts(b, ",\"message\":");
      kin__buf_json_str(b, msg);
    }
    if (reason && *reason) {
      kin__buf_puts(b, ",\"reason\":");
      kin__buf_json_str(b, reason);
    }
    kin__buf_printf(b, ",\"code\":%d}", code);
  }
  size_t plen = resp->patch ? (resp->patch_len ? resp->patch_len : strlen(resp->patch)) : 0;
  if (fn_rc >= 0 && !no_patch(resp->patch, plen)) {
    size_t n = plen;
    char *p64 = kin__base64_encode((const unsigned char *)resp->patch, n);
    if (!p64) return KIN_ENOMEM;
    kin__buf_printf(b, ",\"patch\":\"%s\",\"patchType\":\"JSONPatch\"", p64);
    free(p64);
  }
  if (resp->nwarnings) {
    kin__buf_puts(b, ",\"warnings\":[");
    for (size_t i = 0; i < resp->nwarnings; i++) {
      if (i) kin__buf_add(b, ",", 1);
      kin__buf_json_str(b, resp->warnings[i] ? resp->warnings[i] : "");
    }
    kin__buf_add(b, "]", 1);
  }
  kin__buf_puts(b, "}}\n");
  return b->oom ? KIN_ENOMEM : 0;
}

/* See webhook_int.h: appends the ConversionReview to b; 0 or KIN_ENOMEM
 * (b's bytes then belong to the caller still). */
int kin__wh_answer_conversion(kin__buf *b, const kin__wh_review *rv,
                              const kin_webhook_response *resp, int fn_rc, const char *dflt_msg) {
  char why[120] = "";
  const char *msg = resp->message && *resp->message ? resp->message : NULL;
  int ok = fn_rc >= 0 && !resp->failed;
  if (ok && resp->nconverted != rv->req.nobjects) {
    snprintf(why, sizeof why, "converted %zu objects, expected %zu", resp->nconverted,
             rv->req.nobjects);
    ok = 0;
    msg = why;
  }
  for (size_t i = 0; ok && i < resp->nconverted; i++) {
    const char *o = resp->converted[i];
    size_t n = o ? (resp->converted_len && resp->converted_len[i] ? resp->converted_len[i]
                                                                   : strlen(o))
                 : 0;
    size_t off = 0;
    if (!o || kin__json_check(o, n, &off) != 0) {
      snprintf(why, sizeof why, "converted object %zu is not JSON", i);
      ok = 0;
      msg = why;
    }
  }
  kin__buf_printf(b, "{\"kind\":\"ConversionReview\",\"apiVersion\":\"%s\",\"response\":{\"uid\":",
                  rv->api_version);
  kin__buf_json_str(b, rv->req.uid);
  if (ok) {
    kin__buf_puts(b, ",\"convertedObjects\":[");
    for (size_t i = 0; i < resp->nconverted; i++) {
      const char *o = resp->converted[i];
      size_t n = resp->converted_len && resp->converted_len[i] ? resp->converted_len[i] : strlen(o);
      if (i) kin__buf_add(b, ",", 1);
      kin__buf_add(b, o, n);
    }
    kin__buf_puts(b, "],\"result\":{\"metadata\":{},\"status\":\"Success\"}}}\n");
  } else {
    kin__buf_puts(b, ",\"convertedObjects\":null,\"result\":{\"metadata\":{},\"status\":\"Failure\","
                     "\"message\":");
    kin__buf_json_str(b, msg ? msg : dflt_msg);
    kin__buf_puts(b, "}}}\n");
  }
  return b->oom ? KIN_ENOMEM : 0;
}

/* Go's unit suffixes and their length in ns. */
static const struct {
  const char *unit;
  double ns;
} units[] = {{"ns", 1}, {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"\xce\xbcs", 1e3}, {"ms", 1e6},
             {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};

/* Go's time.ParseDuration, without negative values: 0 with *ns, or
 * KIN_EINVAL. */
int kin__wh_parse_duration(const char *s, uint64_t *ns) {
  if (!s || !*s) return KIN_EINVAL;
  if (*s == '+') s++;
  if (strcmp(s, "0") == 0) {
    *ns = 0;
    return 0;
  }
  double total = 0;
  while (*s) {
    char *end = NULL;
    if (!((*s >= '0' && *s <= '9') || *s == '.')) return KIN_EINVAL;
    double v = strtod(s, &end);
    if (end == s) return KIN_EINVAL;
    s = end;
    size_t best = 0;
    double mult = 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
      size_t n = strlen(units[i].unit);
      if (strncmp(s, units[i].unit, n) == 0 && n > best) best = n, mult = units[i].ns;
    }
    if (!best) return KIN_EINVAL;
    s += best;
    total += v * mult;
  }
  if (total > 9.2e18) return KIN_EINVAL;
  *ns = (uint64_t)total;
  return 0;
}
