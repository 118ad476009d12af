/* http_table.c -- server-side Table output (k8s.io/apiserver
 * handlers/response.go asTable, the printers of
 * pkg/printers/internalversion for the built-ins, the default
 * TableConvertor of k8s.io/apiserver registry/rest/table.go and
 * apiextensions' tableconvertor for custom resources).
 *
 * A GET, LIST or WATCH whose Accept header asks first for
 * `application/json;as=Table;v=v1|v1beta1;g=meta.k8s.io` gets a
 * meta.k8s.io Table. Column definitions are kube-apiserver v1.36.3's,
 * captured from it with curl (names, types, formats, descriptions and
 * priorities byte for byte); the cells follow its printers, wide columns
 * included, as the server always prints them (kubectl hides priority > 0
 * columns unless -o wide). includeObject: Metadata (default:
 * PartialObjectMetadata), Object, None. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "http_int.h"
#include "kin.h"

typedef struct {
  const char *name, *type, *format, *description;
  int priority;
} table_col;

#define D_NAME "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
#define D_AGE "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
static const table_col pod_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.", 0},
    {"Status", "string", "", "The aggregate status of the containers in this pod.", 0},
    {"Restarts", "string", "", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.", 0},
    {"Age", "string", "", D_AGE, 0},
    {"IP", "string", "", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.", 1},
    {"Node", "string", "", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename", 1},
    {"Nominated Node", "string", "", "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.", 1},
    {"Readiness Gates", "string", "", "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates", 1},
    {NULL, NULL, NULL, NULL, 0}};
static const table_col configmap_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Data", "string", "", "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.", 0},
    {"Age", "string", "", D_AGE, 0},
    {NULL, NULL, NULL, NULL, 0}};
static const table_col secret_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Type", "string", "", "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types", 0},
    {"Data", "string", "", "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4", 0},
    {"Age", "string", "", D_AGE, 0},
    {NULL, NULL, NULL, NULL, 0}};
static const table_col service_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Type", "string", "", "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types", 0},
    {"Cluster-IP", "string", "", "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies", 0},
    {"External-IP", "string", "", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.", 0},
    {"Port(s)", "string", "", "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies", 0},
    {"Age", "string", "", D_AGE, 0},
    {"Selector", "string", "", "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/", 1},
    {NULL, NULL, NULL, NULL, 0}};
static const table_col serviceaccount_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Age", "string", "", D_AGE, 0},
    {NULL, NULL, NULL, NULL, 0}};
static const table_col deployment_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Ready", "string", "", "Number of the pod with ready state", 0},
    {"Up-to-date", "string", "", "Total number of non-terminating pods targeted by this deployment that have the desired template spec.", 0},
    {"Available", "string", "", "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.", 0},
    {"Age", "string", "", D_AGE, 0},
    {"Containers", "string", "", "Names of each container in the template.", 1},
    {"Images", "string", "", "Images referenced by each container in the template.", 1},
    {"Selector", "string", "", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.", 1},
    {NULL, NULL, NULL, NULL, 0}};
static const table_col replicaset_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Desired", "integer", "", "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset", 0},
    {"Current", "integer", "", "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset", 0},
    {"Ready", "integer", "", "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.", 0},
    {"Age", "string", "", D_AGE, 0},
    {"Containers", "string", "", "Names of each container in the template.", 1},
    {"Images", "string", "", "Images referenced by each container in the template.", 1},
    {"Selector", "string", "", "Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors", 1},
    {NULL, NULL, NULL, NULL, 0}};
static const table_col statefulset_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Ready", "string", "", "Number of the pod with ready state", 0},
    {"Age", "string", "", D_AGE, 0},
    {"Containers", "string", "", "Names of each container in the template.", 1},
    {"Images", "string", "", "Images referenced by each container in the template.", 1},
    {NULL, NULL, NULL, NULL, 0}};
static const table_col daemonset_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Desired", "integer", "", "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/", 0},
    {"Current", "integer", "", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/", 0},
    {"Ready", "integer", "", "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.", 0},
    {"Up-to-date", "integer", "", "The total number of nodes that are running updated daemon pod", 0},
    {"Available", "integer", "", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)", 0},
    {"Node Selector", "string", "", "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/", 0},
    {"Age", "string", "", D_AGE, 0},
    {"Containers", "string", "", "Names of each container in the template.", 1},
    {"Images", "string", "", "Images referenced by each container in the template.", 1},
    {"Selector", "string", "", "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors", 1},
    {NULL, NULL, NULL, NULL, 0}};
static const table_col lease_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Holder", "string", "", "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.", 0},
    {"Age", "string", "", D_AGE, 0},
    {NULL, NULL, NULL, NULL, 0}};
static const table_col event_cols[] = {
    {"Last Seen", "string", "", "The time at which the most recent occurrence of this event was recorded.", 0},
    {"Type", "string", "", "Type of this event (Normal, Warning), new types could be added in the future", 0},
    {"Reason", "string", "", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.", 0},
    {"Object", "string", "", "The object that this event is about.", 0},
    {"Subobject", "string", "", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.", 1},
    {"Source", "string", "", "The component reporting this event. Should be a short machine understandable string.", 1},
    {"Message", "string", "", "A human-readable description of the status of this operation.", 0},
    {"First Seen", "string", "", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)", 1},
    {"Count", "string", "", "The number of times this event has occurred.", 1},
    {"Name", "string", "name", D_NAME, 1},
    {NULL, NULL, NULL, NULL, 0}};
static const table_col namespace_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Status", "string", "", "The status of the namespace", 0},
    {"Age", "string", "", D_AGE, 0},
    {NULL, NULL, NULL, NULL, 0}};
static const table_col node_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Status", "string", "", "The status of the node", 0},
    {"Roles", "string", "", "The roles of the node", 0},
    {"Age", "string", "", D_AGE, 0},
    {"Version", "string", "", "Kubelet Version reported by the node.", 0},
    {"Internal-IP", "string", "", "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).", 1},
    {"External-IP", "string", "", "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).", 1},
    {"OS-Image", "string", "", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", 1},
    {"Kernel-Version", "string", "", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1},
    {"Container-Runtime", "string", "", "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).", 1},
    {NULL, NULL, NULL, NULL, 0}};
static const table_col dflt_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Created At", "date", "", D_AGE, 0},
    {NULL, NULL, NULL, NULL, 0}};

/* ---- helpers ---- */

