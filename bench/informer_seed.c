/* informer_seed.c -- writes seed files for kinformer-sim (--seed, one
 * object per line) for the informer benchmark (bench/informer_bench.sh):
 *
 *   bench-informer-seed configmaps N [NAMESPACES] > cms.jsonl
 *   bench-informer-seed pods N [NAMESPACES] > pods.jsonl
 *
 * ConfigMaps are about 1 KB (labels, an annotation, three data keys) and
 * carry no managedFields, so every client caches the same bytes. Pods are
 * about 6 KB as a real kube-apiserver stores a Deployment's pod, including
 * metadata.managedFields (kube-controller-manager, kube-scheduler and
 * kubelet entries with their fieldsV1 trees), a container with env,
 * resources, probes and volumeMounts, and a Running status with
 * conditions (seed objects keep their status, docs/sim.md). The output is
 * deterministic; objects are spread over NAMESPACES namespaces (default
 * 10) named bench-0.. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A 62-character filler cut to the wanted length, so sizes are exact
 * without random data (JSON-safe). */
static void filler(char *out, size_t n, unsigned seed) {
  static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  for (size_t i = 0; i < n; i++) out[i] = al[(i * 7 + seed) % 62];
  out[n] = 0;
}

static void configmap(unsigned i, unsigned nns) {
  char a[251], b[201], c[101];
  filler(a, 250, i);
  filler(b, 200, i + 1);
  filler(c, 100, i + 2);
  printf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm-%06u\","
         "\"namespace\":\"bench-%u\",\"labels\":{\"app\":\"app-%u\",\"tier\":\"backend\","
         "\"app.kubernetes.io/part-of\":\"bench\",\"app.kubernetes.io/managed-by\":\"helm\"},"
         "\"annotations\":{\"meta.helm.sh/release-name\":\"app-%u\","
         "\"meta.helm.sh/release-namespace\":\"bench-%u\"}},"
         "\"data\":{\"app.yaml\":\"listen: 0.0.0.0:8080\\nlog:\\n  level: info\\n"
         "  format: json\\nsecret: %s\\n\",\"extra.txt\":\"%s\",\"id\":\"%s-%u\"}}\n",
         i, i % nns, i % 100, i % 100, i % nns, a, b, c, i);
}

