/* http_apply.c -- server-side apply and managedFields on the sim's write
 * paths (k8s.io/apiserver pkg/endpoints/handlers: patch.go's applyPatcher,
 * create.go and update.go's FieldManager.UpdateNoErrors): the schema of a
 * resource (the built-ins' from the embedded OpenAPI documents, a custom
 * resource's from its CRD), the manager's name, the reset fields of the
 * status subresource, and the PATCH application/apply-patch+yaml handler.
 * The field manager itself is ssa_*.c. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "ssa.h"

#define OBJECT_META_REF "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

/* Parsed built-in documents, made on first use and kept until exit. */
static struct {
  const char *gv;
  json_t *doc;
} docs[64];
static size_t ndocs;
static pthread_mutex_t docs_mu = PTHREAD_MUTEX_INITIALIZER;

/* The parsed document of gv ("api/v1"), borrowed until exit; NULL when
 * none (or out of memory). */
static const json_t *builtin_doc(const char *gv) {
  pthread_mutex_lock(&docs_mu);
  const json_t *d = NULL;
  for (size_t i = 0; i < ndocs && !d; i++)
    if (!strcmp(docs[i].gv, gv)) d = docs[i].doc;
  if (!d && ndocs < sizeof(docs) / sizeof(docs[0])) {
    size_t len;
    const char *text = kin__sim_openapi_builtin(gv, &len);
    json_t *doc = text ? json_loadb(text, len, 0, NULL) : NULL;
    if (doc) {
      docs[ndocs].gv = strdup(gv);
      if (docs[ndocs].gv) {
        docs[ndocs++].doc = doc;
        d = doc;
      } else {
        json_decref(doc);
      }
    }
  }
  pthread_mutex_unlock(&docs_mu);
  return d;
}

/* 1 when schema node carries x-kubernetes-group-version-kind g/v/k. */
static int has_gvk(const json_t *node, const char *g, const char *v, const char *k) {
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(node, "x-kubernetes-group-version-kind"), i, e) {
    const char *eg = kin__sim_jstr(e, "group", NULL), *ev = kin__sim_jstr(e, "version", NULL),
               *ek = kin__sim_jstr(e, "kind", NULL);
    if (eg && ev && ek && !strcmp(eg, g) && !strcmp(ev, v) && !strcmp(ek, k)) return 1;
  }
  return 0;
}

/* Fills sc with r's schema. Built-ins: their OpenAPI type (deduced when
 * the sim ships no document for it). Custom resources: the served
 * version's openAPIV3Schema with ObjectMeta's schema for metadata, copied
 * into *hold (caller decrefs; NULL for built-ins). Caller holds the
 * store lock (the CRD is read from the store). */
static void schema_for(kin__sim_store *s, const kin__sim_resource *r, kin__ssa_schema *sc,
                       json_t **hold) {
  sc->defs = NULL;
  sc->root = NULL;
  *hold = NULL;
  if (!r->crd_name) {
    char gv[320];
    if (*r->group)
      snprintf(gv, sizeof(gv), "apis/%s/%s", r->group, r->version);
    else
      snprintf(gv, sizeof(gv), "api/%s", r->version);
    const json_t *doc = builtin_doc(gv);
    sc->defs = json_object_get(json_object_get(doc, "components"), "schemas");
    const char *name;
    json_t *node;
    json_object_foreach((json_t *)sc->defs, name, node) {
      if (has_gvk(node, r->group, r->version, r->kind)) {
        sc->root = node;
        break;
      }
    }
    return;
  }
  const json_t *core = builtin_doc("api/v1");
  sc->defs = json_object_get(json_object_get(core, "components"), "schemas");
  kin__sim_storage *st = kin__sim_registry_storage(s, "apiextensions.k8s.io",
                                                   "customresourcedefinitions");
  void **slot = st ? kin__hmap_get(&st->objects, r->crd_name) : NULL;
  if (!slot) return;
  json_t *crd = kin__sim_obj_json(*slot);
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(json_object_get(crd, "spec"), "versions"), i, v) {
    const char *name = kin__sim_jstr(v, "name", NULL);
    if (!name || strcmp(name, r->version)) continue;
    json_t *sch = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
    if (!json_is_object(sch)) break;
    json_t *root = json_deep_copy(sch);
    json_t *props = json_object_get(root, "properties");
    if (!json_is_object(props)) {
      props = json_object();
      json_object_set_new(root, "properties", props);
    }
    json_object_set_new(props, "apiVersion", json_pack("{s:s}", "type", "string"));
    json_object_set_new(props, "kind", json_pack("{s:s}", "type", "string"));
    json_object_set_new(props, "metadata", json_pack("{s:s}", "$ref", OBJECT_META_REF));
    *hold = root;
    sc->root = root;
    break;
  }
  json_decref(crd);
}

