/* http_resource.c -- the REST handlers of one resource path (k8s.io/apiserver
 * pkg/endpoints/handlers: create.go, get.go, update.go, patch.go,
 * delete.go): body decoding with the server's messages, verb dispatch,
 * method and media-type checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_int.h"
#include "kin.h"
#include "sim_patch.h"

static const char *content_type(kin__sim_req *req) {
  const char *ct = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Content-Type");
  return ct ? ct : "";
}

/* 1 when the media type of ct (parameters ignored) is mt. */
static int media_is(const char *ct, const char *mt) {
  size_t n = strlen(mt);
  return !strncasecmp(ct, mt, n) && (ct[n] == 0 || ct[n] == ';' || ct[n] == ' ');
}

/* 415 for a body the resource's serializers do not read (no protobuf for
 * custom resources). */
static void err_media_type(kin__sim_result *out, int crd) {
  kin__sim_err(out, 415, "UnsupportedMediaType", NULL,
               "the body of the request was in an unknown format - accepted media types "
               "include: application/json, application/yaml%s",
               crd ? "" : ", application/vnd.kubernetes.protobuf");
}

/* Decodes the body as an object of r: returns a new value, or NULL with a
 * 400 in out (the messages of the server's codec). */
static json_t *decode_object(kin__sim_req *req, kin__sim_resource *r, kin__sim_result *out) {
  const char *ct = content_type(req);
  int pb = kin__sim_proto_is(ct);
  if ((*ct && !media_is(ct, "application/json") && !pb) || (pb && r->crd_name)) {
    err_media_type(out, r->crd_name != NULL);
    return NULL;
  }
  const char *prefix = "the object provided is unrecognized (must be of type";
  json_t *obj = NULL;
  char want[320];
  kin__sim_api_version(r, want, sizeof(want));
  if (pb && !(obj = kin__sim_proto_body(req, want, r->kind, out))) return NULL;
  if (!pb && !req->body.len) {
    kin__sim_err_bad_request(out, "%s %s): couldn't get version/kind; json parse error: "
                             "unexpected end of JSON input (<empty>)", prefix, r->kind);
    return NULL;
  }
  json_error_t jerr;
  if (!pb) obj = json_loadb(req->body.p, req->body.len, 0, &jerr);
  if (!obj || !json_is_object(obj)) {
    char preview[40];
    if (req->body.len > 30)
      snprintf(preview, sizeof(preview), "%.30s ...", req->body.p);
    else
      snprintf(preview, sizeof(preview), "%.*s", (int)req->body.len, req->body.p);
    kin__sim_err_bad_request(out, "%s %s): couldn't get version/kind; json parse error: %s (%s)",
                             prefix, r->kind, obj ? "not a JSON object" : jerr.text, preview);
    json_decref(obj);
    return NULL;
  }
  const char *kind = kin__sim_jstr(obj, "kind", NULL);
  const char *av = kin__sim_jstr(obj, "apiVersion", NULL);
  if (r->crd_name) {
    /* Custom resources decode as unstructured: kind and apiVersion are
     * required, and a wrong kind is a validation error. */
    if (!kind || !*kind || !av || !*av) {
      char preview[40];
      if (req->body.len > 30)
        snprintf(preview, sizeof(preview), "%.30s ...", req->body.p);
      else
        snprintf(preview, sizeof(preview), "%.*s", (int)req->body.len, req->body.p);
      kin__sim_err_bad_request(out, "%s %s): Object '%s' is missing in '%.*s' (%s)", prefix,
                               r->kind, !kind || !*kind ? "Kind" : "apiVersion",
                               (int)(req->body.len > 1024 ? 1024 : req->body.len), req->body.p,
                               preview);
      json_decref(obj);
      return NULL;
    }
    if (av && *av && strcmp(av, want)) {
      kin__sim_err_bad_request(out, "the API version in the data (%s) does not match the "
                               "expected API version (%s)", av, want);
      json_decref(obj);
      return NULL;
    }
    if (strcmp(kind, r->kind)) {
      char detail[600];
      snprintf(detail, sizeof(detail), "Invalid value: \"%s\": must be %s", kind, r->kind);
      kin__sim_err_invalid(out, r->group, kind, kin__sim_jstr(obj, "metadata", "name"), "kind",
                           "FieldValueInvalid", detail);
      json_decref(obj);
      return NULL;
    }
  } else if (kind && *kind && strcmp(kind, r->kind)) {
    /* The target is the internal version, named after the group. */
    kin__sim_err_bad_request(out, "%s in version \"%s\" cannot be handled as a %s: converting "
                             "(%s.%s) to (%s.%s): unknown conversion",
                             kind, r->version, r->kind, r->version, kind,
                             *r->group ? r->group : "core", r->kind);
    json_decref(obj);
    return NULL;
  } else if (av && *av && strcmp(av, want)) {
    kin__sim_err_bad_request(out, "%s in version \"%s\" cannot be handled as a %s: no kind "
                             "\"%s\" is registered for version \"%s\" in scheme "
                             "\"pkg/runtime/scheme.go:111\"",
                             r->kind, r->version, r->kind, r->kind, av);
    json_decref(obj);
    return NULL;
  }
  return obj;
}

