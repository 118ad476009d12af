/* deployment.c -- kube-controller-manager's "deployment" controller
 * (pkg/controller/deployment): a Deployment owns one ReplicaSet per
 * template, "<deployment>-<pod-template-hash>", with the hash in its
 * labels, selector and template, and the revision, desired-replicas and
 * max-replicas annotations. RollingUpdate scales the new ReplicaSet up
 * within maxSurge and the old ones down within maxUnavailable as their
 * pods become available; Recreate scales the old ones to 0 and waits for
 * their pods to go before the new one. Old ReplicaSets beyond
 * revisionHistoryLimit are deleted. Status and the Available and
 * Progressing conditions are computed as sync.go and progress.go do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "wl.h"

#define REV "deployment.kubernetes.io/revision"
#define DESIRED "deployment.kubernetes.io/desired-replicas"
#define MAXREP "deployment.kubernetes.io/max-replicas"
#define HASH "pod-template-hash"

/* The controller's state: the manager's thread's own, no lock. */
typedef struct {
  kin__simwl_queue q;
} dp_ctl;

/* The controller's state (calloc'd, freed by dp_destroy), NULL on ENOMEM. */
static void *dp_create(kin__simctl *m) {
  (void)m;
  return calloc(1, sizeof(dp_ctl));
}

/* Frees the state and its queue. */
static void dp_destroy(void *self) {
  dp_ctl *c = self;
  kin__simwl_queue_free(&c->q);
  free(c);
}

static void dp_observe(void *self, kin__simctl *m, int type, const kin__sim_storage *st,
                       const kin__sim_obj *obj, const kin__sim_obj *prev) {
  (void)m;
  (void)prev;
  dp_ctl *c = self;
  if (st->crd || strcmp(st->group, "apps")) return;
  if (!strcmp(st->resource, "deployments")) {
    if (type != KIN__SIM_DELETED) kin__simwl_queue_add(&c->q, obj->key, 0);
  } else if (!strcmp(st->resource, "replicasets")) {
    json_t *md = kin__sim_obj_member(obj, "metadata");
    json_t *wrap = json_pack("{s:O}", "metadata", md);
    char key[512];
    if (kin__simwl_owner_key(wrap, "Deployment", key, sizeof(key)))
      kin__simwl_queue_add(&c->q, key, 0);
    json_decref(wrap);
    json_decref(md);
  }
}

/* ---- ReplicaSets ---- */

static json_int_t replicas_of(const json_t *rs) { return kin__simwl_int(rs, "spec", "replicas", 1); }

/* The revision annotation of rs (0 when none). */
static long revision_of(const json_t *rs) {
  const json_t *ann = json_object_get(json_object_get(rs, "metadata"), "annotations");
  const char *r = kin__sim_jstr(ann, REV, NULL);
  return r ? atol(r) : 0;
}

/* 1 when rs's template is the deployment's, but for pod-template-hash. */
static int same_template(const json_t *rs, const json_t *tmpl) {
  json_t *t = json_deep_copy(json_object_get(json_object_get(rs, "spec"), "template"));
  json_t *labels = json_object_get(json_object_get(t, "metadata"), "labels");
  json_object_del(labels, HASH);
  if (labels && !json_object_size(labels)) json_object_del(json_object_get(t, "metadata"), "labels");
  json_t *want = json_deep_copy(tmpl);
  json_t *wl = json_object_get(json_object_get(want, "metadata"), "labels");
  if (wl && !json_object_size(wl)) json_object_del(json_object_get(want, "metadata"), "labels");
  int eq = json_equal(t, want);
  json_decref(t);
  json_decref(want);
  return eq;
}

