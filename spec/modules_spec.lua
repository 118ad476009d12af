-- The two C modules: kinformer.core, the one operators load in production,
-- links no part of the test API server (only libmicrohttpd and GnuTLS, for
-- the metrics, admin and health endpoints and their HTTPS); kinformer.simcore (under
-- require "kinformer.sim") holds the server. Uses readelf and nm (binutils).

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  p:close()
  return out
end

local function module_path(name)
  return assert(package.searchpath(name, package.cpath), name .. " not on package.cpath")
end

-- The shared libraries a module names itself (DT_NEEDED), as one string.
local function needed(path)
  local out = sh("readelf -d " .. path)
  assert(out:find("NEEDED", 1, true), "readelf -d " .. path .. ": " .. out)
  local libs = {}
  for lib in out:gmatch("NEEDED%)%s+Shared library: %[([^%]]+)%]") do libs[#libs + 1] = lib end
  return table.concat(libs, " ")
end

describe("kinformer.core", function()
  -- libmicrohttpd serves the manager's /metrics, /healthz and /readyz
  -- (csrc/core/metrics/metrics_server.c), GnuTLS its HTTPS certificates
  -- (csrc/core/tls/); Jansson stays the sim's.
  it("links libmicrohttpd and GnuTLS but not Jansson", function()
    local libs = needed(module_path("kinformer.core"))
    assert.matches("libcurl", libs)
    assert.matches("libmicrohttpd", libs)
    assert.matches("gnutls", libs)
    assert.not_matches("jansson", libs)
  end)

  it("loads no Jansson and no sim into a process that requires only it", function()
    -- (GnuTLS may still be mapped: Debian's libcurl pulls it in through
    -- librtmp, and libmicrohttpd through its TLS support)
    local maps = sh(string.format(
      "LUA_CPATH=%q LUA_PATH=%q lua5.4 -e 'require \"kinformer.core\"; "
        .. "assert(not package.loaded[\"kinformer.simcore\"]); "
        .. "io.write(io.open(\"/proc/self/maps\"):read(\"a\"))'",
      package.cpath, package.path))
    assert.matches("kinformer/core%.so", maps)
    assert.not_matches("libjansson", maps)
    assert.not_matches("simcore", maps)
  end)

  it("no longer carries the sim", function()
    assert.is_nil(require("kinformer.core").sim_start)
  end)
end)

describe("kinformer.simcore", function()
  it("holds the sim and its libraries", function()
    local path = module_path("kinformer.simcore")
    assert.matches("microhttpd", needed(path))
    local m = require "kinformer.simcore"
    assert.equals(require("kinformer.core").version, m.version)
    assert.is_function(m.start)
  end)

  it("exports only luaopen_kinformer_simcore and has no copy of the log state", function()
    local path = module_path("kinformer.simcore")
    local exported = sh("nm -D --defined-only " .. path)
    assert.matches("luaopen_kinformer_simcore", exported)
    assert.not_matches("kin_", exported)
    -- core.set_log_level and the log sink live in kinformer.core; were the
    -- sim ever to log through csrc/core/util/log.c, simcore.so would link its
    -- own copy of that state, deaf to both: route the sim's logging first.
    local symbols = sh("nm " .. path)
    if symbols:find("luaopen_kinformer_simcore", 1, true) then -- not stripped
      assert.not_matches("kin_log", symbols)
    end
  end)

  it("serves through require \"kinformer.sim\"", function()
    local sim <close> = assert(require("kinformer.sim").start{})
    assert.matches("^http://127%.0%.0%.1:%d+$", sim.url)
    assert.is_true(sim:running())
    assert.matches("kinformer%.sim http://", tostring(sim))
  end)
end)
