# libFuzzer harnesses (spec/fuzz/fuzz_<target>.c), built with clang against
# the core and the sim compiled with the same flags (MODE=fuzz: coverage
# for libFuzzer, ASan, UBSan) into build/fuzz/.
#
#   make fuzz        every harness for FUZZ_SECONDS each (default 600) on its
#                    corpus spec/fuzz/corpus/<target>; new inputs go to
#                    build/fuzz/corpus/<target>, FUZZ_MERGE=1 merges them
#                    into spec/fuzz/corpus/<target> afterwards
#   make fuzz-short  the regression inputs (spec/fuzz/regressions/<target>)
#                    replayed, then every harness for FUZZ_SHORT_SECONDS
#                    each (default 10); part of make test
#   make fuzz-build  the harnesses only
#
# FUZZ_TARGETS=kobj limits a run to some harnesses. A crash fails the
# target and names the file libFuzzer wrote (build/fuzz/crash-*), see
# docs/development.md, "Fuzzing".

.PHONY: fuzz fuzz-short fuzz-build fuzz-bins

FUZZ_ALL := watch_decoder kobj list_stream label_selector kubeconfig exec_credential patch sim_request proto webhook_review
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_SECONDS ?= 600
FUZZ_SHORT_SECONDS ?= 10
FUZZ_MERGE ?= 0
FUZZ_CC ?= clang
FUZZ_LDFLAGS := -fsanitize=fuzzer,address,undefined -pthread
FUZZ_BINS := $(FUZZ_TARGETS:%=$(BUILD)/fuzz_%)

# The sim's harness links spec/fuzz/fake_mhd.c in place of libmicrohttpd.
$(BUILD)/fuzz_sim_request: spec/fuzz/fuzz_sim_request.c spec/fuzz/fake_mhd.c $(SIM_LIB) $(CORE_LIB) \
                           $(SIM_HDR) $(CORE_HDR)
	$(CC) $(CFLAGS_ALL) $(SIM_INC) -o $@ spec/fuzz/fuzz_sim_request.c spec/fuzz/fake_mhd.c \
	  $(SIM_LIB) $(CORE_LIB) $(FUZZ_LDFLAGS) $(filter-out -lmicrohttpd,$(SIM_LIBS)) -lm

$(BUILD)/fuzz_proto: spec/fuzz/fuzz_proto.c $(SIM_LIB) $(CORE_LIB) $(SIM_HDR) $(CORE_HDR)
	$(CC) $(CFLAGS_ALL) $(SIM_INC) -o $@ $< $(SIM_LIB) $(CORE_LIB) $(FUZZ_LDFLAGS) $(filter-out -lmicrohttpd,$(SIM_LIBS)) -lm

$(BUILD)/fuzz_patch: spec/fuzz/fuzz_patch.c $(SIM_LIB) $(CORE_LIB) $(SIM_HDR) $(CORE_HDR)
	$(CC) $(CFLAGS_ALL) $(SIM_INC) -o $@ $< $(SIM_LIB) $(CORE_LIB) $(FUZZ_LDFLAGS) $(SIM_LIBS) -lm

$(BUILD)/fuzz_%: spec/fuzz/fuzz_%.c $(CORE_LIB) $(CORE_HDR)
	$(CC) $(CFLAGS_ALL) $(CORE_INT_INC) -o $@ $< $(CORE_LIB) $(FUZZ_LDFLAGS) $(CORE_LIBS)

# (inside MODE=fuzz)
fuzz-bins: $(FUZZ_BINS)

fuzz-build: deps
	$(MAKE) --no-print-directory MODE=fuzz CC=$(FUZZ_CC) fuzz-bins FUZZ_TARGETS='$(FUZZ_TARGETS)'

fuzz: fuzz-build
	FUZZ_MERGE=$(FUZZ_MERGE) spec/fuzz/run.sh long $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-short: fuzz-build
	spec/fuzz/run.sh short $(FUZZ_SHORT_SECONDS) $(FUZZ_TARGETS)