/* maxSurge and maxUnavailable of d as deploymentutil resolves them. */
static void surge_unavail(const json_t *d, int *surge, int *unavail) {
  int replicas = (int)kin__simwl_int(d, "spec", "replicas", 1);
  const json_t *strat = json_object_get(json_object_get(d, "spec"), "strategy");
  const char *type = kin__sim_jstr(strat, "type", NULL);
  if (type && !strcmp(type, "Recreate")) {
    *surge = 0;
    *unavail = 0;
    return;
  }
  const json_t *ru = json_object_get(strat, "rollingUpdate");
  const json_t *ms = json_object_get(ru, "maxSurge");
  const json_t *mu = json_object_get(ru, "maxUnavailable");
  /* both default to 25% */
  *surge = ms ? kin__simwl_int_or_percent(ms, replicas, 1, 0) : (replicas * 25 + 99) / 100;
  *unavail = mu ? kin__simwl_int_or_percent(mu, replicas, 0, 0) : replicas * 25 / 100;
  if (*surge == 0 && *unavail == 0) *unavail = 1;
}

/* MaxUnavailable(d) of deploymentutil, used by the Available condition. */
static int max_unavailable(const json_t *d) {
  int replicas = (int)kin__simwl_int(d, "spec", "replicas", 1);
  const char *type = kin__sim_jstr(json_object_get(json_object_get(d, "spec"), "strategy"),
                                   "type", NULL);
  if ((type && !strcmp(type, "Recreate")) || replicas == 0) return 0;
  int s, u;
  surge_unavail(d, &s, &u);
  return u > replicas ? replicas : u;
}

/* Scales rs to n with the deployment's replica annotations; returns 1
 * when it wrote. */
static int scale(kin__simctl *m, const json_t *d, const json_t *rs, json_int_t n) {
  int surge, unavail;
  surge_unavail(d, &surge, &unavail);
  json_int_t want = kin__simwl_int(d, "spec", "replicas", 1);
  char desired[24], maxr[24];
  snprintf(desired, sizeof(desired), "%lld", (long long)want);
  snprintf(maxr, sizeof(maxr), "%lld", (long long)(want + surge));
  const json_t *ann = json_object_get(json_object_get(rs, "metadata"), "annotations");
  const char *hd = kin__sim_jstr(ann, DESIRED, NULL), *hm = kin__sim_jstr(ann, MAXREP, NULL);
  if (replicas_of(rs) == n && hd && !strcmp(hd, desired) && hm && !strcmp(hm, maxr)) return 0;
  json_t *copy = json_deep_copy(rs);
  json_t *md = json_object_get(copy, "metadata");
  json_t *a = json_object_get(md, "annotations");
  if (!json_is_object(a)) {
    a = json_object();
    json_object_set_new(md, "annotations", a);
  }
  json_object_set_new(a, DESIRED, json_string(desired));
  json_object_set_new(a, MAXREP, json_string(maxr));
  json_object_set_new(json_object_get(copy, "spec"), "replicas", json_integer(n));
  kin__simctl_update(m, "apps", "replicasets", kin__sim_jstr(rs, "metadata", "namespace"), copy,
                     0, NULL);
  json_decref(copy);
  return 1;
}

/* Creates the new ReplicaSet of d with replicas n and revision rev;
 * returns it (new reference) or NULL. */
