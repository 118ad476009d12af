# End-to-end tier: a real kube-apiserver, kube-controller-manager and etcd
# built from Go modules. Every `spec/e2e/cluster.sh run` below starts
# kube-controller-manager beside kube-apiserver with the controllers the sim
# mirrors (garbagecollector, namespace, serviceaccount, deployment,
# replicaset, statefulset, daemonset, job, cronjob; KINFORMER_E2E_CONTROLLERS
# overrides, "none" for a bare API server), without scheduler or kubelets.
#
#   make e2e-deps       build (or reuse) etcd, kube-apiserver, kubectl,
#                       kube-controller-manager
#   make e2e-reference  build (or reuse) the client-go reference informer
#   make e2e            both, then start a control plane, run the smoke
#                       checks (spec/e2e/smoke.sh), stop it; then
#                       e2e-differential
#   make e2e-c          the C tests named test_e2e_* (spec/c/test_e2e_*.c:
#                       client, reflector, informers) against a fresh
#                       control plane; in make test they are skipped
#   make e2e-lua        the example operators' specs (spec/examples/*_spec.lua:
#                       website, configmap-mirror, pod-label-auditor, run
#                       through bin/kinformer), the stalled-connection
#                       spec (spec/stall_spec.lua), the leader election
#                       spec (spec/leader_election_spec.lua), the deposed
#                       leader's SIGSTOP/SIGCONT spec
#                       (spec/leader_fencing_spec.lua), the dry-run
#                       plan spec (spec/plan_spec.lua) and the chaos spec
#                       (spec/chaos_spec.lua: the fault proxy's faults only),
#                       the sharding spec twice (spec/sharding_spec.lua: the
#                       ShardedListAndWatch gate off, then on, with the
#                       sharding chaos spec, spec/sharding_chaos_spec.lua:
#                       the replicas behind fault proxies), the secure
#                       metrics spec (spec/e2e/metrics_auth_e2e.lua)
#                       and the webhooks spec (spec/e2e/webhook_e2e.lua: the
#                       Website example's webhooks called by kube-apiserver)
#                       against a fresh control plane
#                       (KINFORMER_E2E_ADMIN_KUBECONFIG); in make test they
#                       run against kinformer.sim
#   make e2e-rbac       the RBAC of `kinformer manifests` under a ServiceAccount
#                       (mk/deploy.mk)
#   make e2e-differential  a fresh control plane and a fresh kinformer-sim
#                       running the same controllers (--controllers):
#                       replay spec/differential/scenarios against both and
#                       compare (spec/differential/run.sh: scenarios marked
#                       "controllers": true with kube-controller-manager,
#                       the others with it stopped; a scenario's sim_flags
#                       start a sim of its own), `kubectl api-resources`
#                       (and -o wide) on both, compared
#                       (spec/differential/api_resources.sh), then kubectl
#                       and client-go's informer in protobuf (the reference
#                       informer, -protobuf) against the sim
#                       (spec/differential/kubectl_sim.sh)
#
# Binaries and Go caches: $(KINFORMER_E2E_CACHE)/<k8s-version>/, default
# ~/.cache/kinformer-e2e/. See spec/e2e/README.md.

.PHONY: e2e e2e-deps e2e-reference e2e-differential e2e-c e2e-lua

e2e-deps:
	spec/e2e/build.sh core

e2e-reference:
	spec/e2e/build.sh reference

# deps (top-level Makefile): busted and lua5.4 for the Lua helper check.
e2e: deps e2e-deps e2e-reference
	spec/e2e/cluster.sh run spec/e2e/smoke.sh
	$(MAKE) --no-print-directory e2e-c
	$(MAKE) --no-print-directory e2e-lua
	$(MAKE) --no-print-directory e2e-rbac
	$(MAKE) --no-print-directory e2e-differential

# The C tests check the client's verbs and the reflector against the API
# server itself: no kube-controller-manager, whose deployment controller
# would write the Deployments they update (KINFORMER_E2E_CONTROLLERS=none).
e2e-c: e2e-deps
	$(MAKE) --no-print-directory MODE=release $(TEST_BIN)
	KINFORMER_E2E_CONTROLLERS=none KIN_E2E_REQUIRED=1 spec/e2e/cluster.sh run ./$(TEST_BIN) 'e2e_*'

# The examples' specs pick the real server from KINFORMER_E2E_ADMIN_KUBECONFIG,
# which cluster.sh run exports (spec/examples/helper.lua).
e2e-lua: e2e-deps
	$(MAKE) --no-print-directory MODE=release $(LUA_MOD) $(SIM_MOD) fault-proxy
	spec/e2e/cluster.sh run env LUA_PATH='lua/?.lua;lua/?/init.lua;spec/?.lua;;' \
	  LUA_CPATH='$(BUILD)/?.so;;' $(LUA) /usr/bin/busted --lua=$(LUA) -o utfTerminal spec/examples \
	  spec/stall_spec.lua spec/leader_election_spec.lua spec/leader_fencing_spec.lua \
	  spec/plan_spec.lua spec/replay_spec.lua \
	  spec/chaos_spec.lua
	# sharding (issue 27) on kube-apiserver, its ShardedListAndWatch gate off
	# (the replicas filter on the client) and on (the server splits)
	SHARD_SPEC_SERVER_SHARDS=0 spec/e2e/cluster.sh run env LUA_PATH='lua/?.lua;lua/?/init.lua;spec/?.lua;;' \
	  LUA_CPATH='$(BUILD)/?.so;;' $(LUA) /usr/bin/busted --lua=$(LUA) -o utfTerminal spec/sharding_spec.lua
	SHARD_SPEC_SERVER_SHARDS=1 KINFORMER_E2E_APISERVER_FLAGS=--feature-gates=ShardedListAndWatch=true \
	  spec/e2e/cluster.sh run env LUA_PATH='lua/?.lua;lua/?/init.lua;spec/?.lua;;' \
	  LUA_CPATH='$(BUILD)/?.so;;' $(LUA) /usr/bin/busted --lua=$(LUA) -o utfTerminal spec/sharding_spec.lua \
	  spec/sharding_chaos_spec.lua
	spec/e2e/cluster.sh run env LUA_PATH='lua/?.lua;lua/?/init.lua;spec/?.lua;;' \
	  LUA_CPATH='$(BUILD)/?.so;;' $(LUA) /usr/bin/busted --lua=$(LUA) -o utfTerminal --pattern=_e2e \
	  spec/e2e/metrics_auth_e2e.lua spec/e2e/webhook_e2e.lua

# sim (mk/sim.mk): build/<mode>/kinformer-sim, which the scripts default to
# in its release flavour.
e2e-differential: e2e-deps e2e-reference sim
	env -u KINFORMER_E2E_DIR KINFORMER_SIM=$(abspath $(SIM_CLI)) spec/e2e/cluster.sh run spec/differential/run.sh
	env -u KINFORMER_E2E_DIR KINFORMER_SIM=$(abspath $(SIM_CLI)) spec/e2e/cluster.sh run spec/differential/api_resources.sh
	KINFORMER_SIM=$(abspath $(SIM_CLI)) spec/differential/kubectl_sim.sh
