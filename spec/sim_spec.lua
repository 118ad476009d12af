-- kinformer.sim from Lua: start, serve, kubeconfig, stop (explicit, <close>, GC).
local simmod = require "kinformer.sim"
local cjson = require "cjson"

-- HTTP through the curl command: the Lua client arrives with the REST client.
-- extra: more curl arguments (e.g. a client certificate).
local function http(method, url, body, token, extra)
  local cmd = string.format("curl -sk -o - -w '\\n%%{http_code}' -X %s -H 'Content-Type: application/json'%s%s %s '%s'",
    method, token and (" -H 'Authorization: Bearer " .. token .. "'") or "",
    body and (" --data-binary '" .. body .. "'") or "", extra or "", url)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  local text, code = out:match("^(.*)\n(%d+)$")
  return tonumber(code), text
end

describe("kinformer.sim", function()
  it("starts on a free loopback port and serves the API", function()
    local sim = assert(simmod.start())
    assert.matches("^http://127%.0%.0%.1:%d+$", sim.url)
    local code, body = http("GET", sim.url .. "/version")
    assert.are.equal(200, code)
    assert.is_string(cjson.decode(body).gitVersion)
    code, body = http("POST", sim.url .. "/api/v1/namespaces/default/configmaps",
      '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"},"data":{"a":"b"}}')
    assert.are.equal(201, code)
    local cm = cjson.decode(body)
    assert.are.equal("c1", cm.metadata.name)
    assert.are.equal(tostring(sim:resource_version()), cm.metadata.resourceVersion)
    code, body = http("GET", sim.url .. "/api/v1/namespaces/default/configmaps/c1")
    assert.are.equal(200, code)
    assert.are.same({ a = "b" }, cjson.decode(body).data)
    sim:stop()
  end)

  it("writes a kubeconfig that points at it and removes it on stop", function()
    local sim = assert(simmod.start())
    local f = assert(io.open(sim.kubeconfig))
    local text = f:read("a")
    f:close()
    assert.truthy(text:find(sim.url, 1, true))
    sim:stop()
    assert.is_nil(io.open(sim.kubeconfig))
    assert.is_false(sim:running())
    local code = http("GET", sim.url .. "/version")
    assert.are.equal(0, code) -- connection refused: nothing listens any more
  end)

  it("requires the bearer token when one is set", function()
    local sim = assert(simmod.start{ token = "s3cret" })
    assert.are.equal(401, (http("GET", sim.url .. "/api/v1/namespaces")))
    assert.are.equal(200, (http("GET", sim.url .. "/api/v1/namespaces", nil, "s3cret")))
    sim:stop()
  end)

  it("authenticates client certificates signed by client_ca (CN user, O groups)", function()
    local F = "spec/c/fixtures/"
    local sim = assert(simmod.start{ tls_cert = F .. "sim_tls.crt", tls_key = F .. "sim_tls.key",
      client_ca = F .. "sim_client_ca.crt" })
    assert.matches("^https://", sim.url)
    local alice = "--cert " .. F .. "sim_client_alice.crt --key " .. F .. "sim_client_alice.key"
    local other = "--cert " .. F .. "sim_client_other.crt --key " .. F .. "sim_client_other.key"
    assert.are.equal(200, (http("GET", sim.url .. "/api/v1/namespaces", nil, nil, alice)))
    assert.are.equal(401, (http("GET", sim.url .. "/api/v1/namespaces")))
    assert.are.equal(401, (http("GET", sim.url .. "/api/v1/namespaces", nil, nil, other)))
    local code, body = http("POST", sim.url .. "/apis/authentication.k8s.io/v1/selfsubjectreviews",
      '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}', nil, alice)
    assert.are.equal(201, code)
    local info = cjson.decode(body).status.userInfo
    assert.are.equal("alice", info.username)
    assert.are.same({ "system:masters", "devs", "system:authenticated" }, info.groups)
    sim:stop()
    assert.has_error(function() simmod.start{ client_ca = F .. "sim_client_ca.crt" } end)
  end)

  describe("fault injection", function()
    local function sh_sleep(s) os.execute("sleep " .. s) end
    local function slurp(path)
      local f = io.open(path)
      if not f then return nil end
      local t = f:read("a")
      f:close()
      return t
    end

    it("fail{code, count} answers the next count requests with code, then recovers", function()
      local sim = assert(simmod.start())
      sim:fault{ kind = "fail", code = 503, count = 2 }
      local code, body = http("GET", sim.url .. "/api/v1/namespaces")
      assert.are.equal(503, code)
      assert.are.equal("ServiceUnavailable", cjson.decode(body).reason)
      assert.are.equal(503, (http("GET", sim.url .. "/api/v1/namespaces")))
      assert.are.equal(200, (http("GET", sim.url .. "/api/v1/namespaces")))
      sim:fault{ kind = "fail", code = 429 }
      code, body = http("GET", sim.url .. "/api/v1/namespaces")
      assert.are.equal(429, code)
      assert.are.equal(1, cjson.decode(body).details.retryAfterSeconds)
      assert.are.equal(200, (http("GET", sim.url .. "/api/v1/namespaces")))
      sim:stop()
    end)

    it("drop closes an open watch abruptly", function()
      local sim = assert(simmod.start())
      local out, rcf = os.tmpname(), os.tmpname()
      os.remove(rcf)
      -- curl in the background; its exit code lands in rcf when the watch ends.
      os.execute(string.format("(curl -sN --max-time 20 '%s/api/v1/namespaces?watch=1' > %s; echo $? > %s) &",
        sim.url, out, rcf))
      local lines = 0
      for _ = 1, 200 do -- the four default namespaces arrive as ADDED
        local _, n = (slurp(out) or ""):gsub("\n", "")
        lines = n
        if lines >= 4 then break end
        sh_sleep(0.05)
      end
      assert.are.equal(4, lines)
      assert.is_nil(slurp(rcf))
      sim:fault{ kind = "drop" }
      local rc
      for _ = 1, 200 do
        rc = slurp(rcf)
        if rc then break end
        sh_sleep(0.05)
      end
      -- 18: "transfer closed with outstanding read data remaining" (no final
      -- chunk), well before curl's own 20 s limit (28).
      assert.are.equal("18", rc and rc:match("%d+"))
      os.remove(out)
      os.remove(rcf)
      sim:stop()
    end)

    it("latency delays requests and compact expires continue tokens", function()
      local sim = assert(simmod.start())
      sim:fault{ kind = "latency", ms = 300 }
      local p = assert(io.popen("curl -s -o /dev/null -w '%{time_total}' '" .. sim.url .. "/api/v1/namespaces'"))
      local t = tonumber(p:read("a"))
      p:close()
      assert.is_true(t >= 0.3, "request took " .. tostring(t))
      sim:fault{ kind = "latency", ms = 0 }
      local code, body = http("GET", sim.url .. "/api/v1/namespaces?limit=1")
      assert.are.equal(200, code)
      local cont = cjson.decode(body).metadata.continue
      assert.is_string(cont)
      http("POST", sim.url .. "/api/v1/namespaces/default/configmaps",
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}')
      sim:fault{ kind = "compact" }
      code, body = http("GET", sim.url .. "/api/v1/namespaces?limit=1&continue=" .. cont)
      assert.are.equal(410, code)
      assert.are.equal("Expired", cjson.decode(body).reason)
      sim:stop()
    end)

    it("restart keeps the store and the port", function()
      local sim = assert(simmod.start())
      local code, body = http("POST", sim.url .. "/api/v1/namespaces/default/configmaps",
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kept"}}')
      assert.are.equal(201, code)
      local rv = cjson.decode(body).metadata.resourceVersion
      sim:fault{ kind = "restart", ms = 50 }
      code, body = http("GET", sim.url .. "/api/v1/namespaces/default/configmaps/kept")
      assert.are.equal(200, code)
      assert.are.equal(rv, cjson.decode(body).metadata.resourceVersion)
      assert.has_error(function() sim:fault{ kind = "restart", ms = -1 } end)
      sim:stop()
      assert.has_error(function() sim:fault{ kind = "restart" } end)
    end)

    it("raises on misuse", function()
      local sim = assert(simmod.start())
      assert.has_error(function() sim:fault{ kind = "nope" } end)
      assert.has_error(function() sim:fault{} end)
      assert.has_error(function() sim:fault{ kind = "fail", code = 404 } end)
      assert.has_error(function() sim:fault{ kind = "fail", code = 503, count = -1 } end)
      assert.has_error(function() sim:fault{ kind = "stall" } end)
      assert.has_error(function() sim:fault("drop") end)
      sim:stop()
    end)
  end)

  it("stops at the end of a <close> scope and when collected", function()
    local url
    do
      local sim <close> = assert(simmod.start())
      url = sim.url
      assert.are.equal(200, (http("GET", url .. "/version")))
    end
    assert.are.equal(0, (http("GET", url .. "/version")))
    local s2 = assert(simmod.start())
    local url2 = s2.url
    s2 = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    assert.are.equal(0, (http("GET", url2 .. "/version")))
  end)

  it("reports bad options: misuse raises, runtime failure returns nil, msg, code", function()
    assert.has_error(function() simmod.start{ port = 70000 } end)
    assert.has_error(function() simmod.start{ tls_cert = "x.pem" } end)
    -- option types are checked as everywhere in the binding (laux.c)
    local ok, err = pcall(simmod.start, { port = "http" })
    assert.is_false(ok)
    assert.matches("option 'port' must be an integer", err, 1, true)
    ok, err = pcall(simmod.start, { token = 7 })
    assert.is_false(ok)
    assert.matches("option 'token' must be a string", err, 1, true)
    ok, err = pcall(simmod.start, "x")
    assert.is_false(ok)
    assert.matches("bad argument to kinformer.sim.start (options table expected, got string)", err, 1, true)
    local sim, msg, code = simmod.start{ seed = "/nonexistent/seed.json" }
    assert.is_nil(sim)
    assert.matches("start sim", msg)
    assert.are.equal("EINVAL", code)
  end)
end)