/* The namespace in the body must be empty or the one of the path. */
static int check_namespace(kin__sim_resource *r, const json_t *obj, const char *ns,
                           kin__sim_result *out) {
  const char *ons = kin__sim_jstr(obj, "metadata", "namespace");
  if (r->namespaced && ons && *ons && strcmp(ons, ns)) {
    kin__sim_err_bad_request(out, "the namespace of the provided object does not match the "
                                  "namespace sent on the request");
    return -1;
  }
  return 0;
}

/* 1 for ?dryRun=All (validated by check_dry_run before any write). */
static int dry_run(kin__sim_req *req) {
  const char *v = kin__sim_query(req, "dryRun");
  return v && !strcmp(v, "All");
}

/* ?dryRun accepts only "All"; 0, or -1 with the server's 422 for the
 * options kind of the verb (CreateOptions, UpdateOptions...). */
static int check_dry_run(kin__sim_req *req, const char *options_kind, kin__sim_result *out) {
  const char *v = kin__sim_query(req, "dryRun");
  if (!v || !*v || !strcmp(v, "All")) return 0;
  char detail[512];
  snprintf(detail, sizeof(detail), "Unsupported value: [\"%s\"]: supported values: \"All\"", v);
  kin__sim_err_invalid(out, "meta.k8s.io", options_kind, "", "dryRun", "FieldValueNotSupported",
                       detail);
  return -1;
}

static json_t *replace_fn(void *ud, const json_t *cur, kin__sim_result *err) {
  return json_incref((json_t *)ud);
}

typedef struct {
  const char *ct;
  json_t *patch;
  int crd;
  int strict_decode; /* fieldValidation is not Ignore (the default is Warn) */
} patch_ctx;

/* A JSON patch that is no array of operations, worded as the server's
 * decoder words it: with field validation (the default, Warn) it first
 * decodes into []handlers.jsonPatchOp and prefixes "error decoding patch";
 * with fieldValidation=Ignore jsonpatch.DecodePatch's error stands alone. */
static void json_patch_bad_request(const patch_ctx *p, const char *err, kin__sim_result *out) {
  if (!p->strict_decode) {
    kin__sim_err_bad_request(out, "%s", err);
    return;
  }
  char msg[512];
  snprintf(msg, sizeof(msg), "%s", err);
  char *t = strstr(msg, "jsonpatch.Patch");
  if (t) {
    snprintf(t, sizeof(msg) - (size_t)(t - msg), "[]handlers.jsonPatchOp");
  } else if ((t = strstr(msg, "jsonpatch.Operation"))) {
    snprintf(t, sizeof(msg) - (size_t)(t - msg), "handlers.jsonPatchOp");
  }
  kin__sim_err_bad_request(out, "error decoding patch: %s", msg);
}

