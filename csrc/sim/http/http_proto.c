/* http_proto.c -- protobuf on the wire of the resource handlers
 * (k8s.io/apiserver handlers/negotiation and the protobuf serializer of
 * k8s.io/apimachinery): Accept negotiation, protobuf request bodies to the
 * sim's JSON form, JSON responses and watch events to protobuf. Custom
 * resources have no protobuf form, as in kube-apiserver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_int.h"
#include "kin.h"
#include "proto_int.h"

#define PB_TYPE "application/vnd.kubernetes.protobuf"

int kin__sim_proto_is(const char *ct) {
  size_t n = strlen(PB_TYPE);
  return ct && !strncasecmp(ct, PB_TYPE, n) && (!ct[n] || ct[n] == ';' || ct[n] == ' ');
}

/* One media range of an Accept header. */
typedef struct {
  char type[64], sub[96];
  double q;
  int transform; /* as=, g= or v= (a conversion, e.g. Table) */
  int refused;   /* a parameter no serializer accepts (sv=, stream= other than watch) */
} clause;

/* Parses the media range in s[0..n) into c. */
static void parse_clause(const char *s, size_t n, clause *c) {
  memset(c, 0, sizeof(*c));
  c->q = 1;
  char tmp[512];
  if (n >= sizeof(tmp)) n = sizeof(tmp) - 1;
  memcpy(tmp, s, n);
  tmp[n] = 0;
  char *save = NULL, *part = strtok_r(tmp, ";", &save);
  if (!part) return;
  while (*part == ' ' || *part == '\t') part++;
  char *slash = strchr(part, '/');
  if (slash) {
    *slash = 0;
    snprintf(c->type, sizeof(c->type), "%s", part);
    snprintf(c->sub, sizeof(c->sub), "%s", slash + 1);
  } else {
    snprintf(c->type, sizeof(c->type), "%s", part);
  }
  for (char *e = c->type + strlen(c->type); e > c->type && (e[-1] == ' ' || e[-1] == '\t');) *--e = 0;
  for (char *e = c->sub + strlen(c->sub); e > c->sub && (e[-1] == ' ' || e[-1] == '\t');) *--e = 0;
  while ((part = strtok_r(NULL, ";", &save))) {
    while (*part == ' ' || *part == '\t') part++;
    char *eq = strchr(part, '=');
    const char *v = eq ? eq + 1 : "";
    if (eq) *eq = 0;
    for (char *e = part + strlen(part); e > part && (e[-1] == ' ' || e[-1] == '\t');) *--e = 0;
    if (!strcmp(part, "q"))
      c->q = strtod(v, NULL);
    else if (!strcmp(part, "as") || !strcmp(part, "g") || !strcmp(part, "v"))
      c->transform = 1;
    else if ((!strcmp(part, "stream") && *v && strcmp(v, "watch")) || (!strcmp(part, "sv") && *v))
      c->refused = 1;
  }
}

/* goautoneg's order: q descending, then concrete types before wildcards;
 * stable otherwise. */
static int before(const clause *a, const clause *b) {
  if (a->q != b->q) return a->q > b->q;
  if (strcmp(a->type, "*") && !strcmp(b->type, "*")) return 1;
  if (strcmp(a->sub, "*") && !strcmp(b->sub, "*")) return 1;
  return 0;
}

int kin__sim_proto_negotiate(kin__sim_req *req, const kin__sim_resource *r, int collection,
                             kin__sim_result *out) {
  const char *accept = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Accept");
  if (!accept || !*accept) return 0;
  clause cs[16];
  int n = 0;
  for (const char *p = accept; *p && n < 16;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    parse_clause(p, len, &cs[n]);
    if (cs[n].type[0] && cs[n].q > 0) n++;
    p += len + (comma ? 1 : 0);
  }
  for (int i = 1; i < n; i++) /* insertion sort: stable */
    for (int j = i; j > 0 && before(&cs[j], &cs[j - 1]); j--) {
      clause t = cs[j];
      cs[j] = cs[j - 1];
      cs[j - 1] = t;
    }
  int pb_ok = !r || !r->crd_name, pb_asked = 0;
  for (int i = 0; i < n; i++) {
    const clause *c = &cs[i];
    if (c->refused) continue;
    int any = !strcmp(c->type, "*") && !strcmp(c->sub, "*");
    int app = !strcasecmp(c->type, "application");
    if (any || (app && !strcmp(c->sub, "*"))) return 0; /* the first: JSON */
    if (!app) continue;
    if (!strcasecmp(c->sub, "json") || !strcasecmp(c->sub, "yaml")) return 0;
    /* Conversions (Table, PartialObjectMetadata) are served as JSON. */
    if (!c->transform && !strcasecmp(c->sub, "vnd.kubernetes.protobuf")) {
      if (pb_ok) return 1;
      pb_asked = 1;
    }
  }
  if (!pb_ok) {
    /* apiextensions' handler: its own words, the Status in protobuf when
     * that was asked for */
    kin__sim_err(out, 406, "NotAcceptable", NULL,
                 "only the following media types are accepted: application/json, "
                 "application/yaml, " PB_TYPE);
    req->proto = pb_asked;
    return -1;
  }
  kin__sim_err(out, 406, "NotAcceptable", json_object(),
               "406: Not Acceptable\n\nAvailable representations: application/json, "
               "application/yaml, " PB_TYPE "%s",
               collection ? ", application/json;stream=watch, " PB_TYPE ";stream=watch" : "");
  return -1;
}

