/* kubelet.c -- "kubelet": the kubelets of the simulated Nodes, as KWOK
 * fakes them. At start it registers the configured Nodes
 * (kubelet_node.c); a pod bound to one of them is Pending with its
 * containers ContainerCreating, then Running and Ready after
 * pod_ready_delay_ms; a pod with restartPolicy Never or OnFailure
 * succeeds job_run_ms later. The annotation kinformer.io/sim-fault
 * changes that: "fail" (Failed, exit code 1), "crashloop" (Running,
 * CrashLoopBackOff with growing restartCount), "unready" (Running, not
 * Ready), "pending" (never starts). A pod already Running when the
 * kubelet first sees it (seeded or replayed) is left as it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "wl.h"

enum { S_CREATING, S_RUNNING, S_UNREADY, S_CRASH, S_SUCCEEDED, S_FAILED };

/* What the kubelet remembers of a pod it runs (malloc'd, in pods). */
typedef struct {
  char *uid;
  uint64_t bound_ms;   /* when it saw the pod bound (sim clock) */
  time_t start, run, end; /* wall times: startTime, Running, terminal (0: not yet) */
  int restarts;
  int adopted;         /* Running when first seen (seeded, replayed): left as it is */
  char ip[24];
} pod_entry;

/* The controller's state: the manager's thread's own, no lock. */
typedef struct {
  kin__simwl_queue q;
  kin__hmap pods;      /* pod key -> pod_entry */
  int nodes_done;
  unsigned next_ip;
} kubelet_ctl;

/* The controller's state (calloc'd, freed by kl_destroy), NULL on ENOMEM. */
static void *kl_create(kin__simctl *m) {
  (void)m;
  return calloc(1, sizeof(kubelet_ctl));
}

/* Frees an entry (NULL: no-op). */
static void entry_free(pod_entry *e) {
  if (!e) return;
  free(e->uid);
  free(e);
}

/* Frees the state, its queue and its entries. */
static void kl_destroy(void *self) {
  kubelet_ctl *c = self;
  kin__simwl_queue_free(&c->q);
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&c->pods, &pos))) entry_free(e->val);
  kin__hmap_free(&c->pods);
  free(c);
}

/* Drops the entry of key, if any. */
static void forget(kubelet_ctl *c, const char *key) {
  void *old = NULL;
  if (kin__hmap_del(&c->pods, key, &old) == 1) entry_free(old);
}

static void kl_observe(void *self, kin__simctl *m, int type, const kin__sim_storage *st,
                       const kin__sim_obj *obj, const kin__sim_obj *prev) {
  (void)m;
  (void)prev;
  kubelet_ctl *c = self;
  if (*st->group || st->crd || strcmp(st->resource, "pods")) return;
  if (type == KIN__SIM_DELETED) {
    forget(c, obj->key);
    return;
  }
  json_t *spec = kin__sim_obj_member(obj, "spec");
  if (kin__sim_jstr(spec, "nodeName", NULL)) kin__simwl_queue_add(&c->q, obj->key, 0);
  json_decref(spec);
}

/* The entry of pod (by key and uid), created at now_ms when new (*fresh
 * set to 1 then); NULL on ENOMEM. */
static pod_entry *entry_of(kubelet_ctl *c, const char *key, const char *uid, uint64_t now_ms,
                           const json_t *node, int *fresh) {
  *fresh = 0;
  void **v = kin__hmap_get(&c->pods, key);
  pod_entry *e = v ? *v : NULL;
  if (e && !strcmp(e->uid, uid)) return e;
  forget(c, key); /* a pod of the same name before */
  e = calloc(1, sizeof(*e));
  if (!e || !(e->uid = strdup(uid)) || kin__hmap_put(&c->pods, key, e, NULL) != 1) {
    entry_free(e);
    return NULL;
  }
  *fresh = 1;
  e->bound_ms = now_ms;
  /* 10.244.<node's /24>.<n> */
  int net = 255;
  const char *cidr = kin__sim_jstr(json_object_get(node, "spec"), "podCIDR", NULL);
  if (cidr) sscanf(cidr, "10.244.%d.", &net);
  c->next_ip++;
  snprintf(e->ip, sizeof(e->ip), "10.244.%d.%u", net, c->next_ip % 253 + 2);
  return e;
}