static json_t *create_rs(kin__simctl *m, const json_t *d, const char *hash, json_int_t n,
                         long rev) {
  const json_t *spec = json_object_get(d, "spec");
  json_t *tmpl = json_deep_copy(json_object_get(spec, "template"));
  json_t *tmd = json_object_get(tmpl, "metadata");
  if (!json_is_object(tmd)) {
    tmd = json_object();
    json_object_set_new(tmpl, "metadata", tmd);
  }
  json_t *labels = json_object_get(tmd, "labels");
  if (!json_is_object(labels)) {
    labels = json_object();
    json_object_set_new(tmd, "labels", labels);
  }
  json_object_set_new(labels, HASH, json_string(hash));
  json_t *sel = json_deep_copy(json_object_get(spec, "selector"));
  if (!json_is_object(sel)) {
    json_decref(sel);
    sel = json_object();
  }
  json_t *ml = json_object_get(sel, "matchLabels");
  if (!json_is_object(ml)) {
    ml = json_object();
    json_object_set_new(sel, "matchLabels", ml);
  }
  json_object_set_new(ml, HASH, json_string(hash));
  /* the deployment's annotations, but for the ones the controller owns */
  json_t *ann = json_object();
  const char *k;
  json_t *v;
  json_object_foreach(json_object_get(json_object_get(d, "metadata"), "annotations"), k, v) {
    if (strcmp(k, "kubectl.kubernetes.io/last-applied-configuration") && strcmp(k, REV) &&
        strcmp(k, "deployment.kubernetes.io/revision-history") && strcmp(k, DESIRED) &&
        strcmp(k, MAXREP))
      json_object_set(ann, k, v);
  }
  int surge, unavail;
  surge_unavail(d, &surge, &unavail);
  json_int_t want = kin__simwl_int(d, "spec", "replicas", 1);
  char buf[24];
  snprintf(buf, sizeof(buf), "%lld", (long long)want);
  json_object_set_new(ann, DESIRED, json_string(buf));
  snprintf(buf, sizeof(buf), "%lld", (long long)(want + surge));
  json_object_set_new(ann, MAXREP, json_string(buf));
  snprintf(buf, sizeof(buf), "%ld", rev);
  json_object_set_new(ann, REV, json_string(buf));
  char name[512];
  snprintf(name, sizeof(name), "%s-%s", kin__sim_jstr(d, "metadata", "name"), hash);
  json_t *rs = json_pack("{s:s, s:s, s:{s:s, s:O, s:o, s:[o]}, s:{s:I, s:I, s:o, s:o}}",
                         "apiVersion", "apps/v1", "kind", "ReplicaSet", "metadata", "name", name,
                         "labels", labels, "annotations", ann, "ownerReferences",
                         kin__simwl_owner_ref("apps/v1", "Deployment", d), "spec", "replicas", n,
                         "minReadySeconds", kin__simwl_int(spec, "minReadySeconds", NULL, 0),
                         "selector", sel, "template", tmpl);
  /* an int32 with omitempty: absent when 0, as the real ReplicaSet's */
  json_t *rspec = json_object_get(rs, "spec");
  if (!json_integer_value(json_object_get(rspec, "minReadySeconds")))
    json_object_del(rspec, "minReadySeconds");
  json_t *out = NULL;
  int code = rs ? kin__simctl_create(m, "apps", "replicasets",
                                     kin__sim_jstr(d, "metadata", "namespace"), rs, &out)
                : 500;
  json_decref(rs);
  if (code != 201) {
    json_decref(out);
    return NULL;
  }
  return out;
}

/* ---- status ---- */

/* The sum of rss[*][k1][k2]; spec.replicas defaults to 1, status to 0. */
static json_int_t sum(const json_t *rss, const char *k1, const char *k2) {
  json_int_t n = 0, dflt = !strcmp(k1, "spec");
  size_t i;
  const json_t *rs;
  json_array_foreach(rss, i, rs) n += kin__simwl_int(rs, k1, k2, dflt);
  return n;
}

/* A new condition without times (kin__simwl_set_condition adds them). */
static json_t *cond(const char *type, const char *status, const char *reason, const char *msg) {
  return json_pack("{s:s, s:s, s:s, s:s}", "type", type, "status", status, "reason", reason,
                   "message", msg);
}

/* Writes d's status (sync.go calculateStatus, progress.go
 * syncRolloutStatus when rollout). extra (stolen, may be NULL) is a
 * Progressing condition set first (NewReplicaSetCreated/Found). *due gets
 * the wall time at which the rollout times out when it has not yet. */
