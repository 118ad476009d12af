/* job.c -- kube-controller-manager's "job" controller
 * (pkg/controller/job), NonIndexed and Indexed (pods "<job>-<i>-",
 * batch.kubernetes.io/job-completion-index, JOB_COMPLETION_INDEX,
 * status.completedIndexes): keeps min(parallelism, completions -
 * succeeded) pods (generateName "<job>-", the job-name and
 * controller-uid labels) until spec.completions pods succeeded (or, with
 * no completions, one did and none is active): then SuccessCriteriaMet
 * and Complete (CompletionsReached). Failed pods are replaced after the
 * pod failure back-off (10s doubling, 6m at most) until more than
 * backoffLimit (default 6) failed: then FailureTarget and Failed
 * (BackoffLimitExceeded); activeDeadlineSeconds gives DeadlineExceeded.
 * Status: startTime, completionTime, active, succeeded, failed,
 * terminating, uncountedTerminatedPods, ready. Counts are the pods' own
 * (no job-tracking finalizer); they never go down. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "wl.h"

/* The controller's state: the manager's thread's own, no lock. */
typedef struct {
  kin__simwl_queue q;
} job_ctl;

/* The controller's state (calloc'd, freed by job_destroy), NULL on ENOMEM. */
static void *job_create(kin__simctl *m) {
  (void)m;
  return calloc(1, sizeof(job_ctl));
}

/* Frees the state and its queue. */
static void job_destroy(void *self) {
  job_ctl *c = self;
  kin__simwl_queue_free(&c->q);
  free(c);
}

static void job_observe(void *self, kin__simctl *m, int type, const kin__sim_storage *st,
                        const kin__sim_obj *obj, const kin__sim_obj *prev) {
  (void)m;
  (void)prev;
  job_ctl *c = self;
  if (st->crd) return;
  if (!strcmp(st->group, "batch") && !strcmp(st->resource, "jobs")) {
    if (type != KIN__SIM_DELETED) kin__simwl_queue_add(&c->q, obj->key, 0);
  } else if (!*st->group && !strcmp(st->resource, "pods")) {
    json_t *md = kin__sim_obj_member(obj, "metadata");
    json_t *wrap = json_pack("{s:O}", "metadata", md);
    char key[512];
    if (kin__simwl_owner_key(wrap, "Job", key, sizeof(key))) kin__simwl_queue_add(&c->q, key, 0);
    json_decref(wrap);
    json_decref(md);
  }
}

/* 1 when the job has condition type True. */
static int has_cond(const json_t *job, const char *type) {
  json_t *c = kin__simwl_condition(json_object_get(json_object_get(job, "status"), "conditions"),
                                   type);
  const char *s = kin__sim_jstr(c, "status", NULL);
  return s && !strcmp(s, "True");
}

#define INDEX "batch.kubernetes.io/job-completion-index"

/* Creates a pod of the job, of completion index idx (-1: NonIndexed); a
 * failed create is retried at the next sync. */
