/* statefulset.c -- kube-controller-manager's "statefulset" controller
 * (pkg/controller/statefulset): pods "<sts>-0".."<sts>-N-1" with the
 * controller-revision-hash, statefulset.kubernetes.io/pod-name and
 * apps.kubernetes.io/pod-index labels, hostname and subdomain. With
 * podManagementPolicy OrderedReady (the default) a pod is created only
 * when every lower ordinal is Running and Ready, and removed highest
 * first one at a time; Parallel creates and removes them all at once.
 * RollingUpdate replaces the pods of an old revision from the highest
 * ordinal down to spec.updateStrategy.rollingUpdate.partition, one at a
 * time while the others are Ready. Status: replicas, readyReplicas,
 * currentReplicas, updatedReplicas, currentRevision, updateRevision,
 * availableReplicas. No ControllerRevision objects and no
 * PersistentVolumeClaims are created. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "wl.h"

#define REVLABEL "controller-revision-hash"

/* The controller's state: the manager's thread's own, no lock. */
typedef struct {
  kin__simwl_queue q;
} sts_ctl;

/* The controller's state (calloc'd, freed by sts_destroy), NULL on ENOMEM. */
static void *sts_create(kin__simctl *m) {
  (void)m;
  return calloc(1, sizeof(sts_ctl));
}

/* Frees the state and its queue. */
static void sts_destroy(void *self) {
  sts_ctl *c = self;
  kin__simwl_queue_free(&c->q);
  free(c);
}

static void sts_observe(void *self, kin__simctl *m, int type, const kin__sim_storage *st,
                        const kin__sim_obj *obj, const kin__sim_obj *prev) {
  (void)m;
  (void)prev;
  sts_ctl *c = self;
  if (st->crd) return;
  if (!strcmp(st->group, "apps") && !strcmp(st->resource, "statefulsets")) {
    if (type != KIN__SIM_DELETED) kin__simwl_queue_add(&c->q, obj->key, 0);
  } else if (!*st->group && !strcmp(st->resource, "pods")) {
    json_t *md = kin__sim_obj_member(obj, "metadata");
    json_t *wrap = json_pack("{s:O}", "metadata", md);
    char key[512];
    if (kin__simwl_owner_key(wrap, "StatefulSet", key, sizeof(key)))
      kin__simwl_queue_add(&c->q, key, 0);
    json_decref(wrap);
    json_decref(md);
  }
}

/* The controller-revision-hash label of pod, NULL when none. */
static const char *revision_of(const json_t *pod) {
  return kin__sim_jstr(json_object_get(json_object_get(pod, "metadata"), "labels"), REVLABEL, NULL);
}

/* 1 when the pod exists, is active, Running and Ready. */
static int running_ready(const json_t *pod) {
  return pod && kin__simwl_pod_active(pod) && !strcmp(kin__simwl_pod_phase(pod), "Running") &&
         kin__simwl_pod_ready(pod);
}

/* Creates pod ordinal i of sts at revision rev. */
static void create_pod(kin__simctl *m, const json_t *sts, long i, const char *rev) {
  const char *name = kin__sim_jstr(sts, "metadata", "name");
  const json_t *spec = json_object_get(sts, "spec");
  char pname[300], idx[24];
  snprintf(pname, sizeof(pname), "%s-%ld", name, i);
  snprintf(idx, sizeof(idx), "%ld", i);
  json_t *pod = kin__simwl_pod_from_template(json_object_get(spec, "template"),
                                             kin__simwl_owner_ref("apps/v1", "StatefulSet", sts),
                                             pname, NULL);
  json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
  json_object_set_new(labels, REVLABEL, json_string(rev));
  json_object_set_new(labels, "statefulset.kubernetes.io/pod-name", json_string(pname));
  json_object_set_new(labels, "apps.kubernetes.io/pod-index", json_string(idx));
  json_t *pspec = json_object_get(pod, "spec");
  json_object_set_new(pspec, "hostname", json_string(pname));
  const char *svc = kin__sim_jstr(spec, "serviceName", NULL);
  if (svc && *svc) json_object_set_new(pspec, "subdomain", json_string(svc));
  kin__simctl_create(m, "", "pods", kin__sim_jstr(sts, "metadata", "namespace"), pod, NULL);
  json_decref(pod);
}