static void write_status(kin__simctl *m, const json_t *d, const json_t *all, const json_t *nrs,
                         int rollout, json_t *extra, time_t *due) {
  char now[32];
  kin__simctl_wall_rfc3339(m, now);
  const json_t *old = json_object_get(d, "status");
  json_int_t want = kin__simwl_int(d, "spec", "replicas", 1);
  json_int_t avail = sum(all, "status", "availableReplicas");
  json_int_t total = sum(all, "spec", "replicas");
  json_int_t unavail = total - avail < 0 ? 0 : total - avail;
  json_t *st = json_pack("{s:I, s:I}", "observedGeneration",
                         kin__simwl_int(d, "metadata", "generation", 1), "replicas",
                         sum(all, "status", "replicas"));
  json_int_t updated = nrs ? kin__simwl_int(nrs, "status", "replicas", 0) : 0;
  json_int_t ready = sum(all, "status", "readyReplicas");
  if (updated) json_object_set_new(st, "updatedReplicas", json_integer(updated));
  if (ready) json_object_set_new(st, "readyReplicas", json_integer(ready));
  if (avail) json_object_set_new(st, "availableReplicas", json_integer(avail));
  if (unavail) json_object_set_new(st, "unavailableReplicas", json_integer(unavail));
  json_object_set_new(st, "terminatingReplicas",
                      json_integer(sum(all, "status", "terminatingReplicas")));
  json_t *conds = json_deep_copy(json_object_get(old, "conditions"));
  if (!json_is_array(conds)) {
    json_decref(conds);
    conds = json_array();
  }
  if (extra) kin__simwl_set_condition(conds, extra, now, 1);
  if (avail >= want - max_unavailable(d))
    kin__simwl_set_condition(conds, cond("Available", "True", "MinimumReplicasAvailable",
                                         "Deployment has minimum availability."), now, 1);
  else
    kin__simwl_set_condition(conds, cond("Available", "False", "MinimumReplicasUnavailable",
                                         "Deployment does not have minimum availability."), now, 1);
  const char *dname = kin__sim_jstr(d, "metadata", "name");
  const char *rname = nrs ? kin__sim_jstr(nrs, "metadata", "name") : NULL;
  json_t *pc = kin__simwl_condition(conds, "Progressing");
  const char *preason = kin__sim_jstr(pc, "reason", NULL);
  json_int_t n_replicas = json_integer_value(json_object_get(st, "replicas"));
  int complete_before = n_replicas == updated && preason && !strcmp(preason, "NewReplicaSetAvailable");
  if (rollout && !complete_before) {
    char msg[600];
    if (updated == want && n_replicas == want && avail == want) {
      if (rname)
        snprintf(msg, sizeof(msg), "ReplicaSet \"%s\" has successfully progressed.", rname);
      else
        snprintf(msg, sizeof(msg), "Deployment \"%s\" has successfully progressed.", dname);
      kin__simwl_set_condition(conds, cond("Progressing", "True", "NewReplicaSetAvailable", msg),
                               now, 1);
    } else if (updated > kin__simwl_int(old, "updatedReplicas", NULL, 0) ||
               ready > kin__simwl_int(old, "readyReplicas", NULL, 0) ||
               avail > kin__simwl_int(old, "availableReplicas", NULL, 0) ||
               kin__simwl_int(old, "replicas", NULL, 0) - kin__simwl_int(old, "updatedReplicas", NULL, 0) >
                   n_replicas - updated) {
      if (rname)
        snprintf(msg, sizeof(msg), "ReplicaSet \"%s\" is progressing.", rname);
      else
        snprintf(msg, sizeof(msg), "Deployment \"%s\" is progressing.", dname);
      /* progress.go: the condition is replaced, keeping its transition */
      const char *ltt = NULL;
      char keep[32] = "";
      const char *pst = kin__sim_jstr(pc, "status", NULL);
      if (pc && pst && !strcmp(pst, "True")) ltt = kin__sim_jstr(pc, "lastTransitionTime", NULL);
      if (ltt) snprintf(keep, sizeof(keep), "%s", ltt);
      size_t i;
      json_t *c;
      json_array_foreach(conds, i, c) {
        if (c == pc) {
          json_array_remove(conds, i);
          break;
        }
      }
      json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type",
                                             "Progressing", "status", "True", "lastUpdateTime",
                                             now, "lastTransitionTime", *keep ? keep : now,
                                             "reason", "ReplicaSetUpdated", "message", msg));
    } else {
      /* progress.go DeploymentTimedOut: no progress for
       * progressDeadlineSeconds (600) since the condition's lastUpdateTime */
      json_int_t pds = kin__simwl_int(d, "spec", "progressDeadlineSeconds", 600);
      const char *lut = kin__sim_jstr(pc, "lastUpdateTime", NULL);
      time_t from = kin__simwl_parse_time(lut);
      if (pc && preason && strcmp(preason, "ProgressDeadlineExceeded") && from >= 0) {
        if (from + pds < kin__simwl_now(m)) {
          if (rname)
            snprintf(msg, sizeof(msg), "ReplicaSet \"%s\" has timed out progressing.", rname);
          else
            snprintf(msg, sizeof(msg), "Deployment \"%s\" has timed out progressing.", dname);
          kin__simwl_set_condition(conds, cond("Progressing", "False",
                                               "ProgressDeadlineExceeded", msg), now, 1);
        } else if (due) {
          *due = from + pds + 1;
        }
      }
    }
  }
  if (json_array_size(conds))
    json_object_set_new(st, "conditions", conds);
  else
    json_decref(conds);
  json_t *cc = json_object_get(old, "collisionCount");
  if (cc) json_object_set(st, "collisionCount", cc);
  kin__simwl_write_status(m, "apps", "deployments", d, st);
}

