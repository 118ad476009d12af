-- Errors a user can act on (issue 12), seen from Lua: a manager whose
-- kubeconfig points to a missing file is refused when it is created,
-- naming the entry and the file; a wrong CA gives the TLS reason and the
-- CA; discovery and the client report the server's real status and
-- Status reason instead of EUNKNOWN / HTTP code 0. The C side (HTML
-- bodies, exec plugin stderr, the reflector's log lines) is in
-- spec/c/test_errors.c.
local kinformer = require "kinformer"
local simmod = require "kinformer.sim"

local cwd = assert(io.popen("pwd")):read("l")
local fixtures = cwd .. "/spec/c/fixtures/"

local function tmpdir()
  local d = assert(io.popen("mktemp -d /tmp/kin_errspec_XXXXXX")):read("l")
  return d
end

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- A kubeconfig for server with the cluster and user fields given (YAML
-- lines, already indented for their mapping).
local function kubeconfig(dir, server, cluster_fields, user_fields)
  local path = dir .. "/config"
  write(path, table.concat({
    "apiVersion: v1",
    "kind: Config",
    "current-context: x",
    "clusters:",
    "- name: c",
    "  cluster:",
    "    server: " .. server,
    cluster_fields or "",
    "users:",
    "- name: u",
    "  user:",
    user_fields or "    {}",
    "contexts:",
    "- name: x",
    "  context:",
    "    cluster: c",
    "    user: u",
    "",
  }, "\n"))
  return path
end

describe("actionable errors", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() os.execute("rm -rf '" .. dir .. "'") end)

  it("names a missing token file when the manager is created", function()
    local path = kubeconfig(dir, "https://127.0.0.1:1", nil, "    tokenFile: gone-token")
    local m, msg, code = kinformer.manager { kubeconfig = path }
    assert.is_nil(m)
    assert.are.equal("ENOENT", code)
    assert.are.equal(string.format(
      'create manager: kubeconfig %s: user "u": token file %s/gone-token: No such file or directory',
      path, dir), msg)
  end)

  it("names a missing CA file of the cluster", function()
    local path = kubeconfig(dir, "https://127.0.0.1:1", "    certificate-authority: /nonexistent/ca.crt")
    local m, msg, code = kinformer.manager { kubeconfig = path }
    assert.is_nil(m)
    assert.are.equal("ENOENT", code)
    assert.matches('kubeconfig ' .. path .. ': cluster "c": certificate-authority /nonexistent/ca.crt: '
      .. 'No such file or directory', msg, 1, true)
  end)

  it("names the file and line of a broken kubeconfig", function()
    local path = dir .. "/config"
    write(path, "apiVersion: v1\nclusters:\n- name: c\n  cluster: [\n")
    local m, msg = kinformer.manager { kubeconfig = path }
    assert.is_nil(m)
    assert.matches("kubeconfig " .. path .. ": line %d+: ", msg)
  end)

  describe("against a TLS server", function()
    local sim
    before_each(function()
      sim = assert(simmod.start { tls_cert = fixtures .. "sim_tls.crt", tls_key = fixtures .. "sim_tls.key" })
    end)
    after_each(function() sim:stop() end)

    it("gives the TLS reason and the CA in use for a wrong CA", function()
      local ca = fixtures .. "sim_client_ca.crt"
      local path = kubeconfig(dir, sim.url, "    certificate-authority: " .. ca)
      local mgr = assert(kinformer.manager { kubeconfig = path })
      local r, msg, code, http = mgr.env:resource("v1/configmaps")
      assert.is_nil(r)
      assert.are.equal("EIO", code)
      assert.are.equal(0, http)
      assert.matches("resolve v1/configmaps: GET " .. sim.url
        .. "/api/v1: TLS: certificate signed by unknown authority (SSL certificate problem: ", msg, 1, true)
      assert.matches("; CA: " .. ca .. ")", msg, 1, true)
      -- the client's verbs say the same
      local obj, cmsg, ccode, chttp = mgr.client:get("v1/configmaps", "default", "x")
      assert.is_nil(obj)
      assert.are.equal("EIO", ccode)
      assert.are.equal(0, chttp)
      assert.matches("resolve resource 'v1/configmaps': GET ", cmsg, 1, true)
      assert.matches("TLS: certificate signed by unknown authority", cmsg, 1, true)
      mgr:stop()
    end)
  end)

  describe("against a server that refuses the token", function()
    local sim
    before_each(function() sim = assert(simmod.start { token = "right-token" }) end)
    after_each(function() sim:stop() end)

    it("reports discovery's real status and reason", function()
      local mgr = assert(kinformer.manager { url = sim.url, token = "wrong-token" })
      local r, msg, code, http = mgr.env:resource("v1/configmaps")
      assert.is_nil(r)
      assert.are.equal("Unauthorized", code)
      assert.are.equal(401, http)
      assert.matches("^resolve v1/configmaps: 401 Unauthorized: ", msg)
      local obj, cmsg, ccode, chttp = mgr.client:get("v1/configmaps", "default", "x")
      assert.is_nil(obj)
      assert.are.equal("Unauthorized", ccode)
      assert.are.equal(401, chttp)
      assert.matches("resolve resource 'v1/configmaps': 401 Unauthorized: ", cmsg, 1, true)
      assert.is_nil(cmsg:find("wrong-token", 1, true))
      mgr:stop()
    end)
  end)
end)
