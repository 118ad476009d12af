"""The official Kubernetes Python client (Debian's python3-kubernetes)
against a kinformer.sim: list, create, patch, a watch stream, scale.

Usage: python_client.py KUBECONFIG
Prints one JSON object: what each call returned (names, versions, event
types...), for spec/clients/python_spec.lua to assert on; a call that
raises is recorded as {"error": ...} under its case, so one failure does
not hide the others.
"""
import json
import sys
import traceback

from kubernetes import client, config, watch

NS = "default"


def cm(name, data, labels=None):
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels=labels or {}), data=data)


def case_list(core, apps):
    nss = core.list_namespace()
    cms = core.list_namespaced_config_map(NS)
    return {
        "namespaces": [n.metadata.name for n in nss.items],
        "list_rv": nss.metadata.resource_version,
        "configmaps": len(cms.items),
        "selected": len(core.list_namespace(label_selector="nope=x").items),
    }


def case_create(core, apps):
    c = core.create_namespaced_config_map(NS, cm("py-cm", {"a": "1"}, {"app": "py"}))
    out = {"name": c.metadata.name, "namespace": c.metadata.namespace,
           "uid": c.metadata.uid, "rv": c.metadata.resource_version, "data": c.data}
    try:
        core.create_namespaced_config_map(NS, cm("py-cm", {}))
        out["again"] = "created"
    except client.ApiException as e:
        out["again"] = {"status": e.status, "reason": json.loads(e.body)["reason"]}
    read = core.read_namespaced_config_map("py-cm", NS)
    out["read_data"] = read.data
    return out


def case_patch(core, apps):
    # a dict body: the client sends a strategic merge patch
    p1 = core.patch_namespaced_config_map("py-cm", NS, {"data": {"b": "2"}})
    # a list body: a JSON patch
    p2 = core.patch_namespaced_config_map(
        "py-cm", NS, [{"op": "replace", "path": "/data/a", "value": "3"}])
    return {"strategic": p1.data, "json": p2.data,
            "rvs_differ": p1.metadata.resource_version != p2.metadata.resource_version}


def case_watch(core, apps):
    start = core.list_namespaced_config_map(NS).metadata.resource_version
    core.create_namespaced_config_map(NS, cm("py-w", {"v": "1"}))
    core.patch_namespaced_config_map("py-w", NS, {"data": {"v": "2"}})
    core.delete_namespaced_config_map("py-w", NS)
    events = []
    w = watch.Watch()
    # watch=True on the wire; the stream ends with the server's timeout
    for ev in w.stream(core.list_namespaced_config_map, NS, resource_version=start,
                       timeout_seconds=2):
        events.append({"type": ev["type"], "name": ev["object"].metadata.name,
                       "data": ev["object"].data,
                       "kind": type(ev["object"]).__name__})
    return {"events": events}


def case_scale(core, apps):
    dep = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="py-deploy"),
        spec=client.V1DeploymentSpec(
            replicas=1,
            selector=client.V1LabelSelector(match_labels={"app": "py"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "py"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]))))
    apps.create_namespaced_deployment(NS, dep)
    s0 = apps.read_namespaced_deployment_scale("py-deploy", NS)
    s1 = apps.patch_namespaced_deployment_scale("py-deploy", NS, {"spec": {"replicas": 4}})
    body = client.V1Scale(metadata=client.V1ObjectMeta(name="py-deploy"),
                          spec=client.V1ScaleSpec(replicas=2))
    s2 = apps.replace_namespaced_deployment_scale("py-deploy", NS, body)
    d = apps.read_namespaced_deployment("py-deploy", NS)
    return {"read": {"kind": s0.kind, "replicas": s0.spec.replicas,
                     "status_replicas": s0.status.replicas, "selector": s0.status.selector},
            "patched": s1.spec.replicas, "replaced": s2.spec.replicas,
            "deployment_replicas": d.spec.replicas, "generation": d.metadata.generation}


def main():
    config.load_kube_config(config_file=sys.argv[1])
    core, apps = client.CoreV1Api(), client.AppsV1Api()
    out = {}
    for name, fn in [("list", case_list), ("create", case_create), ("patch", case_patch),
                     ("watch", case_watch), ("scale", case_scale)]:
        try:
            out[name] = fn(core, apps)
        except Exception as e:  # recorded for the spec to report
            out[name] = {"error": repr(e), "trace": traceback.format_exc()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
