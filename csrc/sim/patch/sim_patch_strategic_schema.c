/* sim_patch_strategic_schema.c -- the patchStrategy / patchMergeKey tags of
 * the k8s.io/api types kinformer.sim serves, as the strategic merge patch
 * (sim_patch_strategic.c) reads them: a type per kind, chosen by the
 * object's "kind"; unknown kinds get ObjectMeta's merge keys only. */
#include "sim_patch_strategic_schema.h"

#include <string.h>

#define END {NULL, 0, NULL, NULL}

static const smp_type t_struct = {"struct", (const smp_field[]){END}};
static const smp_type t_string = {"string", (const smp_field[]){END}};

/* metav1.ObjectMeta */
static const smp_type t_object_meta = {"struct", (const smp_field[]){
    {"ownerReferences", 1, "uid", &t_struct},
    {"finalizers", 1, NULL, &t_string},
    END}};

/* core/v1 Container and EphemeralContainer(Common) */
static const smp_type t_container = {"struct", (const smp_field[]){
    {"ports", 1, "containerPort", &t_struct},
    {"env", 1, "name", &t_struct},
    {"volumeMounts", 1, "mountPath", &t_struct},
    {"volumeDevices", 1, "devicePath", &t_struct},
    END}};

static const smp_type t_pod_spec = {"struct", (const smp_field[]){
    {"volumes", 1, "name", &t_struct}, /* merge,retainKeys */
    {"initContainers", 1, "name", &t_container},
    {"containers", 1, "name", &t_container},
    {"ephemeralContainers", 1, "name", &t_container},
    {"imagePullSecrets", 1, "name", &t_struct},
    {"hostAliases", 1, "ip", &t_struct},
    {"topologySpreadConstraints", 1, "topologyKey", &t_struct},
    {"schedulingGates", 1, "name", &t_struct},
    {"resourceClaims", 1, "name", &t_struct}, /* merge,retainKeys */
    END}};

static const smp_type t_pod_status = {"struct", (const smp_field[]){
    {"conditions", 1, "type", &t_struct},
    {"hostIPs", 1, "ip", &t_struct},
    {"podIPs", 1, "ip", &t_struct},
    {"resourceClaimStatuses", 1, "name", &t_struct}, /* merge,retainKeys */
    END}};

static const smp_type t_pod_template_spec = {"struct", (const smp_field[]){
    {"metadata", 0, NULL, &t_object_meta},
    {"spec", 0, NULL, &t_pod_spec},
    END}};

/* status types whose only merge list is conditions, by type */
static const smp_type t_conditions_status = {"struct", (const smp_field[]){
    {"conditions", 1, "type", &t_struct},
    END}};

/* Deployment, ReplicaSet, StatefulSet, DaemonSet, ReplicationController
 * specs: the pod template (Deployment's strategy is retainKeys, which
 * only matters through the $retainKeys directive) */
static const smp_type t_workload_spec = {"struct", (const smp_field[]){
    {"template", 0, NULL, &t_pod_template_spec},
    END}};

static const smp_type t_service_spec = {"struct", (const smp_field[]){
    {"ports", 1, "port", &t_struct},
    END}};

static const smp_type t_node_spec = {"struct", (const smp_field[]){
    {"podCIDRs", 1, NULL, &t_string},
    END}};

static const smp_type t_node_status = {"struct", (const smp_field[]){
    {"conditions", 1, "type", &t_struct},
    {"addresses", 1, "type", &t_struct},
    END}};

static const smp_type t_pvc_status = {"struct", (const smp_field[]){
    {"conditions", 1, "type", &t_struct},
    END}};

#define META {"metadata", 0, NULL, &t_object_meta}

static const smp_type k_generic = {"struct", (const smp_field[]){META, END}};
static const smp_type k_pod = {"struct", (const smp_field[]){
    META, {"spec", 0, NULL, &t_pod_spec}, {"status", 0, NULL, &t_pod_status}, END}};
static const smp_type k_pod_template = {"struct", (const smp_field[]){
    META, {"template", 0, NULL, &t_pod_template_spec}, END}};
static const smp_type k_workload = {"struct", (const smp_field[]){
    META, {"spec", 0, NULL, &t_workload_spec}, {"status", 0, NULL, &t_conditions_status}, END}};
static const smp_type k_service = {"struct", (const smp_field[]){
    META, {"spec", 0, NULL, &t_service_spec}, {"status", 0, NULL, &t_conditions_status}, END}};
static const smp_type k_service_account = {"struct", (const smp_field[]){
    META, {"secrets", 1, "name", &t_struct}, END}};
static const smp_type k_node = {"struct", (const smp_field[]){
    META, {"spec", 0, NULL, &t_node_spec}, {"status", 0, NULL, &t_node_status}, END}};
static const smp_type k_namespace = {"struct", (const smp_field[]){
    META, {"status", 0, NULL, &t_conditions_status}, END}};
static const smp_type k_pvc = {"struct", (const smp_field[]){
    META, {"status", 0, NULL, &t_pvc_status}, END}};

static const struct {
  const char *kind;
  const smp_type *type;
} kinds[] = {
    {"Pod", &k_pod},
    {"PodTemplate", &k_pod_template},
    {"Deployment", &k_workload},
    {"ReplicaSet", &k_workload},
    {"StatefulSet", &k_workload},
    {"DaemonSet", &k_workload},
    {"ReplicationController", &k_workload},
    {"Service", &k_service},
    {"ServiceAccount", &k_service_account},
    {"Node", &k_node},
    {"Namespace", &k_namespace},
    {"PersistentVolumeClaim", &k_pvc},
};

const smp_type *kin__smp_schema_for(const json_t *target, const json_t *patch) {
  const char *kind = json_string_value(json_object_get(target, "kind"));
  if (!kind) kind = json_string_value(json_object_get(patch, "kind"));
  for (size_t i = 0; kind && i < sizeof(kinds) / sizeof(kinds[0]); i++)
    if (strcmp(kinds[i].kind, kind) == 0) return kinds[i].type;
  return &k_generic;
}

/* Field metadata of key in t; fields of unknown types have none (NULL). */
const smp_field *kin__smp_lookup(const smp_type *t, const char *key) {
  for (const smp_field *f = t ? t->fields : NULL; f && f->name; f++)
    if (strcmp(f->name, key) == 0) return f;
  return NULL;
}
