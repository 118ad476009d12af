#!/usr/bin/env bash
# Captures kube-apiserver's protobuf and JSON answers for the objects of
# spec/c/fixtures/proto/objects.yaml (and a CRD, a list, a Scale and a
# 404 Status) into spec/c/fixtures/proto/<name>.pb and .json, the pairs
# spec/c/test_sim_proto.c checks the sim's transcoder against (decode
# equals the JSON, encode equals the bytes).
#
#   spec/e2e/cluster.sh run spec/e2e/capture-proto.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=spec/c/fixtures/proto
K=$KINFORMER_E2E_KUBECTL
export KUBECONFIG=$KINFORMER_E2E_ADMIN_KUBECONFIG
$K apply --server-side -f $OUT/objects.yaml >/dev/null
$K create -f - >/dev/null <<'CRD'
{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"foos.example.com"},"spec":{"group":"example.com","names":{"plural":"foos","singular":"foo","kind":"Foo","listKind":"FooList"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,"additionalPrinterColumns":[{"name":"X","type":"string","jsonPath":".spec.x"}],"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"x":{"type":"string","default":"d","enum":["d","e"]},"n":{"type":"integer","minimum":1,"maximum":5},"items":{"type":"array","items":{"type":"string"}},"m":{"type":"object","additionalProperties":{"type":"string"}}},"required":["x"]}},"x-kubernetes-preserve-unknown-fields":true}}}]}}
CRD
get() { # name path
  local a=(-s --fail-with-body --cacert "$KINFORMER_E2E_CA" -H "Authorization: Bearer $KINFORMER_E2E_TOKEN")
  curl "${a[@]}" -H 'Accept: application/vnd.kubernetes.protobuf' -o "$OUT/$1.pb" "$KINFORMER_E2E_SERVER/$2" || true
  curl "${a[@]}" -H 'Accept: application/json' "$KINFORMER_E2E_SERVER/$2" | python3 -m json.tool --compact >"$OUT/$1.json" || true
}
ns=api/v1/namespaces/default
get pod $ns/pods/p1
get service $ns/services/svc1
get secret $ns/secrets/s1
get serviceaccount $ns/serviceaccounts/sa1
get configmap $ns/configmaps/cm1
get configmaplist "$ns/configmaps?labelSelector=none-match%21%3Dx"
get event_core $ns/events/ev1
get namespace api/v1/namespaces/default
get node api/v1/nodes/n1
get statefulset apis/apps/v1/namespaces/default/statefulsets/ss
get daemonset apis/apps/v1/namespaces/default/daemonsets/ds
get deployment apis/apps/v1/namespaces/default/deployments/d1
get scale apis/apps/v1/namespaces/default/deployments/d1/scale
get lease apis/coordination.k8s.io/v1/namespaces/default/leases/l1
get event apis/events.k8s.io/v1/namespaces/default/events/ev1
get crd apis/apiextensions.k8s.io/v1/customresourcedefinitions/foos.example.com
get status_404 $ns/pods/nope
ls $OUT