/* The manager of a write (managerOrUserAgent): ?fieldManager, else the
 * User-Agent up to its first '/', printable characters only, at most 128. */
static void manager_of(kin__sim_req *req, char *out, size_t cap) {
  const char *fm = kin__sim_query(req, "fieldManager");
  if (fm && *fm) {
    snprintf(out, cap, "%s", fm);
    return;
  }
  const char *ua = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "User-Agent");
  size_t n = 0;
  for (const char *p = ua ? ua : ""; *p && *p != '/' && n < 128 && n + 1 < cap; p++)
    if (isprint((unsigned char)*p) || (unsigned char)*p >= 0x80) out[n++] = *p;
  out[n] = 0;
}

/* Adds to set f:<key> for every key of a and b but keep. */
static void others(json_t *set, const json_t *a, const json_t *b, const char *keep) {
  const json_t *sides[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)sides[i], k, v) {
      if (!strcmp(k, keep)) continue;
      char el[300];
      snprintf(el, sizeof(el), "f:%s", k);
      json_object_set_new(set, el, json_object());
    }
  }
}

/* The fields a write does not own, as the strategies' GetResetFields: the
 * status of a resource with a status subresource; for /status everything
 * but status, for /scale everything but spec.replicas (the fields of a
 * and b). New set or NULL. */
static json_t *reset_fields(const kin__sim_resource *r, const char *sub, const json_t *a,
                            const json_t *b) {
  if (!*sub) return r->has_status ? json_pack("{s:{}}", "f:status") : NULL;
  json_t *set = json_object();
  if (strcmp(sub, "scale")) {
    others(set, a, b, "status");
    return set;
  }
  others(set, a, b, "spec");
  json_t *spec = json_object();
  others(spec, json_object_get(a, "spec"), json_object_get(b, "spec"), "replicas");
  if (json_object_size(spec))
    json_object_set_new(set, "f:spec", spec);
  else
    json_decref(spec);
  return set;
}

/* The Go zero value of r's kind as the field manager sees a new object
 * (runtime.Scheme.New): the structs that are never omitted, so a create
 * does not mark them added. New value. */
static json_t *zero_object(const kin__sim_resource *r) {
  if (r->crd_name) return json_object();
  const char *k = r->kind;
  if (!strcmp(k, "Deployment"))
    return json_pack("{s:{}, s:{s:n, s:{s:{}, s:{s:n}}, s:{}}, s:{}}", "metadata", "spec",
                     "selector", "template", "metadata", "spec", "containers", "strategy",
                     "status");
  if (!strcmp(k, "StatefulSet") || !strcmp(k, "DaemonSet"))
    return json_pack("{s:{}, s:{s:n, s:{s:{}, s:{s:n}}, s:{}}, s:{}}", "metadata", "spec",
                     "selector", "template", "metadata", "spec", "containers",
                     "updateStrategy", "status");
  if (!strcmp(k, "ReplicaSet"))
    return json_pack("{s:{}, s:{s:n, s:{s:{}, s:{s:n}}}, s:{}}", "metadata", "spec",
                     "selector", "template", "metadata", "spec", "containers", "status");
  if (!strcmp(k, "Pod"))
    return json_pack("{s:{}, s:{s:n}, s:{}}", "metadata", "spec", "containers", "status");
  if (!strcmp(k, "Service"))
    return json_pack("{s:{}, s:{}, s:{s:{}}}", "metadata", "spec", "status", "loadBalancer");
  if (!strcmp(k, "Namespace") || !strcmp(k, "Node"))
    return json_pack("{s:{}, s:{}, s:{}}", "metadata", "spec", "status");
  if (!strcmp(k, "Lease")) return json_pack("{s:{}, s:{}}", "metadata", "spec");
  if (!strcmp(k, "Event") && !*r->group)
    return json_pack("{s:{}, s:{}, s:{}}", "metadata", "involvedObject", "source");
  if (!strcmp(k, "Event"))
    return json_pack("{s:{}, s:{}, s:{}}", "metadata", "regarding", "deprecatedSource");
  if (!strcmp(k, "CustomResourceDefinition"))
    return json_pack("{s:{}, s:{s:{}}, s:{s:{}}}", "metadata", "spec", "names", "status",
                     "acceptedNames");
  return json_pack("{s:{}}", "metadata");
}