/* The QoS class the API server gives the pod. */
static const char *qos_class(const json_t *spec) {
  int any = 0, guaranteed = 1;
  size_t i;
  const json_t *ct;
  json_array_foreach(json_object_get(spec, "containers"), i, ct) {
    const json_t *res = json_object_get(ct, "resources");
    const json_t *lim = json_object_get(res, "limits");
    const json_t *req = json_object_get(res, "requests");
    if (json_object_size(lim) || json_object_size(req)) any = 1;
    if (!json_object_get(lim, "cpu") || !json_object_get(lim, "memory")) guaranteed = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)req, k, v) {
      if (!json_equal(v, json_object_get(lim, k))) guaranteed = 0;
    }
  }
  return !any ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
}

static json_t *condition(const char *type, json_int_t gen, int ok, time_t at, const char *reason,
                         const char *message) {
  char t[32];
  kin__simwl_fmt_time(at, t);
  json_t *c = json_pack("{s:s, s:I, s:s, s:n, s:s}", "type", type, "observedGeneration", gen,
                        "status", ok ? "True" : "False", "lastProbeTime", "lastTransitionTime", t);
  if (reason) json_object_set_new(c, "reason", json_string(reason));
  if (message) json_object_set_new(c, "message", json_string(message));
  return c;
}

/* qsort order of containers by name. */
static int by_name(const void *a, const void *b) {
  const char *x = kin__sim_jstr(*(json_t *const *)a, "name", NULL);
  const char *y = kin__sim_jstr(*(json_t *const *)b, "name", NULL);
  return strcmp(x ? x : "", y ? y : "");
}

/* The containerStatuses of containers in state s, sorted by name as the
 * kubelet sorts them. */
static json_t *container_statuses(const json_t *pod, const json_t *containers, int s,
                                  const pod_entry *e, int init) {
  size_t n = json_array_size(containers);
  json_t **sorted = calloc(n ? n : 1, sizeof(*sorted));
  json_t *out = json_array();
  if (!sorted) return out;
  for (size_t i = 0; i < n; i++) sorted[i] = json_array_get(containers, i);
  qsort(sorted, n, sizeof(*sorted), by_name);
  char ts[32], tr[32], te[32];
  kin__simwl_fmt_time(e->start, ts);
  kin__simwl_fmt_time(e->run ? e->run : e->start, tr);
  kin__simwl_fmt_time(e->end ? e->end : e->run ? e->run : e->start, te);
  const char *uid = kin__sim_jstr(pod, "metadata", "uid");
  for (size_t i = 0; i < n; i++) {
    const char *name = kin__sim_jstr(sorted[i], "name", NULL);
    const char *image = kin__sim_jstr(sorted[i], "image", NULL);
    char cid[160];
    snprintf(cid, sizeof(cid), "kinformer-sim://%.36s-%.60s", uid ? uid : "", name ? name : "");
    json_t *state, *last = json_object();
    int ready = 0, started = 0, restarts = 0;
    if (init) {
      state = json_pack("{s:{s:i, s:s, s:s, s:s, s:s}}", "terminated", "exitCode", 0, "reason",
                        "Completed", "startedAt", ts, "finishedAt", ts, "containerID", cid);
      ready = 1;
    } else if (s == S_CREATING) {
      state = json_pack("{s:{s:s}}", "waiting", "reason", "ContainerCreating");
    } else if (s == S_CRASH) {
      char msg[512];
      int back = 10;
      for (int k = 1; k < e->restarts && back < 300; k++) back *= 2;
      snprintf(msg, sizeof(msg), "back-off %ds restarting failed container=%s pod=%s_%s(%s)",
               back > 300 ? 300 : back, name ? name : "", kin__sim_jstr(pod, "metadata", "name"),
               kin__sim_jstr(pod, "metadata", "namespace"), uid ? uid : "");
      state = json_pack("{s:{s:s, s:s}}", "waiting", "reason", "CrashLoopBackOff", "message",
                        msg);
      json_decref(last);
      last = json_pack("{s:{s:i, s:s, s:s, s:s, s:s}}", "terminated", "exitCode", 1, "reason",
                       "Error", "startedAt", te, "finishedAt", te, "containerID", cid);
      restarts = e->restarts;
    } else if (s == S_SUCCEEDED || s == S_FAILED) {
      int ok = s == S_SUCCEEDED;
      state = json_pack("{s:{s:i, s:s, s:s, s:s, s:s}}", "terminated", "exitCode", ok ? 0 : 1,
                        "reason", ok ? "Completed" : "Error", "startedAt", tr, "finishedAt", te,
                        "containerID", cid);
    } else {
      state = json_pack("{s:{s:s}}", "running", "startedAt", tr);
      started = 1;
      ready = s == S_RUNNING;
    }
    json_t *cs = json_pack("{s:s, s:o, s:o, s:b, s:i, s:s, s:s}", "name", name ? name : "",
                           "state", state, "lastState", last, "ready", ready, "restartCount",
                           restarts, "image", image ? image : "", "imageID", "");
    if (s != S_CREATING || init) json_object_set_new(cs, "containerID", json_string(cid));
    json_object_set_new(cs, "started", json_boolean(started));
    json_array_append_new(out, cs);
  }
  free(sorted);
  return out;
}