static const char *str_at(const json_t *o, const char *path) {
  /* path: dot-separated keys */
  char key[128];
  const json_t *cur = o;
  while (cur && *path) {
    const char *dot = strchr(path, '.');
    size_t n = dot ? (size_t)(dot - path) : strlen(path);
    if (n >= sizeof(key)) return NULL;
    memcpy(key, path, n);
    key[n] = 0;
    cur = json_object_get(cur, key);
    path += n + (dot ? 1 : 0);
  }
  return json_is_string(cur) ? json_string_value(cur) : NULL;
}

static const json_t *at(const json_t *o, const char *path) {
  char key[128];
  const json_t *cur = o;
  while (cur && *path) {
    const char *dot = strchr(path, '.');
    size_t n = dot ? (size_t)(dot - path) : strlen(path);
    if (n >= sizeof(key)) return NULL;
    memcpy(key, path, n);
    key[n] = 0;
    cur = json_object_get(cur, key);
    path += n + (dot ? 1 : 0);
  }
  return cur;
}

static long long int_at(const json_t *o, const char *path) {
  const json_t *v = at(o, path);
  return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

static const char *or_default(const char *s, const char *d) { return s && *s ? s : d; }

/* Parses an RFC 3339 time (Z or an offset, optional fraction); 0 when
 * absent or malformed. */
static int parse_time(const char *s, time_t *out) {
  if (!s || !*s) return 0;
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if (!p) return 0;
  if (*p == '.')
    for (p++; *p >= '0' && *p <= '9'; p++) {
    }
  time_t t = timegm(&tm);
  if (*p == '+' || *p == '-') {
    int hh = 0, mm = 0;
    if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2) return 0;
    long off = (hh * 60L + mm) * 60L;
    t = *p == '+' ? t - off : t + off;
  } else if (*p != 'Z' && *p != 'z') {
    return 0;
  }
  *out = t;
  return 1;
}

/* duration.HumanDuration of k8s.io/apimachinery (seconds). */
void kin__sim_human_duration(long long secs, char *buf, size_t cap) {
  if (secs < -1) {
    snprintf(buf, cap, "<invalid>");
    return;
  }
  if (secs < 0) {
    snprintf(buf, cap, "0s");
    return;
  }
  if (secs < 120) {
    snprintf(buf, cap, "%llds", secs);
    return;
  }
  long long minutes = secs / 60;
  if (minutes < 10) {
    long long s = secs % 60;
    if (s == 0)
      snprintf(buf, cap, "%lldm", minutes);
    else
      snprintf(buf, cap, "%lldm%llds", minutes, s);
    return;
  }
  if (minutes < 60 * 3) {
    snprintf(buf, cap, "%lldm", minutes);
    return;
  }
  long long hours = secs / 3600;
  if (hours < 8) {
    long long m = minutes % 60;
    if (m == 0)
      snprintf(buf, cap, "%lldh", hours);
    else
      snprintf(buf, cap, "%lldh%lldm", hours, m);
  } else if (hours < 48) {
    snprintf(buf, cap, "%lldh", hours);
  } else if (hours < 24 * 8) {
    long long h = hours % 24;
    if (h == 0)
      snprintf(buf, cap, "%lldd", hours / 24);
    else
      snprintf(buf, cap, "%lldd%lldh", hours / 24, h);
  } else if (hours < 24 * 365 * 2) {
    snprintf(buf, cap, "%lldd", hours / 24);
  } else if (hours < 24 * 365 * 8) {
    long long dy = (hours / 24) % 365;
    if (dy == 0)
      snprintf(buf, cap, "%lldy", hours / 24 / 365);
    else
      snprintf(buf, cap, "%lldy%lldd", hours / 24 / 365, dy);
  } else {
    snprintf(buf, cap, "%lldy", hours / 24 / 365);
  }
}

/* translateTimestampSince: "<unknown>" for a zero time. */
static json_t *since(const char *ts, time_t now) {
  time_t t;
  if (!parse_time(ts, &t)) return json_string("<unknown>");
  char buf[32];
  kin__sim_human_duration((long long)(now - t), buf, sizeof(buf));
  return json_string(buf);
}

static json_t *age(const json_t *obj, time_t now) {
  return since(str_at(obj, "metadata.creationTimestamp"), now);
}

static json_t *name_of(const json_t *obj) {
  return json_string(or_default(str_at(obj, "metadata.name"), ""));
}

/* labels.FormatLabels: sorted k=v pairs, "<none>" when empty. */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}
static json_t *format_labels(const json_t *m) {
  size_t n = json_object_size(m);
  if (!n) return json_string("<none>");
  const char **keys = calloc(n, sizeof(*keys));
  if (!keys) return NULL;
  size_t i = 0;
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)m, k, v) keys[i++] = k;
  qsort(keys, n, sizeof(*keys), cmp_str);
  kin__buf b = {0};
  for (i = 0; i < n; i++) {
    const char *val = json_string_value(json_object_get(m, keys[i]));
    kin__buf_printf(&b, "%s%s=%s", i ? "," : "", keys[i], val ? val : "");
  }
  free(keys);
  json_t *s = json_stringn(b.p ? b.p : "", b.len);
  free(b.p);
  return s;
}

/* layoutContainerCells: names and images joined by commas. */
static void container_cells(json_t *cells, const json_t *containers) {
  kin__buf names = {0}, images = {0};
  size_t i;
  json_t *c;
  json_array_foreach((json_t *)containers, i, c) {
    kin__buf_printf(&names, "%s%s", i ? "," : "", or_default(kin__sim_jstr(c, "name", NULL), ""));
    kin__buf_printf(&images, "%s%s", i ? "," : "", or_default(kin__sim_jstr(c, "image", NULL), ""));
  }
  json_array_append_new(cells, json_stringn(names.p ? names.p : "", names.len));
  json_array_append_new(cells, json_stringn(images.p ? images.p : "", images.len));
  free(names.p);
  free(images.p);
}