static json_t *patch_fn(void *ud, const json_t *cur, kin__sim_result *out) {
  patch_ctx *p = ud;
  char err[512] = "";
  json_t *res = NULL;
  if (media_is(p->ct, "application/merge-patch+json")) {
    res = kin_sim_merge_patch(cur, p->patch);
    if (!res) kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    return res;
  }
  int json_patch = media_is(p->ct, "application/json-patch+json");
  int rc;
  if (json_patch)
    rc = kin_sim_json_patch(cur, p->patch, &res, err, sizeof(err));
  else
    rc = kin_sim_strategic_merge_patch(cur, p->patch, &res, err, sizeof(err));
  if (rc == KIN_EINVAL) {
    int code = json_patch ? (kin_sim_json_patch_malformed(p->patch) ? 400 : 422)
                          : kin_sim_strategic_merge_patch_status(err);
    if (code == 400 && json_patch)
      json_patch_bad_request(p, err, out);
    else if (code == 400)
      kin__sim_err_bad_request(out, "%s", err);
    else if (code == 422)
      /* The server's NewGenericServerResponse(422) drops the patch error's
       * text for a fixed message; the sim keeps it (docs/sim.md). */
      kin__sim_err(out, 422, "Invalid", json_object(), "%s",
                   err[0] ? err : "the server rejected our request due to an error in our request");
    else
      /* not an API status: ErrorToAPIStatus makes it a 500 without reason */
      kin__sim_err(out, 500, NULL, NULL, "%s", err);
  } else if (rc) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
  }
  if (res && !json_is_object(res)) {
    json_decref(res);
    kin__sim_err_bad_request(out, "the patched object is not a JSON object");
    return NULL;
  }
  return rc ? NULL : res;
}

/* 1 for a write of an RBAC object under authorization mode RBAC: its
 * patches and applies are computed as a dry run first, for the escalation
 * check (http/http_rbac_escalation.c) to see the object they would store. */
static int rbac_write(kin__sim_req *req, kin__sim_resource *r) {
  return req->sim->authz_rbac && !r->crd_name && !strcmp(r->group, "rbac.authorization.k8s.io");
}

/* The patch m as a dry run, then the escalation check of its result: 1
 * with the 403 in out when refused, 0 otherwise (a patch that fails is
 * left to the real write to answer). */
static int rbac_patch_refused(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                              kin__sim_managed_update *m, kin__sim_result *out) {
  kin__sim_result pre = {0, NULL};
  int paused = kin__sim_admit_pause(1);
  kin__sim_store_update(&req->sim->store, r, ri->ns, ri->name, 0, kin__sim_managed_update_fn, m, 1,
                        &pre);
  kin__sim_admit_pause(paused);
  int refused = pre.code < 300 && kin__sim_rbac_escalation_check(req, r, ri->ns, pre.body, out);
  json_decref(pre.body);
  return refused;
}

static int update_mode(const kin__sim_request_info *ri);

/* A merge or JSON patch of a version served through its CRD's conversion
 * webhook (admission/conversion.h): the current object converted to that
 * version, patched, converted back, then written as an update with a
 * precondition on the resourceVersion read (done again when another write
 * came in between and the patch named no resourceVersion), so that no
 * webhook is called under the store's lock. */
