/* http_token_request.c -- POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token
 * (TokenRequest, `kubectl create token`), as kube-apiserver's
 * serviceaccount TokenREST: the ServiceAccount must exist; the answer
 * carries a bearer token that authenticates as
 * system:serviceaccount:<ns>:<name>. The sim's token is the user's named
 * token (kin_sim_token: the same one every time, never expiring), not a
 * signed JWT; expirationTimestamp is reported as asked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth_int.h"
#include "http_int.h"

/* The request body as a TokenRequest (JSON or protobuf; empty: {}), a new
 * reference, or NULL with a 400 in out. */
static json_t *body_of(kin__sim_req *req, kin__sim_result *out) {
  const char *ct = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Content-Type");
  if (req->body.len && ct && kin__sim_proto_is(ct))
    return kin__sim_proto_body(req, "authentication.k8s.io/v1", "TokenRequest", out);
  if (!req->body.len) return json_object();
  json_error_t jerr;
  json_t *o = json_loadb(req->body.p, req->body.len, 0, &jerr);
  if (!json_is_object(o)) {
    json_decref(o);
    kin__sim_err_bad_request(out, "the object provided is unrecognized (must be of type "
                                  "TokenRequest): couldn't get version/kind; json parse error");
    return NULL;
  }
  return o;
}

int kin__sim_token_request(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                           kin__sim_result *out) {
  if (*r->group || strcmp(r->resource, "serviceaccounts") || strcmp(ri->subresource, "token"))
    return 0;
  if (strcmp(req->method, "POST") || !ri->name[0]) {
    kin__sim_err(out, 405, "MethodNotAllowed", json_object(),
                 "the server does not allow this method on the requested resource");
    return 1;
  }
  json_t *in = body_of(req, out);
  if (!in) return 1;
  kin__sim_store_get(&req->sim->store, r, ri->ns, ri->name, out);
  if (out->code != 200) {
    json_decref(in);
    return 1;
  }
  json_decref(out->body);
  out->body = NULL;
  json_t *spec = json_object_get(in, "spec");
  json_int_t secs = json_integer_value(json_object_get(spec, "expirationSeconds"));
  if (secs <= 0) secs = 3600;
  json_t *aud = json_object_get(spec, "audiences");
  char user[600];
  snprintf(user, sizeof(user), "system:serviceaccount:%s:%s", ri->ns, ri->name);
  char *token = kin_sim_token(req->sim, user);
  char now[32], exp[32];
  kin__sim_now_rfc3339(now);
  time_t t = time(NULL) + (time_t)secs;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(exp, sizeof(exp), "%Y-%m-%dT%H:%M:%SZ", &tm);
  json_t *audiences = json_array_size(aud)
                          ? json_incref(aud)
                          : json_pack("[s]", "https://kubernetes.default.svc.cluster.local");
  json_t *bound = json_object_get(spec, "boundObjectRef");
  out->code = 201;
  out->body = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:o, s:I, s:O}, s:{s:s, s:s}}", "kind",
                        "TokenRequest", "apiVersion", "authentication.k8s.io/v1", "metadata",
                        "name", ri->name, "namespace", ri->ns, "creationTimestamp", now, "spec",
                        "audiences", audiences, "expirationSeconds", secs, "boundObjectRef",
                        bound ? bound : json_null(), "status", "token", token ? token : "",
                        "expirationTimestamp", exp);
  free(token);
  json_decref(in);
  if (!out->body) kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
  return 1;
}
