rockspec_format = "3.0"
package = "kinformer"
version = "0.1.0-1"
-- The release tarball `make rock` makes (build/rock/kinformer-0.1.0.tar.gz:
-- the tracked files under kinformer-0.1.0/), published as a release asset;
-- the source rock (.src.rock) carries it, so installing from a rocks server
-- (`luarocks install kinformer`) never fetches this URL.
source = {
  url = "https://github.com/kinformer/kinformer/releases/download/v0.1.0/kinformer-0.1.0.tar.gz",
  dir = "kinformer-0.1.0",
}
-- BEGIN COMMON (tools/update-rockspec.sh copies from here to the end into
-- rockspec/kinformer-scm-1.rockspec: edit this file, then run it)
description = {
  summary = "Kubernetes informers, workqueues and controllers in C for Lua 5.4",
  detailed = [[
kinformer is the client-go informer stack (reflector, DeltaFIFO, indexer,
shared informer, rate-limited workqueue, controller) written in C, with a
Lua 5.4 binding for writing Kubernetes operators as Lua scripts. The rock
installs the Lua modules, the C modules kinformer.core and kinformer.simcore,
the `kinformer` command (run an operator script, print its manifests), the
standalone API server `kinformer-sim`, and the example operators (in the
rock's directory: `luarocks show --rock-dir kinformer`/examples).
]],
  homepage = "https://github.com/kinformer/kinformer",
  license = "Apache-2.0",
  labels = { "kubernetes", "operator", "informer" },
}
dependencies = {
  "lua >= 5.4, < 5.5",
}
-- kinformer.core: libcurl, libuv, libyaml, libmicrohttpd and GnuTLS (the
-- metrics, admin and health endpoints; HTTPS) (and jsmn, header only);
-- kinformer.simcore and kinformer-sim: libmicrohttpd, GnuTLS, Jansson,
-- zlib (the sim's compiled-in OpenAPI documents are gzip-compressed).
-- libcurl is declared by its library only: Debian keeps curl/curl.h under
-- the multiarch include folder, where the compiler finds it but luarocks
-- does not look (a header check would make `luarocks install kinformer`
-- fail there unless CURL_INCDIR were given).
external_dependencies = {
  CURL = { library = "curl" },
  LIBUV = { header = "uv.h", library = "uv" },
  YAML = { header = "yaml.h", library = "yaml" },
  JSMN = { header = "jsmn.h" },
  MICROHTTPD = { header = "microhttpd.h", library = "microhttpd" },
  JANSSON = { header = "jansson.h", library = "jansson" },
  GNUTLS = { header = "gnutls/gnutls.h", library = "gnutls" },
  ZLIB = { header = "zlib.h", library = "z" },
  EDIT = { header = "editline/readline.h", library = "edit" }, -- kinformer.readline (kinformer repl)
}
-- build.type "make": the builtin type builds Lua C modules only, and the
-- rock also installs kinformer-sim, a C program. The project's Makefile
-- (targets rock-build and rock-install, mk/rock.mk) builds both modules and
-- the program the way `make build sim` does (every csrc/core layer of
-- CORE_LAYERS, in parallel) inside luarocks' unpacked copy of the sources,
-- then installs into the folders luarocks names.
build = {
  type = "make",
  build_target = "rock-build",
  build_variables = {
    ROCK_CFLAGS = "$(CFLAGS)",
    LUA_INC = "$(LUA_INCDIR)",
    ROCK_CPPFLAGS = "-I$(LIBUV_INCDIR) -I$(YAML_INCDIR) -I$(JSMN_INCDIR) -I$(MICROHTTPD_INCDIR) -I$(JANSSON_INCDIR) -I$(GNUTLS_INCDIR) -I$(ZLIB_INCDIR) -I$(EDIT_INCDIR)",
    ROCK_LDFLAGS = "-L$(CURL_LIBDIR) -L$(LIBUV_LIBDIR) -L$(YAML_LIBDIR) -L$(MICROHTTPD_LIBDIR) -L$(JANSSON_LIBDIR) -L$(GNUTLS_LIBDIR) -L$(ZLIB_LIBDIR) -L$(EDIT_LIBDIR)",
  },
  install_target = "rock-install",
  install_variables = {
    LUADIR = "$(LUADIR)",
    LIBDIR = "$(LIBDIR)",
    BINDIR = "$(BINDIR)",
  },
  -- copied into the rock's directory (luarocks show --rock-dir kinformer); types/: the
  -- LuaCATS definitions for editors (workspace.library, see types/kinformer.lua)
  copy_directories = { "examples", "docs", "types" },
}
test = {
  type = "busted",
}