/* selector.String() of metav1.LabelSelectorAsSelector; FormatLabelSelector
 * puts "<none>" for an empty one when none_if_empty. */
static json_t *selector_cell(const json_t *sel, int none_if_empty) {
  char *s = kin__sim_label_selector_string(sel);
  json_t *v = json_string(s && *s ? s : none_if_empty ? "<none>" : "");
  free(s);
  return v;
}

/* ---- the printers (pkg/printers/internalversion/printers.go) ---- */

typedef void (*row_fn)(json_t *cells, json_t *row, const json_t *obj, time_t now);

static int is_true(const json_t *v) { return json_is_true(v); }

static void pod_row(json_t *cells, json_t *row, const json_t *pod, time_t now) {
  const json_t *spec = json_object_get(pod, "spec"), *st = json_object_get(pod, "status");
  long long restarts = 0, ri_restarts = 0;
  size_t total = json_array_size(json_object_get(spec, "containers"));
  long long ready = 0;
  time_t last_restart = 0, ri_last_restart = 0;
  char reason[256];
  const char *phase = or_default(kin__sim_jstr(st, "phase", NULL), "");
  snprintf(reason, sizeof(reason), "%s", or_default(kin__sim_jstr(st, "reason", NULL), phase));
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(st, "conditions"), i, c) {
    const char *t = kin__sim_jstr(c, "type", NULL), *r = kin__sim_jstr(c, "reason", NULL);
    if (t && r && !strcmp(t, "PodScheduled") && !strcmp(r, "SchedulingGated"))
      snprintf(reason, sizeof(reason), "SchedulingGated");
  }
  if (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")) {
    int ok = !strcmp(phase, "Succeeded");
    json_object_set_new(row, "conditions",
                        json_pack("[{s:s, s:s, s:s, s:s}]", "type", "Completed", "status", "True",
                                  "reason", phase, "message",
                                  ok ? "The pod has completed successfully." : "The pod failed."));
  }
  const json_t *inits = json_object_get(spec, "initContainers");
  json_array_foreach((json_t *)inits, i, c) {
    const char *rp = kin__sim_jstr(c, "restartPolicy", NULL);
    if (rp && !strcmp(rp, "Always")) total++;
  }
  int initializing = 0;
  const json_t *ics = json_object_get(st, "initContainerStatuses");
  json_array_foreach((json_t *)ics, i, c) {
    restarts += int_at(c, "restartCount");
    time_t t;
    int restartable = 0;
    size_t j;
    json_t *ic;
    json_array_foreach((json_t *)inits, j, ic) {
      const char *n = kin__sim_jstr(ic, "name", NULL), *rp = kin__sim_jstr(ic, "restartPolicy", NULL);
      if (n && rp && !strcmp(n, or_default(kin__sim_jstr(c, "name", NULL), "")) &&
          !strcmp(rp, "Always"))
        restartable = 1;
    }
    if (parse_time(str_at(c, "lastState.terminated.finishedAt"), &t)) {
      if (t > last_restart) last_restart = t;
      if (restartable) {
        ri_restarts += int_at(c, "restartCount");
        if (t > ri_last_restart) ri_last_restart = t;
      }
    } else if (restartable) {
      ri_restarts += int_at(c, "restartCount");
    }
    const json_t *term = at(c, "state.terminated"), *wait = at(c, "state.waiting");
    if (term && int_at(term, "exitCode") == 0) continue;
    if (restartable && is_true(json_object_get(c, "started"))) {
      if (is_true(json_object_get(c, "ready"))) ready++;
      continue;
    }
    if (term) {
      const char *r = kin__sim_jstr(term, "reason", NULL);
      if (r && *r)
        snprintf(reason, sizeof(reason), "Init:%s", r);
      else if (int_at(term, "signal"))
        snprintf(reason, sizeof(reason), "Init:Signal:%lld", int_at(term, "signal"));
      else
        snprintf(reason, sizeof(reason), "Init:ExitCode:%lld", int_at(term, "exitCode"));
    } else if (wait && kin__sim_jstr(wait, "reason", NULL) && *kin__sim_jstr(wait, "reason", NULL) &&
               strcmp(kin__sim_jstr(wait, "reason", NULL), "PodInitializing")) {
      snprintf(reason, sizeof(reason), "Init:%s", kin__sim_jstr(wait, "reason", NULL));
    } else {
      snprintf(reason, sizeof(reason), "Init:%zu/%zu", i, json_array_size(inits));
    }
    initializing = 1;
    break;
  }
  int init_true = 0;
  json_array_foreach(json_object_get(st, "conditions"), i, c) {
    const char *t = kin__sim_jstr(c, "type", NULL), *s = kin__sim_jstr(c, "status", NULL);
    if (t && s && !strcmp(t, "Initialized") && !strcmp(s, "True")) init_true = 1;
  }
  if (!initializing || init_true) {
    restarts = ri_restarts;
    last_restart = ri_last_restart;
    int has_running = 0;
    char error_reason[256] = "";
    const json_t *cs = json_object_get(st, "containerStatuses");
    for (size_t k = json_array_size(cs); k-- > 0;) {
      c = json_array_get(cs, k);
      restarts += int_at(c, "restartCount");
      time_t t;
      if (parse_time(str_at(c, "lastState.terminated.finishedAt"), &t) && t > last_restart)
        last_restart = t;
      const json_t *term = at(c, "state.terminated"), *wait = at(c, "state.waiting");
      const char *wr = kin__sim_jstr(wait, "reason", NULL);
      if (wait && wr && *wr) {
        snprintf(reason, sizeof(reason), "%s", wr);
      } else if (term) {
        const char *r = kin__sim_jstr(term, "reason", NULL);
        if (r && *r)
          snprintf(reason, sizeof(reason), "%s", r);
        else if (int_at(term, "signal"))
          snprintf(reason, sizeof(reason), "Signal:%lld", int_at(term, "signal"));
        else
          snprintf(reason, sizeof(reason), "ExitCode:%lld", int_at(term, "exitCode"));
        if (int_at(term, "exitCode")) snprintf(error_reason, sizeof(error_reason), "%s", reason);
      } else if (is_true(json_object_get(c, "ready")) && at(c, "state.running")) {
        has_running = 1;
        ready++;
      }
    }
    if (!strcmp(reason, "Completed")) {
      int pod_ready = 0;
      json_array_foreach(json_object_get(st, "conditions"), i, c) {
        const char *t = kin__sim_jstr(c, "type", NULL), *s = kin__sim_jstr(c, "status", NULL);
        if (t && s && !strcmp(t, "Ready") && !strcmp(s, "True")) pod_ready = 1;
      }
      if (has_running && pod_ready)
        snprintf(reason, sizeof(reason), "Running");
      else if (*error_reason)
        snprintf(reason, sizeof(reason), "%s", error_reason);
      else if (has_running)
        snprintf(reason, sizeof(reason), "NotReady");
    }
  }
  if (str_at(pod, "metadata.deletionTimestamp")) {
    const char *sr = kin__sim_jstr(st, "reason", NULL);
    if (sr && !strcmp(sr, "NodeLost"))
      snprintf(reason, sizeof(reason), "Unknown");
    else if (strcmp(phase, "Succeeded") && strcmp(phase, "Failed"))
      snprintf(reason, sizeof(reason), "Terminating");
  }
  char rs[64], buf[32];
  if (restarts && last_restart) {
    kin__sim_human_duration((long long)(now - last_restart), buf, sizeof(buf));
    snprintf(rs, sizeof(rs), "%lld (%s ago)", restarts, buf);
  } else {
    snprintf(rs, sizeof(rs), "%lld", restarts);
  }
  char readys[64];
  snprintf(readys, sizeof(readys), "%lld/%zu", ready, total);
  json_array_append_new(cells, name_of(pod));
  json_array_append_new(cells, json_string(readys));
  json_array_append_new(cells, json_string(reason));
  json_array_append_new(cells, json_string(rs));
  json_array_append_new(cells, age(pod, now));
  const char *ip = kin__sim_jstr(json_array_get(json_object_get(st, "podIPs"), 0), "ip", NULL);
  json_array_append_new(cells, json_string(or_default(ip, "<none>")));
  json_array_append_new(cells, json_string(or_default(kin__sim_jstr(spec, "nodeName", NULL), "<none>")));
  json_array_append_new(cells,
                        json_string(or_default(kin__sim_jstr(st, "nominatedNodeName", NULL), "<none>")));
  const json_t *gates = json_object_get(spec, "readinessGates");
  if (json_array_size(gates)) {
    size_t trues = 0, j;
    json_t *g;
    json_array_foreach((json_t *)gates, j, g) {
      const char *ct = kin__sim_jstr(g, "conditionType", NULL);
      json_array_foreach(json_object_get(st, "conditions"), i, c) {
        const char *t = kin__sim_jstr(c, "type", NULL);
        if (ct && t && !strcmp(ct, t)) {
          const char *s = kin__sim_jstr(c, "status", NULL);
          if (s && !strcmp(s, "True")) trues++;
          break;
        }
      }
    }
    snprintf(buf, sizeof(buf), "%zu/%zu", trues, json_array_size(gates));
    json_array_append_new(cells, json_string(buf));
  } else {
    json_array_append_new(cells, json_string("<none>"));
  }
}

