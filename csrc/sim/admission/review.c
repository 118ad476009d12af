/* review.c -- the AdmissionReview v1 kube-apiserver sends (k8s.io/apiserver
 * pkg/admission/plugin/webhook/request: CreateAdmissionObjects, every
 * field in its order) and the checks of the answer
 * (VerifyAdmissionResponse). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "review.h"

static const char *const OPS[] = {"", "CREATE", "UPDATE", "DELETE"};
static const char *const OPTS[] = {"", "CreateOptions", "UpdateOptions", "DeleteOptions"};

/* {group, version, <what>: name} of r (a new object). */
static json_t *gvx(const kin__sim_resource *r, const char *what, const char *name) {
  return json_pack("{s:s, s:s, s:s}", "group", r->group, "version", r->version, what, name);
}

/* The options kube-apiserver hands the webhook for op (a new object). */
static json_t *options_of(const kin__sim_admit_ctx *c, int op) {
  json_t *o = op == KIN__SIM_OP_DELETE && json_is_object(c->delete_options)
                  ? json_deep_copy(c->delete_options)
                  : json_object();
  if (!o) return NULL;
  json_object_set_new(o, "kind", json_string(OPTS[op]));
  json_object_set_new(o, "apiVersion", json_string("meta.k8s.io/v1"));
  if (c->dry_run && !json_object_get(o, "dryRun"))
    json_object_set_new(o, "dryRun", json_pack("[s]", "All"));
  if (op != KIN__SIM_OP_DELETE && c->field_manager)
    json_object_set_new(o, "fieldManager", json_string(c->field_manager));
  if (op != KIN__SIM_OP_DELETE && c->field_validation)
    json_object_set_new(o, "fieldValidation", json_string(c->field_validation));
  return o;
}

char *kin__sim_review_request(const kin__sim_admit_ctx *c, const kin__sim_admit_attrs *a,
                              const kin__sim_resource *as, const json_t *obj, const json_t *old,
                              char uid[37]) {
  kin__sim_uuid(uid);
  const char *sub = c->subresource ? c->subresource : "";
  json_t *req = json_object();
  json_object_set_new(req, "uid", json_string(uid));
  json_object_set_new(req, "kind", gvx(as, "kind", as->kind));
  json_object_set_new(req, "resource", gvx(as, "resource", as->resource));
  if (*sub) json_object_set_new(req, "subResource", json_string(sub));
  json_object_set_new(req, "requestKind", gvx(a->r, "kind", a->r->kind));
  json_object_set_new(req, "requestResource", gvx(a->r, "resource", a->r->resource));
  if (*sub) json_object_set_new(req, "requestSubResource", json_string(sub));
  if (a->name && *a->name) json_object_set_new(req, "name", json_string(a->name));
  /* a namespace's own requests carry its name as their namespace */
  int is_ns = !a->r->crd_name && !*a->r->group && !strcmp(a->r->resource, "namespaces");
  const char *ns = is_ns ? a->name : a->ns;
  if (ns && *ns) json_object_set_new(req, "namespace", json_string(ns));
  json_object_set_new(req, "operation", json_string(OPS[a->op]));
  json_t *groups = json_array();
  for (size_t i = 0; i < c->ngroups; i++) json_array_append_new(groups, json_string(c->groups[i]));
  json_t *ui = json_object();
  if (c->user && *c->user) json_object_set_new(ui, "username", json_string(c->user));
  json_object_set_new(ui, "groups", groups);
  json_object_set_new(req, "userInfo", ui);
  json_object_set_new(req, "object", obj ? json_deep_copy(obj) : json_null());
  json_object_set_new(req, "oldObject", old ? json_deep_copy(old) : json_null());
  json_object_set_new(req, "dryRun", json_boolean(c->dry_run));
  json_t *opts = options_of(c, a->op);
  json_object_set_new(req, "options", opts ? opts : json_null());
  json_t *review = json_pack("{s:s, s:s, s:o}", "kind", "AdmissionReview", "apiVersion",
                             "admission.k8s.io/v1", "request", req);
  char *s = review ? json_dumps(review, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(review);
  return s;
}

int kin__sim_review_response(const char *body, size_t len, const char *uid, json_t **resp,
                             char *err, size_t errcap) {
  *resp = NULL;
  json_error_t jerr;
  json_t *review = json_loadb(body ? body : "", len, 0, &jerr);
  if (!json_is_object(review)) {
    snprintf(err, errcap, "received invalid webhook response: %s", review ? "not an object" : jerr.text);
    json_decref(review);
    return -1;
  }
  const char *kind = kin__sim_jstr(review, "kind", NULL);
  const char *av = kin__sim_jstr(review, "apiVersion", NULL);
  if (!kind || !av || strcmp(kind, "AdmissionReview") || strcmp(av, "admission.k8s.io/v1")) {
    snprintf(err, errcap,
             "received invalid webhook response: expected webhook response of "
             "admission.k8s.io/v1, Kind=AdmissionReview, got %s, Kind=%s",
             av ? av : "", kind ? kind : "");
    json_decref(review);
    return -1;
  }
  json_t *r = json_object_get(review, "response");
  if (!json_is_object(r)) {
    snprintf(err, errcap, "received invalid webhook response: webhook response was absent");
    json_decref(review);
    return -1;
  }
  const char *ruid = kin__sim_jstr(r, "uid", NULL);
  if (!ruid || strcmp(ruid, uid)) {
    snprintf(err, errcap,
             "received invalid webhook response: expected response.uid=\"%s\", got \"%s\"", uid,
             ruid ? ruid : "");
    json_decref(review);
    return -1;
  }
  *resp = json_incref(r);
  json_decref(review);
  return 0;
}