static void create_pod(kin__simctl *m, const json_t *job, long idx) {
  const char *name = kin__sim_jstr(job, "metadata", "name");
  const char *uid = kin__sim_jstr(job, "metadata", "uid");
  char gen[300], sidx[24];
  snprintf(sidx, sizeof(sidx), "%ld", idx);
  if (idx >= 0)
    snprintf(gen, sizeof(gen), "%s-%ld-", name, idx);
  else
    snprintf(gen, sizeof(gen), "%s-", name);
  json_t *pod = kin__simwl_pod_from_template(
      json_object_get(json_object_get(job, "spec"), "template"),
      kin__simwl_owner_ref("batch/v1", "Job", job), NULL, gen);
  json_t *md = json_object_get(pod, "metadata");
  json_t *labels = json_object_get(md, "labels");
  json_object_set_new(labels, "batch.kubernetes.io/controller-uid", json_string(uid));
  json_object_set_new(labels, "batch.kubernetes.io/job-name", json_string(name));
  json_object_set_new(labels, "controller-uid", json_string(uid));
  json_object_set_new(labels, "job-name", json_string(name));
  if (idx >= 0) {
    /* Indexed: the index in an annotation, a label and JOB_COMPLETION_INDEX */
    json_t *ann = json_object_get(md, "annotations");
    if (!json_is_object(ann)) {
      ann = json_object();
      json_object_set_new(md, "annotations", ann);
    }
    json_object_set_new(ann, INDEX, json_string(sidx));
    json_object_set_new(labels, INDEX, json_string(sidx));
    json_t *pspec = json_object_get(pod, "spec");
    if (kin__sim_jstr(pspec, "subdomain", NULL)) {
      char host[300];
      snprintf(host, sizeof(host), "%s-%ld", name, idx);
      json_object_set_new(pspec, "hostname", json_string(host));
    }
    size_t i;
    json_t *ct;
    json_array_foreach(json_object_get(pspec, "containers"), i, ct) {
      json_t *env = json_object_get(ct, "env");
      if (!json_is_array(env)) {
        env = json_array();
        json_object_set_new(ct, "env", env);
      }
      json_array_append_new(env, json_pack("{s:s, s:{s:{s:s}}}", "name", "JOB_COMPLETION_INDEX",
                                           "valueFrom", "fieldRef", "fieldPath",
                                           "metadata.labels['" INDEX "']"));
    }
  }
  kin__simctl_create(m, "", "pods", kin__sim_jstr(job, "metadata", "namespace"), pod, NULL);
  json_decref(pod);
}

/* The completion index of a pod of an Indexed job, -1 if none or >= n. */
static long index_of(const json_t *pod, long n) {
  const char *v = kin__sim_jstr(json_object_get(json_object_get(pod, "metadata"), "annotations"),
                                INDEX, NULL);
  char *end;
  long i = v ? strtol(v, &end, 10) : -1;
  return v && !*end && i >= 0 && i < n ? i : -1;
}

/* Writes the indexes set in done (n of them) as "0-2,4" into out. */
static void index_ranges(const char *done, long n, char *out, size_t cap) {
  size_t len = 0;
  out[0] = 0;
  for (long i = 0; i < n && len < cap; i++) {
    if (!done[i]) continue;
    long j = i;
    while (j + 1 < n && done[j + 1]) j++;
    if (j > i)
      len += (size_t)snprintf(out + len, cap - len, "%s%ld-%ld", len ? "," : "", i, j);
    else
      len += (size_t)snprintf(out + len, cap - len, "%s%ld", len ? "," : "", i);
    i = j;
  }
}

/* Deletes the pod with its uid as precondition; a failure (gone
 * already) is left to the next sync. */
static void delete_pod(kin__simctl *m, const json_t *pod) {
  kin__simctl_delete(m, "", "pods", kin__sim_jstr(pod, "metadata", "namespace"),
                     kin__sim_jstr(pod, "metadata", "name"), kin__sim_jstr(pod, "metadata", "uid"),
                     "Background");
}

/* When the pod's containers last finished (its failure), -1 if unknown. */
static time_t finished_at(const json_t *pod) {
  time_t t = -1;
  size_t i;
  const json_t *cs;
  json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), i, cs) {
    time_t f = kin__simwl_parse_time(
        kin__sim_jstr(json_object_get(json_object_get(cs, "state"), "terminated"), "finishedAt",
                      NULL));
    if (f > t) t = f;
  }
  return t;
}

/* Adds the interim and the final condition of a finished job. */
static void finish(json_t *conds, const char *interim, const char *final, const char *reason,
                   const char *msg, const char *now) {
  kin__simwl_set_condition(conds, json_pack("{s:s, s:s, s:s, s:s}", "type", interim, "status",
                                            "True", "reason", reason, "message", msg),
                           now, 2);
  kin__simwl_set_condition(conds, json_pack("{s:s, s:s, s:s, s:s}", "type", final, "status",
                                            "True", "reason", reason, "message", msg),
                           now, 2);
}

/* Syncs one Job (key "ns/name"); returns when to look again on the
 * sim's clock (a back-off or deadline; KIN__SIMCTL_NEVER: at its next change). */
