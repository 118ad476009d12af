# The Lua-layer benchmark: handler dispatch and reconcile rate of kinformer
# from Lua against client-go (bench/lua_bench.sh; README in its header).
#
#   make bench-lua                      full run (table at the end)
#   make bench-lua BENCH_ARGS=--quick   short form for CI (< 2 min)
#   BENCH_REPEAT=N                      repeats per measurement (median; default 3)

.PHONY: bench-lua

# e2e-reference (mk/e2e.mk) builds or reuses the client-go program (its
# reconcile mode is bench/reference/client-go/reconcile.go); the seed
# generator's rule is in mk/bench.mk.
bench-lua: deps e2e-reference
	$(MAKE) --no-print-directory MODE=release build/release/kinformer/core.so \
	  build/release/bench-informer-seed build/release/kinformer-sim build/release/bench_core
	bench/lua_bench.sh $(BENCH_ARGS)
