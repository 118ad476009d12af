/* cronjob.c -- kube-controller-manager's "cronjob" controller
 * (pkg/controller/cronjob, v2): at each time of spec.schedule (cron.c,
 * UTC; spec.timeZone is not read) on the sim's clock it creates the Job
 * "<cronjob>-<scheduled time in minutes since the epoch>" from
 * spec.jobTemplate, owned by the CronJob, annotated
 * batch.kubernetes.io/cronjob-scheduled-timestamp. Only the latest missed
 * time runs, within startingDeadlineSeconds; suspend stops it;
 * concurrencyPolicy Forbid skips a time while a Job is active, Replace
 * deletes the active ones first. Finished Jobs beyond
 * successfulJobsHistoryLimit (3) and failedJobsHistoryLimit (1) are
 * deleted. Status: active (references), lastScheduleTime,
 * lastSuccessfulTime. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "wl.h"

/* The controller's state: the manager's thread's own, no lock. */
typedef struct {
  kin__simwl_queue q;
} cj_ctl;

/* The controller's state (calloc'd, freed by cj_destroy), NULL on ENOMEM. */
static void *cj_create(kin__simctl *m) {
  (void)m;
  return calloc(1, sizeof(cj_ctl));
}

/* Frees the state and its queue. */
static void cj_destroy(void *self) {
  cj_ctl *c = self;
  kin__simwl_queue_free(&c->q);
  free(c);
}

static void cj_observe(void *self, kin__simctl *m, int type, const kin__sim_storage *st,
                       const kin__sim_obj *obj, const kin__sim_obj *prev) {
  (void)m;
  (void)prev;
  cj_ctl *c = self;
  if (st->crd || strcmp(st->group, "batch")) return;
  if (!strcmp(st->resource, "cronjobs")) {
    if (type != KIN__SIM_DELETED) kin__simwl_queue_add(&c->q, obj->key, 0);
  } else if (!strcmp(st->resource, "jobs")) {
    json_t *md = kin__sim_obj_member(obj, "metadata");
    json_t *wrap = json_pack("{s:O}", "metadata", md);
    char key[512];
    if (kin__simwl_owner_key(wrap, "CronJob", key, sizeof(key)))
      kin__simwl_queue_add(&c->q, key, 0);
    json_decref(wrap);
    json_decref(md);
  }
}

/* "Complete", "Failed" or NULL (active) for a Job. */
static const char *finished(const json_t *job) {
  size_t i;
  const json_t *c;
  json_array_foreach(json_object_get(json_object_get(job, "status"), "conditions"), i, c) {
    const char *t = kin__sim_jstr(c, "type", NULL), *s = kin__sim_jstr(c, "status", NULL);
    if (t && s && !strcmp(s, "True") && (!strcmp(t, "Complete") || !strcmp(t, "Failed")))
      return t;
  }
  return NULL;
}

/* Deletes the Job (uid precondition, Background propagation); a
 * failure is left to the next sync. */
static void delete_job(kin__simctl *m, const json_t *job) {
  kin__simctl_delete(m, "batch", "jobs", kin__sim_jstr(job, "metadata", "namespace"),
                     kin__sim_jstr(job, "metadata", "name"), kin__sim_jstr(job, "metadata", "uid"),
                     "Background");
}

/* Creates the Job of cj scheduled at t; returns it (new reference) or
 * NULL (it exists already, or an error). */