static void configmap_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  json_array_append_new(cells, name_of(o));
  json_array_append_new(cells, json_integer((json_int_t)(json_object_size(json_object_get(o, "data")) +
                                                         json_object_size(json_object_get(o, "binaryData")))));
  json_array_append_new(cells, age(o, now));
}

static void secret_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  json_array_append_new(cells, name_of(o));
  json_array_append_new(cells, json_string(or_default(kin__sim_jstr(o, "type", NULL), "")));
  json_array_append_new(cells, json_integer((json_int_t)json_object_size(json_object_get(o, "data"))));
  json_array_append_new(cells, age(o, now));
}

static json_t *join_strings(const json_t *arr) {
  kin__buf b = {0};
  size_t i;
  json_t *v;
  json_array_foreach((json_t *)arr, i, v)
      kin__buf_printf(&b, "%s%s", i ? "," : "", or_default(json_string_value(v), ""));
  json_t *s = json_stringn(b.p ? b.p : "", b.len);
  free(b.p);
  return s;
}

static void service_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  const json_t *spec = json_object_get(o, "spec");
  const char *type = or_default(kin__sim_jstr(spec, "type", NULL), "");
  json_array_append_new(cells, name_of(o));
  json_array_append_new(cells, json_string(type));
  const char *cip = json_string_value(json_array_get(json_object_get(spec, "clusterIPs"), 0));
  json_array_append_new(cells, json_string(or_default(cip, "<none>")));
  const json_t *eips = json_object_get(spec, "externalIPs");
  json_t *ext;
  if (!strcmp(type, "ClusterIP") || !strcmp(type, "NodePort")) {
    ext = json_array_size(eips) ? join_strings(eips) : json_string("<none>");
  } else if (!strcmp(type, "LoadBalancer")) {
    /* the sorted set of ingress IPs (or hostnames), then externalIPs */
    json_t *all = json_array();
    size_t i;
    json_t *ing;
    json_array_foreach(at(o, "status.loadBalancer.ingress"), i, ing) {
      const char *a = or_default(kin__sim_jstr(ing, "ip", NULL), kin__sim_jstr(ing, "hostname", NULL));
      if (a && *a) json_array_append_new(all, json_string(a));
    }
    size_t n = json_array_size(all);
    const char **v = calloc(n ? n : 1, sizeof(*v));
    for (i = 0; v && i < n; i++) v[i] = json_string_value(json_array_get(all, i));
    if (v) qsort(v, n, sizeof(*v), cmp_str);
    json_t *sorted = json_array();
    for (i = 0; v && i < n; i++)
      if (!i || strcmp(v[i], v[i - 1])) json_array_append_new(sorted, json_string(v[i]));
    free(v);
    json_decref(all);
    json_array_extend(sorted, (json_t *)eips);
    ext = json_array_size(sorted) ? join_strings(sorted) : json_string("<pending>");
    json_decref(sorted);
  } else if (!strcmp(type, "ExternalName")) {
    ext = json_string(or_default(kin__sim_jstr(spec, "externalName", NULL), ""));
  } else {
    ext = json_string("<unknown>");
  }
  json_array_append_new(cells, ext);
  kin__buf b = {0};
  size_t i;
  json_t *p;
  json_array_foreach(json_object_get(spec, "ports"), i, p) {
    const char *proto = or_default(kin__sim_jstr(p, "protocol", NULL), "");
    if (int_at(p, "nodePort") > 0)
      kin__buf_printf(&b, "%s%lld:%lld/%s", i ? "," : "", int_at(p, "port"), int_at(p, "nodePort"), proto);
    else
      kin__buf_printf(&b, "%s%lld/%s", i ? "," : "", int_at(p, "port"), proto);
  }
  json_array_append_new(cells, b.len ? json_stringn(b.p, b.len) : json_string("<none>"));
  free(b.p);
  json_array_append_new(cells, age(o, now));
  json_array_append_new(cells, format_labels(json_object_get(spec, "selector")));
}

