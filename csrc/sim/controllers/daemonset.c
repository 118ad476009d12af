/* daemonset.c -- kube-controller-manager's "daemonset" controller
 * (pkg/controller/daemon): one pod per Ready Node that matches the
 * template's nodeSelector, created with generateName "<ds>-", the
 * controller-revision-hash and pod-template-generation labels, the
 * required node affinity on metadata.name that the scheduler binds by,
 * and the DaemonSet tolerations. Pods on nodes that no longer qualify
 * are deleted, failed ones replaced; RollingUpdate replaces the pods of
 * an old template one at a time while the others are available. Status:
 * currentNumberScheduled, numberMisscheduled, desiredNumberScheduled,
 * numberReady, observedGeneration, updatedNumberScheduled,
 * numberAvailable, numberUnavailable. Node taints are not considered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "wl.h"

#define REVLABEL "controller-revision-hash"

/* The controller's state: the manager's thread's own, no lock. */
typedef struct {
  kin__simwl_queue q;
  int all; /* a node changed: every DaemonSet again */
} ds_ctl;

/* The controller's state (calloc'd, freed by ds_destroy), NULL on ENOMEM. */
static void *ds_create(kin__simctl *m) {
  (void)m;
  return calloc(1, sizeof(ds_ctl));
}

/* Frees the state and its queue. */
static void ds_destroy(void *self) {
  ds_ctl *c = self;
  kin__simwl_queue_free(&c->q);
  free(c);
}

static void ds_observe(void *self, kin__simctl *m, int type, const kin__sim_storage *st,
                       const kin__sim_obj *obj, const kin__sim_obj *prev) {
  (void)m;
  (void)prev;
  ds_ctl *c = self;
  if (st->crd) return;
  if (!strcmp(st->group, "apps") && !strcmp(st->resource, "daemonsets")) {
    if (type != KIN__SIM_DELETED) kin__simwl_queue_add(&c->q, obj->key, 0);
  } else if (!*st->group && !strcmp(st->resource, "nodes")) {
    c->all = 1;
  } else if (!*st->group && !strcmp(st->resource, "pods")) {
    json_t *md = kin__sim_obj_member(obj, "metadata");
    json_t *wrap = json_pack("{s:O}", "metadata", md);
    char key[512];
    if (kin__simwl_owner_key(wrap, "DaemonSet", key, sizeof(key)))
      kin__simwl_queue_add(&c->q, key, 0);
    json_decref(wrap);
    json_decref(md);
  }
}

/* 1 when node should run the DaemonSet's pod. */
static int eligible(const json_t *ds, const json_t *node) {
  const json_t *conds = json_object_get(json_object_get(node, "status"), "conditions");
  const char *ready = kin__sim_jstr(kin__simwl_condition(conds, "Ready"), "status", NULL);
  if (!ready || strcmp(ready, "True")) return 0;
  const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
  const json_t *tspec = json_object_get(json_object_get(json_object_get(ds, "spec"), "template"),
                                        "spec");
  const char *k;
  json_t *v;
  json_object_foreach(json_object_get(tspec, "nodeSelector"), k, v) {
    const char *have = kin__sim_jstr(labels, k, NULL);
    if (!have || !json_is_string(v) || strcmp(have, json_string_value(v))) return 0;
  }
  return 1;
}

/* The node a DaemonSet pod is for: spec.nodeName, else its affinity. */
static const char *node_of(const json_t *pod) {
  const json_t *spec = json_object_get(pod, "spec");
  const char *n = kin__sim_jstr(spec, "nodeName", NULL);
  if (n) return n;
  const json_t *terms = json_object_get(
      json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
                      "requiredDuringSchedulingIgnoredDuringExecution"),
      "nodeSelectorTerms");
  const json_t *f = json_array_get(json_object_get(json_array_get(terms, 0), "matchFields"), 0);
  const json_t *vals = json_object_get(f, "values");
  return json_is_string(json_array_get(vals, 0)) ? json_string_value(json_array_get(vals, 0))
                                                 : NULL;
}

/* Creates a pod of the workload; a failed create is retried at the
 * next sync. */
