# The webhook benchmark: admission requests per second of kinformer's webhook
# server against controller-runtime's over HTTPS, with one load program for
# both, and through kinformer.sim's in-process admission chain
# (bench/webhook_bench.sh; README in its header).
#
#   make bench-webhook                      full run (table at the end)
#   make bench-webhook BENCH_ARGS=--quick   short form (< 1 min)
#   make bench-webhook-short                the same, as CI runs it
#   BENCH_REPEAT=N                          runs per measurement (median; default 3)

.PHONY: bench-webhook bench-webhook-short

# spec/e2e/build.sh webhook-reference builds or reuses the controller-runtime
# server and the load program (bench/reference/controller-runtime-webhook)
# in the e2e cache, from the Go module proxy the first time.
bench-webhook: deps
	spec/e2e/build.sh webhook-reference
	$(MAKE) --no-print-directory MODE=release build/release/kinformer/core.so build/release/kinformer/simcore.so
	bench/webhook_bench.sh $(BENCH_ARGS)

bench-webhook-short:
	$(MAKE) --no-print-directory bench-webhook BENCH_ARGS=--quick
