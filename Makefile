# kinformer -- build, test, run, bench.
#
#   make test        install missing Debian packages, build, run the C tests
#                    (cmocka), the Lua specs (busted) and each fuzz harness
#                    for 10 s (make fuzz-short, mk/fuzz.mk)
#   make run         build and run the main job: the Website operator against
#                    kinformer.sim (or $KUBECONFIG's cluster), see README
#   make test-asan   C tests under AddressSanitizer + UBSan
#   make test-tsan   C tests under ThreadSanitizer
#   make bench-core  core benchmarks (table)
#   make bench-informer  kinformer vs client-go informers against kinformer-sim (table;
#                    BENCH_ARGS=--quick for CI; mk/bench.mk)
#
#   make fuzz        libFuzzer harnesses (spec/fuzz, mk/fuzz.mk), FUZZ_SECONDS each
#
# Build outputs go to build/<mode>/ (mode: release, asan, tsan, fuzz).

MODE ?= release
BUILD := build/$(MODE)
CC ?= cc
LUA ?= lua5.4
LUA_INC ?= /usr/include/lua5.4

WARN := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes
# Headers: include/kinformer holds the public ones (the kin_ API); a
# header that only its layer and white-box tests use stays next to its
# sources in csrc/core/<layer>/ (see ARCHITECTURE.md, "Layout"). Everything
# builds with -Iinclude/kinformer; a build that needs a layer's internal
# headers adds that folder (the core and the C tests: all of them; the sim:
# util/; the binding: json/ and util/).
CORE_LAYERS := util json proto transport cache workqueue controller leaderelection events tls metrics webhook
CORE_INT_INC := $(foreach l,$(CORE_LAYERS),$(if $(wildcard csrc/core/$(l)/*.h),-Icsrc/core/$(l)))
CORE_HDR := $(wildcard include/kinformer/*.h csrc/core/*/*.h)
# The sim's folders by concern (csrc/sim/<folder>/, cli/ apart): each is on
# the include path, so a file includes a folder's interface by its name.
SIM_DIRS := $(filter-out csrc/sim/cli/,$(sort $(dir $(wildcard csrc/sim/*/*.[ch]))))
SIM_INC := -Icsrc/sim $(patsubst %/,-I%,$(SIM_DIRS)) -Icsrc/core/util -Icsrc/core/proto
LUA_CORE_INC := -Icsrc/core/json -Icsrc/core/util
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -fPIC -pthread $(WARN) -Iinclude/kinformer
ifeq ($(MODE),release)
  MODE_CFLAGS := -O2 -g
else ifeq ($(MODE),asan)
  MODE_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
else ifeq ($(MODE),tsan)
  MODE_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=thread
else ifeq ($(MODE),fuzz)
  # libFuzzer harnesses (mk/fuzz.mk, CC=clang): coverage for libFuzzer, ASan + UBSan
  MODE_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
else
  $(error unknown MODE $(MODE))
endif
CFLAGS_ALL := $(BASE_CFLAGS) $(MODE_CFLAGS) $(CFLAGS)
LDFLAGS_ALL := -pthread $(filter -fsanitize=%,$(MODE_CFLAGS)) $(LDFLAGS)

CORE_SRC := $(sort $(wildcard $(CORE_LAYERS:%=csrc/core/%/*.c)))
CORE_OBJ := $(patsubst csrc/core/%.c,$(BUILD)/core/%.o,$(CORE_SRC))
# The protobuf schema of the built-in types (csrc/core/proto/schema.txt,
# make sim-proto), compiled in as the generated $(BUILD)/core/proto/pb_schema_data.c
CORE_OBJ += $(BUILD)/core/proto/pb_schema_data.o
CORE_LIB := $(BUILD)/libkincore.a
CORE_LIBS := -lyaml -lm -lcurl -luv -lmicrohttpd -lgnutls

# The embedded API server (kinformer.sim): its own library, linked into the
# tests and the Lua module kinformer.simcore (never into kinformer.core).
SIM_SRC := $(sort $(wildcard csrc/sim/*.c) $(foreach d,$(SIM_DIRS),$(wildcard $(d)*.c)))
SIM_HDR := $(wildcard csrc/sim/*.h) $(foreach d,$(SIM_DIRS),$(wildcard $(d)*.h))
SIM_OBJ := $(patsubst csrc/sim/%.c,$(BUILD)/sim/%.o,$(SIM_SRC))
# kube-apiserver's OpenAPI v3 documents (csrc/sim/openapi/, make
# sim-openapi), compiled in as the generated $(BUILD)/sim/openapi_data.c
SIM_OPENAPI := $(sort $(wildcard csrc/sim/openapi/*.json.gz))
SIM_OBJ += $(BUILD)/sim/openapi_data.o
# kube-apiserver's RBAC bootstrap policy (csrc/sim/auth/bootstrap_policy.json,
# spec/e2e/capture-rbac.sh), compiled in as the generated
# $(BUILD)/sim/rbac_bootstrap_data.c
SIM_OBJ += $(BUILD)/sim/rbac_bootstrap_data.o
# kube-apiserver's discovery (csrc/sim/discovery/discovery.json, make
# sim-discovery): the built-in resources, compiled in as the generated
# $(BUILD)/sim/discovery_data.c
SIM_OBJ += $(BUILD)/sim/discovery_data.o
SIM_LIB := $(BUILD)/libkinsim.a
SIM_LIBS := -lmicrohttpd -lgnutls -ljansson -lz -lyaml -lcurl

LUA_SRC := $(sort $(wildcard csrc/lua/*.c))
LUA_OBJ := $(patsubst csrc/lua/%.c,$(BUILD)/lua/%.o,$(LUA_SRC))
LUA_MOD := $(BUILD)/kinformer/core.so
# kinformer.simcore, the C part of require "kinformer.sim": lsim.c with the
# sim, its own module so that kinformer.core, the one an operator runs in
# production, links no Jansson (libmicrohttpd and GnuTLS serve its
# /metrics, /healthz, /readyz and admin endpoints, with HTTPS:
# csrc/core/metrics, csrc/core/tls). Both
# modules export only luaopen_* (csrc/lua/module.map): each keeps its own
# copy of what it takes from libkincore.a to itself, and simcore.so its own
# copy of the binding's laux.o (option tables, failures, metatables).
SIM_MOD_OBJ := $(BUILD)/lua/lsim.o
SIM_MOD_LINK := $(SIM_MOD_OBJ) $(BUILD)/lua/laux.o
SIM_MOD := $(BUILD)/kinformer/simcore.so
# kinformer.readline, the line editor of `kinformer repl` (lreadline.c with
# libedit, BSD-licensed): its own module, so that kinformer.core links no
# libedit; the REPL falls back to plain lines without it.
RL_MOD_OBJ := $(BUILD)/lua/lreadline.o
RL_MOD := $(BUILD)/kinformer/readline.so
LUA_CORE_OBJ := $(filter-out $(SIM_MOD_OBJ) $(RL_MOD_OBJ),$(LUA_OBJ))
MOD_LDFLAGS := -shared -Wl,--version-script=csrc/lua/module.map

TEST_SRC := $(sort $(wildcard spec/c/test_*.c))
TEST_OBJ := $(patsubst spec/c/%.c,$(BUILD)/spec/%.o,$(TEST_SRC)) $(BUILD)/spec/main.o \
            $(BUILD)/spec/kin_test_util.o $(BUILD)/spec/webhook_test_util.o
TEST_BIN := $(BUILD)/kin_tests
SUITES_H := $(BUILD)/spec/suites.h

.PHONY: all deps build test test-c test-lua test-asan test-tsan bench-core run run-informer-demo clean rock-check

all: build

deps:
	@tools/deps.sh

build: $(CORE_LIB) $(LUA_MOD) $(SIM_MOD) $(RL_MOD)

$(BUILD)/core/%.o: csrc/core/%.c $(CORE_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(CORE_INT_INC) -c $< -o $@

$(CORE_LIB): $(CORE_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/sim/%.o: csrc/sim/%.c $(SIM_HDR) $(CORE_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(SIM_INC) -c $< -o $@

$(BUILD)/sim/openapi_data.c: $(SIM_OPENAPI) tools/embed-openapi.sh
	@mkdir -p $(@D)
	tools/embed-openapi.sh $@ $(SIM_OPENAPI)

$(BUILD)/sim/openapi_data.o: $(BUILD)/sim/openapi_data.c $(SIM_HDR) $(CORE_HDR)
	$(CC) $(CFLAGS_ALL) $(SIM_INC) -c $< -o $@

$(BUILD)/core/proto/pb_schema_data.c: csrc/core/proto/schema.txt tools/embed-proto.sh
	@mkdir -p $(@D)
	tools/embed-proto.sh $@ csrc/core/proto/schema.txt

$(BUILD)/core/proto/pb_schema_data.o: $(BUILD)/core/proto/pb_schema_data.c csrc/core/proto/pb_schema.h
	$(CC) $(CFLAGS_ALL) $(CORE_INT_INC) -c $< -o $@

$(BUILD)/sim/rbac_bootstrap_data.c: csrc/sim/auth/bootstrap_policy.json tools/embed-json.sh
	@mkdir -p $(@D)
	tools/embed-json.sh $@ kin__sim_rbac_bootstrap_json csrc/sim/auth/bootstrap_policy.json

$(BUILD)/sim/rbac_bootstrap_data.o: $(BUILD)/sim/rbac_bootstrap_data.c
	$(CC) $(CFLAGS_ALL) -c $< -o $@
$(BUILD)/sim/discovery_data.c: csrc/sim/discovery/discovery.json tools/embed-discovery.sh
	@mkdir -p $(@D)
	tools/embed-discovery.sh $@ csrc/sim/discovery/discovery.json

$(BUILD)/sim/discovery_data.o: $(BUILD)/sim/discovery_data.c $(SIM_HDR) $(CORE_HDR)
	$(CC) $(CFLAGS_ALL) $(SIM_INC) -c $< -o $@

$(SIM_LIB): $(SIM_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $(SIM_OBJ)

$(BUILD)/lua/%.o: csrc/lua/%.c $(wildcard csrc/lua/*.h) $(SIM_HDR) $(CORE_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -I$(LUA_INC) $(LUA_CORE_INC) $(SIM_INC) -c $< -o $@

$(LUA_MOD): $(LUA_CORE_OBJ) $(CORE_LIB) csrc/lua/module.map
	@mkdir -p $(@D)
	$(CC) $(MOD_LDFLAGS) -o $@ $(LUA_CORE_OBJ) $(CORE_LIB) $(LDFLAGS_ALL) $(CORE_LIBS)

$(SIM_MOD): $(SIM_MOD_LINK) $(SIM_LIB) $(CORE_LIB) csrc/lua/module.map
	@mkdir -p $(@D)
	$(CC) $(MOD_LDFLAGS) -o $@ $(SIM_MOD_LINK) $(SIM_LIB) $(CORE_LIB) $(LDFLAGS_ALL) $(SIM_LIBS) -lm

$(RL_MOD): $(RL_MOD_OBJ) csrc/lua/module.map
	@mkdir -p $(@D)
	$(CC) $(MOD_LDFLAGS) -o $@ $(RL_MOD_OBJ) $(LDFLAGS_ALL) -ledit

# The suite list is regenerated whenever the set of test files changes.
$(SUITES_H): $(TEST_SRC) Makefile
	@mkdir -p $(@D)
	@for f in $(TEST_SRC); do n=$$(basename $$f .c); echo "KIN_SUITE_USE($${n#test_})"; done > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp

$(BUILD)/spec/%.o: spec/c/%.c $(wildcard spec/c/*.h) $(SUITES_H) $(SIM_HDR) $(CORE_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(CORE_INT_INC) -I$(BUILD)/spec -Ispec/c $(SIM_INC) -c $< -o $@

$(TEST_BIN): $(TEST_OBJ) $(CORE_LIB) $(SIM_LIB)
	$(CC) -o $@ $(TEST_OBJ) $(SIM_LIB) $(CORE_LIB) $(LDFLAGS_ALL) -lcmocka $(SIM_LIBS) -lcurl $(CORE_LIBS)

# The binding's C tests (spec/c/lua/test_*.c): worker states, listeners and
# controllers driven from C threads and from Lua scenarios, linked with
# liblua5.4 so that ASan and TSan see the binding's threads too.
LUA_TEST_SRC := $(sort $(wildcard spec/c/lua/test_*.c))
LUA_TEST_OBJ := $(patsubst spec/c/lua/%.c,$(BUILD)/spec_lua/%.o,$(LUA_TEST_SRC)) \
                $(BUILD)/spec_lua/main.o $(BUILD)/spec/kin_test_util.o
LUA_TEST_BIN := $(BUILD)/kin_tests_lua
LUA_SUITES_H := $(BUILD)/spec_lua/suites.h

$(LUA_SUITES_H): $(LUA_TEST_SRC) Makefile
	@mkdir -p $(@D)
	@for f in $(LUA_TEST_SRC); do n=$$(basename $$f .c); echo "KIN_SUITE_USE($${n#test_})"; done > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp

$(BUILD)/spec_lua/%.o: spec/c/lua/%.c $(wildcard spec/c/*.h csrc/lua/*.h) $(CORE_HDR) $(LUA_SUITES_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(CORE_INT_INC) -I$(BUILD)/spec_lua -Ispec/c -Icsrc/lua $(SIM_INC) -I$(LUA_INC) -c $< -o $@

$(BUILD)/spec_lua/main.o: spec/c/main.c $(wildcard spec/c/*.h) $(LUA_SUITES_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -I$(BUILD)/spec_lua -Ispec/c -c $< -o $@

# (every binding file but the line editor, which needs libedit)
$(LUA_TEST_BIN): $(LUA_TEST_OBJ) $(filter-out $(RL_MOD_OBJ),$(LUA_OBJ)) $(CORE_LIB) $(SIM_LIB)
	$(CC) -o $@ $(LUA_TEST_OBJ) $(filter-out $(RL_MOD_OBJ),$(LUA_OBJ)) $(SIM_LIB) $(CORE_LIB) $(LDFLAGS_ALL) -lcmocka \
	  -llua5.4 $(SIM_LIBS) $(CORE_LIBS)

# TSan on kernels with high mmap entropy needs ASLR off (setarch -R).
RUNNER := $(if $(filter tsan,$(MODE)),setarch $(shell uname -m) -R,)

test-c: $(TEST_BIN) $(LUA_TEST_BIN)
	$(RUNNER) ./$(TEST_BIN) $(FILTER)
	$(RUNNER) ./$(LUA_TEST_BIN) $(FILTER)

# spec/clients drives kubectl (built once by the e2e tier's recipe, 88-153 s
# from a cold build cache) and Debian's python3-kubernetes (deps).
test-lua: $(LUA_MOD) $(SIM_MOD) $(RL_MOD)
	@spec/e2e/build.sh kubectl
	LUA_PATH='lua/?.lua;lua/?/init.lua;spec/?.lua;;' LUA_CPATH='$(BUILD)/?.so;;' \
	  $(LUA) /usr/bin/busted --lua=$(LUA) -o utfTerminal spec

test: deps
	$(MAKE) --no-print-directory MODE=release test-c
	$(MAKE) --no-print-directory MODE=release test-differential
	$(MAKE) --no-print-directory fuzz-short
	$(MAKE) --no-print-directory MODE=release test-lua

# Every test again with informers asking for JSON where they ask for
# protobuf by default (built-in types; reflector.h's KIN_CONTENT_TYPE), so
# both encodings run through the whole suite (.ci/run).
.PHONY: test-json
test-json: deps
	KIN_CONTENT_TYPE=json $(MAKE) --no-print-directory MODE=release test-c
	KIN_CONTENT_TYPE=json $(MAKE) --no-print-directory MODE=release test-lua

test-asan: deps
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(MAKE) --no-print-directory MODE=asan test-c

test-tsan: deps
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  $(MAKE) --no-print-directory MODE=tsan test-c

# make rock (mk/rock.mk) builds the release tarball, the source rock and a
# rocks server in build/rock; luarocks installs kinformer by name from it
# into a throw-away tree (building in its own copy of the sources: the
# checkout is left unchanged), and the installed commands run an example
# from that tree (tools/rock-check.sh).
rock-check: deps
	tools/rock-check.sh

BENCH_BIN := $(BUILD)/bench_core
$(BENCH_BIN): bench/core_bench.c $(CORE_LIB)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(CORE_LIB) $(LDFLAGS_ALL) $(CORE_LIBS)

bench-core: deps
	$(MAKE) --no-print-directory MODE=release $(BENCH_BIN)
	./$(BENCH_BIN) $(BENCH_ARGS)

clean:
	rm -rf build

# Later parts of the project add their targets in mk/*.mk.
-include $(sort $(wildcard mk/*.mk))

# The main job: the Website operator (examples/website) against an
# in-process kinformer.sim seeded with examples/website/seed.json, or against
# the cluster of $$KUBECONFIG when set; the driver (examples/run_demo.lua)
# creates, scales, changes and deletes a Website while it runs, prints what
# the operator did and ends with a summary.
run: deps
	$(MAKE) --no-print-directory MODE=release $(LUA_MOD) $(SIM_MOD)
	LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH='$(BUILD)/?.so;;' $(LUA) examples/run_demo.lua 2>&1

# The in-memory informer stack end to end on examples/informer_demo.events
# (the C core alone, no server).
DEMO_BIN := $(BUILD)/informer_demo
$(DEMO_BIN): examples/informer_demo.c $(CORE_LIB)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(CORE_LIB) $(LDFLAGS_ALL) $(CORE_LIBS)

run-informer-demo: deps
	$(MAKE) --no-print-directory MODE=release $(DEMO_BIN)
	./$(DEMO_BIN) examples/informer_demo.events
