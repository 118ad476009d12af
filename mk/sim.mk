# kinformer.sim as a standalone program and its benchmark.
#
#   make sim         build build/<mode>/kinformer-sim
#   make bench-sim   LIST of 100k ConfigMaps and watch fan-out (table)

.PHONY: sim bench-sim

SIM_CLI := $(BUILD)/kinformer-sim
$(SIM_CLI): csrc/sim/cli/kinformer-sim.c $(SIM_LIB) $(CORE_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Icsrc/sim -o $@ $< $(SIM_LIB) $(CORE_LIB) $(LDFLAGS_ALL) $(SIM_LIBS) $(CORE_LIBS)

sim: $(SIM_CLI)

SIM_BENCH := $(BUILD)/bench_sim
$(SIM_BENCH): bench/sim_bench.c $(SIM_LIB) $(CORE_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Icsrc/sim -o $@ $< $(SIM_LIB) $(CORE_LIB) $(LDFLAGS_ALL) $(SIM_LIBS) -lcurl $(CORE_LIBS)

bench-sim: deps
	$(MAKE) --no-print-directory MODE=release $(SIM_BENCH)
	./$(SIM_BENCH) $(BENCH_ARGS)
