# The informer benchmark: kinformer against client-go, both against the
# same kinformer-sim (bench/informer_bench.sh; README in its header), then
# both against a real kube-apiserver v1.36.3 of the e2e tier
# (bench/informer_apiserver.sh; BENCH_APISERVER=0 skips it).
#
#   make bench-informer                      full run (table at the end)
#   make bench-informer BENCH_ARGS=--quick   short form for CI (< 2 min)
#   BENCH_REPEAT=N                           repeats per measurement (median; default 3)

.PHONY: bench-informer

INFORMER_BENCH := $(BUILD)/bench-informer
INFORMER_SEED := $(BUILD)/bench-informer-seed

$(INFORMER_BENCH): bench/informer_bench.c $(CORE_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(CORE_LIB) $(LDFLAGS_ALL) $(CORE_LIBS)

$(INFORMER_SEED): bench/informer_seed.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $<

# e2e-reference (mk/e2e.mk) builds or reuses the client-go program.
bench-informer: deps e2e-reference
	$(MAKE) --no-print-directory MODE=release build/release/bench-informer \
	  build/release/bench-informer-seed build/release/kinformer-sim
	bench/informer_bench.sh $(BENCH_ARGS)
	@if [ "$${BENCH_APISERVER:-1}" = 1 ]; then $(MAKE) --no-print-directory e2e-deps && bench/informer_apiserver.sh $(BENCH_ARGS); fi

# Sharding (issue 27): reconciles per second of an I/O-bound reconciler
# with 1, 2 and 4 replicas, memory per replica (bench/shard_bench.sh).
#   make bench-shards                      full run (table at the end)
#   make bench-shards BENCH_ARGS=--quick   short form for CI (< 2 min)
.PHONY: bench-shards
bench-shards: deps
	$(MAKE) --no-print-directory MODE=release build/release/kinformer/core.so \
	  build/release/bench-informer-seed build/release/kinformer-sim
	bench/shard_bench.sh $(BENCH_ARGS)