static void patch_converted(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                            patch_ctx *p, int dry, kin__sim_result *out) {
  for (int attempt = 0; attempt < 20; attempt++) {
    kin__sim_result cur = {0, NULL};
    kin__sim_store_get(&req->sim->store, r, ri->ns, ri->name, &cur);
    if (cur.code != 200) {
      json_decref(out->body);
      *out = cur;
      return;
    }
    json_t *one = json_pack("[o]", cur.body);
    if (!one || kin__sim_convert_out(req->sim, r, one, out)) {
      json_decref(one);
      return;
    }
    json_t *view = json_array_get(one, 0);
    const char *rv = kin__sim_jstr(view, "metadata", "resourceVersion");
    char read_rv[24];
    snprintf(read_rv, sizeof(read_rv), "%s", rv ? rv : "");
    json_t *patched = patch_fn(p, view, out);
    json_decref(one);
    if (!patched) return;
    const char *prv = kin__sim_jstr(patched, "metadata", "resourceVersion");
    int user_rv = prv && strcmp(prv, read_rv);
    if (kin__sim_convert_in(req->sim, r, &patched, out)) {
      json_decref(patched);
      return;
    }
    json_t *md = json_object_get(patched, "metadata");
    if (json_is_object(md) && !user_rv)
      json_object_set_new(md, "resourceVersion", json_string(read_rv));
    kin__sim_managed_update m = {replace_fn, patched, req, r, ri->subresource};
    kin__sim_store_update(&req->sim->store, r, ri->ns, ri->name, update_mode(ri),
                          kin__sim_managed_update_fn, &m, dry, out);
    json_decref(patched);
    if (out->code != 409 || user_rv) return;
    json_decref(out->body);
    out->body = NULL;
    out->code = 0;
  }
  kin__sim_err_conflict(out, r->group, r->resource, ri->name,
                        "the object has been modified; please apply your changes to the "
                        "latest version and try again");
}

/* The part of the object an update through ri's subresource writes. */
static int update_mode(const kin__sim_request_info *ri) {
  if (!strcmp(ri->subresource, "finalize")) return KIN__SIM_UPDATE_FINALIZE;
  return ri->subresource[0] ? KIN__SIM_UPDATE_STATUS : KIN__SIM_UPDATE_MAIN;
}

/* 1 when r serves verb (discovery's verbs). */
static int has_verb(const kin__sim_resource *r, const char *verb) {
  for (int i = 0; r->verbs[i]; i++)
    if (!strcmp(r->verbs[i], verb)) return 1;
  return 0;
}

static void handle_patch(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                         kin__sim_result *out) {
  const char *ct = content_type(req);
  int apply = media_is(ct, "application/apply-patch+yaml");
  if (apply && !strcmp(ri->subresource, "scale")) {
    kin__sim_err(out, 415, "UnsupportedMediaType", NULL,
                 "server-side apply of the scale subresource is not supported by "
                 "kinformer.sim: use application/merge-patch+json");
    return;
  }
  if (apply) {
    if (rbac_write(req, r)) { /* the escalation check sees the applied object first */
      kin__sim_result pre = {0, NULL};
      int paused = kin__sim_admit_pause(1);
      kin__sim_handle_apply(req, r, ri, 1, &pre);
      kin__sim_admit_pause(paused);
      int refused = pre.code < 300 && kin__sim_rbac_escalation_check(req, r, ri->ns, pre.body, out);
      json_decref(pre.body);
      if (refused) return;
    }
    kin__sim_handle_apply(req, r, ri, dry_run(req), out);
    return;
  }
  if (kin__sim_query(req, "force")) {
    kin__sim_err_invalid(out, "meta.k8s.io", "PatchOptions", "", "force", "FieldValueForbidden",
                         "Forbidden: may not be specified for non-apply patch");
    return;
  }
  int strategic = media_is(ct, "application/strategic-merge-patch+json");
  if (strategic && r->crd_name) {
    kin__sim_err(out, 415, "UnsupportedMediaType", NULL,
                 "the body of the request was in an unknown format - accepted media types "
                 "include: application/json-patch+json, application/merge-patch+json, "
                 "application/apply-patch+yaml");
    return;
  }
  if (!strategic && !media_is(ct, "application/merge-patch+json") &&
      !media_is(ct, "application/json-patch+json")) {
    kin__sim_err(out, 415, "UnsupportedMediaType", json_object(), "415: Unsupported Media Type");
    return;
  }
  json_error_t jerr;
  json_t *patch = json_loadb(req->body.p ? req->body.p : "", req->body.len, 0, &jerr);
  if (!patch) {
    kin__sim_err_bad_request(out, "error decoding patch: %s",
                             req->body.len ? jerr.text : "unexpected end of JSON input");
    return;
  }
  /* A JSON patch that is no array of operations gets its 400 in patch_fn,
   * once the object exists, as the server decodes it there. */
  const char *fv = kin__sim_query(req, "fieldValidation");
  patch_ctx p = {ct, patch, r->crd_name != NULL, !(fv && !strcmp(fv, "Ignore"))};
  kin__sim_managed_update m = {patch_fn, &p, req, r, ri->subresource};
  if (!strcmp(ri->subresource, "scale"))
    kin__sim_scale_patch(req, r, ri, patch_fn, &p, dry_run(req), out);
  else if (r->crd_name && kin__sim_conversion_applies(req->sim, r))
    patch_converted(req, r, ri, &p, dry_run(req), out);
  else if (rbac_write(req, r) && rbac_patch_refused(req, r, ri, &m, out))
    ; /* out holds the 403 */
  else
    kin__sim_store_update(&req->sim->store, r, ri->ns, ri->name, update_mode(ri),
                          kin__sim_managed_update_fn, &m, dry_run(req), out);
  json_decref(patch);
}

