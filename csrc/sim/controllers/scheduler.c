/* scheduler.c -- "scheduler": kube-scheduler as KWOK's clusters need
 * one. Binds each Pending pod without spec.nodeName (schedulerName
 * default-scheduler or none) to the least-loaded Ready Node that it fits:
 * not unschedulable, spec.nodeSelector, required node affinity on
 * metadata.name (what DaemonSet pods carry), and NoSchedule/NoExecute
 * taints the pod tolerates. A pod that fits no node gets PodScheduled
 * False/Unschedulable and is tried again when a Node changes; a pod
 * annotated kinformer.io/sim-fault=pending is never bound. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "wl.h"

/* The controller's state: the manager's thread's own, no lock. */
typedef struct {
  kin__simwl_queue q;
  int rescan; /* a node changed: every unbound pod again */
} sched_ctl;

/* The controller's state (calloc'd, freed by sc_destroy), NULL on ENOMEM. */
static void *sc_create(kin__simctl *m) {
  (void)m;
  return calloc(1, sizeof(sched_ctl));
}

/* Frees the state and its queue. */
static void sc_destroy(void *self) {
  sched_ctl *c = self;
  kin__simwl_queue_free(&c->q);
  free(c);
}

/* 1 when the pod waits for this scheduler. */
static int wants_binding(const json_t *pod) {
  const json_t *spec = json_object_get(pod, "spec");
  if (kin__sim_jstr(spec, "nodeName", NULL)) return 0;
  const char *sn = kin__sim_jstr(spec, "schedulerName", NULL);
  if (sn && strcmp(sn, "default-scheduler")) return 0;
  /* a pod Running without a node (seeded or replayed as recorded) is left alone */
  const char *phase = kin__simwl_pod_phase(pod);
  if (*phase && strcmp(phase, "Pending")) return 0;
  return kin__simwl_pod_active(pod);
}

static void sc_observe(void *self, kin__simctl *m, int type, const kin__sim_storage *st,
                       const kin__sim_obj *obj, const kin__sim_obj *prev) {
  (void)m;
  (void)prev;
  sched_ctl *c = self;
  if (*st->group || st->crd || type == KIN__SIM_DELETED) return;
  if (!strcmp(st->resource, "nodes")) {
    c->rescan = 1;
  } else if (!strcmp(st->resource, "pods")) {
    json_t *pod = kin__sim_obj_json(obj);
    if (pod && wants_binding(pod)) kin__simwl_queue_add(&c->q, obj->key, 0);
    json_decref(pod);
  }
}

/* The list filter of the pods waiting for this scheduler. */
static int unbound(void *ud, const json_t *pod) {
  (void)ud;
  return wants_binding(pod);
}

/* 1 when the pod tolerates taint. */
static int tolerates(const json_t *pod, const json_t *taint) {
  const char *tk = kin__sim_jstr(taint, "key", NULL);
  const char *tv = kin__sim_jstr(taint, "value", NULL);
  const char *te = kin__sim_jstr(taint, "effect", NULL);
  size_t i;
  const json_t *t;
  json_array_foreach(json_object_get(json_object_get(pod, "spec"), "tolerations"), i, t) {
    const char *k = kin__sim_jstr(t, "key", NULL);
    const char *op = kin__sim_jstr(t, "operator", NULL);
    const char *v = kin__sim_jstr(t, "value", NULL);
    const char *e = kin__sim_jstr(t, "effect", NULL);
    if (e && *e && te && strcmp(e, te)) continue;
    if (op && !strcmp(op, "Exists")) {
      if (!k || !*k || (tk && !strcmp(k, tk))) return 1;
    } else if (k && tk && !strcmp(k, tk) && !strcmp(v ? v : "", tv ? tv : "")) {
      return 1;
    }
  }
  return 0;
}

/* 1 when the required node affinity of the pod (matchFields on
 * metadata.name, matchExpressions on labels) admits node. */
