/* binding.c -- the create of a v1 Binding (POST
 * /api/v1/namespaces/NS/bindings), which kube-apiserver's pod registry
 * answers by assigning the pod of the same name to target.name
 * (pkg/registry/core/pod/storage BindingREST): spec.nodeName set, the
 * Binding's annotations and labels merged into the pod's, nothing stored
 * for the Binding itself. Takes the store lock through
 * kin__sim_store_update. */
#include <stdio.h>
#include <string.h>

#include "http_int.h"

typedef struct {
  const json_t *binding;
  const char *name;
} bind_ctx;

/* Merges the string members of from into the object member key of md. */
static void merge_map(json_t *md, const char *key, const json_t *from) {
  if (!json_is_object(from) || !json_object_size(from)) return;
  json_t *to = json_object_get(md, key);
  if (!json_is_object(to)) {
    to = json_object();
    json_object_set_new(md, key, to);
  }
  json_object_update(to, (json_t *)from);
}

/* kin__sim_update_fn: the pod with spec.nodeName set, or NULL with a 409
 * when it already has a node (the registry's assignPod). */
static json_t *bind_fn(void *ud, const json_t *cur, kin__sim_result *err) {
  bind_ctx *b = ud;
  const json_t *spec = json_object_get(cur, "spec");
  const char *node = kin__sim_jstr(spec, "nodeName", NULL);
  const char *target = kin__sim_jstr(json_object_get(b->binding, "target"), "name", NULL);
  if (node && *node) {
    char why[512];
    snprintf(why, sizeof(why), "pod %s is already assigned to node \"%s\"", b->name, node);
    kin__sim_err_conflict(err, "", "pods/binding", b->name, why);
    return NULL;
  }
  json_t *pod = json_deep_copy(cur);
  if (!pod) {
    kin__sim_err(err, 500, "InternalError", NULL, "out of memory");
    return NULL;
  }
  json_t *pspec = json_object_get(pod, "spec");
  if (!json_is_object(pspec)) {
    pspec = json_object();
    json_object_set_new(pod, "spec", pspec);
  }
  json_object_set_new(pspec, "nodeName", json_string(target));
  const json_t *bmd = json_object_get(b->binding, "metadata");
  json_t *md = json_object_get(pod, "metadata");
  merge_map(md, "annotations", json_object_get(bmd, "annotations"));
  merge_map(md, "labels", json_object_get(bmd, "labels"));
  return pod;
}

/* 201 and a Success Status in out (caller frees the body), or the error
 * of the pod's update (404, 409, 422); obj borrowed. */
void kin__sim_binding_create(kin__sim_req *req, kin__sim_request_info *ri, const json_t *obj,
                             int dry_run, kin__sim_result *out) {
  const char *name = kin__sim_jstr(obj, "metadata", "name");
  const char *target = kin__sim_jstr(json_object_get(obj, "target"), "name", NULL);
  if (!name || !*name) {
    kin__sim_err_invalid(out, "", "Binding", "", "metadata.name", "FieldValueRequired",
                         "Required value: name or generateName is required");
    return;
  }
  if (!target || !*target) {
    kin__sim_err_invalid(out, "", "Binding", name, "target.name", "FieldValueRequired",
                         "Required value");
    return;
  }
  kin__sim_store *s = &req->sim->store;
  pthread_mutex_lock(&s->mu);
  kin__sim_resource *pods = kin__sim_registry_find(s, "", "v1", "pods");
  pthread_mutex_unlock(&s->mu);
  bind_ctx b = {obj, name};
  kin__sim_result r = {0, NULL};
  kin__sim_store_update(s, pods, ri->ns, name, 0, bind_fn, &b, dry_run, &r);
  if (r.code >= 300) {
    *out = r;
    return;
  }
  json_decref(r.body);
  out->code = 201;
  out->body = json_pack("{s:s, s:s, s:{}, s:s, s:i}", "kind", "Status", "apiVersion", "v1",
                        "metadata", "status", "Success", "code", 201);
}