/* ---- the rollout ---- */

static int by_creation(const void *a, const void *b) {
  const char *x = kin__sim_jstr(*(json_t *const *)a, "metadata", "creationTimestamp");
  const char *y = kin__sim_jstr(*(json_t *const *)b, "metadata", "creationTimestamp");
  int c = strcmp(x ? x : "", y ? y : "");
  if (c) return c;
  return strcmp(kin__sim_jstr(*(json_t *const *)a, "metadata", "name"),
                kin__sim_jstr(*(json_t *const *)b, "metadata", "name"));
}

/* Scales the old ReplicaSets down within maxUnavailable (rolling.go
 * reconcileOldReplicaSets). Returns 1 when it wrote. */
static int scale_down_old(kin__simctl *m, const json_t *d, json_t **olds, size_t nold,
                          const json_t *all, const json_t *nrs) {
  json_int_t old_count = 0;
  for (size_t i = 0; i < nold; i++) old_count += replicas_of(olds[i]);
  if (!old_count) return 0;
  int surge, unavail;
  surge_unavail(d, &surge, &unavail);
  json_int_t want = kin__simwl_int(d, "spec", "replicas", 1);
  json_int_t min_avail = want - unavail;
  json_int_t new_unavail = nrs ? replicas_of(nrs) - kin__simwl_int(nrs, "status", "availableReplicas", 0) : 0;
  json_int_t max_down = sum(all, "spec", "replicas") - min_avail - new_unavail;
  if (max_down <= 0) return 0;
  int wrote = 0;
  /* unhealthy replicas of the old ones first */
  for (size_t i = 0; i < nold && max_down > 0; i++) {
    json_int_t r = replicas_of(olds[i]);
    json_int_t unhealthy = r - kin__simwl_int(olds[i], "status", "availableReplicas", 0);
    if (r == 0 || unhealthy <= 0) continue;
    json_int_t down = unhealthy < max_down ? unhealthy : max_down;
    wrote |= scale(m, d, olds[i], r - down);
    max_down -= down;
    return 1; /* the rest after the write comes back */
  }
  json_int_t avail = sum(all, "status", "availableReplicas");
  if (avail <= min_avail) return wrote;
  json_int_t down_total = avail - min_avail;
  if (down_total > max_down) down_total = max_down;
  for (size_t i = 0; i < nold && down_total > 0; i++) {
    json_int_t r = replicas_of(olds[i]);
    if (!r) continue;
    json_int_t down = r < down_total ? r : down_total;
    wrote |= scale(m, d, olds[i], r - down);
    down_total -= down;
  }
  return wrote;
}