static void create_pod(kin__simctl *m, const json_t *ds, const char *node, const char *hash) {
  char gen[300], tgen[24];
  snprintf(gen, sizeof(gen), "%s-", kin__sim_jstr(ds, "metadata", "name"));
  snprintf(tgen, sizeof(tgen), "%lld",
           (long long)kin__simwl_int(ds, "metadata", "generation", 1));
  json_t *pod = kin__simwl_pod_from_template(
      json_object_get(json_object_get(ds, "spec"), "template"),
      kin__simwl_owner_ref("apps/v1", "DaemonSet", ds), NULL, gen);
  json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
  json_object_set_new(labels, REVLABEL, json_string(hash));
  json_object_set_new(labels, "pod-template-generation", json_string(tgen));
  json_t *spec = json_object_get(pod, "spec");
  json_t *aff = json_object_get(spec, "affinity");
  if (!json_is_object(aff)) {
    aff = json_object();
    json_object_set_new(spec, "affinity", aff);
  }
  json_object_set_new(
      aff, "nodeAffinity",
      json_pack("{s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}",
                "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms",
                "matchFields", "key", "metadata.name", "operator", "In", "values", node));
  json_t *tol = json_object_get(spec, "tolerations");
  if (!json_is_array(tol)) {
    tol = json_array();
    json_object_set_new(spec, "tolerations", tol);
  }
  static const char *const t[][2] = {{"node.kubernetes.io/not-ready", "NoExecute"},
                                     {"node.kubernetes.io/unreachable", "NoExecute"},
                                     {"node.kubernetes.io/disk-pressure", "NoSchedule"},
                                     {"node.kubernetes.io/memory-pressure", "NoSchedule"},
                                     {"node.kubernetes.io/pid-pressure", "NoSchedule"},
                                     {"node.kubernetes.io/unschedulable", "NoSchedule"}};
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
    json_array_append_new(tol, json_pack("{s:s, s:s, s:s}", "key", t[i][0], "operator", "Exists",
                                         "effect", t[i][1]));
  kin__simctl_create(m, "", "pods", kin__sim_jstr(ds, "metadata", "namespace"), pod, NULL);
  json_decref(pod);
}

/* Deletes the pod with its uid as precondition; a failure (gone
 * already) is left to the next sync. */
static void delete_pod(kin__simctl *m, const json_t *pod) {
  kin__simctl_delete(m, "", "pods", kin__sim_jstr(pod, "metadata", "namespace"),
                     kin__sim_jstr(pod, "metadata", "name"), kin__sim_jstr(pod, "metadata", "uid"),
                     NULL);
}

/* Syncs one DaemonSet (key "ns/name"); returns when to look again on
 * the sim's clock (KIN__SIMCTL_NEVER: at its next change). */
