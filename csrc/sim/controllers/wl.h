/* wl.h -- what the sim's workload controllers share (wl_util.c,
 * wl_pod.c): a keyed work queue on the sim's clock, owner references,
 * label selectors, pod readiness, the sim's wall time, status writes and
 * the scheduler's binding. Every function runs on the controller
 * manager's thread without the store lock (the writes take it). */
#ifndef KIN_SIM_WL_H
#define KIN_SIM_WL_H

#include <jansson.h>
#include <stdint.h>
#include <time.h>

#include "ctl.h"
#include "hmap.h"

/* The annotation that injects a fault into a pod (docs/sim.md). */
#define KIN__SIMWL_FAULT "kinformer.io/sim-fault"
/* The annotation that marks a Node whose pods the kubelet runs. */
#define KIN__SIMWL_NODE_MARK "kinformer.io/sim-node"

/* ---- the work queue: keys ("ns/name") due at a time of the sim's
 * clock, in a hash map (key -> malloc'd due); a controller's own state
 * (no lock). Zero-initialised it is empty. ---- */
typedef struct {
  kin__hmap map;
} kin__simwl_queue;

/* Queues key at due, or moves it earlier when queued later. On ENOMEM
 * the key is dropped (the next change brings it back). */
void kin__simwl_queue_add(kin__simwl_queue *q, const char *key, uint64_t due);

/* Queues at due every object of group/resource (all namespaces) that
 * match accepts (NULL: all): a controller's resync after a change that
 * concerns them all (a Node for the scheduler and DaemonSets). */
void kin__simwl_queue_add_all(kin__simwl_queue *q, kin__simctl *m, const char *group,
                              const char *resource, int (*match)(void *ud, const json_t *obj),
                              uint64_t due);

/* Removes the keys due at now or before; returns them as a malloc'd
 * array of malloc'd strings (count in *n) that the caller frees with
 * kin__simwl_strv_free, NULL when none. */
char **kin__simwl_queue_take(kin__simwl_queue *q, uint64_t now, size_t *n);

/* The earliest due of q, KIN__SIMCTL_NEVER when empty. */
uint64_t kin__simwl_queue_next(const kin__simwl_queue *q);

void kin__simwl_queue_free(kin__simwl_queue *q);
void kin__simwl_strv_free(char **v, size_t n);

/* ---- objects ---- */

/* Splits key "ns/name": copies ns into ns (cap bytes) and returns name
 * (inside key); for a cluster-scoped key ns is "". */
const char *kin__simwl_key_split(const char *key, char *ns, size_t cap);

/* Writes "ns/name" of obj into out (cap bytes). */
void kin__simwl_key_of(const json_t *obj, char *out, size_t cap);

/* The ownerReference of obj with controller=true (borrowed), NULL if none. */
const json_t *kin__simwl_controller_ref(const json_t *obj);

/* Writes "ns/owner" into out when obj's controller is a kind; returns 1,
 * else 0. */
int kin__simwl_owner_key(const json_t *obj, const char *kind, char *out, size_t cap);

/* A new array of the objects of group/resource in ns whose controller
 * has uid uid; NULL on ENOMEM or unknown resource. */
json_t *kin__simwl_list_owned(kin__simctl *m, const char *group, const char *resource,
                              const char *ns, const char *uid);

/* A new ownerReference (controller, blockOwnerDeletion) to owner. */
json_t *kin__simwl_owner_ref(const char *api_version, const char *kind, const json_t *owner);

/* 1 when labels (an object or NULL) match the LabelSelector sel
 * (matchLabels, matchExpressions); an empty selector matches all, a NULL
 * one nothing. */
int kin__simwl_selector_match(const json_t *sel, const json_t *labels);

/* obj[k1][k2] (k2 NULL: obj[k1]) as an integer, dflt when absent. */
json_int_t kin__simwl_int(const json_t *obj, const char *k1, const char *k2, json_int_t dflt);

/* An IntOrString (count or "N%") of total: percents rounded up or down;
 * dflt when v is absent. */
