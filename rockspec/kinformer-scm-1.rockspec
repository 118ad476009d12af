rockspec_format = "3.0"
package = "kinformer"
version = "scm-1"
source = {
  url = "git+file:///kinformer",
}
description = {
  summary = "Kubernetes informers, workqueues and controllers in C for Lua 5.4",
  detailed = [[
kinformer is the client-go informer stack (reflector, DeltaFIFO, indexer,
shared informer, rate-limited workqueue, controller) written in C, with a
Lua 5.4 binding for writing Kubernetes operators as Lua scripts.
]],
  license = "Apache-2.0",
  labels = { "kubernetes", "operator", "informer" },
}
dependencies = {
  "lua >= 5.4, < 5.5",
}
external_dependencies = {
  CURL = { header = "curl/curl.h", library = "curl" },
  LIBUV = { header = "uv.h", library = "uv" },
  YAML = { header = "yaml.h", library = "yaml" },
  JSMN = { header = "jsmn.h" },
  MICROHTTPD = { header = "microhttpd.h", library = "microhttpd" },
  JANSSON = { header = "jansson.h", library = "jansson" },
  GNUTLS = { header = "gnutls/gnutls.h", library = "gnutls" },
}
build = {
  type = "builtin",
  install = { bin = { kinformer = "bin/kinformer" } },
  modules = {
    kinformer = "lua/kinformer/init.lua",
    ["kinformer.sim"] = "lua/kinformer/sim.lua",
    ["kinformer.ctx"] = "lua/kinformer/ctx.lua",
    ["kinformer.log"] = "lua/kinformer/log.lua",
    ["kinformer.util.object"] = "lua/kinformer/util/object.lua",
    ["kinformer.util.finalizer"] = "lua/kinformer/util/finalizer.lua",
    ["kinformer.util.owner"] = "lua/kinformer/util/owner.lua",
    ["kinformer.util.condition"] = "lua/kinformer/util/condition.lua",
    ["kinformer.errors"] = "lua/kinformer/errors.lua",
    ["kinformer.manager"] = "lua/kinformer/manager.lua",
    ["kinformer.controller"] = "lua/kinformer/controller.lua",
    ["kinformer.cli"] = "lua/kinformer/cli.lua",
    ["kinformer.core"] = {
      -- BEGIN SOURCES (tools/update-rockspec.sh keeps this list current)
      sources = {
        "csrc/core/cache/delta_fifo.c",
        "csrc/core/cache/index_funcs.c",
        "csrc/core/cache/indexer.c",
        "csrc/core/cache/indexer_index.c",
        "csrc/core/cache/informer_factory.c",
        "csrc/core/cache/label_selector.c",
        "csrc/core/cache/listener.c",
        "csrc/core/cache/processor.c",
        "csrc/core/cache/reflector.c",
        "csrc/core/cache/reflector_list.c",
        "csrc/core/cache/reflector_watch.c",
        "csrc/core/cache/ring_buffer.c",
        "csrc/core/cache/shared_informer.c",
        "csrc/core/cache/transform.c",
        "csrc/core/controller/controller.c",
        "csrc/core/controller/controller_handlers.c",
        "csrc/core/controller/predicate.c",
        "csrc/core/controller/reconcile.c",
        "csrc/core/json/json_check.c",
        "csrc/core/json/json_str.c",
        "csrc/core/json/json_tok.c",
        "csrc/core/json/kobj.c",
        "csrc/core/json/watch_decoder.c",
        "csrc/core/transport/discovery.c",
        "csrc/core/transport/exec_credential.c",
        "csrc/core/transport/in_cluster.c",
        "csrc/core/transport/io_engine.c",
        "csrc/core/transport/io_health.c",
        "csrc/core/transport/kubeconfig.c",
        "csrc/core/transport/rest_client.c",
        "csrc/core/transport/rest_verbs.c",
        "csrc/core/transport/token_bucket.c",
        "csrc/core/util/backoff.c",
        "csrc/core/util/base64.c",
        "csrc/core/util/buf.c",
        "csrc/core/util/clock.c",
        "csrc/core/util/hmap.c",
        "csrc/core/util/kin.c",
        "csrc/core/util/log.c",
        "csrc/core/util/strq.c",
        "csrc/core/util/util.c",
        "csrc/core/workqueue/delaying_queue.c",
        "csrc/core/workqueue/queue.c",
        "csrc/core/workqueue/rate_limiters.c",
        "csrc/core/workqueue/rate_limiting_queue.c",
        "csrc/core/workqueue/workqueue_metrics.c",
        "csrc/lua/laux.c",
        "csrc/lua/lclient.c",
        "csrc/lua/lcontroller.c",
        "csrc/lua/lcontroller_spec.c",
        "csrc/lua/lcontroller_watchdog.c",
        "csrc/lua/lenv.c",
        "csrc/lua/lenv_core.c",
        "csrc/lua/lhandler.c",
        "csrc/lua/linformer.c",
        "csrc/lua/ljson.c",
        "csrc/lua/lkin.c",
        "csrc/lua/lobject.c",
        "csrc/lua/lresult.c",
        "csrc/lua/lworker.c",
        "csrc/lua/worker_code.c",
        "csrc/lua/worker_state.c",
      },
      -- END SOURCES
      defines = { "_GNU_SOURCE" },
      incdirs = {
        -- BEGIN INCDIRS (tools/update-rockspec.sh keeps this list current)
        "include/kinformer", "csrc/core/cache", "csrc/core/json", "csrc/core/transport", "csrc/core/util", "csrc/core/workqueue",
        -- END INCDIRS
        "$(CURL_INCDIR)", "$(LIBUV_INCDIR)", "$(YAML_INCDIR)", "$(JSMN_INCDIR)",
      },
      libdirs = { "$(CURL_LIBDIR)", "$(LIBUV_LIBDIR)", "$(YAML_LIBDIR)" },
      libraries = { "curl", "uv", "yaml", "pthread", "m" },
    },
    -- The C part of kinformer.sim (the in-process API server), apart from
    -- kinformer.core so that operators load no libmicrohttpd, GnuTLS or
    -- Jansson; it compiles its own copy of the few csrc/core files the
    -- sim uses (stateless helpers: none of them logs or keeps globals).
    ["kinformer.simcore"] = {
      -- BEGIN SIM SOURCES (tools/update-rockspec.sh keeps this list current)
      sources = {
        "csrc/core/cache/label_selector.c",
        "csrc/core/util/buf.c",
        "csrc/core/util/hmap.c",
        "csrc/core/util/kin.c",
        "csrc/core/util/util.c",
        "csrc/lua/lsim.c",
        "csrc/sim/burst.c",
        "csrc/sim/faults.c",
        "csrc/sim/http_auth.c",
        "csrc/sim/http_discovery.c",
        "csrc/sim/http_list.c",
        "csrc/sim/http_openapi.c",
        "csrc/sim/http_request_info.c",
        "csrc/sim/http_resource.c",
        "csrc/sim/http_server.c",
        "csrc/sim/http_util.c",
        "csrc/sim/http_watch.c",
        "csrc/sim/registry.c",
        "csrc/sim/seed.c",
        "csrc/sim/selector.c",
        "csrc/sim/server.c",
        "csrc/sim/sim_patch.c",
        "csrc/sim/sim_patch_strategic.c",
        "csrc/sim/sim_patch_strategic_schema.c",
        "csrc/sim/sim_patch_strategic_util.c",
        "csrc/sim/status.c",
        "csrc/sim/store.c",
        "csrc/sim/store_create.c",
        "csrc/sim/store_delete.c",
        "csrc/sim/store_object.c",
        "csrc/sim/store_update.c",
        "csrc/sim/util.c",
        "csrc/sim/validation.c",
      },
      -- END SIM SOURCES
      defines = { "_GNU_SOURCE" },
      incdirs = {
        -- BEGIN SIM INCDIRS (tools/update-rockspec.sh keeps this list current)
        "include/kinformer", "csrc/core/cache", "csrc/core/util", "csrc/sim",
        -- END SIM INCDIRS
        "$(MICROHTTPD_INCDIR)", "$(JANSSON_INCDIR)", "$(GNUTLS_INCDIR)",
      },
      libdirs = { "$(MICROHTTPD_LIBDIR)", "$(JANSSON_LIBDIR)", "$(GNUTLS_LIBDIR)" },
      libraries = { "microhttpd", "gnutls", "jansson", "pthread", "m" },
    },
  },
}
test = {
  type = "busted",
}
