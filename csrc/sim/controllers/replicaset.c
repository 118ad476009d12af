/* replicaset.c -- kube-controller-manager's "replicaset" controller
 * (pkg/controller/replicaset): a ReplicaSet keeps spec.replicas active
 * pods of its template (generateName "<rs>-", owned with controller and
 * blockOwnerDeletion), deleting the least useful first when too many
 * (unscheduled, then pending, then not ready, then the newest), and
 * writes status as the real controller: replicas, fullyLabeledReplicas,
 * readyReplicas, availableReplicas (Ready for minReadySeconds),
 * terminatingReplicas, observedGeneration. Pods are not adopted by
 * selector (only their controller reference counts). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "wl.h"

/* The controller's state: the manager's thread's own, no lock. */
typedef struct {
  kin__simwl_queue q;
} rs_ctl;

/* The controller's state (calloc'd, freed by rs_destroy), NULL on ENOMEM. */
static void *rs_create(kin__simctl *m) {
  (void)m;
  return calloc(1, sizeof(rs_ctl));
}

/* Frees the state and its queue. */
static void rs_destroy(void *self) {
  rs_ctl *c = self;
  kin__simwl_queue_free(&c->q);
  free(c);
}

static void rs_observe(void *self, kin__simctl *m, int type, const kin__sim_storage *st,
                       const kin__sim_obj *obj, const kin__sim_obj *prev) {
  (void)m;
  (void)prev;
  rs_ctl *c = self;
  if (st->crd) return;
  if (!strcmp(st->group, "apps") && !strcmp(st->resource, "replicasets")) {
    if (type != KIN__SIM_DELETED) kin__simwl_queue_add(&c->q, obj->key, 0);
  } else if (!*st->group && !strcmp(st->resource, "pods")) {
    json_t *md = kin__sim_obj_member(obj, "metadata");
    json_t *wrap = json_pack("{s:O}", "metadata", md);
    char key[512];
    if (kin__simwl_owner_key(wrap, "ReplicaSet", key, sizeof(key)))
      kin__simwl_queue_add(&c->q, key, 0);
    json_decref(wrap);
    json_decref(md);
  }
}

/* The rank of a pod for deletion: lower goes first. */
static int rank(const json_t *pod) {
  if (!kin__sim_jstr(json_object_get(pod, "spec"), "nodeName", NULL)) return 0;
  if (!strcmp(kin__simwl_pod_phase(pod), "Pending")) return 1;
  if (!kin__simwl_pod_ready(pod)) return 2;
  return 3;
}

/* qsort order of pods to delete: by rank, then newest first. */
static int deletion_order(const void *a, const void *b) {
  const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
  int d = rank(x) - rank(y);
  if (d) return d;
  /* newer first */
  const char *tx = kin__sim_jstr(x, "metadata", "creationTimestamp");
  const char *ty = kin__sim_jstr(y, "metadata", "creationTimestamp");
  int t = strcmp(ty ? ty : "", tx ? tx : "");
  if (t) return t;
  const char *nx = kin__sim_jstr(x, "metadata", "name");
  const char *ny = kin__sim_jstr(y, "metadata", "name");
  return strcmp(ny ? ny : "", nx ? nx : "");
}

/* Creates or deletes pods toward spec.replicas; returns 1 when it wrote. */
static int manage(kin__simctl *m, const json_t *rs, json_t *active) {
  json_int_t want = kin__simwl_int(rs, "spec", "replicas", 1);
  size_t have = json_array_size(active);
  const char *ns = kin__sim_jstr(rs, "metadata", "namespace");
  if ((json_int_t)have < want) {
    if (json_object_get(json_object_get(rs, "metadata"), "deletionTimestamp")) return 0;
    char gen[300];
    snprintf(gen, sizeof(gen), "%s-", kin__sim_jstr(rs, "metadata", "name"));
    const json_t *tmpl = json_object_get(json_object_get(rs, "spec"), "template");
    for (json_int_t i = (json_int_t)have; i < want; i++) {
      json_t *pod = kin__simwl_pod_from_template(
          tmpl, kin__simwl_owner_ref("apps/v1", "ReplicaSet", rs), NULL, gen);
      int code = pod ? kin__simctl_create(m, "", "pods", ns, pod, NULL) : 500;
      json_decref(pod);
      if (code != 201) break;
    }
    return 1;
  }
  if ((json_int_t)have > want) {
    size_t n = have;
    json_t **sorted = malloc(n * sizeof(*sorted));
    if (!sorted) return 0;
    for (size_t i = 0; i < n; i++) sorted[i] = json_array_get(active, i);
    qsort(sorted, n, sizeof(*sorted), deletion_order);
    for (size_t i = 0; i < (size_t)((json_int_t)have - want); i++)
      kin__simctl_delete(m, "", "pods", ns, kin__sim_jstr(sorted[i], "metadata", "name"),
                         kin__sim_jstr(sorted[i], "metadata", "uid"), NULL);
    free(sorted);
    return 1;
  }
  return 0;
}