/* "containers with unready status: [a b]" of the pod's containers. */
static void unready_message(const json_t *containers, char *out, size_t cap) {
  size_t len = (size_t)snprintf(out, cap, "containers with unready status: [");
  size_t i;
  const json_t *ct;
  json_array_foreach(containers, i, ct) {
    if (len >= cap) break;
    len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? " " : "",
                            kin__sim_jstr(ct, "name", NULL));
  }
  if (len < cap) snprintf(out + len, cap - len, "]");
}

/* The status of pod in state s, on the node whose InternalIP is host_ip. */
static json_t *pod_status(const json_t *pod, int s, const pod_entry *e, const char *host_ip) {
  const json_t *spec = json_object_get(pod, "spec");
  const json_t *containers = json_object_get(spec, "containers");
  json_int_t gen = kin__simwl_int(pod, "metadata", "generation", 1);
  const char *phase = s == S_CREATING    ? "Pending"
                      : s == S_SUCCEEDED ? "Succeeded"
                      : s == S_FAILED    ? "Failed"
                                         : "Running";
  int terminal = s == S_SUCCEEDED || s == S_FAILED;
  int ready = s == S_RUNNING;
  time_t ready_at = terminal ? e->end : e->run ? e->run : e->start;
  char msg[512];
  unready_message(containers, msg, sizeof(msg));
  const char *why = s == S_SUCCEEDED ? "PodCompleted" : s == S_FAILED ? "PodFailed" : NULL;
  json_t *conds = json_array();
  json_array_append_new(conds, condition("PodReadyToStartContainers", gen, s != S_CREATING &&
                                         !terminal, terminal ? e->end : e->run ? e->run : e->start,
                                         NULL, NULL));
  json_array_append_new(conds, condition("Initialized", gen, 1, e->start,
                                         s == S_SUCCEEDED ? "PodCompleted" : NULL, NULL));
  json_array_append_new(conds, condition("Ready", gen, ready, ready_at,
                                         ready ? NULL : why ? why : "ContainersNotReady",
                                         ready || why ? NULL : msg));
  json_array_append_new(conds, condition("ContainersReady", gen, ready, ready_at,
                                         ready ? NULL : why ? why : "ContainersNotReady",
                                         ready || why ? NULL : msg));
  json_t *sched = kin__simwl_condition(json_object_get(json_object_get(pod, "status"),
                                                       "conditions"), "PodScheduled");
  if (sched) {
    json_t *copy = json_deep_copy(sched);
    json_array_append_new(conds, copy);
  }
  char start[32];
  kin__simwl_fmt_time(e->start, start);
  json_t *st = json_pack("{s:I, s:s, s:o, s:s, s:[{s:s}]}", "observedGeneration", gen, "phase",
                         phase, "conditions", conds, "hostIP", host_ip, "hostIPs", "ip", host_ip);
  if (s != S_CREATING) {
    json_object_set_new(st, "podIP", json_string(e->ip));
    json_object_set_new(st, "podIPs", json_pack("[{s:s}]", "ip", e->ip));
  }
  json_object_set_new(st, "startTime", json_string(start));
  const json_t *inits = json_object_get(spec, "initContainers");
  if (json_array_size(inits))
    json_object_set_new(st, "initContainerStatuses", container_statuses(pod, inits, s, e, 1));
  json_object_set_new(st, "containerStatuses", container_statuses(pod, containers, s, e, 0));
  json_object_set_new(st, "qosClass", json_string(qos_class(spec)));
  return st;
}

