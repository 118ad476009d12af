/* http_scale.c -- the scale subresource of deployments, replicasets and
 * statefulsets (k8s.io/kubernetes pkg/registry/apps/<kind>/storage
 * ScaleREST): GET, PUT and PATCH of .../{name}/scale speak autoscaling/v1
 * Scale, read from and written into the parent object as one update of it
 * (spec.replicas only; resourceVersion conflicts and generation as for any
 * update of the parent). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "selector_string.h"


json_t *kin__sim_scale_of(const json_t *obj) {
  const json_t *md = json_object_get(obj, "metadata");
  const json_t *spec = json_object_get(obj, "spec");
  json_t *smd = json_object();
  static const char *const keep[] = {"name", "namespace", "uid", "resourceVersion",
                                     "creationTimestamp", NULL};
  for (int i = 0; keep[i]; i++) {
    json_t *v = json_object_get(md, keep[i]);
    if (v) json_object_set(smd, keep[i], v);
  }
  /* The sim does not default: an absent spec.replicas is the API's 1. */
  json_t *rep = json_object_get(spec, "replicas");
  json_int_t replicas = rep ? json_integer_value(rep) : 1;
  json_t *sspec = json_object();
  if (replicas) json_object_set_new(sspec, "replicas", json_integer(replicas));
  json_t *sst = json_object();
  json_object_set_new(sst, "replicas", json_integer(json_integer_value(
                                           json_object_get(json_object_get(obj, "status"),
                                                           "replicas"))));
  /* a ReplicationController's selector is a plain map (SelectorFromSet) */
  json_t *rcsel = NULL;
  const char *kind = kin__sim_jstr(obj, "kind", NULL);
  if (kind && !strcmp(kind, "ReplicationController"))
    rcsel = json_pack("{s:O?}", "matchLabels", json_object_get(spec, "selector"));
  char *sel =
      kin__sim_label_selector_string(rcsel ? rcsel : json_object_get(spec, "selector"));
  json_decref(rcsel);
  if (sel && *sel) json_object_set_new(sst, "selector", json_string(sel));
  free(sel);
  return json_pack("{s:s, s:s, s:o, s:o, s:o}", "kind", "Scale", "apiVersion", "autoscaling/v1",
                   "metadata", smd, "spec", sspec, "status", sst);
}

typedef struct {
  kin__sim_update_fn patch; /* PATCH: applies the patch to the current Scale */
  void *patch_ud;
  const json_t *scale; /* PUT: the Scale sent */
  const char *name;
} scale_ctx;

/* The parent's update: its Scale (sent, or patched), validated, written
 * into a copy of the current object. */
static json_t *scale_update_fn(void *ud, const json_t *cur, kin__sim_result *out) {
  scale_ctx *c = ud;
  json_t *scale;
  if (c->patch) {
    json_t *cs = kin__sim_scale_of(cur);
    scale = c->patch(c->patch_ud, cs, out);
    json_decref(cs);
    if (!scale) return NULL;
  } else {
    scale = json_incref((json_t *)c->scale);
  }
  json_t *rep = json_object_get(json_object_get(scale, "spec"), "replicas");
  json_int_t n = 0;
  if (rep && !json_is_null(rep)) {
    if (!json_is_integer(rep) || json_integer_value(rep) > INT32_MAX ||
        json_integer_value(rep) < INT32_MIN) {
      /* The patched Scale does not decode (the server words it as an
       * invalid "patch" field holding the whole patched object). */
      char *txt = json_dumps(scale, JSON_COMPACT);
      char detail[1024];
      snprintf(detail, sizeof(detail),
               "Invalid value: \"%.700s\": json: cannot unmarshal %s into Go struct field "
               "ScaleSpec.spec.replicas of type int32",
               txt ? txt : "", json_is_string(rep) ? "string" : "number");
      free(txt);
      json_decref(scale);
      kin__sim_err_invalid(out, "", "", "", "patch", "FieldValueInvalid", detail);
      return NULL;
    }
    n = json_integer_value(rep);
  }
  if (n < 0) {
    char detail[128];
    snprintf(detail, sizeof(detail), "Invalid value: %lld: must be greater than or equal to 0",
             (long long)n);
    json_decref(scale);
    kin__sim_err_invalid(out, "autoscaling", "Scale", c->name, "spec.replicas",
                         "FieldValueInvalid", detail);
    return NULL;
  }
  json_t *obj = json_deep_copy(cur);
  json_t *spec = json_object_get(obj, "spec");
  if (!json_is_object(spec)) {
    spec = json_object();
    json_object_set_new(obj, "spec", spec);
  }
  json_object_set_new(spec, "replicas", json_integer(n));
  /* The Scale's resourceVersion is the parent's precondition. */
  const char *rv = kin__sim_jstr(scale, "metadata", "resourceVersion");
  if (rv && *rv) json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion",
                                     json_string(rv));
  json_decref(scale);
  return obj;
}