json_t *kin__sim_proto_body(kin__sim_req *req, const char *api_version, const char *kind,
                            kin__sim_result *out) {
  int fallback = kin__pb_root_msg(api_version, kind);
  kin__sim_pb_type tm;
  char err[512];
  json_t *obj = kin__sim_pb_unwrap((const uint8_t *)req->body.p, req->body.len, fallback, &tm,
                                   err, sizeof(err));
  if (obj) return obj;
  if (tm.read) {
    /* the object's error, named by the envelope's kind (or the target's) */
    const char *slash = strchr(tm.api_version, '/');
    if (!tm.api_version[0]) slash = strchr(api_version, '/');
    const char *ver = tm.api_version[0] ? (slash ? slash + 1 : tm.api_version)
                                        : (slash ? slash + 1 : api_version);
    kin__sim_err_bad_request(out, "%s in version \"%s\" cannot be handled as a %s: %s",
                             tm.kind[0] ? tm.kind : kind, ver, kind, err);
    return NULL;
  }
  /* summarizeData: the first 30 bytes in hex */
  char hex[80] = "<empty>";
  size_t n = req->body.len > 30 ? 30 : req->body.len;
  for (size_t i = 0; i < n; i++)
    snprintf(hex + 2 * i, 3, "%02x", (unsigned char)req->body.p[i]);
  if (req->body.len > 30) snprintf(hex + 60, sizeof(hex) - 60, " ...");
  kin__sim_err_bad_request(out, "the object provided is unrecognized (must be of type %s): %s (%s)",
                           kind, err, hex);
  return NULL;
}

enum MHD_Result kin__sim_proto_respond(kin__sim_req *req, int code, kin__buf *json) {
  json_error_t jerr;
  json_t *v = json_loadb(json->p ? json->p : "", json->len, 0, &jerr);
  kin__buf pb = {0};
  char err[512] = "";
  int rc = v ? kin__sim_pb_wrap(v, NULL, NULL, &pb, err, sizeof(err)) : KIN_EINVAL;
  json_decref(v);
  if (rc) {
    /* An object the schema cannot carry (the sim does not validate every
     * field's type): a 500 Status, as the server's failed encode. */
    kin__buf_free(&pb);
    json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status",
                           "apiVersion", "v1", "metadata", "status", "Failure", "message",
                           err[0] ? err : "response is not JSON", "reason", "InternalError",
                           "code", 500);
    code = 500;
    if (!st || kin__sim_pb_wrap(st, NULL, NULL, &pb, err, sizeof(err))) {
      json_decref(st);
      kin__buf_free(&pb);
      return kin__sim_send_buf(req, code, json, "application/json");
    }
    json_decref(st);
  }
  kin__buf_free(json);
  return kin__sim_send_buf(req, code, &pb, PB_TYPE);
}

int kin__sim_proto_watch_frames(kin__buf *buf, size_t from) {
  if (from >= buf->len) return 0;
  kin__buf out = {0};
  const char *p = buf->p + from, *end = buf->p + buf->len;
  int rc = 0;
  while (!rc && p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    json_error_t jerr;
    json_t *ev = json_loadb(p, n, 0, &jerr);
    const char *type = kin__sim_jstr(ev, "type", NULL);
    json_t *obj = json_object_get(ev, "object");
    kin__buf inner = {0}, frame = {0};
    char err[512];
    if (ev && type && json_is_object(obj) &&
        !kin__sim_pb_wrap(obj, NULL, NULL, &inner, err, sizeof(err))) {
      /* metav1.WatchEvent, not enveloped: {type, object: RawExtension} */
      kin__buf raw = {0};
      rc = kin__sim_pb_put_bytes(&raw, 1, inner.p, inner.len);
      if (!rc) rc = kin__sim_pb_put_bytes(&frame, 1, type, strlen(type));
      if (!rc) rc = kin__sim_pb_put_bytes(&frame, 2, raw.p, raw.len);
      kin__buf_free(&raw);
    } else {
      /* a malformed line (the fault) stays malformed: its bytes as a frame */
      rc = kin__buf_add(&frame, p, n);
    }
    unsigned char len[4] = {(unsigned char)(frame.len >> 24), (unsigned char)(frame.len >> 16),
                            (unsigned char)(frame.len >> 8), (unsigned char)frame.len};
    if (!rc) rc = kin__buf_add(&out, (const char *)len, 4);
    if (!rc && frame.len) rc = kin__buf_add(&out, frame.p, frame.len);
    kin__buf_free(&inner);
    kin__buf_free(&frame);
    json_decref(ev);
    p += n + (nl ? 1 : 0);
  }
  buf->len = from;
  if (!rc) rc = kin__buf_add(buf, out.p ? out.p : "", out.len);
  kin__buf_free(&out);
  return rc;
}