/* r's apiVersion ("v1", "apps/v1") into out. */
static void api_version_of(const kin__sim_resource *r, char *out, size_t cap) {
  if (*r->group)
    snprintf(out, cap, "%s/%s", r->group, r->version);
  else
    snprintf(out, cap, "%s", r->version);
}

/* The field manager's operation for req on r (schema, manager, time),
 * with what it borrows kept in the caller's buffers. */
typedef struct {
  kin__ssa_op op;
  kin__ssa_schema schema;
  json_t *hold;   /* the CRD schema copy */
  json_t *ignore;
  char manager[256], api_version[320], now[32];
} op_buf;

/* Fills b for a write of req on r (subresource sub); the schema is left
 * to schema_for. */
static void op_init(op_buf *b, kin__sim_req *req, kin__sim_resource *r, const char *sub,
                    int force) {
  memset(b, 0, sizeof(*b));
  manager_of(req, b->manager, sizeof(b->manager));
  api_version_of(r, b->api_version, sizeof(b->api_version));
  kin__sim_now_rfc3339(b->now);
  b->op.schema = &b->schema;
  b->op.manager = b->manager;
  b->op.api_version = b->api_version;
  b->op.subresource = sub;
  b->op.now = b->now;
  b->op.force = force;
}

/* Releases what b holds (not b). */
static void op_free(op_buf *b) {
  json_decref(b->hold);
  json_decref(b->ignore);
}

int kin__sim_check_field_manager(kin__sim_req *req, const char *options_kind,
                                 kin__sim_result *out) {
  const char *fm = kin__sim_query(req, "fieldManager");
  if (!fm) return 0;
  if (strlen(fm) > 128) {
    kin__sim_err_invalid(out, "meta.k8s.io", options_kind, "", "fieldManager",
                         "FieldValueTooLong", "Too long: may not be more than 128 bytes");
    return -1;
  }
  for (const char *p = fm; *p; p++) {
    if (!isprint((unsigned char)*p) && (unsigned char)*p < 0x80) {
      char detail[400];
      snprintf(detail, sizeof(detail), "Invalid value: \"%.200s\": invalid characters", fm);
      kin__sim_err_invalid(out, "meta.k8s.io", options_kind, "", "fieldManager",
                           "FieldValueInvalid", detail);
      return -1;
    }
  }
  return 0;
}

void kin__sim_managed_create(kin__sim_req *req, kin__sim_resource *r, json_t *obj) {
  op_buf b;
  op_init(&b, req, r, "", 0);
  json_t *zero = zero_object(r);
  /* a namespace's name label is a default (SetDefaults_Namespace), set
   * before the field manager sees the object */
  const char *name = kin__sim_jstr(obj, "metadata", "name");
  if (!r->crd_name && !strcmp(r->kind, "Namespace") && name &&
      json_is_object(json_object_get(obj, "metadata"))) {
    json_t *md = json_object_get(obj, "metadata");
    json_t *labels = json_object_get(md, "labels");
    if (!json_is_object(labels)) {
      labels = json_object();
      json_object_set_new(md, "labels", labels);
    }
    json_object_set_new(labels, "kubernetes.io/metadata.name", json_string(name));
  }
  pthread_mutex_lock(&req->sim->store.mu);
  schema_for(&req->sim->store, r, &b.schema, &b.hold);
  pthread_mutex_unlock(&req->sim->store.mu);
  b.ignore = reset_fields(r, "", NULL, NULL);
  b.op.ignore = b.ignore;
  kin__ssa_update(&b.op, zero, obj);
  json_decref(zero);
  op_free(&b);
}