static int affinity_ok(const json_t *pod, const json_t *node) {
  const json_t *req = json_object_get(
      json_object_get(json_object_get(json_object_get(pod, "spec"), "affinity"), "nodeAffinity"),
      "requiredDuringSchedulingIgnoredDuringExecution");
  const json_t *terms = json_object_get(req, "nodeSelectorTerms");
  if (!json_array_size(terms)) return 1;
  const char *name = kin__sim_jstr(node, "metadata", "name");
  const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
  size_t i, j;
  const json_t *term, *e;
  json_array_foreach(terms, i, term) {
    int ok = 1;
    json_array_foreach(json_object_get(term, "matchFields"), j, e) {
      json_t *fields = json_pack("{s:s}", "metadata.name", name ? name : "");
      json_t *sel = json_pack("{s:[O]}", "matchExpressions", e);
      if (!kin__simwl_selector_match(sel, fields)) ok = 0;
      json_decref(sel);
      json_decref(fields);
    }
    json_t *sel = json_pack("{s:O}", "matchExpressions",
                            json_object_get(term, "matchExpressions")
                                ? json_object_get(term, "matchExpressions")
                                : json_array());
    if (json_object_get(term, "matchExpressions") && !kin__simwl_selector_match(sel, labels))
      ok = 0;
    json_decref(sel);
    if (ok) return 1;
  }
  return 0;
}

enum { R_NOT_READY, R_UNSCHEDULABLE, R_SELECTOR, R_TAINT, R_N };

/* -1 when node fits the pod, else the R_ reason it does not. */
static int fit(const json_t *pod, const json_t *node) {
  const json_t *conds = json_object_get(json_object_get(node, "status"), "conditions");
  const char *ready = kin__sim_jstr(kin__simwl_condition(conds, "Ready"), "status", NULL);
  if (!ready || strcmp(ready, "True")) return R_NOT_READY;
  const json_t *nspec = json_object_get(node, "spec");
  if (json_is_true(json_object_get(nspec, "unschedulable"))) return R_UNSCHEDULABLE;
  const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
  const char *k;
  json_t *v;
  json_object_foreach(json_object_get(json_object_get(pod, "spec"), "nodeSelector"), k, v) {
    const char *have = kin__sim_jstr(labels, k, NULL);
    if (!have || !json_is_string(v) || strcmp(have, json_string_value(v))) return R_SELECTOR;
  }
  if (!affinity_ok(pod, node)) return R_SELECTOR;
  size_t i;
  const json_t *t;
  json_array_foreach(json_object_get(nspec, "taints"), i, t) {
    const char *e = kin__sim_jstr(t, "effect", NULL);
    if (e && strcmp(e, "NoSchedule") && strcmp(e, "NoExecute")) continue;
    if (!tolerates(pod, t)) return R_TAINT;
  }
  return -1;
}

/* Writes PodScheduled False/Unschedulable with message on pod. */
static void unschedulable(kin__simctl *m, const json_t *pod, const char *message) {
  json_t *status = json_deep_copy(json_object_get(pod, "status"));
  if (!status) status = json_object();
  json_t *conds = json_object_get(status, "conditions");
  if (!json_is_array(conds)) {
    conds = json_array();
    json_object_set_new(status, "conditions", conds);
  }
  json_t *c = kin__simwl_condition(conds, "PodScheduled");
  const char *old = kin__sim_jstr(c, "message", NULL);
  if (old && !strcmp(old, message)) {
    json_decref(status);
    return;
  }
  char now[32];
  kin__simctl_wall_rfc3339(m, now);
  json_t *nc = json_pack("{s:s, s:s, s:n, s:s, s:s, s:s}", "type", "PodScheduled", "status",
                         "False", "lastProbeTime", "lastTransitionTime", now, "reason",
                         "Unschedulable", "message", message);
  if (c)
    json_object_update(c, nc);
  else
    json_array_append(conds, nc);
  json_decref(nc);
  kin__simwl_write_status(m, "", "pods", pod, status);
}

/* The list filter that counts the active pods of each node: ud is a
 * load_count; keeps no object. */
typedef struct {
  const json_t *nodes;
  int *load;
} load_count;

static int count_bound(void *ud, const json_t *pod) {
  load_count *lc = ud;
  const char *n = kin__sim_jstr(json_object_get(pod, "spec"), "nodeName", NULL);
  if (!n || !kin__simwl_pod_active(pod)) return 0;
  size_t i;
  const json_t *node;
  json_array_foreach(lc->nodes, i, node) {
    const char *name = kin__sim_jstr(node, "metadata", "name");
    if (name && !strcmp(name, n)) lc->load[i]++;
  }
  return 0;
}

/* Fills load[i] (zeroed, one per node) with the active pods bound to
 * nodes[i], in one pass over the pods. */
static void load_of(kin__simctl *m, const json_t *nodes, int *load) {
  if (!load) return;
  load_count lc = {nodes, load};
  json_decref(kin__simctl_list(m, "", "pods", NULL, count_bound, &lc));
}