static void serviceaccount_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  json_array_append_new(cells, name_of(o));
  json_array_append_new(cells, age(o, now));
}

static void deployment_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  char buf[64];
  snprintf(buf, sizeof(buf), "%lld/%lld", int_at(o, "status.readyReplicas"), int_at(o, "spec.replicas"));
  json_array_append_new(cells, name_of(o));
  json_array_append_new(cells, json_string(buf));
  json_array_append_new(cells, json_integer(int_at(o, "status.updatedReplicas")));
  json_array_append_new(cells, json_integer(int_at(o, "status.availableReplicas")));
  json_array_append_new(cells, age(o, now));
  container_cells(cells, at(o, "spec.template.spec.containers"));
  json_array_append_new(cells, selector_cell(at(o, "spec.selector"), 0));
}

static void replicaset_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  json_array_append_new(cells, name_of(o));
  json_array_append_new(cells, json_integer(int_at(o, "spec.replicas")));
  json_array_append_new(cells, json_integer(int_at(o, "status.replicas")));
  json_array_append_new(cells, json_integer(int_at(o, "status.readyReplicas")));
  json_array_append_new(cells, age(o, now));
  container_cells(cells, at(o, "spec.template.spec.containers"));
  json_array_append_new(cells, selector_cell(at(o, "spec.selector"), 1));
}

static void statefulset_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  char buf[64];
  snprintf(buf, sizeof(buf), "%lld/%lld", int_at(o, "status.readyReplicas"), int_at(o, "spec.replicas"));
  json_array_append_new(cells, name_of(o));
  json_array_append_new(cells, json_string(buf));
  json_array_append_new(cells, age(o, now));
  container_cells(cells, at(o, "spec.template.spec.containers"));
}

static void daemonset_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  static const char *const f[] = {"desiredNumberScheduled", "currentNumberScheduled",
                                  "numberReady", "updatedNumberScheduled", "numberAvailable"};
  json_array_append_new(cells, name_of(o));
  for (size_t i = 0; i < 5; i++)
    json_array_append_new(cells, json_integer(int_at(json_object_get(o, "status"), f[i])));
  json_array_append_new(cells, format_labels(at(o, "spec.template.spec.nodeSelector")));
  json_array_append_new(cells, age(o, now));
  container_cells(cells, at(o, "spec.template.spec.containers"));
  json_array_append_new(cells, selector_cell(at(o, "spec.selector"), 1));
}

static void lease_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  json_array_append_new(cells, name_of(o));
  json_array_append_new(cells, json_string(or_default(str_at(o, "spec.holderIdentity"), "")));
  json_array_append_new(cells, age(o, now));
}

static void namespace_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  json_array_append_new(cells, name_of(o));
  json_array_append_new(cells, json_string(or_default(str_at(o, "status.phase"), "")));
  json_array_append_new(cells, age(o, now));
}

static void node_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  kin__buf st = {0};
  size_t i;
  json_t *c;
  json_array_foreach(at(o, "status.conditions"), i, c) {
    const char *t = kin__sim_jstr(c, "type", NULL), *s = kin__sim_jstr(c, "status", NULL);
    if (t && !strcmp(t, "Ready")) {
      st.len = 0; /* the last Ready condition wins, as the printer's map */
      kin__buf_printf(&st, "%s", s && !strcmp(s, "True") ? "Ready" : "NotReady");
    }
  }
  if (!st.len) kin__buf_printf(&st, "Unknown");
  if (is_true(at(o, "spec.unschedulable"))) kin__buf_printf(&st, ",SchedulingDisabled");
  json_array_append_new(cells, name_of(o));
  json_array_append_new(cells, json_stringn(st.p, st.len));
  free(st.p);
  /* findNodeRoles: node-role.kubernetes.io/<role> labels and
   * kubernetes.io/role, as a sorted set */
  const json_t *labels = at(o, "metadata.labels");
  size_t n = json_object_size(labels), k = 0;
  const char **roles = calloc(n ? n : 1, sizeof(*roles));
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)labels, key, v) {
    if (!roles) break;
    if (!strncmp(key, "node-role.kubernetes.io/", 24) && key[24])
      roles[k++] = key + 24;
    else if (!strcmp(key, "kubernetes.io/role") && json_string_value(v) && *json_string_value(v))
      roles[k++] = json_string_value(v);
  }
  if (roles) qsort(roles, k, sizeof(*roles), cmp_str);
  kin__buf rb = {0};
  for (i = 0; i < k; i++)
    if (!i || strcmp(roles[i], roles[i - 1])) kin__buf_printf(&rb, "%s%s", rb.len ? "," : "", roles[i]);
  free(roles);
  json_array_append_new(cells, rb.len ? json_stringn(rb.p, rb.len) : json_string("<none>"));
  free(rb.p);
  json_array_append_new(cells, age(o, now));
  const json_t *ni = at(o, "status.nodeInfo");
  json_array_append_new(cells, json_string(or_default(kin__sim_jstr(ni, "kubeletVersion", NULL), "")));
  const char *internal = NULL, *external = NULL;
  json_array_foreach(at(o, "status.addresses"), i, c) {
    const char *t = kin__sim_jstr(c, "type", NULL), *a = kin__sim_jstr(c, "address", NULL);
    if (!t || !a) continue;
    if (!internal && !strcmp(t, "InternalIP")) internal = a;
    if (!external && !strcmp(t, "ExternalIP")) external = a;
  }
  json_array_append_new(cells, json_string(or_default(internal, "<none>")));
  json_array_append_new(cells, json_string(or_default(external, "<none>")));
  json_array_append_new(cells, json_string(or_default(kin__sim_jstr(ni, "osImage", NULL), "<unknown>")));
  char kv[512];
  const char *arch = kin__sim_jstr(ni, "architecture", NULL);
  snprintf(kv, sizeof(kv), "%s%s%s%s", or_default(kin__sim_jstr(ni, "kernelVersion", NULL), "<unknown>"),
           arch && *arch ? " (" : "", arch && *arch ? arch : "", arch && *arch ? ")" : "");
  json_array_append_new(cells, json_string(kv));
  json_array_append_new(cells,
                        json_string(or_default(kin__sim_jstr(ni, "containerRuntimeVersion", NULL), "<unknown>")));
}