static void handle_update(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                          kin__sim_result *out) {
  if (!strcmp(ri->subresource, "scale")) {
    kin__sim_scale_update(req, r, ri, dry_run(req), out);
    return;
  }
  json_t *obj = decode_object(req, r, out);
  if (!obj) return;
  if (r->crd_name && kin__sim_conversion_applies(req->sim, r) &&
      kin__sim_convert_in(req->sim, r, &obj, out)) {
    json_decref(obj);
    return;
  }
  const char *name = kin__sim_jstr(obj, "metadata", "name");
  if (check_namespace(r, obj, ri->ns, out)) {
    /* out filled */
  } else if (!name || strcmp(name, ri->name)) {
    kin__sim_err_bad_request(out, "the name of the object (%s) does not match the name on the "
                                  "URL (%s)", name ? name : "", ri->name);
  } else if (!kin__sim_rbac_escalation_check(req, r, ri->ns, obj, out)) {
    kin__sim_managed_update m = {replace_fn, obj, req, r, ri->subresource};
    kin__sim_store_update(&req->sim->store, r, ri->ns, ri->name, update_mode(ri),
                          kin__sim_managed_update_fn, &m, dry_run(req), out);
    /* Leases, events, Services, RBAC... allow create on update (their
     * strategies' AllowCreateOnUpdate), so a PUT of a missing one creates
     * it. */
    if (out->code == 404 && !ri->subresource[0] && !r->crd_name &&
        r->storage->create_on_update && has_verb(r, "create")) {
      json_t *md = json_object_get(obj, "metadata");
      if (md) json_object_del(md, "resourceVersion");
      kin__sim_managed_create(req, r, obj);
      kin__sim_store_create(&req->sim->store, r, ri->ns, obj, dry_run(req), out);
    }
  }
  json_decref(obj);
}

static void handle_create(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                          kin__sim_result *out) {
  json_t *obj = decode_object(req, r, out);
  if (!obj) return;
  if (r->crd_name && kin__sim_conversion_applies(req->sim, r) &&
      kin__sim_convert_in(req->sim, r, &obj, out)) {
    json_decref(obj);
    return;
  }
  if (r->review && !*r->group && !strcmp(r->resource, "bindings")) {
    kin__sim_binding_create(req, ri, obj, dry_run(req), out);
  } else if (kin__sim_review_create(req, r, ri->ns, obj, out)) {
    /* a review: answered, not stored */
  } else if (!check_namespace(r, obj, ri->ns, out) &&
             !kin__sim_rbac_escalation_check(req, r, ri->ns, obj, out)) {
    kin__sim_managed_create(req, r, obj);
    kin__sim_store_create(&req->sim->store, r, ri->ns, obj, dry_run(req), out);
  }
  json_decref(obj);
}

