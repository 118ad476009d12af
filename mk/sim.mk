# kinformer.sim as a standalone program and its benchmark.
#
#   make sim         build build/<mode>/kinformer-sim
#   make bench-sim   LIST of 100k ConfigMaps and watch fan-out (table)
#   make bench-sim-rss  the sim's RSS per stored 1 KB ConfigMap beside its
#                    JSON size (bench/sim_rss.sh; SIM_RSS_OBJECTS, default 100000)
#   make sim-openapi refresh csrc/sim/openapi/ from kube-apiserver (needs make e2e-deps)
#   make sim-discovery refresh csrc/sim/discovery/discovery.json (the built-in
#                    resources) from kube-apiserver (needs make e2e-deps)
#   make sim-proto   regenerate csrc/core/proto/schema.txt (protobuf schema; needs make e2e-deps)

.PHONY: sim bench-sim bench-sim-rss test-differential differential-golden

SIM_CLI := $(BUILD)/kinformer-sim
$(SIM_CLI): csrc/sim/cli/kinformer-sim.c $(SIM_LIB) $(CORE_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(SIM_INC) -o $@ $< $(SIM_LIB) $(CORE_LIB) $(LDFLAGS_ALL) $(SIM_LIBS) $(CORE_LIBS)

sim: $(SIM_CLI)

SIM_BENCH := $(BUILD)/bench_sim
$(SIM_BENCH): bench/sim_bench.c $(SIM_LIB) $(CORE_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(SIM_INC) -o $@ $< $(SIM_LIB) $(CORE_LIB) $(LDFLAGS_ALL) $(SIM_LIBS) -lcurl $(CORE_LIBS)

bench-sim: deps
	$(MAKE) --no-print-directory MODE=release $(SIM_BENCH)
	./$(SIM_BENCH) $(BENCH_ARGS)

SIM_RSS_OBJECTS ?= 100000
bench-sim-rss: deps
	$(MAKE) --no-print-directory MODE=release sim
	bench/sim_rss.sh $(abspath $(BUILD)/kinformer-sim) $(SIM_RSS_OBJECTS)

# The differential corpus against the sim, compared with the real server's
# recording (spec/differential/golden); part of make test. make e2e runs the
# same corpus against a live kube-apiserver and kube-controller-manager.
test-differential: $(SIM_CLI)
	DIFF_REFERENCE=spec/differential/golden KINFORMER_SIM=$(SIM_CLI) spec/differential/run.sh

# Re-records the golden answers from a real kube-apiserver with
# kube-controller-manager beside it (spec/e2e/cluster.sh; needs make e2e-deps).
differential-golden: $(SIM_CLI)
	rm -rf build/differential-golden
	DIFF_KEEP=build/differential-golden KINFORMER_SIM=$(SIM_CLI) spec/differential/run.sh
	rm -f spec/differential/golden/*.json
	cp build/differential-golden/real/*.json spec/differential/golden/

# Refreshes csrc/sim/discovery/discovery.json (every group-version's
# APIResourceList of a live kube-apiserver of spec/e2e/versions.env, from
# which csrc/sim/registry_builtins.c builds the built-in resources;
# compiled in by tools/embed-discovery.sh). Run make sim-openapi and make
# sim-proto after it (needs make e2e-deps).
.PHONY: sim-discovery
sim-discovery:
	spec/e2e/build.sh core
	spec/e2e/cluster.sh run python3 spec/e2e/discovery_capture.py

# Refreshes csrc/sim/openapi/ (the OpenAPI v3 documents the sim serves,
# compiled in by http_openapi.c) from a live kube-apiserver of
# spec/e2e/versions.env, for the group-versions $(SIM_CLI) serves (needs
# make e2e-deps).
.PHONY: sim-openapi
sim-openapi: $(SIM_CLI)
	KINFORMER_SIM=$(SIM_CLI) spec/e2e/cluster.sh run python3 spec/e2e/openapi_capture.py

# Regenerates csrc/core/proto/schema.txt (the protobuf schema of the served
# built-in types, committed; tools/embed-proto.sh compiles it in) from the
# generated.proto files and Go types of the e2e tier's k8s.io modules,
# with Debian's protoc (needs make e2e-deps; installs protobuf-compiler and
# libprotobuf-dev, for descriptor.proto,
# through tools/deps.sh).
.PHONY: sim-proto
sim-proto:
	tools/deps.sh protobuf-compiler libprotobuf-dev
	spec/e2e/build.sh core
	python3 tools/gen-sim-proto.py $${KINFORMER_E2E_CACHE:-$$HOME/.cache/kinformer-e2e}/$$(sed -n 's/^K8S_VERSION=//p' spec/e2e/versions.env)/go/pkg/mod/k8s.io csrc/core/proto/schema.txt