/* Deletes the pod with its uid as precondition; a failure (gone
 * already) is left to the next sync. */
static void delete_pod(kin__simctl *m, const json_t *pod) {
  kin__simctl_delete(m, "", "pods", kin__sim_jstr(pod, "metadata", "namespace"),
                     kin__sim_jstr(pod, "metadata", "name"), kin__sim_jstr(pod, "metadata", "uid"),
                     NULL);
}

/* The ordinal of pod of the set named name, -1 when its name is not one. */
static long ordinal(const json_t *pod, const char *name) {
  const char *pn = kin__sim_jstr(pod, "metadata", "name");
  size_t n = strlen(name);
  if (!pn || strncmp(pn, name, n) || pn[n] != '-') return -1;
  char *end;
  long i = strtol(pn + n + 1, &end, 10);
  return *end || i < 0 ? -1 : i;
}

/* Creates, deletes or replaces pods; returns 1 when it wrote. */
static int manage(kin__simctl *m, const json_t *sts, json_t **by_ord, long nord, long want,
                  const char *rev) {
  const json_t *spec = json_object_get(sts, "spec");
  const char *policy = kin__sim_jstr(spec, "podManagementPolicy", NULL);
  int parallel = policy && !strcmp(policy, "Parallel");
  int wrote = 0;
  int deleting = json_object_get(json_object_get(sts, "metadata"), "deletionTimestamp") != NULL;
  for (long i = 0; i < want && i < nord && !deleting; i++) {
    json_t *p = by_ord[i];
    if (p && !kin__simwl_pod_active(p) &&
        !json_object_get(json_object_get(p, "metadata"), "deletionTimestamp")) {
      delete_pod(m, p); /* Failed or Succeeded: recreated */
      return 1;
    }
    if (!p) {
      create_pod(m, sts, i, rev);
      wrote = 1;
      if (!parallel) return 1;
      continue;
    }
    if (!parallel && !running_ready(p)) return wrote;
  }
  if (wrote) return 1;
  /* condemned: highest first */
  for (long i = nord - 1; i >= want; i--) {
    json_t *p = by_ord[i];
    if (!p) continue;
    if (!parallel) {
      for (long k = 0; k < i; k++)
        if (by_ord[k] && !running_ready(by_ord[k])) return wrote;
    }
    delete_pod(m, p);
    wrote = 1;
    if (!parallel) return 1;
  }
  if (wrote) return 1;
  /* the rolling update */
  const json_t *us = json_object_get(spec, "updateStrategy");
  const char *ut = kin__sim_jstr(us, "type", NULL);
  if (ut && !strcmp(ut, "OnDelete")) return 0;
  long partition = (long)kin__simwl_int(json_object_get(us, "rollingUpdate"), "partition", NULL, 0);
  for (long i = 0; i < want && i < nord; i++)
    if (!running_ready(by_ord[i])) return 0;
  for (long i = (want < nord ? want : nord) - 1; i >= partition; i--) {
    const char *r = revision_of(by_ord[i]);
    if (!r || strcmp(r, rev)) {
      delete_pod(m, by_ord[i]);
      return 1;
    }
  }
  return 0;
}

/* Syncs one StatefulSet (key "ns/name"); returns when to look again on
 * the sim's clock (KIN__SIMCTL_NEVER: at its next change). */