/* Deletes the old ReplicaSets of 0 replicas beyond revisionHistoryLimit. */
static void cleanup(kin__simctl *m, const json_t *d, json_t **olds, size_t nold) {
  json_int_t limit = kin__simwl_int(d, "spec", "revisionHistoryLimit", 10);
  size_t idle = 0;
  for (size_t i = 0; i < nold; i++)
    if (!replicas_of(olds[i]) && !kin__simwl_int(olds[i], "status", "replicas", 0)) idle++;
  for (size_t i = 0; i < nold && (json_int_t)idle > limit; i++) {
    if (replicas_of(olds[i]) || kin__simwl_int(olds[i], "status", "replicas", 0)) continue;
    kin__simctl_delete(m, "apps", "replicasets", kin__sim_jstr(olds[i], "metadata", "namespace"),
                       kin__sim_jstr(olds[i], "metadata", "name"),
                       kin__sim_jstr(olds[i], "metadata", "uid"), NULL);
    idle--;
  }
}

/* Sets the deployment's revision annotation; returns 1 when it wrote. */
static int set_revision(kin__simctl *m, const json_t *d, long rev) {
  char buf[24];
  snprintf(buf, sizeof(buf), "%ld", rev);
  const json_t *ann = json_object_get(json_object_get(d, "metadata"), "annotations");
  const char *have = kin__sim_jstr(ann, REV, NULL);
  if (have && !strcmp(have, buf)) return 0;
  json_t *copy = json_deep_copy(d);
  json_t *md = json_object_get(copy, "metadata");
  json_t *a = json_object_get(md, "annotations");
  if (!json_is_object(a)) {
    a = json_object();
    json_object_set_new(md, "annotations", a);
  }
  json_object_set_new(a, REV, json_string(buf));
  /* through /status, as the real controller's UpdateStatus: no generation */
  kin__simctl_update(m, "apps", "deployments", kin__sim_jstr(d, "metadata", "namespace"), copy, 1,
                     NULL);
  json_decref(copy);
  return 1;
}

