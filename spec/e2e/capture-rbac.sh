#!/usr/bin/env bash
# Captures what kinformer.sim's RBAC authorizer is held to, from a real
# kube-apiserver (--authorization-mode=Node,RBAC):
#   - csrc/sim/auth/bootstrap_policy.json: the bootstrap policy, every
#     ClusterRole, ClusterRoleBinding, Role and RoleBinding labelled
#     kubernetes.io/bootstrapping=rbac-defaults, as one List, without uid,
#     resourceVersion, creationTimestamp and managedFields (the sim creates
#     them at start, as the server's bootstrap-roles post-start hook);
#   - spec/fixtures/sim_rbac/real_answers.json: the server's answers (code
#     and body) to requests of a ServiceAccount and of a user it does not
#     authorize (403 texts of each shape: namespaced, cluster scope, named,
#     subresource, non-resource path, a binding to a missing role) and to
#     the review APIs; spec/sim_rbac_spec.lua asks the sim the same.
#
#   spec/e2e/cluster.sh run spec/e2e/capture-rbac.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
K=$KINFORMER_E2E_KUBECTL
export KUBECONFIG=$KINFORMER_E2E_ADMIN_KUBECONFIG
OUT=spec/fixtures/sim_rbac
mkdir -p "$OUT" csrc/sim/auth
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# The bootstrap policy.
sel=kubernetes.io/bootstrapping=rbac-defaults
$K get clusterroles,clusterrolebindings -l $sel -o json >"$TMP/cluster.json"
$K get roles,rolebindings -A -l $sel -o json >"$TMP/ns.json"
jq -s '{apiVersion: "v1", kind: "List",
        items: ([.[].items[]]
                | map(del(.metadata.uid, .metadata.resourceVersion,
                          .metadata.creationTimestamp, .metadata.managedFields))
                | sort_by(.kind, .metadata.namespace // "", .metadata.name))}' \
  "$TMP/cluster.json" "$TMP/ns.json" >csrc/sim/auth/bootstrap_policy.json

# The objects the requests below meet: a ServiceAccount "op" in default
# bound by a Role to read configmaps, a Role binding to a missing Role.
$K create serviceaccount op -n default >/dev/null
$K create role cm-reader -n default --verb=get,list,watch --resource=configmaps >/dev/null
$K create rolebinding op-cm -n default --role=cm-reader --serviceaccount=default:op >/dev/null
$K create rolebinding op-missing -n kube-public --role=nope --serviceaccount=default:op >/dev/null
$K create role rbac-writer -n default --verb=create --resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io >/dev/null
$K create rolebinding op-rbac-writer -n default --role=rbac-writer --serviceaccount=default:op >/dev/null
SA_TOKEN=$($K create token op -n default --duration 1h)
sleep 2 # the authorizer's informers

# ask NAME TOKEN METHOD PATH [BODY]: one entry {name, method, path, code, body}
ask() {
  local name=$1 token=$2 method=$3 path=$4 body=${5:-}
  local a=(-s -o "$TMP/body" -w '%{http_code}' --cacert "$KINFORMER_E2E_CA" -X "$method"
    -H "Authorization: Bearer $token" -H 'Accept: application/json')
  [ -n "$body" ] && a+=(-H 'Content-Type: application/json' --data-binary "$body")
  local code
  code=$(curl "${a[@]}" "$KINFORMER_E2E_SERVER$path")
  jq -c --arg n "$name" --arg m "$method" --arg p "$path" --argjson c "$code" \
    '{name: $n, method: $m, path: $p, code: $c, body: .}' "$TMP/body" >>"$TMP/answers"
}
SA=$SA_TOKEN
NB=$KINFORMER_E2E_NOBODY_TOKEN
AD=$KINFORMER_E2E_TOKEN
: >"$TMP/answers"
ask list_ns "$SA" GET /api/v1/namespaces/default/pods
ask list_cluster "$SA" GET /api/v1/pods
ask get_named "$SA" GET /api/v1/namespaces/default/pods/p1
ask update_status "$SA" PUT /api/v1/namespaces/default/pods/p1/status '{}'
ask watch_named "$SA" GET '/api/v1/namespaces/default/pods?watch=1&fieldSelector=metadata.name%3Dp1'
ask watch_path "$SA" GET /api/v1/watch/namespaces/default/secrets
ask get_namespace "$SA" GET /api/v1/namespaces/kube-system
ask create_apps "$SA" POST /apis/apps/v1/namespaces/default/deployments '{}'
ask scale "$SA" GET /apis/apps/v1/namespaces/default/deployments/d1/scale
ask delete_collection "$SA" DELETE /api/v1/namespaces/default/configmaps
ask nonresource "$SA" GET /metrics
ask nonresource_post "$NB" POST /api
ask missing_role "$SA" GET /api/v1/namespaces/kube-public/configmaps
ask allowed_list "$SA" GET '/api/v1/namespaces/default/configmaps?labelSelector=none%3Dx'
ask nobody_list "$NB" GET /api/v1/namespaces/default/configmaps
ask discovery "$NB" GET /version
sar() { # name token kind namespace spec
  local path=/apis/authorization.k8s.io/v1/$3
  [ -n "$4" ] && path=/apis/authorization.k8s.io/v1/namespaces/$4/$3
  local k
  case $3 in
    subjectaccessreviews) k=SubjectAccessReview ;;
    localsubjectaccessreviews) k=LocalSubjectAccessReview ;;
    selfsubjectaccessreviews) k=SelfSubjectAccessReview ;;
    selfsubjectrulesreviews) k=SelfSubjectRulesReview ;;
  esac
  ask "$1" "$2" POST "$path" "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"$k\",\"spec\":$5}"
}
sar sar_allowed_crb "$AD" subjectaccessreviews "" \
  '{"user":"kinformer-token","resourceAttributes":{"verb":"list","resource":"pods","namespace":"default"}}'