/* The DeleteOptions of a DELETE: its body (JSON or protobuf), else its
 * query (propagationPolicy, orphanDependents), as delete.go reads them.
 * Returns a new object, or NULL with a 400 in out. */
static json_t *delete_options(kin__sim_req *req, kin__sim_result *out) {
  json_t *opts = NULL;
  if (req->body.len && kin__sim_proto_is(content_type(req)))
    return kin__sim_proto_body(req, "v1", "DeleteOptions", out);
  if (req->body.len) {
    json_error_t jerr;
    opts = json_loadb(req->body.p, req->body.len, 0, &jerr);
    if (!json_is_object(opts)) {
      json_decref(opts);
      kin__sim_err_bad_request(out, "the object provided is unrecognized (must be of type "
                                    "DeleteOptions): couldn't get version/kind; json parse error");
      return NULL;
    }
    return opts;
  }
  opts = json_object();
  const char *pp = kin__sim_query(req, "propagationPolicy");
  const char *od = kin__sim_query(req, "orphanDependents");
  if (pp) json_object_set_new(opts, "propagationPolicy", json_string(pp));
  if (od) json_object_set_new(opts, "orphanDependents", json_boolean(kin__sim_query_bool(od)));
  return opts;
}

static void handle_delete(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                          kin__sim_result *out) {
  json_t *opts = delete_options(req, out);
  if (!opts) return;
  kin__sim_admit_set_delete_options(opts);
  kin__sim_store_delete(&req->sim->store, r, ri->ns, ri->name, opts, dry_run(req), out);
  json_decref(opts);
}

static int match_selector(void *ud, const json_t *obj) {
  return kin__sim_selector_matches(ud, obj);
}

static void handle_delete_collection(kin__sim_req *req, kin__sim_resource *r,
                                     kin__sim_request_info *ri, kin__sim_result *out) {
  kin__sim_selector sel;
  if (kin__sim_selector_parse(req, r, &sel, out)) return;
  json_t *opts = delete_options(req, out);
  kin__sim_admit_set_delete_options(opts);
  if (opts)
    kin__sim_store_delete_collection(&req->sim->store, r,
                                     r->namespaced && ri->ns[0] ? ri->ns : NULL, match_selector,
                                     &sel, opts, dry_run(req), out);
  json_decref(opts);
  kin__sim_selector_free(&sel);
}


/* The verb of a request on the resource itself (no subresource), as
 * discovery names it: returns 0 when r serves it; else fills out with the
 * real server's answer, 404 when r serves no verb at that path at all
 * (tokenreviews/NAME) and 405 otherwise (GET tokenreviews), and returns
 * -1. */
static int check_verb(const kin__sim_resource *r, const char *m, int named, int watch,
                      kin__sim_result *out) {
  static const char *const named_verbs[] = {"get", "update", "patch", "delete", NULL};
  static const char *const coll_verbs[] = {"list", "create", "deletecollection", "watch", NULL};
  int is_get = !strcmp(m, "GET") || !strcmp(m, "HEAD");
  const char *verb = watch             ? "watch"
                     : is_get          ? (named ? "get" : "list")
                     : !strcmp(m, "POST")  ? "create"
                     : !strcmp(m, "PUT")   ? "update"
                     : !strcmp(m, "PATCH") ? "patch"
                     : !strcmp(m, "DELETE") ? (named ? "delete" : "deletecollection")
                                            : NULL;
  if (verb && has_verb(r, verb)) return 0;
  int any = 0;
  for (const char *const *v = named ? named_verbs : coll_verbs; *v; v++) any |= has_verb(r, *v);
  if (!any)
    kin__sim_err(out, 404, "NotFound", json_object(),
                 "the server could not find the requested resource");
  else
    kin__sim_err(out, 405, "MethodNotAllowed", json_object(),
                 "the server does not allow this method on the requested resource");
  return -1;
}


