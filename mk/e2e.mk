# End-to-end tier: a real kube-apiserver and etcd built from Go modules.
#
#   make e2e-deps       build (or reuse) etcd, kube-apiserver, kubectl
#   make e2e-reference  build (or reuse) the client-go reference informer
#   make e2e            both, then start a control plane, run the smoke
#                       checks (spec/e2e/smoke.sh), stop it
#
# Binaries and Go caches: $(KINFORMER_E2E_CACHE)/<k8s-version>/, default
# ~/.cache/kinformer-e2e/. See spec/e2e/README.md.

.PHONY: e2e e2e-deps e2e-reference

e2e-deps:
	spec/e2e/build.sh core

e2e-reference:
	spec/e2e/build.sh reference

# deps (top-level Makefile): busted and lua5.4 for the Lua helper check.
e2e: deps e2e-deps e2e-reference
	spec/e2e/cluster.sh run spec/e2e/smoke.sh