static uint64_t sync_sts(kin__simctl *m, const char *key, uint64_t now_ms) {
  char ns[256];
  const char *name = kin__simwl_key_split(key, ns, sizeof(ns));
  json_t *sts = kin__simctl_get(m, "apps", "statefulsets", ns, name);
  if (!sts) return KIN__SIMCTL_NEVER;
  const json_t *spec = json_object_get(sts, "spec");
  long want = (long)kin__simwl_int(spec, "replicas", NULL, 1);
  char hash[16], rev[300];
  kin__simwl_template_hash(json_object_get(spec, "template"), 0, hash);
  snprintf(rev, sizeof(rev), "%s-%s", name, hash);
  json_t *owned = kin__simwl_list_owned(m, "", "pods", ns, kin__sim_jstr(sts, "metadata", "uid"));
  long nord = want;
  size_t i;
  json_t *p;
  json_array_foreach(owned, i, p) {
    long o = ordinal(p, name);
    if (o + 1 > nord) nord = o + 1;
  }
  json_t **by_ord = calloc((size_t)(nord ? nord : 1), sizeof(*by_ord));
  uint64_t next = KIN__SIMCTL_NEVER;
  if (!by_ord) goto out;
  json_array_foreach(owned, i, p) {
    long o = ordinal(p, name);
    if (o >= 0) by_ord[o] = p;
  }
  const json_t *old = json_object_get(sts, "status");
  const char *cur_rev = kin__sim_jstr(old, "currentRevision", NULL);
  if (!cur_rev) cur_rev = rev;
  if (!manage(m, sts, by_ord, nord, want, rev)) {
    json_int_t min_ready = kin__simwl_int(spec, "minReadySeconds", NULL, 0);
    time_t now = kin__simwl_now(m);
    int count = 0, ready = 0, current = 0, updated = 0, available = 0;
    json_array_foreach(owned, i, p) {
      if (!kin__simwl_pod_active(p)) continue;
      count++;
      if (kin__simwl_pod_ready(p)) ready++;
      time_t at = 0;
      if (kin__simwl_pod_available(p, min_ready, now, &at))
        available++;
      else if (at && kin__simwl_due_at(m, now_ms, at) < next)
        next = kin__simwl_due_at(m, now_ms, at);
      const char *r = revision_of(p);
      if (r && !strcmp(r, cur_rev)) current++;
      if (r && !strcmp(r, rev)) updated++;
    }
    /* the update is complete: the update revision becomes current */
    if (updated == want && count == want && ready == want) {
      cur_rev = rev;
      current = updated;
    }
    json_t *st = json_pack("{s:I, s:i}", "observedGeneration",
                           kin__simwl_int(sts, "metadata", "generation", 1), "replicas", count);
    if (ready) json_object_set_new(st, "readyReplicas", json_integer(ready));
    if (current) json_object_set_new(st, "currentReplicas", json_integer(current));
    if (updated) json_object_set_new(st, "updatedReplicas", json_integer(updated));
    json_object_set_new(st, "currentRevision", json_string(cur_rev));
    json_object_set_new(st, "updateRevision", json_string(rev));
    json_object_set_new(st, "collisionCount", json_integer(0));
    json_object_set_new(st, "availableReplicas", json_integer(available));
    if (kin__simwl_write_status(m, "apps", "statefulsets", sts, st) == 409) next = now_ms;
  }
  free(by_ord);
out:
  json_decref(owned);
  json_decref(sts);
  return next;
}

/* Syncs the StatefulSets due at now_ms; returns the next due time. */
static uint64_t sts_run(void *self, kin__simctl *m, uint64_t now_ms) {
  sts_ctl *c = self;
  size_t n = 0;
  char **keys = kin__simwl_queue_take(&c->q, now_ms, &n);
  for (size_t i = 0; i < n; i++) {
    uint64_t next = sync_sts(m, keys[i], now_ms);
    if (next != KIN__SIMCTL_NEVER) kin__simwl_queue_add(&c->q, keys[i], next);
  }
  kin__simwl_strv_free(keys, n);
  return kin__simwl_queue_next(&c->q);
}

const kin__simctl_def kin__simctl_statefulset = {
    .name = "statefulset",
    .create = sts_create,
    .observe = sts_observe,
    .run = sts_run,
    .destroy = sts_destroy,
};