enum MHD_Result kin__sim_handle_resource(kin__sim_req *req, kin__sim_request_info *ri) {
  kin__sim_store *s = &req->sim->store;
  kin__sim_result out = {0, NULL};
  /* Resources are never freed while the server runs (a deleted CRD's
   * entries excepted), so r stays valid after the lookup. */
  pthread_mutex_lock(&s->mu);
  kin__sim_resource *r = kin__sim_registry_find(s, ri->group, ri->version, ri->resource);
  int gv_served = r || kin__sim_registry_builtin_gv(s, ri->group, ri->version);
  pthread_mutex_unlock(&s->mu);
  if (!gv_served) {
    /* no built-in group-version and no CRD of that resource: the
     * CRD handler delegates to the mux's plain 404, as kube-apiserver's */
    kin__buf b = {0};
    kin__buf_add(&b, "404 page not found\n", 19);
    return kin__sim_respond_buf(req, 404, &b, "text/plain; charset=utf-8");
  }
  const char *m = req->method;
  int scale = !strcmp(ri->subresource, "scale");
  int pb = kin__sim_proto_negotiate(
      req, r, (!strcmp(m, "GET") || !strcmp(m, "HEAD")) && !ri->name[0], &out);
  if (pb < 0 && r) return kin__sim_respond_result(req, &out);
  if (pb < 0) { /* no resource: the 404 below, in JSON */
    json_decref(out.body);
    out.body = NULL;
    out.code = 0;
    pb = 0;
  }
  /* Table output stays JSON (metav1.Table has no protobuf form). */
  req->proto = pb && !kin__sim_table_accept(
                         MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Accept"));
  if (r && ri->subresource[0] && !ri->watch_path && kin__sim_token_request(req, r, ri, &out))
    return kin__sim_respond_result(req, &out);
  /* namespaces/{name}/finalize: PUT only (the namespace controller's). */
  int finalize = r && !strcmp(ri->subresource, "finalize") && !r->crd_name && !*r->group &&
                 !strcmp(r->resource, "namespaces") && !strcmp(m, "PUT");
  if (!r ||
      (ri->subresource[0] && !(!strcmp(ri->subresource, "status") && r->has_status) &&
       !(scale && r->has_scale) && !finalize) ||
      (ri->ns[0] && !r->namespaced)) {
    /* kube-apiserver serves it (its discovery lists it): the sim does not */
    if (r && ri->subresource[0] && kin__sim_registry_real_sub(r, ri->subresource))
      snprintf(req->warning, sizeof(req->warning),
               "kinformer.sim does not serve %s/%s, which kube-apiserver does: a limit of the "
               "sim (docs/sim.md)",
               r->resource, ri->subresource);
    kin__sim_err(&out, 404, "NotFound", json_object(),
                 "the server could not find the requested resource");
    return kin__sim_respond_result(req, &out);
  }
  if (req->too_large) {
    kin__sim_err(&out, 413, "RequestEntityTooLarge", NULL,
                 "Request entity too large: limit is %u", KIN__SIM_MAX_BODY);
    return kin__sim_respond_result(req, &out);
  }
  int named = ri->name[0] != 0;
  int is_get = !strcmp(m, "GET") || !strcmp(m, "HEAD");
  if (!ri->subresource[0] &&
      check_verb(r, m, named,
                 ri->watch_path || (is_get && !named &&
                                    kin__sim_query_bool(kin__sim_query(req, "watch"))),
                 &out))
    return kin__sim_respond_result(req, &out);
  if (ri->watch_path || (is_get && !named && kin__sim_query_bool(kin__sim_query(req, "watch"))))
    return is_get ? kin__sim_handle_watch(req, r, ri)
                  : (kin__sim_err(&out, 405, "MethodNotAllowed", json_object(),
                                  "the server does not allow this method on the requested "
                                  "resource"),
                     kin__sim_respond_result(req, &out));
  if (is_get && !named) return kin__sim_handle_list(req, r, ri);
  const char *opts = !strcmp(m, "POST")    ? "CreateOptions"
                     : !strcmp(m, "PUT")   ? "UpdateOptions"
                     : !strcmp(m, "PATCH") ? "PatchOptions"
                                           : "DeleteOptions";
  /* the admission webhooks' view of a write (admission/admission.h) */
  kin__sim_admit_ctx actx;
  kin__sim_subject subj;
  if (!is_get) {
    memset(&actx, 0, sizeof(actx));
    kin__sim_subject_of(req, &subj);
    actx.sim = req->sim;
    actx.user = subj.user;
    actx.groups = subj.groups;
    actx.ngroups = (size_t)subj.ngroups;
    actx.subresource = ri->subresource;
    actx.field_manager = kin__sim_query(req, "fieldManager");
    actx.field_validation = kin__sim_query(req, "fieldValidation");
    actx.dry_run = dry_run(req);
    kin__sim_admit_enter(&actx);
  }
  if (is_get && scale)
    kin__sim_scale_get(req, r, ri, &out);
  else if (is_get)
    kin__sim_store_get(s, r, ri->ns, ri->name, &out);
  else if (check_dry_run(req, opts, &out) ||
           (strcmp(opts, "DeleteOptions") && kin__sim_check_field_manager(req, opts, &out)))
    ; /* out holds the 422 */
  else if (!strcmp(m, "POST") && !named && !ri->subresource[0])
    handle_create(req, r, ri, &out);
  else if (!strcmp(m, "PUT") && named)
    handle_update(req, r, ri, &out);
  else if (!strcmp(m, "PATCH") && named)
    handle_patch(req, r, ri, &out);
  else if (!strcmp(m, "DELETE") && named && !ri->subresource[0])
    handle_delete(req, r, ri, &out);
  else if (!strcmp(m, "DELETE") && !named && has_verb(r, "deletecollection"))
    handle_delete_collection(req, r, ri, &out);
  else
    kin__sim_err(&out, 405, "MethodNotAllowed", json_object(),
                 "the server does not allow this method on the requested resource");
  if (!is_get) {
    kin__sim_admit_leave();
    json_decref(req->warnings);
    req->warnings = actx.warnings;
  }
  /* A CRD version with a conversion webhook: the object through it. */
  const char *okind = kin__sim_jstr(out.body, "kind", NULL);
  if (out.code < 300 && okind && !strcmp(okind, r->kind) && r->crd_name &&
      kin__sim_conversion_applies(req->sim, r)) {
    json_t *one = json_pack("[O]", out.body);
    kin__sim_result cerr = {0, NULL};
    if (one && !kin__sim_convert_out(req->sim, r, one, &cerr)) {
      json_decref(out.body);
      out.body = json_incref(json_array_get(one, 0));
    } else if (one) {
      json_decref(out.body);
      out = cerr;
    }
    json_decref(one);
  }
  /* A CRD version other than the storage one: same object, its apiVersion;
   * an events.k8s.io/v1 Event: converted from the stored form. */
  const char *kind = kin__sim_jstr(out.body, "kind", NULL);
  if (out.code < 300 && kind && !strcmp(kind, r->kind) && r->convert_out) {
    json_t *conv = r->convert_out(out.body);
    if (conv) {
      json_decref(out.body);
      out.body = conv;
    } else {
      kin__sim_err(&out, 500, "InternalError", NULL, "out of memory");
    }
  } else if (out.code < 300 && kind && !strcmp(kind, r->kind)) {
    char av[320];
    kin__sim_api_version(r, av, sizeof(av));
    json_object_set_new(out.body, "apiVersion", json_string(av));
  }
  enum MHD_Result ret;
  if (is_get && !scale && out.code == 200 && kin__sim_table_respond(req, r, out.body, 0, &ret)) {
    json_decref(out.body);
    return ret;
  }
  return kin__sim_respond_result(req, &out);
}