static uint64_t sync_job(kin__simctl *m, const char *key, uint64_t now_ms) {
  char ns[256];
  const char *name = kin__simwl_key_split(key, ns, sizeof(ns));
  json_t *job = kin__simctl_get(m, "batch", "jobs", ns, name);
  if (!job) return KIN__SIMCTL_NEVER;
  uint64_t next = KIN__SIMCTL_NEVER;
  const json_t *spec = json_object_get(job, "spec");
  const json_t *old = json_object_get(job, "status");
  json_t *pods = kin__simwl_list_owned(m, "", "pods", ns, kin__sim_jstr(job, "metadata", "uid"));
  int finished = has_cond(job, "Complete") || has_cond(job, "Failed");
  int suspended = json_is_true(json_object_get(spec, "suspend"));
  int active = 0, ready = 0, succeeded = 0, failed = 0, terminating = 0;
  time_t last_fail = -1;
  const char *mode = kin__sim_jstr(spec, "completionMode", NULL);
  const json_t *cj0 = json_object_get(spec, "completions");
  long nidx = mode && !strcmp(mode, "Indexed") && json_is_integer(cj0)
                  ? (long)json_integer_value(cj0)
                  : 0;
  if (nidx < 0 || nidx > 100000) nidx = 0;
  char *done = nidx ? calloc((size_t)nidx, 2) : NULL; /* done[i], then busy[i] */
  if (!done) nidx = 0;
  int ndone = 0;
  size_t i;
  json_t *p;
  json_array_foreach(pods, i, p) {
    const char *phase = kin__simwl_pod_phase(p);
    long idx = nidx ? index_of(p, nidx) : -1;
    if (idx >= 0 && !strcmp(phase, "Succeeded") && !done[idx]) {
      done[idx] = 1;
      ndone++;
    } else if (idx >= 0 && kin__simwl_pod_active(p)) {
      done[nidx + idx] = 1;
    }
    if (!strcmp(phase, "Succeeded")) {
      succeeded++;
    } else if (!strcmp(phase, "Failed")) {
      failed++;
      time_t f = finished_at(p);
      if (f > last_fail) last_fail = f;
    } else if (json_object_get(json_object_get(p, "metadata"), "deletionTimestamp")) {
      terminating++;
    } else {
      active++;
      if (kin__simwl_pod_ready(p)) ready++;
    }
  }
  if (nidx) succeeded = ndone; /* Indexed: the succeeded indexes */
  if (succeeded < kin__simwl_int(old, "succeeded", NULL, 0))
    succeeded = (int)kin__simwl_int(old, "succeeded", NULL, 0);
  if (failed < kin__simwl_int(old, "failed", NULL, 0))
    failed = (int)kin__simwl_int(old, "failed", NULL, 0);
  char now[32];
  kin__simctl_wall_rfc3339(m, now);
  time_t tnow = kin__simwl_now(m);
  json_t *conds = json_deep_copy(json_object_get(old, "conditions"));
  if (!json_is_array(conds)) {
    json_decref(conds);
    conds = json_array();
  }
  const char *start = kin__sim_jstr(old, "startTime", NULL);
  char startbuf[32];
  if (!start && !suspended && !finished) start = now;
  if (start) snprintf(startbuf, sizeof(startbuf), "%s", start);
  const char *completion = kin__sim_jstr(old, "completionTime", NULL);
  json_int_t parallelism = kin__simwl_int(spec, "parallelism", NULL, 1);
  const json_t *cj = json_object_get(spec, "completions");
  json_int_t backoff = kin__simwl_int(spec, "backoffLimit", NULL, 6);
  json_int_t ads = kin__simwl_int(spec, "activeDeadlineSeconds", NULL, -1);
  int wrote = 0;
  if (!finished) {
    int complete = nidx                ? ndone >= nidx
                   : json_is_integer(cj) ? succeeded >= json_integer_value(cj)
                                         : succeeded > 0 && active == 0;
    time_t st0 = start ? kin__simwl_parse_time(start) : -1;
    if (complete) {
      finish(conds, "SuccessCriteriaMet", "Complete", "CompletionsReached",
             "Reached expected number of succeeded pods", now);
      completion = now;
      finished = 1;
    } else if (failed > backoff) {
      finish(conds, "FailureTarget", "Failed", "BackoffLimitExceeded",
             "Job has reached the specified backoff limit", now);
      finished = 1;
    } else if (ads >= 0 && st0 >= 0 && st0 + ads <= tnow) {
      finish(conds, "FailureTarget", "Failed", "DeadlineExceeded",
             "Job was active longer than specified deadline", now);
      finished = 1;
    } else {
      if (ads >= 0 && st0 >= 0) next = kin__simwl_due_at(m, now_ms, st0 + ads);
      json_int_t want = suspended ? 0 : parallelism;
      json_int_t left = nidx ? nidx - ndone : json_is_integer(cj) ? json_integer_value(cj) - succeeded : want;
      if (left < want) want = left;
      if (want < 0) want = 0;
      if (active < want) {
        /* the pod failure back-off: 10s, doubling, 6 minutes at most */
        time_t wait_until = -1;
        if (failed && last_fail >= 0) {
          long d = 10;
          for (int k = 1; k < failed && d < 360; k++) d *= 2;
          wait_until = last_fail + (d > 360 ? 360 : d);
        }
        if (wait_until > tnow) {
          uint64_t due = kin__simwl_due_at(m, now_ms, wait_until);
          if (due < next) next = due;
        } else {
          json_int_t k = active;
          for (long x = 0; nidx && x < nidx && k < want; x++)
            if (!done[x] && !done[nidx + x]) create_pod(m, job, x), k++;
          for (; !nidx && k < want; k++) create_pod(m, job, -1);
          wrote = 1;
        }
      } else if (active > want) {
        int extra = (int)(active - want);
        json_array_foreach(pods, i, p) {
          if (extra && kin__simwl_pod_active(p)) {
            delete_pod(m, p);
            extra--;
            wrote = 1;
          }
        }
      }
    }
  }
  if (finished) {
    /* a finished job keeps no running pod */
    json_array_foreach(pods, i, p) {
      if (kin__simwl_pod_active(p)) {
        delete_pod(m, p);
        wrote = 1;
      }
    }
  }
  if (!wrote || finished) {
    json_t *st = json_object();
    if (json_array_size(conds)) json_object_set(st, "conditions", conds);
    if (start) json_object_set_new(st, "startTime", json_string(startbuf));
    if (completion) json_object_set_new(st, "completionTime", json_string(completion));
    if (active && !finished) json_object_set_new(st, "active", json_integer(active));
    if (succeeded) json_object_set_new(st, "succeeded", json_integer(succeeded));
    if (failed) json_object_set_new(st, "failed", json_integer(failed));
    json_object_set_new(st, "terminating", json_integer(terminating));
    if (nidx && ndone) {
      size_t cap = (size_t)nidx * 8 + 16;
      char *r = malloc(cap);
      if (r) {
        index_ranges(done, nidx, r, cap);
        json_object_set_new(st, "completedIndexes", json_string(r));
        free(r);
      }
    }
    json_object_set_new(st, "uncountedTerminatedPods", json_object());
    json_object_set_new(st, "ready", json_integer(finished ? 0 : ready));
    if (kin__simwl_write_status(m, "batch", "jobs", job, st) == 409) next = now_ms;
  }
  free(done);
  json_decref(conds);
  json_decref(pods);
  json_decref(job);
  return next;
}

/* Syncs the Jobs due at now_ms; returns the next due time. */
static uint64_t job_run(void *self, kin__simctl *m, uint64_t now_ms) {
  job_ctl *c = self;
  size_t n = 0;
  char **keys = kin__simwl_queue_take(&c->q, now_ms, &n);
  for (size_t i = 0; i < n; i++) {
    uint64_t next = sync_job(m, keys[i], now_ms);
    if (next != KIN__SIMCTL_NEVER) kin__simwl_queue_add(&c->q, keys[i], next);
  }
  kin__simwl_strv_free(keys, n);
  return kin__simwl_queue_next(&c->q);
}

const kin__simctl_def kin__simctl_job = {
    .name = "job",
    .create = job_create,
    .observe = job_observe,
    .run = job_run,
    .destroy = job_destroy,
};