/* printEvent, for core/v1 Events and events.k8s.io/v1 ones (converted to
 * the internal Event by the server: regarding, note, deprecated*). */
static void event_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  int v1 = json_object_get(o, "involvedObject") || json_object_get(o, "message") ||
           json_object_get(o, "source") || json_object_get(o, "firstTimestamp");
  int newapi = !v1 && (json_object_get(o, "regarding") || json_object_get(o, "note") ||
                       json_object_get(o, "deprecatedSource"));
  const json_t *inv = json_object_get(o, newapi ? "regarding" : "involvedObject");
  const json_t *src = json_object_get(o, newapi ? "deprecatedSource" : "source");
  const char *first_ts = str_at(o, newapi ? "deprecatedFirstTimestamp" : "firstTimestamp");
  const char *last_ts = str_at(o, newapi ? "deprecatedLastTimestamp" : "lastTimestamp");
  long long count = int_at(o, newapi ? "deprecatedCount" : "count");
  const char *msg = or_default(kin__sim_jstr(o, newapi ? "note" : "message", NULL), "");
  time_t t;
  json_t *first = parse_time(first_ts, &t) ? since(first_ts, now) : since(str_at(o, "eventTime"), now);
  json_t *last = parse_time(last_ts, &t) ? since(last_ts, now) : json_incref(first);
  const json_t *series = json_object_get(o, "series");
  if (json_is_object(series)) {
    json_decref(last);
    last = since(kin__sim_jstr(series, "lastObservedTime", NULL), now);
    count = int_at(series, "count");
  } else if (count == 0) {
    count = 1;
  }
  char target[600];
  const char *kind = or_default(kin__sim_jstr(inv, "kind", NULL), "");
  char lk[256];
  size_t i = 0;
  for (; kind[i] && i + 1 < sizeof(lk); i++) lk[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] + 32 : kind[i]);
  lk[i] = 0;
  const char *iname = kin__sim_jstr(inv, "name", NULL);
  if (iname && *iname)
    snprintf(target, sizeof(target), "%s/%s", lk, iname);
  else
    snprintf(target, sizeof(target), "%s", lk);
  const char *comp = or_default(kin__sim_jstr(src, "component", NULL),
                                or_default(kin__sim_jstr(o, "reportingController", NULL), ""));
  const char *host = or_default(kin__sim_jstr(src, "host", NULL),
                                or_default(kin__sim_jstr(o, "reportingInstance", NULL), ""));
  char source[600];
  snprintf(source, sizeof(source), "%s%s%s", comp, *host ? ", " : "", host);
  /* strings.TrimSpace of the message */
  size_t ml = strlen(msg);
  while (ml && strchr(" \t\n\r\v\f", msg[ml - 1])) ml--;
  while (ml && strchr(" \t\n\r\v\f", *msg)) msg++, ml--;
  json_array_append_new(cells, last);
  json_array_append_new(cells, json_string(or_default(kin__sim_jstr(o, "type", NULL), "")));
  json_array_append_new(cells, json_string(or_default(kin__sim_jstr(o, "reason", NULL), "")));
  json_array_append_new(cells, json_string(target));
  json_array_append_new(cells, json_string(or_default(kin__sim_jstr(inv, "fieldPath", NULL), "")));
  json_array_append_new(cells, json_string(source));
  json_array_append_new(cells, json_stringn(msg, ml));
  json_array_append_new(cells, first);
  json_array_append_new(cells, json_integer(count));
  json_array_append_new(cells, name_of(o));
}

/* The default TableConvertor (registry/rest/table.go): Name, Created At
 * (RFC 3339, UTC). */
static void default_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  (void)now;
  json_array_append_new(cells, name_of(o));
  const char *ts = str_at(o, "metadata.creationTimestamp");
  time_t t;
  if (parse_time(ts, &t)) {
    struct tm tm;
    char buf[32];
    gmtime_r(&t, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_array_append_new(cells, json_string(buf));
  } else {
    json_array_append_new(cells, json_null());
  }
}

typedef struct {
  const char *group, *resource;
  const table_col *cols;
  row_fn row;
} printer;

