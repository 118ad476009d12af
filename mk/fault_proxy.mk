# The fault-injecting TCP proxy (spec/c/fault_proxy.h): linked into the C
# tests (spec/c/test_conn_health.c and test_e2e_stall.c use it in-process)
# and built as a program (spec/stall_spec.lua drives it).
#
#   make fault-proxy   build build/<mode>/kin-fault-proxy

.PHONY: fault-proxy

TEST_OBJ += $(BUILD)/spec/fault_proxy.o
$(TEST_BIN): $(BUILD)/spec/fault_proxy.o

FAULT_PROXY := $(BUILD)/kin-fault-proxy
$(FAULT_PROXY): $(BUILD)/spec/fault_proxy_main.o $(BUILD)/spec/fault_proxy.o $(CORE_LIB)
	$(CC) -o $@ $(BUILD)/spec/fault_proxy_main.o $(BUILD)/spec/fault_proxy.o $(CORE_LIB) $(LDFLAGS_ALL) $(CORE_LIBS)

fault-proxy: $(FAULT_PROXY)

# spec/stall_spec.lua runs it (make test against the sim, make e2e-lua
# against kube-apiserver).
test-lua: $(FAULT_PROXY)
