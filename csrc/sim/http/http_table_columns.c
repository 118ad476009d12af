/* http_table_columns.c -- the Table column definitions of kube-apiserver
 * v1.36.3 (pkg/printers/internalversion AddHandlers, and the default
 * TableConvertor's), captured from it with curl and the Table Accept
 * header: name, type, format, description and priority byte for byte.
 * Used by http_table.c. */
#include "http_int.h"

#define D_NAME "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
#define D_AGE "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
const kin__sim_table_col kin__sim_table_pod_cols[] = {
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
const kin__sim_table_col kin__sim_table_configmap_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Data", "string", "", "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.", 0},
    {"Age", "string", "", D_AGE, 0},
    {NULL, NULL, NULL, NULL, 0}};
const kin__sim_table_col kin__sim_table_secret_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Type", "string", "", "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types", 0},
    {"Data", "string", "", "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4", 0},
    {"Age", "string", "", D_AGE, 0},
    {NULL, NULL, NULL, NULL, 0}};
const kin__sim_table_col kin__sim_table_service_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Type", "string", "", "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types", 0},
    {"Cluster-IP", "string", "", "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies", 0},
    {"External-IP", "string", "", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.", 0},
    {"Port(s)", "string", "", "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies", 0},
    {"Age", "string", "", D_AGE, 0},
    {"Selector", "string", "", "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/", 1},
    {NULL, NULL, NULL, NULL, 0}};
const kin__sim_table_col kin__sim_table_serviceaccount_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Age", "string", "", D_AGE, 0},
    {NULL, NULL, NULL, NULL, 0}};
const kin__sim_table_col kin__sim_table_deployment_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Ready", "string", "", "Number of the pod with ready state", 0},
    {"Up-to-date", "string", "", "Total number of non-terminating pods targeted by this deployment that have the desired template spec.", 0},
    {"Available", "string", "", "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.", 0},
    {"Age", "string", "", D_AGE, 0},
    {"Containers", "string", "", "Names of each container in the template.", 1},
    {"Images", "string", "", "Images referenced by each container in the template.", 1},
    {"Selector", "string", "", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.", 1},
    {NULL, NULL, NULL, NULL, 0}};
const kin__sim_table_col kin__sim_table_replicaset_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Desired", "integer", "", "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset", 0},
    {"Current", "integer", "", "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset", 0},
    {"Ready", "integer", "", "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.", 0},
    {"Age", "string", "", D_AGE, 0},
    {"Containers", "string", "", "Names of each container in the template.", 1},
    {"Images", "string", "", "Images referenced by each container in the template.", 1},
    {"Selector", "string", "", "Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors", 1},
    {NULL, NULL, NULL, NULL, 0}};
const kin__sim_table_col kin__sim_table_statefulset_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Ready", "string", "", "Number of the pod with ready state", 0},
    {"Age", "string", "", D_AGE, 0},
    {"Containers", "string", "", "Names of each container in the template.", 1},
    {"Images", "string", "", "Images referenced by each container in the template.", 1},
    {NULL, NULL, NULL, NULL, 0}};
const kin__sim_table_col kin__sim_table_daemonset_cols[] = {
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
const kin__sim_table_col kin__sim_table_lease_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Holder", "string", "", "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.", 0},
    {"Age", "string", "", D_AGE, 0},
    {NULL, NULL, NULL, NULL, 0}};
const kin__sim_table_col kin__sim_table_event_cols[] = {
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
const kin__sim_table_col kin__sim_table_namespace_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Status", "string", "", "The status of the namespace", 0},
    {"Age", "string", "", D_AGE, 0},
    {NULL, NULL, NULL, NULL, 0}};
const kin__sim_table_col kin__sim_table_node_cols[] = {
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
const kin__sim_table_col kin__sim_table_dflt_cols[] = {
    {"Name", "string", "name", D_NAME, 0},
    {"Created At", "date", "", D_AGE, 0},
    {NULL, NULL, NULL, NULL, 0}};

const char *const kin__sim_table_desc_name = D_NAME;
const char *const kin__sim_table_desc_age = D_AGE;