/* Syncs one ReplicaSet; returns when to look again (sim clock). */
static uint64_t sync_rs(kin__simctl *m, const char *key, uint64_t now_ms) {
  char ns[256];
  const char *name = kin__simwl_key_split(key, ns, sizeof(ns));
  json_t *rs = kin__simctl_get(m, "apps", "replicasets", ns, name);
  uint64_t next = KIN__SIMCTL_NEVER;
  if (!rs) return next;
  json_t *owned = kin__simwl_list_owned(m, "", "pods", ns, kin__sim_jstr(rs, "metadata", "uid"));
  json_t *active = json_array();
  int terminating = 0;
  size_t i;
  json_t *p;
  json_array_foreach(owned, i, p) {
    if (kin__simwl_pod_active(p))
      json_array_append(active, p);
    else if (json_object_get(json_object_get(p, "metadata"), "deletionTimestamp"))
      terminating++;
  }
  if (manage(m, rs, active)) {
    /* the writes come back through observe; status then */
    json_decref(active);
    json_decref(owned);
    json_decref(rs);
    return next;
  }
  const json_t *spec = json_object_get(rs, "spec");
  json_int_t min_ready = kin__simwl_int(spec, "minReadySeconds", NULL, 0);
  const json_t *tlabels =
      json_object_get(json_object_get(json_object_get(spec, "template"), "metadata"), "labels");
  json_t *tsel = json_pack("{s:O}", "matchLabels", tlabels ? tlabels : json_object());
  time_t now = kin__simwl_now(m);
  int labeled = 0, ready = 0, available = 0;
  json_array_foreach(active, i, p) {
    if (kin__simwl_selector_match(tsel, json_object_get(json_object_get(p, "metadata"), "labels")))
      labeled++;
    if (kin__simwl_pod_ready(p)) ready++;
    time_t at = 0;
    if (kin__simwl_pod_available(p, min_ready, now, &at))
      available++;
    else if (at) {
      uint64_t due = kin__simwl_due_at(m, now_ms, at);
      if (due < next) next = due;
    }
  }
  json_decref(tsel);
  json_t *status = json_pack("{s:i}", "replicas", (int)json_array_size(active));
  if (labeled) json_object_set_new(status, "fullyLabeledReplicas", json_integer(labeled));
  if (ready) json_object_set_new(status, "readyReplicas", json_integer(ready));
  if (available) json_object_set_new(status, "availableReplicas", json_integer(available));
  json_object_set_new(status, "terminatingReplicas", json_integer(terminating));
  json_object_set_new(status, "observedGeneration",
                      json_integer(kin__simwl_int(rs, "metadata", "generation", 1)));
  json_t *conds = json_object_get(json_object_get(rs, "status"), "conditions");
  if (conds) json_object_set(status, "conditions", conds);
  if (kin__simwl_write_status(m, "apps", "replicasets", rs, status) == 409) next = now_ms;
  json_decref(active);
  json_decref(owned);
  json_decref(rs);
  return next;
}

/* Syncs the ReplicaSets due at now_ms; returns the next due time. */
static uint64_t rs_run(void *self, kin__simctl *m, uint64_t now_ms) {
  rs_ctl *c = self;
  size_t n = 0;
  char **keys = kin__simwl_queue_take(&c->q, now_ms, &n);
  for (size_t i = 0; i < n; i++) {
    uint64_t next = sync_rs(m, keys[i], now_ms);
    if (next != KIN__SIMCTL_NEVER) kin__simwl_queue_add(&c->q, keys[i], next);
  }
  kin__simwl_strv_free(keys, n);
  return kin__simwl_queue_next(&c->q);
}

const kin__simctl_def kin__simctl_replicaset = {
    .name = "replicaset",
    .create = rs_create,
    .observe = rs_observe,
    .run = rs_run,
    .destroy = rs_destroy,
};