int kin__simwl_int_or_percent(const json_t *v, int total, int round_up, int dflt);

/* ---- pods ---- */

/* 1 when the pod is neither terminating nor Succeeded/Failed. */
int kin__simwl_pod_active(const json_t *pod);

/* 1 when the pod's Ready condition is True. */
int kin__simwl_pod_ready(const json_t *pod);

/* 1 when the pod has been Ready for min_ready seconds at now; else 0 and,
 * when it is Ready, *at (if non-NULL) gets the time it becomes available. */
int kin__simwl_pod_available(const json_t *pod, json_int_t min_ready, time_t now, time_t *at);

/* A new Pod from a PodTemplateSpec: its labels and annotations, its spec,
 * owned by owner_ref (stolen); named name, or generateName gen_name. */
json_t *kin__simwl_pod_from_template(const json_t *tmpl, json_t *owner_ref, const char *name,
                                     const char *gen_name);

/* The phase of the pod ("" when none). */
const char *kin__simwl_pod_phase(const json_t *pod);

/* ---- time: the sim's clock as wall time ---- */

time_t kin__simwl_now(kin__simctl *m);
/* Returns the seconds since the epoch of an RFC 3339 time, -1 if bad. */
time_t kin__simwl_parse_time(const char *s);
void kin__simwl_fmt_time(time_t t, char out[32]);
/* The sim's clock (ms) when the wall time reaches at. */
uint64_t kin__simwl_due_at(kin__simctl *m, uint64_t now_ms, time_t at);

/* ---- writes ---- */

/* Writes status (stolen) as obj's status through the status subresource
 * when it differs; returns the HTTP code (200 as well when equal). */
int kin__simwl_write_status(kin__simctl *m, const char *group, const char *resource,
                            const json_t *obj, json_t *status);

/* Sets cond (stolen; type, status, reason, message) in the conditions
 * array conds as the controllers' SetCondition helpers: unchanged when
 * status and reason are the same; lastTransitionTime kept when only the
 * reason changes; else moved to the end. time_keys says which time
 * fields the kind has: 1 lastUpdateTime+lastTransitionTime (apps), 2
 * lastProbeTime+lastTransitionTime (jobs), 0 lastTransitionTime. */
void kin__simwl_set_condition(json_t *conds, json_t *cond, const char *now, int time_keys);

/* The condition of type in conds (borrowed) or NULL. */
json_t *kin__simwl_condition(const json_t *conds, const char *type);

/* Binds ns/name to node as the pods/binding subresource: spec.nodeName
 * and the PodScheduled condition, in one write that keeps generation.
 * Returns 0, or -1 when the pod is gone, bound or terminating. */
int kin__simwl_bind(kin__simctl *m, const char *ns, const char *name, const char *uid,
                    const char *node);

/* ---- the simulated nodes (kubelet_node.c) ---- */

/* Creates the Nodes kinformer-sim-node-0..count-1 that are missing, Ready,
 * with their status. Failures leave a node out. */
void kin__simwl_nodes_create(kin__simctl *m, int count);

/* 1 when the kubelet runs the pods of node (annotated kinformer.io/sim-node). */
int kin__simwl_node_simulated(const json_t *node);

/* ---- cron schedules (cron.c) ---- */

typedef struct {
  uint64_t minute, hour, dom, month, dow; /* bit i: value i allowed */
  int dom_star, dow_star;                 /* the field began with "*" */
} kin__simwl_cron;

/* Parses a standard 5-field schedule or macro into out; returns 0 or -1. */
int kin__simwl_cron_parse(const char *spec, kin__simwl_cron *out);

/* The first scheduled time after after (UTC), -1 when none in 5 years. */
time_t kin__simwl_cron_next(const kin__simwl_cron *c, time_t after);

/* The template hash of apps/v1 (rand.SafeEncodeString of a 32-bit
 * FNV-1a): here of the template's canonical JSON and collision count. */
void kin__simwl_template_hash(const json_t *tmpl, json_int_t collision, char out[16]);

#endif