static const printer printers[] = {
    {"", "pods", pod_cols, pod_row},
    {"", "configmaps", configmap_cols, configmap_row},
    {"", "secrets", secret_cols, secret_row},
    {"", "services", service_cols, service_row},
    {"", "serviceaccounts", serviceaccount_cols, serviceaccount_row},
    {"", "namespaces", namespace_cols, namespace_row},
    {"", "nodes", node_cols, node_row},
    {"", "events", event_cols, event_row},
    {"events.k8s.io", "events", event_cols, event_row},
    {"apps", "deployments", deployment_cols, deployment_row},
    {"apps", "replicasets", replicaset_cols, replicaset_row},
    {"apps", "statefulsets", statefulset_cols, statefulset_row},
    {"apps", "daemonsets", daemonset_cols, daemonset_row},
    {"coordination.k8s.io", "leases", lease_cols, lease_row},
};

static const printer *printer_of(const kin__sim_resource *r) {
  for (size_t i = 0; i < sizeof(printers) / sizeof(printers[0]); i++)
    if (!strcmp(printers[i].group, r->group) && !strcmp(printers[i].resource, r->resource))
      return &printers[i];
  return NULL;
}

static json_t *col_json(const char *name, const char *type, const char *format,
                        const char *desc, long long prio) {
  return json_pack("{s:s, s:s, s:s, s:s, s:I}", "name", name, "type", type, "format", format,
                   "description", desc, "priority", (json_int_t)prio);
}

/* ---- custom resources (apiextensions tableconvertor) ---- */

