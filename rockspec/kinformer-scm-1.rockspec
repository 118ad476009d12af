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
}
build = {
  type = "builtin",
  modules = {
    kinformer = "lua/kinformer/init.lua",
    ["kinformer.core"] = {
      -- BEGIN SOURCES (tools/update-rockspec.sh keeps this list current)
      sources = {
        "csrc/core/clock.c",
        "csrc/core/delaying_queue.c",
        "csrc/core/delta_fifo.c",
        "csrc/core/hmap.c",
        "csrc/core/index_funcs.c",
        "csrc/core/indexer.c",
        "csrc/core/json_check.c",
        "csrc/core/kin.c",
        "csrc/core/kobj.c",
        "csrc/core/listener.c",
        "csrc/core/log.c",
        "csrc/core/processor.c",
        "csrc/core/queue.c",
        "csrc/core/rate_limiters.c",
        "csrc/core/rate_limiting_queue.c",
        "csrc/core/ring_buffer.c",
        "csrc/core/shared_informer.c",
        "csrc/core/strq.c",
        "csrc/core/workqueue_metrics.c",
        "csrc/lua/lkin.c",
        "csrc/lua/lobject.c",
      },
      -- END SOURCES
      defines = { "_GNU_SOURCE" },
      incdirs = { "csrc/core", "$(CURL_INCDIR)", "$(LIBUV_INCDIR)", "$(YAML_INCDIR)", "$(JSMN_INCDIR)" },
      libdirs = { "$(CURL_LIBDIR)", "$(LIBUV_LIBDIR)", "$(YAML_LIBDIR)" },
      libraries = { "curl", "uv", "yaml", "pthread", "m" },
    },
  },
}
test = {
  type = "busted",
}
