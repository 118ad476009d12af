/* defaults.c -- the few defaults of kube-apiserver's built-in kinds that
 * the sim reproduces at create (SetDefaults_* of k8s.io/kubernetes
 * pkg/apis/<group>/<version>/defaults.go and the strategies'
 * PrepareForCreate): those controllers and clients rely on. A Job gets
 * parallelism, completions, backoffLimit, completionMode, suspend,
 * podReplacementPolicy and manualSelector, and unless manualSelector is
 * true the generated selector and template labels (batch.kubernetes.io/
 * controller-uid, job-name, and their legacy forms), which its metadata
 * labels default to when it has none; a CronJob its concurrencyPolicy,
 * suspend and history limits. Everything else (pod templates, Services,
 * Deployments...) is stored as sent: docs/sim.md lists the gap. Runs
 * under the store lock, on the object about to be stored. */
#include <string.h>

#include "base64.h"
#include "store_int.h"

/* Sets obj[key] to v (stolen) when absent; a NULL v is ignored. */
static void set_default(json_t *obj, const char *key, json_t *v) {
  if (!v) return;
  if (!json_object_get(obj, key))
    json_object_set_new(obj, key, v);
  else
    json_decref(v);
}

/* Returns obj[key] as an object, adding an empty one when absent or not an
 * object (borrowed), or NULL on ENOMEM. */
static json_t *object_member(json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  if (json_is_object(v)) return v;
  v = json_object();
  if (!v || json_object_set_new(obj, key, v)) return NULL;
  return v;
}

/* The Job strategy's generateSelector and SetDefaults_Job. */
static void job_defaults(json_t *obj) {
  json_t *spec = object_member(obj, "spec");
  json_t *md = json_object_get(obj, "metadata");
  if (!spec || !md) return;
  if (!json_object_get(spec, "completions") && !json_object_get(spec, "parallelism"))
    json_object_set_new(spec, "completions", json_integer(1));
  set_default(spec, "parallelism", json_integer(1));
  set_default(spec, "backoffLimit",
              json_integer(json_object_get(spec, "backoffLimitPerIndex") ? 2147483647 : 6));
  set_default(spec, "completionMode", json_string("NonIndexed"));
  set_default(spec, "suspend", json_false());
  set_default(spec, "podReplacementPolicy",
              json_string(json_object_get(spec, "podFailurePolicy") ? "Failed"
                                                                   : "TerminatingOrFailed"));
  set_default(spec, "manualSelector", json_false());
  if (json_is_true(json_object_get(spec, "manualSelector"))) return;
  const char *name = kin__sim_jstr(md, "name", NULL);
  const char *uid = kin__sim_jstr(md, "uid", NULL);
  json_t *tmpl = object_member(spec, "template");
  json_t *tmd = tmpl ? object_member(tmpl, "metadata") : NULL;
  json_t *tl = tmd ? object_member(tmd, "labels") : NULL;
  json_t *sel = object_member(spec, "selector");
  json_t *ml = sel ? object_member(sel, "matchLabels") : NULL;
  if (!name || !uid || !tl || !ml) return;
  set_default(tl, "batch.kubernetes.io/controller-uid", json_string(uid));
  set_default(tl, "batch.kubernetes.io/job-name", json_string(name));
  set_default(tl, "controller-uid", json_string(uid));
  set_default(tl, "job-name", json_string(name));
  set_default(ml, "batch.kubernetes.io/controller-uid", json_string(uid));
  /* read back from etcd, the Job's labels default to its template's */
  json_t *labels = json_object_get(md, "labels");
  if (!json_is_object(labels) || !json_object_size(labels))
    json_object_set_new(md, "labels", json_deep_copy(tl));
}

/* SetDefaults_CronJob. */
static void cronjob_defaults(json_t *obj) {
  json_t *spec = object_member(obj, "spec");
  if (!spec) return;
  set_default(spec, "concurrencyPolicy", json_string("Allow"));
  set_default(spec, "suspend", json_false());
  set_default(spec, "successfulJobsHistoryLimit", json_integer(3));
  set_default(spec, "failedJobsHistoryLimit", json_integer(1));
}

/* Adds the defaults of st's kind to obj in place (nothing for other kinds;
 * a default that cannot be allocated is left out). */
/* A v1 Secret as the server stores it: stringData merged into data
 * (base64, over data's own keys; Convert_v1_Secret_To_core_Secret) and
 * dropped, type Opaque by default (SetDefaults_Secret). */
static void secret_defaults(json_t *obj) {
  json_t *sd = json_object_get(obj, "stringData");
  if (json_is_object(sd)) {
    json_t *data = json_object_get(obj, "data");
    if (!json_is_object(data)) json_object_set_new(obj, "data", data = json_object());
    const char *k;
    json_t *v;
    json_object_foreach(sd, k, v) {
      const char *str = json_string_value(v);
      char *b64 = str ? kin__base64_encode((const unsigned char *)str, strlen(str)) : NULL;
      if (b64) json_object_set_new(data, k, json_string(b64));
      free(b64);
    }
  }
  json_object_del(obj, "stringData");
  const char *type = kin__sim_jstr(obj, "type", NULL);
  if (!type || !*type) json_object_set_new(obj, "type", json_string("Opaque"));
}

void kin__sim_defaults_create(const kin__sim_storage *st, json_t *obj) {
  if (!st->crd && !*st->group && !strcmp(st->resource, "secrets")) {
    secret_defaults(obj);
    return;
  }
  if (st->crd || strcmp(st->group, "batch")) return;
  if (!strcmp(st->resource, "jobs"))
    job_defaults(obj);
  else if (!strcmp(st->resource, "cronjobs"))
    cronjob_defaults(obj);
}