static uint64_t sync_ds(kin__simctl *m, const char *key, uint64_t now_ms) {
  char ns[256];
  const char *name = kin__simwl_key_split(key, ns, sizeof(ns));
  json_t *ds = kin__simctl_get(m, "apps", "daemonsets", ns, name);
  if (!ds) return KIN__SIMCTL_NEVER;
  uint64_t next = KIN__SIMCTL_NEVER;
  const json_t *spec = json_object_get(ds, "spec");
  char hash[16];
  kin__simwl_template_hash(json_object_get(spec, "template"), 0, hash);
  json_t *nodes = kin__simctl_list(m, "", "nodes", NULL, NULL, NULL);
  json_t *owned = kin__simwl_list_owned(m, "", "pods", ns, kin__sim_jstr(ds, "metadata", "uid"));
  int deleting = json_object_get(json_object_get(ds, "metadata"), "deletionTimestamp") != NULL;
  json_int_t min_ready = kin__simwl_int(spec, "minReadySeconds", NULL, 0);
  time_t now = kin__simwl_now(m);
  int wrote = 0, desired = 0, current = 0, mis = 0, nready = 0, updated = 0, avail = 0;
  json_t *old_pod = NULL; /* one pod of an old template, to replace */
  int all_available = 1;
  size_t i, j;
  json_t *n, *p;
  json_array_foreach(nodes, i, n) {
    const char *nn = kin__sim_jstr(n, "metadata", "name");
    int want = eligible(ds, n);
    int have = 0;
    json_array_foreach(owned, j, p) {
      const char *pn = node_of(p);
      if (!pn || strcmp(pn, nn)) continue;
      if (!kin__simwl_pod_active(p)) {
        if (!strcmp(kin__simwl_pod_phase(p), "Failed") &&
            !json_object_get(json_object_get(p, "metadata"), "deletionTimestamp")) {
          delete_pod(m, p);
          wrote = 1;
        }
        continue;
      }
      if (!want || have) {
        delete_pod(m, p); /* not for this node, or one too many */
        wrote = 1;
        if (!want) mis++;
        continue;
      }
      have = 1;
      if (kin__simwl_pod_ready(p)) nready++;
      time_t at = 0;
      if (kin__simwl_pod_available(p, min_ready, now, &at))
        avail++;
      else {
        all_available = 0;
        if (at && kin__simwl_due_at(m, now_ms, at) < next) next = kin__simwl_due_at(m, now_ms, at);
      }
      const char *r = kin__sim_jstr(json_object_get(json_object_get(p, "metadata"), "labels"),
                                    REVLABEL, NULL);
      if (r && !strcmp(r, hash))
        updated++;
      else if (!old_pod)
        old_pod = p;
    }
    if (want) {
      desired++;
      if (have)
        current++;
      else if (!deleting) {
        create_pod(m, ds, nn, hash);
        wrote = 1;
      }
    }
  }
  /* pods for a Node that is gone */
  json_array_foreach(owned, j, p) {
    const char *pn = node_of(p);
    int found = 0;
    json_array_foreach(nodes, i, n) {
      if (pn && !strcmp(pn, kin__sim_jstr(n, "metadata", "name"))) found = 1;
    }
    if (!found && kin__simwl_pod_active(p)) {
      delete_pod(m, p);
      wrote = 1;
    }
  }
  const char *ut = kin__sim_jstr(json_object_get(spec, "updateStrategy"), "type", NULL);
  if (!wrote && old_pod && all_available && !(ut && !strcmp(ut, "OnDelete"))) {
    delete_pod(m, old_pod);
    wrote = 1;
  }
  if (!wrote) {
    json_t *st = json_pack("{s:i, s:i, s:i, s:i, s:I}", "currentNumberScheduled", current,
                           "numberMisscheduled", mis, "desiredNumberScheduled", desired,
                           "numberReady", nready, "observedGeneration",
                           kin__simwl_int(ds, "metadata", "generation", 1));
    if (updated) json_object_set_new(st, "updatedNumberScheduled", json_integer(updated));
    if (avail) json_object_set_new(st, "numberAvailable", json_integer(avail));
    if (desired - avail > 0)
      json_object_set_new(st, "numberUnavailable", json_integer(desired - avail));
    if (kin__simwl_write_status(m, "apps", "daemonsets", ds, st) == 409) next = now_ms;
  }
  json_decref(owned);
  json_decref(nodes);
  json_decref(ds);
  return next;
}


/* Syncs the DaemonSets due at now_ms (every one after a Node changed);
 * returns the next due time. */
static uint64_t ds_run(void *self, kin__simctl *m, uint64_t now_ms) {
  ds_ctl *c = self;
  if (c->all) {
    c->all = 0;
    kin__simwl_queue_add_all(&c->q, m, "apps", "daemonsets", NULL, now_ms);
  }
  size_t n = 0;
  char **keys = kin__simwl_queue_take(&c->q, now_ms, &n);
  for (size_t i = 0; i < n; i++) {
    uint64_t next = sync_ds(m, keys[i], now_ms);
    if (next != KIN__SIMCTL_NEVER) kin__simwl_queue_add(&c->q, keys[i], next);
  }
  kin__simwl_strv_free(keys, n);
  return kin__simwl_queue_next(&c->q);
}

const kin__simctl_def kin__simctl_daemonset = {
    .name = "daemonset",
    .create = ds_create,
    .observe = ds_observe,
    .run = ds_run,
    .destroy = ds_destroy,
};