/* The parent in out (a 200) becomes its Scale. */
static void to_scale(const kin__sim_resource *r, kin__sim_result *out) {
  const char *kind = kin__sim_jstr(out->body, "kind", NULL);
  if (out->code != 200 || !kind || strcmp(kind, r->kind)) return;
  json_t *scale = kin__sim_scale_of(out->body);
  json_decref(out->body);
  out->body = scale;
}

void kin__sim_scale_get(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                        kin__sim_result *out) {
  kin__sim_store_get(&req->sim->store, r, ri->ns, ri->name, out);
  to_scale(r, out);
}

void kin__sim_scale_patch(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                          kin__sim_update_fn patch, void *patch_ud, int dry_run,
                          kin__sim_result *out) {
  scale_ctx c = {patch, patch_ud, NULL, ri->name};
  kin__sim_managed_update m = {scale_update_fn, &c, req, r, "scale"};
  kin__sim_store_update(&req->sim->store, r, ri->ns, ri->name, 0, kin__sim_managed_update_fn, &m,
                        dry_run, out);
  to_scale(r, out);
}

/* A request body that is not JSON or no object, in the codec's words. */
static void bad_body(kin__sim_req *req, const char *why, kin__sim_result *out) {
  kin__buf hex = {0};
  for (size_t i = 0; i < req->body.len && i < 64; i++)
    kin__buf_printf(&hex, "%02x", (unsigned char)req->body.p[i]);
  kin__sim_err_bad_request(out, "the object provided is unrecognized (must be of type Scale): "
                                "couldn't get version/kind; json parse error: %s (%s)",
                           why, hex.p ? hex.p : "<empty>");
  kin__buf_free(&hex);
}

void kin__sim_scale_update(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                           int dry_run, kin__sim_result *out) {
  if (!req->body.len) {
    bad_body(req, "unexpected end of JSON input", out);
    return;
  }
  json_error_t jerr;
  const char *ct = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Content-Type");
  json_t *scale;
  if (kin__sim_proto_is(ct)) {
    if (!(scale = kin__sim_proto_body(req, "autoscaling/v1", "Scale", out))) return;
  } else if (!(scale = json_loadb(req->body.p, req->body.len, 0, &jerr))) {
    bad_body(req, jerr.text, out);
    return;
  }
  if (!json_is_object(scale)) {
    bad_body(req, scale ? "not a JSON object" : jerr.text, out);
    json_decref(scale);
    return;
  }
  const char *kind = kin__sim_jstr(scale, "kind", NULL);
  const char *av = kin__sim_jstr(scale, "apiVersion", NULL);
  const char *ver = av ? (strchr(av, '/') ? strchr(av, '/') + 1 : av) : "";
  const char *name = kin__sim_jstr(scale, "metadata", "name");
  const char *ns = kin__sim_jstr(scale, "metadata", "namespace");
  if (kind && *kind && strcmp(kind, "Scale")) {
    kin__sim_err_bad_request(out, "%s in version \"%s\" cannot be handled as a Scale: converting "
                                  "(%s.%s) to (autoscaling.Scale): unknown conversion",
                             kind, ver, ver, kind);
  } else if (av && *av && strcmp(av, "autoscaling/v1")) {
    kin__sim_err_bad_request(out, "Scale in version \"%s\" cannot be handled as a Scale: no kind "
                                  "\"Scale\" is registered for version \"%s\" in scheme "
                                  "\"pkg/runtime/scheme.go:111\"",
                             ver, av);
  } else if (ns && *ns && strcmp(ns, ri->ns)) {
    kin__sim_err_bad_request(out, "the namespace of the provided object does not match the "
                                  "namespace sent on the request");
  } else if (!name || !*name) {
    kin__sim_err_bad_request(out, "the name of the object (%s based on URL) was undeterminable: "
                                  "name must be provided", ri->name);
  } else if (strcmp(name, ri->name)) {
    kin__sim_err_bad_request(out, "the name of the object (%s) does not match the name on the "
                                  "URL (%s)", name, ri->name);
  } else {
    scale_ctx c = {NULL, NULL, scale, ri->name};
    kin__sim_managed_update m = {scale_update_fn, &c, req, r, "scale"};
    kin__sim_store_update(&req->sim->store, r, ri->ns, ri->name, 0, kin__sim_managed_update_fn,
                          &m, dry_run, out);
    to_scale(r, out);
  }
  json_decref(scale);
}
