# Chaos and soak (issue 17).
#
#   make chaos CHAOS_SECONDS=600 [CHAOS_RUN=20] [CHAOS_SEED=N]
#                       random seeds of spec/chaos/chaos.lua (writers and
#                       faults against an informer and a controller on a
#                       kinformer.sim) until the time is up, one summary
#                       line each; CHAOS_SEED=N replays one seed
#                       (spec/chaos/run.sh). Three fixed seeds run in make
#                       test (spec/chaos_spec.lua), and against
#                       kube-apiserver in make e2e-lua.
#   make chaos-shards [CHAOS_RUN=5] [CHAOS_SECONDS=20] [CHAOS_SEED=N]
#                       spec/sharding_chaos_spec.lua (three sharded
#                       replicas, each behind a fault proxy: partitions,
#                       pauses, slow links, cuts, the sim's failed requests)
#                       for CHAOS_RUN random seeds of CHAOS_SECONDS of
#                       faults each, or the one seed CHAOS_SEED; make test
#                       runs one fixed seed
#   make soak DURATION=300 [SOAK_INTERVAL=5] [SOAK_RATE=20]
#                       an example operator under steady churn, sampling
#                       its RSS, fds and threads (spec/soak/soak.lua);
#                       CSV under build/soak/
#   make soak-short     the same for 30 s

.PHONY: chaos chaos-shards soak soak-short

CHAOS_ENV = LUA_PATH='lua/?.lua;lua/?/init.lua;spec/?.lua;;' LUA_CPATH='build/release/?.so;;'

chaos:
	$(MAKE) --no-print-directory MODE=release $(LUA_MOD) $(SIM_MOD) fault-proxy
	$(CHAOS_ENV) CHAOS_SECONDS='$(CHAOS_SECONDS)' CHAOS_SEED='$(CHAOS_SEED)' CHAOS_RUN='$(CHAOS_RUN)' \
	  spec/chaos/run.sh

chaos-shards:
	$(MAKE) --no-print-directory MODE=release $(LUA_MOD) $(SIM_MOD) fault-proxy
	$(CHAOS_ENV) SHARD_CHAOS_SECONDS='$(or $(CHAOS_SECONDS),20)' \
	  SHARD_CHAOS_SEEDS='$(or $(CHAOS_SEED),random:$(or $(CHAOS_RUN),5))' \
	  $(LUA) /usr/bin/busted --lua=$(LUA) -o utfTerminal spec/sharding_chaos_spec.lua

soak:
	$(MAKE) --no-print-directory MODE=release $(LUA_MOD) $(SIM_MOD)
	$(CHAOS_ENV) $(LUA) spec/soak/soak.lua '$(or $(DURATION),300)' '$(or $(SOAK_INTERVAL),5)' '$(or $(SOAK_RATE),20)'

soak-short:
	$(MAKE) --no-print-directory soak DURATION=30 SOAK_INTERVAL=2