/* 1 when every column of cols has a jsonPath of the form .a.b.c. */
static int simple_paths(const json_t *cols) {
  size_t i;
  json_t *c;
  json_array_foreach((json_t *)cols, i, c) {
    const char *p = kin__sim_jstr(c, "jsonPath", NULL);
    if (!p || p[0] != '.' || !p[1]) return 0;
    for (const char *q = p; *q; q++) {
      if (*q == '.') {
        if (!q[1] || q[1] == '.') return 0;
      } else if (!(*q == '_' || *q == '-' || (*q >= 'a' && *q <= 'z') ||
                   (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9'))) {
        return 0;
      }
    }
  }
  return 1;
}

/* The columns of a custom resource: the CRD version's
 * additionalPrinterColumns when their paths are simple, else Age. */
static json_t *cr_columns(const kin__sim_resource *r) {
  const json_t *pc = r->printer_columns;
  if (json_array_size(pc) && simple_paths(pc)) return json_incref((json_t *)pc);
  return json_pack("[{s:s, s:s, s:s, s:s}]", "name", "Age", "type", "date", "jsonPath",
                   ".metadata.creationTimestamp", "description", D_AGE);
}

static void cr_row(json_t *cells, const json_t *cols, const json_t *o, time_t now) {
  json_array_append_new(cells, name_of(o));
  size_t i;
  json_t *c;
  json_array_foreach((json_t *)cols, i, c) {
    const json_t *v = at(o, kin__sim_jstr(c, "jsonPath", NULL) + 1);
    const char *type = or_default(kin__sim_jstr(c, "type", NULL), "");
    json_t *cell = NULL;
    if (v && !json_is_null(v)) {
      if (!strcmp(type, "string")) {
        if (json_is_string(v))
          cell = json_incref((json_t *)v);
        else if (json_is_integer(v) || json_is_real(v) || json_is_boolean(v) ||
                 json_is_object(v) || json_is_array(v)) {
          char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
          cell = s ? json_string(s) : NULL;
          free(s);
        }
      } else if (!strcmp(type, "integer")) {
        if (json_is_integer(v)) cell = json_incref((json_t *)v);
        else if (json_is_real(v)) cell = json_integer((json_int_t)json_real_value(v));
      } else if (!strcmp(type, "number")) {
        if (json_is_number(v)) cell = json_real(json_number_value(v));
      } else if (!strcmp(type, "boolean")) {
        if (json_is_boolean(v)) cell = json_incref((json_t *)v);
      } else if (!strcmp(type, "date")) {
        time_t t;
        if (json_is_string(v))
          cell = parse_time(json_string_value(v), &t) ? since(json_string_value(v), now)
                                                      : json_string("<invalid>");
      }
    }
    json_array_append_new(cells, cell ? cell : json_null());
  }
}

/* ---- conversion ---- */

const char *kin__sim_table_accept(const char *accept) {
  if (!accept) return NULL;
  const char *p = accept;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char mr[512];
    if (n >= sizeof(mr)) n = sizeof(mr) - 1;
    memcpy(mr, p, n);
    mr[n] = 0;
    p += n + (end ? 1 : 0);
    char *save = NULL, *tok = strtok_r(mr, ";", &save);
    if (!tok) continue;
    while (*tok == ' ') tok++;
    size_t tl = strlen(tok);
    while (tl && tok[tl - 1] == ' ') tok[--tl] = 0;
    int json = !strcasecmp(tok, "application/json");
    if (!json && strcasecmp(tok, "*/*") && strcasecmp(tok, "application/*")) continue;
    const char *as = NULL, *v = NULL, *g = NULL;
    while ((tok = strtok_r(NULL, ";", &save))) {
      while (*tok == ' ') tok++;
      char *eq = strchr(tok, '=');
      if (!eq) continue;
      *eq = 0;
      char *val = eq + 1;
      size_t vl = strlen(val);
      while (vl && val[vl - 1] == ' ') val[--vl] = 0;
      if (!strcmp(tok, "as")) as = val;
      else if (!strcmp(tok, "v")) v = val;
      else if (!strcmp(tok, "g")) g = val;
    }
    if (!as) return NULL; /* plain JSON comes first */
    if (!strcmp(as, "Table") && g && !strcmp(g, "meta.k8s.io") && v &&
        (!strcmp(v, "v1") || !strcmp(v, "v1beta1")))
      return !strcmp(v, "v1") ? "v1" : "v1beta1";
  }
  return NULL;
}

int kin__sim_table_include_check(const char *include, kin__sim_result *err) {
  if (!include || !*include || !strcmp(include, "Metadata") || !strcmp(include, "Object") ||
      !strcmp(include, "None"))
    return 0;
  kin__sim_err(err, 400, "BadRequest", NULL,
               "Unable to convert to Table as requested: includeObject: Invalid value: \"%s\": "
               "must be 'Metadata', 'Object', 'None', or empty", include);
  return -1;
}

static json_t *row_object(const kin__sim_resource *r, const json_t *o, const char *gv,
                          const char *include) {
  if (include && !strcmp(include, "None")) return json_null();
  if (include && !strcmp(include, "Object")) {
    json_t *c = json_copy((json_t *)o);
    if (!c) return NULL;
    char av[320];
    kin__sim_api_version(r, av, sizeof(av));
    json_object_set_new(c, "kind", json_string(r->kind));
    json_object_set_new(c, "apiVersion", json_string(av));
    return c;
  }
  char av[64];
  snprintf(av, sizeof(av), "meta.k8s.io/%s", gv);
  json_t *md = json_object_get(o, "metadata");
  return json_pack("{s:s, s:s, s:O}", "kind", "PartialObjectMetadata", "apiVersion", av,
                   "metadata", md ? md : json_object());
}

json_t *kin__sim_table_convert(const kin__sim_resource *r, const json_t *body, int is_list,
                               const char *gv, const char *include, int headers, time_t now) {
  const printer *p = r->crd_name ? NULL : printer_of(r);
  json_t *crcols = r->crd_name ? cr_columns(r) : NULL;
  json_t *t = json_object();
  char av[64];
  snprintf(av, sizeof(av), "meta.k8s.io/%s", gv);
  json_object_set_new(t, "kind", json_string("Table"));
  json_object_set_new(t, "apiVersion", json_string(av));
  json_t *md = json_object();
  const json_t *bmd = json_object_get(body, "metadata");
  const char *rv = kin__sim_jstr(bmd, "resourceVersion", NULL);
  if (rv && *rv) json_object_set_new(md, "resourceVersion", json_string(rv));
  if (is_list) {
    const char *cont = kin__sim_jstr(bmd, "continue", NULL);
    if (cont && *cont) json_object_set_new(md, "continue", json_string(cont));
    json_t *ric = json_object_get(bmd, "remainingItemCount");
    if (ric) json_object_set(md, "remainingItemCount", ric);
  }
  json_object_set_new(t, "metadata", md);
  json_t *cols = json_array();
  if (crcols) {
    json_array_append_new(cols, col_json("Name", "string", "name", D_NAME, 0));
    size_t i;
    json_t *c;
    json_array_foreach(crcols, i, c) {
      const char *desc = kin__sim_jstr(c, "description", NULL);
      char dd[600];
      if (!desc || !*desc) {
        snprintf(dd, sizeof(dd), "Custom resource definition column (in JSONPath format): %s",
                 or_default(kin__sim_jstr(c, "jsonPath", NULL), ""));
        desc = dd;
      }
      json_array_append_new(cols, col_json(or_default(kin__sim_jstr(c, "name", NULL), ""),
                                           or_default(kin__sim_jstr(c, "type", NULL), ""),
                                           or_default(kin__sim_jstr(c, "format", NULL), ""), desc,
                                           int_at(c, "priority")));
    }
  } else {
    for (const table_col *c = p ? p->cols : dflt_cols; c->name; c++)
      json_array_append_new(cols, col_json(c->name, c->type, c->format, c->description, c->priority));
  }
  json_object_set_new(t, "columnDefinitions", headers ? cols : json_null());
  if (!headers) json_decref(cols);
  json_t *rows = json_array();
  json_t *single = NULL;
  const json_t *items = is_list ? json_object_get(body, "items") : (single = json_pack("[O]", body));
  size_t i;
  json_t *o;
  json_array_foreach((json_t *)items, i, o) {
    json_t *row = json_object();
    json_t *cells = json_array();
    json_object_set_new(row, "cells", cells);
    if (crcols)
      cr_row(cells, crcols, o, now);
    else
      (p ? p->row : default_row)(cells, row, o, now);
    json_object_set_new(row, "object", row_object(r, o, gv, include));
    json_array_append_new(rows, row);
  }
  json_decref(single);
  json_decref(crcols);
  json_object_set_new(t, "rows", rows);
  return t;
}

int kin__sim_table_watch_lines(const kin__sim_resource *r, const char *gv, const char *include,
                               int *headers_sent, kin__buf *buf, size_t from) {
  if (from >= buf->len) return 0;
  kin__buf out = {0};
  time_t now = time(NULL);
  const char *p = buf->p + from, *end = buf->p + buf->len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    json_error_t jerr;
    json_t *ev = json_loadb(p, n, 0, &jerr);
    const char *type = kin__sim_jstr(ev, "type", NULL);
    json_t *obj = json_object_get(ev, "object");
    if (ev && type && obj && strcmp(type, "ERROR") && strcmp(type, "BOOKMARK")) {
      json_t *t = kin__sim_table_convert(r, obj, 0, gv, include, !*headers_sent, now);
      *headers_sent = 1;
      json_object_set_new(ev, "object", t);
      char *s = json_dumps(ev, JSON_COMPACT);
      if (s) kin__buf_add(&out, s, strlen(s));
      free(s);
      kin__buf_add(&out, "\n", 1);
    } else {
      kin__buf_add(&out, p, n + (nl ? 1 : 0));
    }
    json_decref(ev);
    p += n + (nl ? 1 : 0);
  }
  buf->len = from;
  int rc = kin__buf_add(buf, out.p ? out.p : "", out.len);
  free(out.p);
  return rc;
}

int kin__sim_table_respond(kin__sim_req *req, const kin__sim_resource *r, const json_t *body,
                           int is_list, enum MHD_Result *ret) {
  const char *gv = kin__sim_table_accept(
      MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Accept"));
  if (!gv) return 0;
  const char *include = kin__sim_query(req, "includeObject");
  kin__sim_result err = {0, NULL};
  if (kin__sim_table_include_check(include, &err)) {
    *ret = kin__sim_respond_result(req, &err);
    return 1;
  }
  *ret = kin__sim_respond_json(req, 200, kin__sim_table_convert(r, body, is_list, gv, include, 1,
                                                                time(NULL)));
  return 1;
}