sar sar_allowed_rb "$AD" subjectaccessreviews "" \
  '{"user":"system:serviceaccount:default:op","groups":["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"],"resourceAttributes":{"verb":"get","resource":"configmaps","namespace":"default","name":"x"}}'
sar sar_denied "$AD" subjectaccessreviews "" \
  '{"user":"system:serviceaccount:default:op","resourceAttributes":{"verb":"delete","resource":"configmaps","namespace":"default"}}'
sar sar_denied_missing "$AD" subjectaccessreviews "" \
  '{"user":"system:serviceaccount:default:op","resourceAttributes":{"verb":"get","resource":"configmaps","namespace":"kube-public"}}'
sar sar_masters "$AD" subjectaccessreviews "" \
  '{"user":"someone","groups":["system:masters"],"resourceAttributes":{"verb":"delete","resource":"nodes"}}'
sar sar_nonresource "$AD" subjectaccessreviews "" \
  '{"user":"kinformer-nobody","groups":["system:authenticated"],"nonResourceAttributes":{"verb":"get","path":"/healthz"}}'
sar sar_no_attrs "$AD" subjectaccessreviews "" '{"user":"x"}'
sar sar_no_user "$AD" subjectaccessreviews "" '{"resourceAttributes":{"verb":"get","resource":"pods"}}'
sar lsar_allowed "$AD" localsubjectaccessreviews default \
  '{"user":"system:serviceaccount:default:op","resourceAttributes":{"verb":"watch","resource":"configmaps","namespace":"default"}}'
sar lsar_ns_mismatch "$AD" localsubjectaccessreviews default \
  '{"user":"x","resourceAttributes":{"verb":"get","resource":"pods","namespace":"other"}}'
sar ssar_allowed "$SA" selfsubjectaccessreviews "" \
  '{"resourceAttributes":{"verb":"list","resource":"configmaps","namespace":"default"}}'
sar ssar_denied "$SA" selfsubjectaccessreviews "" \
  '{"resourceAttributes":{"verb":"list","group":"apps","resource":"deployments","namespace":"default"}}'
sar ssrr "$SA" selfsubjectrulesreviews "" '{"namespace":"default"}'
sar ssrr_no_ns "$SA" selfsubjectrulesreviews "" '{}'
ask sar_forbidden "$SA" POST /apis/authorization.k8s.io/v1/subjectaccessreviews \
  '{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"x","resourceAttributes":{"verb":"get","resource":"pods"}}}'
ask tokenreview "$AD" POST /apis/authentication.k8s.io/v1/tokenreviews \
  "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\",\"spec\":{\"token\":\"$NB\"}}"
ask tokenreview_bad "$AD" POST /apis/authentication.k8s.io/v1/tokenreviews \
  '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"not-a-token"}}'
ask whoami_sa "$SA" POST /apis/authentication.k8s.io/v1/selfsubjectreviews \
  '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}'
# escalation prevention: op may create roles and bindings, not grant more than it holds
R=/apis/rbac.authorization.k8s.io/v1/namespaces/default
ask esc_role "$SA" POST $R/roles \
  '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"more"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]},{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","delete"]},{"apiGroups":["apps"],"resources":["deployments/scale"],"resourceNames":["a","b"],"verbs":["update"]}]}'
ask ok_role "$SA" POST $R/roles \
  '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"same"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","list"]}]}'
ask esc_binding "$SA" POST $R/rolebindings \
  '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b-view"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:aggregate-to-view"},"subjects":[{"kind":"User","name":"x"}]}'
ask ok_binding "$SA" POST $R/rolebindings \
  '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b-same"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"cm-reader"},"subjects":[{"kind":"User","name":"x"}]}'
ask binding_missing "$SA" POST $R/rolebindings \
  '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b-nope"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"nope"},"subjects":[{"kind":"User","name":"x"}]}'
jq -s '.' "$TMP/answers" >"$OUT/real_answers.json"
echo "capture-rbac: $(jq '.items | length' csrc/sim/auth/bootstrap_policy.json) policy objects, $(jq length "$OUT/real_answers.json") answers"