/* Schedules one pod over nodes; load[i] counts the pods of nodes[i]. */
static void schedule(kin__simctl *m, const json_t *pod, const json_t *nodes, int *load) {
  const json_t *ann = json_object_get(json_object_get(pod, "metadata"), "annotations");
  const char *f = kin__sim_jstr(ann, KIN__SIMWL_FAULT, NULL);
  size_t n = json_array_size(nodes);
  char msg[512];
  if (f && !strcmp(f, "pending")) {
    snprintf(msg, sizeof(msg), "0/%zu nodes are available: the pod is annotated %s=pending.", n,
             KIN__SIMWL_FAULT);
    unschedulable(m, pod, msg);
    return;
  }
  int why[R_N] = {0};
  long best = -1;
  for (size_t i = 0; i < n; i++) {
    int r = fit(pod, json_array_get(nodes, i));
    if (r >= 0)
      why[r]++;
    else if (best < 0 || load[i] < load[best])
      best = (long)i;
  }
  if (best >= 0) {
    const char *ns = kin__sim_jstr(pod, "metadata", "namespace");
    const char *name = kin__sim_jstr(pod, "metadata", "name");
    const char *uid = kin__sim_jstr(pod, "metadata", "uid");
    const char *node = kin__sim_jstr(json_array_get(nodes, (size_t)best), "metadata", "name");
    if (!kin__simwl_bind(m, ns, name, uid, node)) load[best]++;
    return;
  }
  if (!n) {
    unschedulable(m, pod, "no nodes available to schedule pods");
    return;
  }
  /* kube-scheduler's FitError message, its reasons sorted */
  static const char *const text[R_N] = {
      "node(s) had untolerated taint {node.kubernetes.io/not-ready: }",
      "node(s) were unschedulable", "node(s) didn't match Pod's node affinity/selector",
      "node(s) had untolerated taint(s)"};
  int len = snprintf(msg, sizeof(msg), "0/%zu nodes are available:", n);
  const int order[R_N] = {R_SELECTOR, R_TAINT, R_NOT_READY, R_UNSCHEDULABLE};
  int first = 1;
  for (int k = 0; k < R_N; k++) {
    int r = order[k];
    if (!why[r] || len >= (int)sizeof(msg)) continue;
    len += snprintf(msg + len, sizeof(msg) - (size_t)len, "%s %d %s", first ? "" : ",", why[r],
                    text[r]);
    first = 0;
  }
  if (len < (int)sizeof(msg))
    snprintf(msg + len, sizeof(msg) - (size_t)len,
             ". preemption: 0/%zu nodes are available: %zu Preemption is not helpful for "
             "scheduling.",
             n, n);
  unschedulable(m, pod, msg);
}

/* Schedules the pods due at now_ms (every unbound one after a Node changed);
 * returns the next due time (KIN__SIMCTL_NEVER when none). */
static uint64_t sc_run(void *self, kin__simctl *m, uint64_t now_ms) {
  sched_ctl *c = self;
  if (c->rescan) {
    c->rescan = 0;
    kin__simwl_queue_add_all(&c->q, m, "", "pods", unbound, now_ms);
  }
  size_t nkeys = 0;
  char **keys = kin__simwl_queue_take(&c->q, now_ms, &nkeys);
  if (!nkeys) return kin__simwl_queue_next(&c->q);
  json_t *nodes = kin__simctl_list(m, "", "nodes", NULL, NULL, NULL);
  size_t nn = json_array_size(nodes);
  int *load = calloc(nn ? nn : 1, sizeof(int));
  load_of(m, nodes, load);
  for (size_t k = 0; load && k < nkeys; k++) {
    char ns[256];
    const char *name = kin__simwl_key_split(keys[k], ns, sizeof(ns));
    json_t *pod = kin__simctl_get(m, "", "pods", ns, name);
    if (pod && wants_binding(pod)) schedule(m, pod, nodes, load);
    json_decref(pod);
  }
  free(load);
  json_decref(nodes);
  kin__simwl_strv_free(keys, nkeys);
  return kin__simwl_queue_next(&c->q);
}

const kin__simctl_def kin__simctl_scheduler = {
    .name = "scheduler",
    .create = sc_create,
    .observe = sc_observe,
    .run = sc_run,
    .destroy = sc_destroy,
};
