# Deploying operators (docs/deploy.md).
#
#   make e2e-rbac   for every example operator, the RBAC `kinformer manifests`
#                   prints is applied to a fresh kube-apiserver (RBAC, and
#                   the OwnerReferencesPermissionEnforcement admission
#                   plugin) and the operator runs under the printed
#                   ServiceAccount's token with 0 forbidden, counted per
#                   operator (spec/e2e/rbac_manifests.sh); part of make e2e

.PHONY: e2e-rbac

e2e-rbac: e2e-deps
	$(MAKE) --no-print-directory MODE=release $(LUA_MOD) $(SIM_MOD)
	KIN_E2E_REQUIRED=1 KINFORMER_E2E_APISERVER_FLAGS="$${KINFORMER_E2E_APISERVER_FLAGS:-} \
	  --enable-admission-plugins=OwnerReferencesPermissionEnforcement" \
	  spec/e2e/cluster.sh run spec/e2e/rbac_manifests.sh