json_t *kin__sim_managed_update_fn(void *ud, const json_t *cur, kin__sim_result *err) {
  kin__sim_managed_update *m = ud;
  json_t *obj = m->fn(m->ud, cur, err);
  if (!obj || !json_is_object(obj)) return obj;
  op_buf b;
  op_init(&b, m->req, m->r, m->subresource, 0);
  schema_for(&m->req->sim->store, m->r, &b.schema, &b.hold); /* the store lock is held */
  b.ignore = reset_fields(m->r, m->subresource, cur, obj);
  b.op.ignore = b.ignore;
  /* the scale handler's entries come back to the parent without a time
   * (managedfields.ScaleHandler.ToParent) */
  b.op.untimed = !strcmp(m->subresource, "scale");
  kin__ssa_update(&b.op, cur, obj);
  op_free(&b);
  return obj;
}

typedef struct {
  kin__sim_req *req;
  kin__sim_resource *r;
  const char *sub;
  const json_t *config;
  const char *name; /* the URL's */
  int force;
} apply_ctx;

/* Removes from obj (modified) what only the zero object put there: the
 * values of zero's fields the configuration does not set, as Go's JSON
 * would omit them. */
static void drop_zero_leftovers(json_t *obj, const json_t *zero, const json_t *config) {
  const char *k;
  json_t *zv;
  json_object_foreach((json_t *)zero, k, zv) {
    json_t *ov = json_object_get(obj, k);
    const json_t *cv = json_object_get(config, k);
    if (!ov || !strcmp(k, "metadata")) continue;
    if (!cv && json_equal(ov, zv))
      json_object_del(obj, k);
    else if (json_is_object(ov) && json_is_object(zv))
      drop_zero_leftovers(ov, zv, json_is_object(cv) ? cv : NULL);
  }
}

/* The update function of an apply: live merged with the configuration by
 * the field manager; NULL with the 409/500 in out. */
static json_t *apply_fn(void *ud, const json_t *cur, kin__sim_result *out) {
  apply_ctx *a = ud;
  op_buf b;
  op_init(&b, a->req, a->r, a->sub, a->force);
  /* an update function runs under the store lock; the create path not */
  if (!cur) pthread_mutex_lock(&a->req->sim->store.mu);
  schema_for(&a->req->sim->store, a->r, &b.schema, &b.hold);
  if (!cur) pthread_mutex_unlock(&a->req->sim->store.mu);
  b.ignore = reset_fields(a->r, a->sub, cur, a->config);
  b.op.ignore = b.ignore;
  int code;
  json_t *causes = NULL;
  char err[4096];
  json_t *live = cur ? NULL : zero_object(a->r);
  json_t *obj = kin__ssa_apply(&b.op, cur ? cur : live, a->config, &code, &causes, err,
                               sizeof(err));
  if (obj && live) drop_zero_leftovers(obj, live, a->config);
  json_decref(live);
  if (!obj && code == 409)
    kin__sim_err(out, 409, "Conflict", json_pack("{s:o}", "causes", causes), "%s", err);
  else if (!obj)
    kin__sim_err(out, code == 400 ? 400 : 500, code == 400 ? "BadRequest" : "InternalError",
                 code == 400 ? NULL : json_pack("{s:[{s:s}]}", "causes", "message", err),
                 code == 400 ? "%s" : "Internal error occurred: %s", err);
  else
    json_decref(causes);
  /* the merged object's name must be the URL's (after the field
   * manager: its conflicts come first) */
  const char *name = obj ? kin__sim_jstr(obj, "metadata", "name") : NULL;
  if (name && strcmp(name, a->name)) {
    kin__sim_err_bad_request(out, "the name of the object (%s) does not match the name on the "
                                  "URL (%s)", name, a->name);
    json_decref(obj);
    obj = NULL;
  }
  op_free(&b);
  return obj;
}

