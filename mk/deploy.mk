# Deploying operators (docs/deploy.md).
#
#   make e2e-rbac   for the example operators, the RBAC `kinformer manifests`
#                   prints is applied to a fresh kube-apiserver and the
#                   operator runs under the printed ServiceAccount's token
#                   with no forbidden error (spec/e2e/rbac_manifests.sh);
#                   part of make e2e

.PHONY: e2e-rbac

e2e-rbac: e2e-deps
	$(MAKE) --no-print-directory MODE=release $(LUA_MOD) $(SIM_MOD)
	KIN_E2E_REQUIRED=1 spec/e2e/cluster.sh run spec/e2e/rbac_manifests.sh