static json_t *create_job(kin__simctl *m, const json_t *cj, time_t t) {
  const json_t *tmpl = json_object_get(json_object_get(cj, "spec"), "jobTemplate");
  const json_t *tmd = json_object_get(tmpl, "metadata");
  char name[300], when[32];
  snprintf(name, sizeof(name), "%s-%lld", kin__sim_jstr(cj, "metadata", "name"),
           (long long)(t / 60));
  kin__simwl_fmt_time(t, when);
  json_t *labels = json_object_get(tmd, "labels");
  json_t *ann = json_object_get(tmd, "annotations");
  ann = ann ? json_deep_copy(ann) : json_object();
  json_object_set_new(ann, "batch.kubernetes.io/cronjob-scheduled-timestamp", json_string(when));
  json_t *spec = json_object_get(tmpl, "spec");
  json_t *job = json_pack("{s:s, s:s, s:{s:s, s:o, s:o, s:[o]}, s:o}", "apiVersion", "batch/v1",
                          "kind", "Job", "metadata", "name", name, "labels",
                          labels ? json_deep_copy(labels) : json_object(), "annotations", ann,
                          "ownerReferences", kin__simwl_owner_ref("batch/v1", "CronJob", cj),
                          "spec", spec ? json_deep_copy(spec) : json_object());
  json_t *out = NULL;
  int code = job ? kin__simctl_create(m, "batch", "jobs", kin__sim_jstr(cj, "metadata", "namespace"),
                                      job, &out)
                 : 500;
  json_decref(job);
  if (code != 201) {
    json_decref(out);
    return NULL;
  }
  return out;
}

/* A new ObjectReference to job, as CronJob status.active holds them. */
static json_t *job_ref(const json_t *job) {
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kind", "Job", "namespace",
                   kin__sim_jstr(job, "metadata", "namespace"), "name",
                   kin__sim_jstr(job, "metadata", "name"), "uid",
                   kin__sim_jstr(job, "metadata", "uid"), "apiVersion", "batch/v1",
                   "resourceVersion", kin__sim_jstr(job, "metadata", "resourceVersion"));
}

/* qsort order: oldest first, then by name. */
static int by_creation(const void *a, const void *b) {
  const char *x = kin__sim_jstr(*(json_t *const *)a, "metadata", "creationTimestamp");
  const char *y = kin__sim_jstr(*(json_t *const *)b, "metadata", "creationTimestamp");
  int c = strcmp(x ? x : "", y ? y : "");
  return c ? c : strcmp(kin__sim_jstr(*(json_t *const *)a, "metadata", "name"),
                        kin__sim_jstr(*(json_t *const *)b, "metadata", "name"));
}

/* Deletes the oldest finished Jobs of kind ("Complete"/"Failed") beyond limit. */
static void prune(kin__simctl *m, json_t *jobs, const char *kind, json_int_t limit) {
  size_t n = json_array_size(jobs), k = 0;
  json_t **v = calloc(n ? n : 1, sizeof(*v));
  if (!v) return;
  for (size_t i = 0; i < n; i++) {
    const char *f = finished(json_array_get(jobs, i));
    if (f && !strcmp(f, kind)) v[k++] = json_array_get(jobs, i);
  }
  qsort(v, k, sizeof(*v), by_creation);
  for (size_t i = 0; (json_int_t)(k - i) > limit; i++) delete_job(m, v[i]);
  free(v);
}

/* Syncs one CronJob (key "ns/name"); returns when to look again: the
 * next time of its schedule on the sim's clock. */