/* Checks an apply body against r and the URL as the server's apply
 * patcher does; 0 or -1 with the 400 in out. */
static int check_config(kin__sim_resource *r, kin__sim_request_info *ri, const json_t *config,
                        kin__sim_result *out) {
  const char *av = kin__sim_jstr(config, "apiVersion", NULL);
  const char *kind = kin__sim_jstr(config, "kind", NULL);
  char want[320];
  api_version_of(r, want, sizeof(want));
  if (!av || !kind || strcmp(av, want) || strcmp(kind, r->kind)) {
    /* schema.GroupVersionKind's String(): "group/version, Kind=kind" */
    const char *slash = av ? strchr(av, '/') : NULL;
    char gv[320];
    if (slash)
      snprintf(gv, sizeof(gv), "%s", av);
    else
      snprintf(gv, sizeof(gv), "/%s", av ? av : "");
    kin__sim_err_bad_request(out, "invalid object type: %s, Kind=%s", gv, kind ? kind : "");
    return -1;
  }
  const json_t *md = json_object_get(config, "metadata");
  if (json_object_get(md, "managedFields") && !json_is_null(json_object_get(md, "managedFields"))) {
    kin__sim_err_bad_request(out, "metadata.managedFields must be nil");
    return -1;
  }
  const char *ns = kin__sim_jstr(config, "metadata", "namespace");
  if (r->namespaced && ns && *ns && strcmp(ns, ri->ns)) {
    kin__sim_err_bad_request(out, "the namespace of the provided object does not match the "
                                  "namespace sent on the request");
    return -1;
  }
  return 0;
}

void kin__sim_handle_apply(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                           int dry_run, kin__sim_result *out) {
  const char *fm = kin__sim_query(req, "fieldManager");
  if (!fm || !*fm) {
    kin__sim_err_invalid(out, "meta.k8s.io", "PatchOptions", "", "fieldManager",
                         "FieldValueRequired", "Required value: is required for apply patch");
    return;
  }
  char err[1024];
  json_t *config = kin__ssa_yaml_parse(req->body.p ? req->body.p : "", req->body.len, err,
                                       sizeof(err));
  if (!config) {
    kin__sim_err_bad_request(out, "error decoding YAML: %s", err);
    return;
  }
  if (json_is_null(config)) {
    /* an empty document is an empty object, refused for its type below */
    json_decref(config);
    config = json_object();
  }
  if (!json_is_object(config)) {
    kin__sim_err_bad_request(out, "error decoding YAML: error unmarshaling JSON: while "
                                  "decoding JSON: json: cannot unmarshal %s into Go value of "
                                  "type map[string]interface {}",
                             json_is_array(config) ? "array" : json_is_string(config) ? "string"
                             : json_is_null(config) ? "null" : "number");
    json_decref(config);
    return;
  }
  if (check_config(r, ri, config, out)) {
    json_decref(config);
    return;
  }
  const char *force = kin__sim_query(req, "force");
  apply_ctx a = {req, r, ri->subresource, config, ri->name, force && kin__sim_query_bool(force)};
  kin__sim_store *s = &req->sim->store;
  for (int attempt = 0; attempt < 2; attempt++) {
    kin__sim_store_update(s, r, ri->ns, ri->name, ri->subresource[0] != 0, apply_fn, &a,
                          dry_run, out);
    if (out->code != 404 || ri->subresource[0] ||
        strcmp(kin__sim_jstr(out->body, "reason", NULL) ? kin__sim_jstr(out->body, "reason", NULL)
                                                        : "", "NotFound"))
      break;
    /* No such object: the apply creates it (patcher.createNewObject). */
    json_t *obj = apply_fn(&a, NULL, out);
    if (!obj) break;
    kin__sim_store_create(s, r, ri->ns, obj, dry_run, out);
    json_decref(obj);
    if (out->code != 409) break; /* created meanwhile: apply to it */
  }
  json_decref(config);
}