/* The state of the pod at now_ms, and when it next changes (*next). */
static int state_at(kubelet_ctl *c, kin__simctl *m, const json_t *pod, pod_entry *e,
                    uint64_t now_ms, uint64_t *next) {
  (void)c;
  const json_t *ann = json_object_get(json_object_get(pod, "metadata"), "annotations");
  const char *fault = kin__sim_jstr(ann, KIN__SIMWL_FAULT, NULL);
  if (!fault) fault = "";
  kin_sim *sim = kin__simctl_sim(m);
  uint64_t ready_at = e->bound_ms + sim->pod_ready_delay_ms;
  time_t now = kin__simwl_now(m);
  *next = KIN__SIMCTL_NEVER;
  if (!strcmp(fault, "pending")) return S_CREATING;
  if (now_ms < ready_at) {
    *next = ready_at;
    return S_CREATING;
  }
  if (!e->run) e->run = now;
  if (!strcmp(fault, "fail")) {
    if (!e->end) e->end = now;
    return S_FAILED;
  }
  if (!strcmp(fault, "unready")) return S_UNREADY;
  if (!strcmp(fault, "crashloop")) {
    /* restarts after 10s, 20s, 40s, ... 300s of back-off */
    uint64_t t = ready_at, back = 10000;
    int k = 1;
    while (t + back <= now_ms) {
      t += back;
      k++;
      back = back * 2 > 300000 ? 300000 : back * 2;
    }
    if (k != e->restarts) e->end = now;
    e->restarts = k;
    *next = t + back;
    return S_CRASH;
  }
  const char *rp = kin__sim_jstr(json_object_get(pod, "spec"), "restartPolicy", NULL);
  if (rp && (!strcmp(rp, "Never") || !strcmp(rp, "OnFailure"))) {
    uint64_t done = ready_at + sim->job_run_ms;
    if (now_ms >= done) {
      if (!e->end) e->end = now;
      return S_SUCCEEDED;
    }
    *next = done;
  }
  return S_RUNNING;
}

/* Runs one pod: its next status, and when to look again. */
static void sync_pod(kubelet_ctl *c, kin__simctl *m, const char *key, uint64_t now_ms) {
  char ns[256];
  const char *name = kin__simwl_key_split(key, ns, sizeof(ns));
  json_t *pod = kin__simctl_get(m, "", "pods", ns, name);
  const char *nodename = kin__sim_jstr(json_object_get(pod, "spec"), "nodeName", NULL);
  const char *uid = kin__sim_jstr(pod, "metadata", "uid");
  json_t *node = nodename ? kin__simctl_get(m, "", "nodes", NULL, nodename) : NULL;
  const char *phase = kin__simwl_pod_phase(pod);
  if (!node || !uid || !kin__simwl_node_simulated(node) ||
      json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") ||
      (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) {
    json_decref(node);
    json_decref(pod);
    return;
  }
  int fresh;
  pod_entry *e = entry_of(c, key, uid, now_ms, node, &fresh);
  if (!e) goto out;
  if (fresh && !strcmp(phase, "Running")) e->adopted = 1;
  if (e->adopted) goto out;
  if (!e->start) e->start = kin__simwl_now(m);
  uint64_t next;
  int s = state_at(c, m, pod, e, now_ms, &next);
  const char *host_ip = "";
  size_t i;
  const json_t *a;
  json_array_foreach(json_object_get(json_object_get(node, "status"), "addresses"), i, a) {
    const char *t = kin__sim_jstr(a, "type", NULL);
    if (t && !strcmp(t, "InternalIP")) host_ip = kin__sim_jstr(a, "address", NULL);
  }
  int code = kin__simwl_write_status(m, "", "pods", pod, pod_status(pod, s, e, host_ip));
  if (code == 409) next = now_ms; /* changed meanwhile: its event brings it back too */
  if (next != KIN__SIMCTL_NEVER) kin__simwl_queue_add(&c->q, key, next);
out:
  json_decref(node);
  json_decref(pod);
}

/* Registers the Nodes on the first run, then syncs the pods due at now_ms;
 * returns the next due time (KIN__SIMCTL_NEVER when none). */
static uint64_t kl_run(void *self, kin__simctl *m, uint64_t now_ms) {
  kubelet_ctl *c = self;
  if (!c->nodes_done) {
    c->nodes_done = 1;
    kin__simwl_nodes_create(m, kin__simctl_sim(m)->nodes);
  }
  size_t n = 0;
  char **keys = kin__simwl_queue_take(&c->q, now_ms, &n);
  for (size_t i = 0; i < n; i++) sync_pod(c, m, keys[i], now_ms);
  kin__simwl_strv_free(keys, n);
  return kin__simwl_queue_next(&c->q);
}

const kin__simctl_def kin__simctl_kubelet = {
    .name = "kubelet",
    .create = kl_create,
    .observe = kl_observe,
    .run = kl_run,
    .destroy = kl_destroy,
};
