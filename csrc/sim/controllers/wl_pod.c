/* wl_pod.c -- the workload controllers' pods (wl.h): readiness and
 * availability as kubectl and the controllers judge them, a pod from a
 * template, status writes, and the binding the scheduler writes. */
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "wl.h"

const char *kin__simwl_pod_phase(const json_t *pod) {
  const char *p = kin__sim_jstr(pod, "status", "phase");
  return p ? p : "";
}

int kin__simwl_pod_active(const json_t *pod) {
  const char *phase = kin__simwl_pod_phase(pod);
  if (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")) return 0;
  return !json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp");
}

int kin__simwl_pod_ready(const json_t *pod) {
  json_t *c = kin__simwl_condition(json_object_get(json_object_get(pod, "status"), "conditions"),
                                   "Ready");
  const char *st = kin__sim_jstr(c, "status", NULL);
  return st && !strcmp(st, "True");
}

int kin__simwl_pod_available(const json_t *pod, json_int_t min_ready, time_t now, time_t *at) {
  if (!kin__simwl_pod_ready(pod)) return 0;
  if (min_ready <= 0) return 1;
  json_t *c = kin__simwl_condition(json_object_get(json_object_get(pod, "status"), "conditions"),
                                   "Ready");
  time_t since = kin__simwl_parse_time(kin__sim_jstr(c, "lastTransitionTime", NULL));
  if (since < 0) return 1;
  if (since + min_ready <= now) return 1;
  if (at) *at = since + min_ready;
  return 0;
}

json_t *kin__simwl_pod_from_template(const json_t *tmpl, json_t *owner_ref, const char *name,
                                     const char *gen_name) {
  json_t *md = json_object();
  const json_t *tmd = json_object_get(tmpl, "metadata");
  if (name) json_object_set_new(md, "name", json_string(name));
  if (gen_name) json_object_set_new(md, "generateName", json_string(gen_name));
  json_t *labels = json_object_get(tmd, "labels");
  json_object_set_new(md, "labels", labels ? json_deep_copy(labels) : json_object());
  json_t *ann = json_object_get(tmd, "annotations");
  if (ann) json_object_set_new(md, "annotations", json_deep_copy(ann));
  json_t *fin = json_object_get(tmd, "finalizers");
  if (fin) json_object_set_new(md, "finalizers", json_deep_copy(fin));
  json_object_set_new(md, "ownerReferences", json_pack("[o]", owner_ref));
  json_t *spec = json_object_get(tmpl, "spec");
  return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata", md,
                   "spec", spec ? json_deep_copy(spec) : json_object());
}

int kin__simwl_write_status(kin__simctl *m, const char *group, const char *resource,
                            const json_t *obj, json_t *status) {
  if (!status) return 500;
  if (json_equal(status, json_object_get(obj, "status"))) {
    json_decref(status);
    return 200;
  }
  json_t *copy = json_deep_copy(obj);
  json_object_set_new(copy, "status", status);
  const char *ns = kin__sim_jstr(obj, "metadata", "namespace");
  int code = kin__simctl_update(m, group, resource, ns, copy, 1, NULL);
  json_decref(copy);
  return code;
}

int kin__simwl_bind(kin__simctl *m, const char *ns, const char *name, const char *uid,
                    const char *node) {
  kin__sim_store *s = &kin__simctl_sim(m)->store;
  char now[32];
  kin__simctl_wall_rfc3339(m, now);
  int rc = -1;
  pthread_mutex_lock(&s->mu);
  kin__sim_storage *st = kin__sim_registry_storage(s, "", "pods");
  kin__sim_obj *cur = st ? kin__sim_lookup(st, ns, name) : NULL;
  json_t *pod = cur ? kin__sim_obj_json(cur) : NULL;
  json_t *md = json_object_get(pod, "metadata");
  json_t *spec = json_object_get(pod, "spec");
  const char *cuid = kin__sim_jstr(md, "uid", NULL);
  if (pod && json_is_object(spec) && !kin__sim_jstr(spec, "nodeName", NULL) &&
      !json_object_get(md, "deletionTimestamp") && cuid && (!uid || !strcmp(uid, cuid))) {
    json_object_set_new(spec, "nodeName", json_string(node));
    json_t *status = json_object_get(pod, "status");
    if (!json_is_object(status)) {
      status = json_object();
      json_object_set_new(pod, "status", status);
    }
    json_t *conds = json_object_get(status, "conditions");
    if (!json_is_array(conds)) {
      conds = json_array();
      json_object_set_new(status, "conditions", conds);
    }
    json_t *c = kin__simwl_condition(conds, "PodScheduled");
    json_t *nc = json_pack("{s:s, s:s, s:n, s:s}", "type", "PodScheduled", "status", "True",
                           "lastProbeTime", "lastTransitionTime", now);
    if (c)
      json_object_update(c, nc);
    else
      json_array_append(conds, nc);
    json_decref(nc);
    json_incref(pod);
    if (kin__sim_commit(s, st, KIN__SIM_MODIFIED, pod, cur->key, cur)) rc = 0;
  }
  pthread_mutex_unlock(&s->mu);
  json_decref(pod);
  return rc;
}