/* Syncs one Deployment; returns when to look again (sim clock). */
static uint64_t sync_deployment(kin__simctl *m, const char *key, uint64_t now_ms) {
  char ns[256];
  const char *name = kin__simwl_key_split(key, ns, sizeof(ns));
  json_t *d = kin__simctl_get(m, "apps", "deployments", ns, name);
  /* A Deployment without a selector or template (the sim does not check
   * required fields; kube-apiserver would have refused it) is left alone. */
  const json_t *dspec = json_object_get(d, "spec");
  if (!d || json_object_get(json_object_get(d, "metadata"), "deletionTimestamp") ||
      !json_is_object(json_object_get(dspec, "template")) ||
      !json_is_object(json_object_get(dspec, "selector"))) {
    json_decref(d);
    return KIN__SIMCTL_NEVER;
  }
  json_t *all = kin__simwl_list_owned(m, "apps", "replicasets", ns,
                                      kin__sim_jstr(d, "metadata", "uid"));
  const json_t *spec = json_object_get(d, "spec");
  const json_t *tmpl = json_object_get(spec, "template");
  json_int_t want = kin__simwl_int(spec, "replicas", NULL, 1);
  size_t n = json_array_size(all), nold = 0;
  json_t **olds = calloc(n ? n : 1, sizeof(*olds));
  json_t *nrs = NULL;
  long maxrev = 0;
  size_t i;
  json_t *rs;
  json_array_foreach(all, i, rs) {
    if (!nrs && same_template(rs, tmpl))
      nrs = rs;
    else if (olds)
      olds[nold++] = rs;
  }
  for (i = 0; i < nold; i++)
    if (revision_of(olds[i]) > maxrev) maxrev = revision_of(olds[i]);
  qsort(olds, nold, sizeof(*olds), by_creation);
  int paused = json_is_true(json_object_get(spec, "paused"));
  const char *type = kin__sim_jstr(json_object_get(spec, "strategy"), "type", NULL);
  int recreate = type && !strcmp(type, "Recreate");
  json_t *extra = NULL;
  uint64_t next = KIN__SIMCTL_NEVER;
  char msg[600];
  if (!paused && !nrs) {
    char hash[16];
    kin__simwl_template_hash(tmpl, kin__simwl_int(d, "status", "collisionCount", 0), hash);
    json_int_t start = want;
    if (recreate) {
      start = 0;
    } else {
      int surge, unavail;
      surge_unavail(d, &surge, &unavail);
      json_int_t cur = sum(all, "spec", "replicas");
      json_int_t up = want + surge - cur;
      start = up < 0 ? 0 : up > want ? want : up;
    }
    json_t *created = create_rs(m, d, hash, start, maxrev + 1);
    if (created) {
      snprintf(msg, sizeof(msg), "Created new replica set \"%s\"",
               kin__sim_jstr(created, "metadata", "name"));
      extra = cond("Progressing", "True", "NewReplicaSetCreated", msg);
      json_array_append_new(all, created);
      nrs = created;
      set_revision(m, d, maxrev + 1);
    }
  } else if (nrs) {
    if (revision_of(nrs) <= maxrev) {
      /* a rollback to an old template: it becomes the newest revision */
      json_t *copy = json_deep_copy(nrs);
      json_t *a = json_object_get(json_object_get(copy, "metadata"), "annotations");
      char buf[24];
      snprintf(buf, sizeof(buf), "%ld", maxrev + 1);
      if (json_is_object(a)) json_object_set_new(a, REV, json_string(buf));
      kin__simctl_update(m, "apps", "replicasets", ns, copy, 0, NULL);
      json_decref(copy);
      goto out;
    }
    if (set_revision(m, d, revision_of(nrs))) goto out;
    if (!kin__simwl_condition(json_object_get(json_object_get(d, "status"), "conditions"),
                              "Progressing")) {
      snprintf(msg, sizeof(msg), "Found new replica set \"%s\"",
               kin__sim_jstr(nrs, "metadata", "name"));
      extra = cond("Progressing", "True", "FoundNewReplicaSet", msg);
    }
  }
  if (!paused && nrs) {
    int wrote = 0;
    if (recreate) {
      json_int_t old_pods = 0;
      for (i = 0; i < nold; i++) {
        wrote |= scale(m, d, olds[i], 0);
        old_pods += kin__simwl_int(olds[i], "status", "replicas", 0);
      }
      if (!wrote && !old_pods) wrote |= scale(m, d, nrs, want);
    } else {
      json_int_t r = replicas_of(nrs);
      if (r > want) {
        wrote |= scale(m, d, nrs, want);
      } else if (r < want) {
        int surge, unavail;
        surge_unavail(d, &surge, &unavail);
        json_int_t up = want + surge - sum(all, "spec", "replicas");
        if (up > want - r) up = want - r;
        if (up > 0) wrote |= scale(m, d, nrs, r + up);
      } else {
        wrote |= scale(m, d, nrs, r); /* the annotations of a scaling */
      }
      if (!wrote) wrote |= scale_down_old(m, d, olds, nold, all, nrs);
    }
    if (!wrote) cleanup(m, d, olds, nold);
  }
  time_t due = -1;
  write_status(m, d, all, nrs, !paused, extra, &due);
  extra = NULL;
  if (due >= 0) next = kin__simwl_due_at(m, now_ms, due);
out:
  json_decref(extra);
  free(olds);
  json_decref(all);
  json_decref(d);
  return next;
}

/* Syncs the Deployments due at now_ms; returns the next due time. */
static uint64_t dp_run(void *self, kin__simctl *m, uint64_t now_ms) {
  dp_ctl *c = self;
  size_t n = 0;
  char **keys = kin__simwl_queue_take(&c->q, now_ms, &n);
  for (size_t i = 0; i < n; i++) {
    uint64_t next = sync_deployment(m, keys[i], now_ms);
    if (next != KIN__SIMCTL_NEVER) kin__simwl_queue_add(&c->q, keys[i], next);
  }
  kin__simwl_strv_free(keys, n);
  return kin__simwl_queue_next(&c->q);
}

const kin__simctl_def kin__simctl_deployment = {
    .name = "deployment",
    .create = dp_create,
    .observe = dp_observe,
    .run = dp_run,
    .destroy = dp_destroy,
};