/* Pods come in ReplicaSets of 20: rs is the ReplicaSet index. */
static void pod(unsigned i, unsigned nns) {
  unsigned rs = i / 20, ns = rs % nns, node = i % 50;
  char hash[11], sfx[6], ip[24];
  snprintf(hash, sizeof(hash), "%010x", rs * 2654435761u);
  for (int k = 0; k < 10; k++)
    if (hash[k] >= '0' && hash[k] <= '9') hash[k] = (char)('b' + (hash[k] - '0'));
  static const char al[] = "bcdfghjklmnpqrstvwxz2456789";
  unsigned x = i * 2246822519u + 3266489917u;
  for (int k = 0; k < 5; k++, x /= 27) sfx[k] = al[x % 27];
  sfx[5] = 0;
  snprintf(ip, sizeof(ip), "10.%u.%u.%u", 244 + (i >> 16) % 10, (i >> 8) & 255, i & 255);
  char rsuid[37];
  snprintf(rsuid, sizeof(rsuid), "a3c1e2f4-9b8d-4e6f-8a7b-%012x", rs);
  /* The same text as kube-apiserver would store, keys in its order. */
  printf(
      "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{"
      "\"name\":\"app-%u-%s-%s\",\"generateName\":\"app-%u-%s-\",\"namespace\":\"bench-%u\","
      "\"labels\":{\"app\":\"app-%u\",\"pod-template-hash\":\"%s\",\"app.kubernetes.io/part-of\":\"bench\",\"tier\":\"frontend\"},"
      "\"annotations\":{\"kubectl.kubernetes.io/restartedAt\":\"2026-11-20T09:12:40Z\",\"prometheus.io/scrape\":\"true\",\"prometheus.io/port\":\"9102\"},"
      "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"app-%u-%s\",\"uid\":\"%s\",\"controller\":true,\"blockOwnerDeletion\":true}],"
      "\"managedFields\":["
      "{\"manager\":\"kube-controller-manager\",\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":\"2026-11-20T09:12:44Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{"
      "\"f:metadata\":{\"f:annotations\":{\".\":{},\"f:kubectl.kubernetes.io/restartedAt\":{},\"f:prometheus.io/port\":{},\"f:prometheus.io/scrape\":{}},\"f:generateName\":{},"
      "\"f:labels\":{\".\":{},\"f:app\":{},\"f:app.kubernetes.io/part-of\":{},\"f:pod-template-hash\":{},\"f:tier\":{}},"
      "\"f:ownerReferences\":{\".\":{},\"k:{\\\"uid\\\":\\\"%s\\\"}\":{}}},"
      "\"f:spec\":{\"f:containers\":{"
      "\"k:{\\\"name\\\":\\\"app\\\"}\":{\".\":{},\"f:env\":{\".\":{},\"k:{\\\"name\\\":\\\"PORT\\\"}\":{\".\":{},\"f:name\":{},\"f:value\":{}},"
      "\"k:{\\\"name\\\":\\\"LOG_LEVEL\\\"}\":{\".\":{},\"f:name\":{},\"f:value\":{}},\"k:{\\\"name\\\":\\\"POD_NAME\\\"}\":{\".\":{},\"f:name\":{},\"f:valueFrom\":{\".\":{},\"f:fieldRef\":{}}}},"
      "\"f:image\":{},\"f:imagePullPolicy\":{},\"f:name\":{},\"f:ports\":{\".\":{},\"k:{\\\"containerPort\\\":8080,\\\"protocol\\\":\\\"TCP\\\"}\":{\".\":{},\"f:containerPort\":{},\"f:name\":{},\"f:protocol\":{}}},"
      "\"f:readinessProbe\":{\".\":{},\"f:failureThreshold\":{},\"f:httpGet\":{\".\":{},\"f:path\":{},\"f:port\":{},\"f:scheme\":{}},\"f:periodSeconds\":{},\"f:successThreshold\":{},\"f:timeoutSeconds\":{}},"
      "\"f:resources\":{\".\":{},\"f:limits\":{\".\":{},\"f:cpu\":{},\"f:memory\":{}},\"f:requests\":{\".\":{},\"f:cpu\":{},\"f:memory\":{}}},"
      "\"f:terminationMessagePath\":{},\"f:terminationMessagePolicy\":{},\"f:volumeMounts\":{\".\":{},\"k:{\\\"mountPath\\\":\\\"/etc/app\\\"}\":{\".\":{},\"f:mountPath\":{},\"f:name\":{}}}}},"
      "\"f:dnsPolicy\":{},\"f:enableServiceLinks\":{},\"f:restartPolicy\":{},\"f:schedulerName\":{},\"f:securityContext\":{},\"f:terminationGracePeriodSeconds\":{},"
      "\"f:volumes\":{\".\":{},\"k:{\\\"name\\\":\\\"config\\\"}\":{\".\":{},\"f:configMap\":{\".\":{},\"f:defaultMode\":{},\"f:name\":{}},\"f:name\":{}}}}}},"
      "{\"manager\":\"kube-scheduler\",\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":\"2026-11-20T09:12:44Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{"
      "\"f:status\":{\"f:conditions\":{\".\":{},\"k:{\\\"type\\\":\\\"PodScheduled\\\"}\":{\".\":{},\"f:lastProbeTime\":{},\"f:lastTransitionTime\":{},\"f:status\":{},\"f:type\":{}}}}},\"subresource\":\"status\"},"
      "{\"manager\":\"kubelet\",\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":\"2026-11-20T09:12:51Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{"
      "\"f:status\":{\"f:conditions\":{\"k:{\\\"type\\\":\\\"ContainersReady\\\"}\":{\".\":{},\"f:lastProbeTime\":{},\"f:lastTransitionTime\":{},\"f:status\":{},\"f:type\":{}},"
      "\"k:{\\\"type\\\":\\\"Initialized\\\"}\":{\".\":{},\"f:lastProbeTime\":{},\"f:lastTransitionTime\":{},\"f:status\":{},\"f:type\":{}},"
      "\"k:{\\\"type\\\":\\\"PodReadyToStartContainers\\\"}\":{\".\":{},\"f:lastProbeTime\":{},\"f:lastTransitionTime\":{},\"f:status\":{},\"f:type\":{}},"
      "\"k:{\\\"type\\\":\\\"Ready\\\"}\":{\".\":{},\"f:lastProbeTime\":{},\"f:lastTransitionTime\":{},\"f:status\":{},\"f:type\":{}}},"
      "\"f:containerStatuses\":{},\"f:hostIP\":{},\"f:hostIPs\":{},\"f:phase\":{},\"f:podIP\":{},\"f:podIPs\":{\".\":{},\"k:{\\\"ip\\\":\\\"%s\\\"}\":{\".\":{},\"f:ip\":{}}},\"f:startTime\":{}}},\"subresource\":\"status\"}]},"
      "\"spec\":{\"volumes\":[{\"name\":\"config\",\"configMap\":{\"name\":\"app-%u-config\",\"defaultMode\":420}},"
      "{\"name\":\"kube-api-access-%s\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},"
      "{\"configMap\":{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":\"ca.crt\"}]}},"
      "{\"downwardAPI\":{\"items\":[{\"path\":\"namespace\",\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.namespace\"}}]}}],\"defaultMode\":420}}],"
      "\"containers\":[{\"name\":\"app\",\"image\":\"registry.example/bench/app-%u:1.24.3\",\"ports\":[{\"name\":\"http\",\"containerPort\":8080,\"protocol\":\"TCP\"}],"
      "\"env\":[{\"name\":\"PORT\",\"value\":\"8080\"},{\"name\":\"LOG_LEVEL\",\"value\":\"info\"},{\"name\":\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.name\"}}}],"
      "\"resources\":{\"limits\":{\"cpu\":\"500m\",\"memory\":\"256Mi\"},\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}},"
      "\"volumeMounts\":[{\"name\":\"config\",\"mountPath\":\"/etc/app\"},{\"name\":\"kube-api-access-%s\",\"readOnly\":true,\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}],"
      "\"readinessProbe\":{\"httpGet\":{\"path\":\"/readyz\",\"port\":8080,\"scheme\":\"HTTP\"},\"timeoutSeconds\":1,\"periodSeconds\":5,\"successThreshold\":1,\"failureThreshold\":3},"
      "\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":\"IfNotPresent\"}],"
      "\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterFirst\",\"serviceAccountName\":\"default\",\"serviceAccount\":\"default\","
      "\"nodeName\":\"worker-%u\",\"securityContext\":{},\"schedulerName\":\"default-scheduler\","
      "\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300},"
      "{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300}],"
      "\"priority\":0,\"enableServiceLinks\":true,\"preemptionPolicy\":\"PreemptLowerPriority\"},"
      "\"status\":{\"phase\":\"Running\",\"conditions\":["
      "{\"type\":\"PodReadyToStartContainers\",\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-20T09:12:46Z\"},"
      "{\"type\":\"Initialized\",\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-20T09:12:44Z\"},"
      "{\"type\":\"Ready\",\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-20T09:12:51Z\"},"
      "{\"type\":\"ContainersReady\",\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-20T09:12:51Z\"},"
      "{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-20T09:12:44Z\"}],"
      "\"hostIP\":\"172.18.0.%u\",\"hostIPs\":[{\"ip\":\"172.18.0.%u\"}],\"podIP\":\"%s\",\"podIPs\":[{\"ip\":\"%s\"}],\"startTime\":\"2026-11-20T09:12:44Z\","
      "\"containerStatuses\":[{\"name\":\"app\",\"state\":{\"running\":{\"startedAt\":\"2026-11-20T09:12:46Z\"}},\"lastState\":{},\"ready\":true,\"restartCount\":0,"
      "\"image\":\"registry.example/bench/app-%u:1.24.3\",\"imageID\":\"registry.example/bench/app-%u@sha256:4b1f8c2d9e7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c\","
      "\"containerID\":\"containerd://%08x7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0\",\"started\":true}],"
      "\"qosClass\":\"Burstable\"}}\n",
      /* metadata */ rs, hash, sfx, rs, hash, ns, rs, hash, rs, hash, rsuid, rsuid,
      /* kubelet podIPs key */ ip,
      /* spec */ rs, sfx, rs, sfx, node,
      /* status */ 2 + node, 2 + node, ip, ip, rs, rs, i);
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "configmaps") && strcmp(argv[1], "pods"))) {
    fprintf(stderr, "usage: %s configmaps|pods N [NAMESPACES] > seed.jsonl\n", argv[0]);
    return 2;
  }
  unsigned n = (unsigned)strtoul(argv[2], NULL, 10);
  unsigned nns = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 10;
  if (!nns) nns = 1;
  int pods = !strcmp(argv[1], "pods");
  for (unsigned i = 0; i < n; i++) {
    if (pods)
      pod(i, nns);
    else
      configmap(i, nns);
  }
  return fflush(stdout) ? 1 : 0;
}