static uint64_t sync_cj(kin__simctl *m, const char *key, uint64_t now_ms) {
  char ns[256];
  const char *name = kin__simwl_key_split(key, ns, sizeof(ns));
  json_t *cj = kin__simctl_get(m, "batch", "cronjobs", ns, name);
  if (!cj || json_object_get(json_object_get(cj, "metadata"), "deletionTimestamp")) {
    json_decref(cj);
    return KIN__SIMCTL_NEVER;
  }
  uint64_t next = KIN__SIMCTL_NEVER;
  const json_t *spec = json_object_get(cj, "spec");
  const json_t *old = json_object_get(cj, "status");
  json_t *jobs = kin__simwl_list_owned(m, "batch", "jobs", ns, kin__sim_jstr(cj, "metadata", "uid"));
  json_t *active = json_array();
  time_t last_ok = kin__simwl_parse_time(kin__sim_jstr(old, "lastSuccessfulTime", NULL));
  size_t i;
  json_t *j;
  json_array_foreach(jobs, i, j) {
    const char *f = finished(j);
    if (!f) {
      if (!json_object_get(json_object_get(j, "metadata"), "deletionTimestamp"))
        json_array_append_new(active, job_ref(j));
    } else if (!strcmp(f, "Complete")) {
      time_t t = kin__simwl_parse_time(kin__sim_jstr(json_object_get(j, "status"), "completionTime", NULL));
      if (t > last_ok) last_ok = t;
    }
  }
  time_t now = kin__simwl_now(m);
  const char *last_s = kin__sim_jstr(old, "lastScheduleTime", NULL);
  time_t last = kin__simwl_parse_time(last_s);
  if (last < 0) last = kin__simwl_parse_time(kin__sim_jstr(cj, "metadata", "creationTimestamp"));
  if (last < 0 || last > now) last = now;
  kin__simwl_cron sched;
  char when[32] = "";
  if (last_s) snprintf(when, sizeof(when), "%s", last_s);
  if (!kin__simwl_cron_parse(kin__sim_jstr(spec, "schedule", NULL), &sched)) {
    /* the latest time due since the last one */
    time_t due = -1;
    int missed = 0;
    for (time_t t = kin__simwl_cron_next(&sched, last); t >= 0 && t <= now && missed < 100000;
         t = kin__simwl_cron_next(&sched, t), missed++)
      due = t;
    json_int_t sds = kin__simwl_int(spec, "startingDeadlineSeconds", NULL, -1);
    const char *policy = kin__sim_jstr(spec, "concurrencyPolicy", NULL);
    int suspend = json_is_true(json_object_get(spec, "suspend"));
    if (due >= 0 && !suspend && (sds < 0 || now - due <= sds) &&
        !(policy && !strcmp(policy, "Forbid") && json_array_size(active))) {
      if (policy && !strcmp(policy, "Replace")) {
        json_array_foreach(jobs, i, j) {
          if (!finished(j)) delete_job(m, j);
        }
        json_array_clear(active);
      }
      json_t *job = create_job(m, cj, due);
      if (job) json_array_append_new(active, job_ref(job));
      json_decref(job);
      kin__simwl_fmt_time(due, when);
    }
    time_t nt = kin__simwl_cron_next(&sched, now);
    if (nt >= 0 && !suspend) next = kin__simwl_due_at(m, now_ms, nt);
  }
  prune(m, jobs, "Complete", kin__simwl_int(spec, "successfulJobsHistoryLimit", NULL, 3));
  prune(m, jobs, "Failed", kin__simwl_int(spec, "failedJobsHistoryLimit", NULL, 1));
  json_t *st = json_object();
  if (json_array_size(active)) json_object_set(st, "active", active);
  if (*when) json_object_set_new(st, "lastScheduleTime", json_string(when));
  if (last_ok >= 0) {
    char ok[32];
    kin__simwl_fmt_time(last_ok, ok);
    json_object_set_new(st, "lastSuccessfulTime", json_string(ok));
  }
  if (kin__simwl_write_status(m, "batch", "cronjobs", cj, st) == 409) next = now_ms;
  json_decref(active);
  json_decref(jobs);
  json_decref(cj);
  return next;
}

/* Syncs the CronJobs due at now_ms; returns the next due time. */
static uint64_t cj_run(void *self, kin__simctl *m, uint64_t now_ms) {
  cj_ctl *c = self;
  size_t n = 0;
  char **keys = kin__simwl_queue_take(&c->q, now_ms, &n);
  for (size_t i = 0; i < n; i++) {
    uint64_t next = sync_cj(m, keys[i], now_ms);
    if (next != KIN__SIMCTL_NEVER) kin__simwl_queue_add(&c->q, keys[i], next);
  }
  kin__simwl_strv_free(keys, n);
  return kin__simwl_queue_next(&c->q);
}

const kin__simctl_def kin__simctl_cronjob = {
    .name = "cronjob",
    .create = cj_create,
    .observe = cj_observe,
    .run = cj_run,
    .destroy = cj_destroy,
};
