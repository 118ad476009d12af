/* kubelet_node.c -- the simulated Nodes the "kubelet" controller
 * registers at start (wl.h): kinformer-sim-node-0.. with the labels,
 * capacity, conditions and nodeInfo a kubelet reports, annotated
 * kinformer.io/sim-node so the kubelet runs their pods, each with its
 * Lease in kube-node-lease. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "wl.h"

/* The status a healthy kubelet posts for node i at now. */
static json_t *node_status(int i, const char *name, const char *now) {
  char ip[32];
  snprintf(ip, sizeof(ip), "10.0.%d.%d", i / 250, i % 250 + 2);
  json_t *res = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "cpu", "32", "ephemeral-storage",
                          "1Ti", "hugepages-1Gi", "0", "hugepages-2Mi", "0", "memory", "256Gi",
                          "pods", "110");
  json_t *conds = json_array();
  static const char *const c[4][4] = {
      {"MemoryPressure", "False", "KubeletHasSufficientMemory",
       "kubelet has sufficient memory available"},
      {"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
      {"PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
      {"Ready", "True", "KubeletReady", "kubelet is posting ready status"}};
  for (int k = 0; k < 4; k++)
    json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", c[k][0],
                                           "status", c[k][1], "lastHeartbeatTime", now,
                                           "lastTransitionTime", now, "reason", c[k][2],
                                           "message", c[k][3]));
  return json_pack(
      "{s:O, s:o, s:o, s:[{s:s, s:s}, {s:s, s:s}], s:{s:{s:i}}, "
      "s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}}",
      "capacity", res, "allocatable", res, "conditions", conds, "addresses", "type",
      "InternalIP", "address", ip, "type", "Hostname", "address", name, "daemonEndpoints",
      "kubeletEndpoint", "Port", 10250, "nodeInfo", "machineID", "kinformer-sim", "systemUUID",
      "kinformer-sim", "bootID", "kinformer-sim", "kernelVersion", "6.0.0-kinformer-sim",
      "osImage", "kinformer.sim", "containerRuntimeVersion", "kinformer-sim://1.0.0",
      "kubeletVersion", "v1.36.3", "kubeProxyVersion", "", "operatingSystem", "linux",
      "architecture", "amd64");
}

/* Creates the node's Lease in kube-node-lease, owned by the Node, as a
 * kubelet registers it (renewTime now; not renewed after). A failure
 * leaves the node without a Lease. */
static void node_lease(kin__simctl *m, const json_t *node, const char *now) {
  const char *name = kin__sim_jstr(node, "metadata", "name");
  char renew[40];
  /* MicroTime: the server's format has microseconds */
  snprintf(renew, sizeof(renew), "%.19s.000000Z", now);
  json_t *ref = json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", "v1", "kind", "Node", "name", name,
                          "uid", kin__sim_jstr(node, "metadata", "uid"));
  json_t *lease = json_pack("{s:s, s:s, s:{s:s, s:s, s:[o]}, s:{s:s, s:i, s:s}}", "apiVersion",
                            "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", name,
                            "namespace", "kube-node-lease", "ownerReferences", ref, "spec",
                            "holderIdentity", name, "leaseDurationSeconds", 40, "renewTime",
                            renew);
  if (lease) kin__simctl_create(m, "coordination.k8s.io", "leases", "kube-node-lease", lease, NULL);
  json_decref(lease);
}

void kin__simwl_nodes_create(kin__simctl *m, int count) {
  char now[32];
  kin__simctl_wall_rfc3339(m, now);
  for (int i = 0; i < count; i++) {
    char name[64], cidr[32];
    snprintf(name, sizeof(name), "kinformer-sim-node-%d", i);
    snprintf(cidr, sizeof(cidr), "10.244.%d.0/24", i % 256);
    json_t *have = kin__simctl_get(m, "", "nodes", NULL, name);
    if (have) {
      json_decref(have);
      continue;
    }
    json_t *node = json_pack(
        "{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s, s:s, s:s}, s:{s:s, s:s}}, s:{s:s, s:[s]}}",
        "apiVersion", "v1", "kind", "Node", "metadata", "name", name, "labels",
        "beta.kubernetes.io/arch", "amd64", "beta.kubernetes.io/os", "linux",
        "kubernetes.io/arch", "amd64", "kubernetes.io/hostname", name, "kubernetes.io/os",
        "linux", "annotations", "node.alpha.kubernetes.io/ttl", "0", KIN__SIMWL_NODE_MARK, "true",
        "spec", "podCIDR", cidr, "podCIDRs", cidr);
    json_t *created = NULL;
    if (node && kin__simctl_create(m, "", "nodes", NULL, node, &created) == 201) {
      kin__simwl_write_status(m, "", "nodes", created, node_status(i, name, now));
      node_lease(m, created, now);
    }
    json_decref(created);
    json_decref(node);
  }
}

int kin__simwl_node_simulated(const json_t *node) {
  const json_t *ann = json_object_get(json_object_get(node, "metadata"), "annotations");
  const char *v = kin__sim_jstr(ann, KIN__SIMWL_NODE_MARK, NULL);
  return v && !strcmp(v, "true");
}
