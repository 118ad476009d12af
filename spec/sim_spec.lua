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

  describe("request log", function()
    -- The entries of log matching every field of want.
    local function matching(log, want)
      local out = {}
      for _, e in ipairs(log) do
        local ok = true
        for k, v in pairs(want) do
          if e[k] ~= v then ok = false end
        end
        if ok then out[#out + 1] = e end
      end
      return out
    end

    it("shows an informer's list and watch and each client's create, by user", function()
      local kinformer = require "kinformer"
      local sim = assert(simmod.start{ users = { driver = "driver-token" } })
      local op_token = sim:token("operator")
      assert.matches("^kinformer%-sim%-%x+$", op_token)
      assert.are.equal(op_token, sim:token("operator"))
      assert.are.equal("driver-token", sim:token("driver"))
      local none, msg, code = sim:request_log_take()
      assert.is_nil(none)
      assert.matches("not started", msg)
      assert.are.equal("EINVAL", code)
      sim:request_log_start()
      local mgr = assert(kinformer.manager{ url = sim.url, token = op_token })
      local inf = assert(mgr:informer("v1/configmaps"))
      assert.is_true(mgr:start{ timeout = 10 })
      local driver = assert(kinformer.manager{ url = sim.url, token = sim:token("driver") })
      assert(mgr.client:create{ apiVersion = "v1", kind = "ConfigMap",
        metadata = { name = "by-operator", namespace = "default" } })
      assert(driver.client:create{ apiVersion = "v1", kind = "ConfigMap",
        metadata = { name = "by-driver", namespace = "default" } })
      -- the second arrives through the informer's watch, so the watch is logged
      assert.is_true(mgr:wait_for(function() return inf:len() == 2 end, 10))
      local log = assert(sim:request_log_take())
      local cm = { apiGroup = "", apiVersion = "v1", resource = "configmaps" }
      local function with(t)
        local r = {}
        for k, v in pairs(cm) do r[k] = v end
        for k, v in pairs(t) do r[k] = v end
        return r
      end
      local lists = matching(log, with{ verb = "list", user = "operator", code = 200 })
      assert.is_true(#lists >= 1, "no list by the operator")
      assert.is_nil(lists[1].name)
      assert.is_string(lists[1].userAgent)
      assert.is_true(#matching(log, with{ verb = "watch", user = "operator", code = 200 }) >= 1,
        "no watch by the operator")
      local creates = matching(log, { verb = "create" })
      assert.are.same({
        with{ verb = "create", namespace = "default", user = "operator", userAgent = creates[1].userAgent, code = 201 },
        with{ verb = "create", namespace = "default", user = "driver", userAgent = creates[2].userAgent, code = 201 },
      }, creates)
      -- every request came from one of the two users, over the API
      for _, e in ipairs(log) do
        assert.is_true(e.user == "operator" or e.user == "driver", "user " .. tostring(e.user))
        assert.is_true(e.resource ~= nil or e.nonResourceURL ~= nil)
      end
      -- a take holds only what came after the last one
      assert.are.same({}, assert(sim:request_log_take()))
      driver:stop()
      mgr:stop()
      sim:stop()
    end)

    it("records refused requests, non-resource paths and the truncation", function()
      local sim = assert(simmod.start{ request_log_limit = 3 })
      sim:request_log_start()
      assert.are.equal(200, (http("GET", sim.url .. "/version")))
      assert.are.equal(404, (http("GET", sim.url .. "/apis/example.com/v1/widgets")))
      assert.are.equal(201, (http("POST", sim.url .. "/api/v1/namespaces/default/configmaps?dryRun=All",
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}')))
      assert.are.equal(200, (http("GET", sim.url .. "/api")))
      local log = assert(sim:request_log_take())
      assert.are.equal(4, #log)
      assert.are.equal("get", log[1].verb)
      assert.are.equal("/version", log[1].nonResourceURL)
      assert.is_nil(log[1].user) -- no token configured: anonymous
      assert.are.equal(200, log[1].code)
      assert.are.same({ "list", "example.com", "widgets", 404 },
        { log[2].verb, log[2].apiGroup, log[2].resource, log[2].code })
      assert.are.same({ "create", "default", true, 201 },
        { log[3].verb, log[3].namespace, log[3].dryRun, log[3].code })
      assert.are.same({ truncated = true, dropped = 1 }, log[4])
      sim:stop()
    end)

    it("rejects bad users", function()
      assert.has_error(function() simmod.start{ users = { a = 1 } } end)
      assert.has_error(function() simmod.start{ users = "a" } end)
      assert.has_error(function() simmod.start{ users = { a = "t", b = "t" } } end)
      assert.has_error(function() simmod.start{ token = "t", users = { b = "t" } } end)
      local sim = assert(simmod.start{ token = "t", users = { b = "u" } })
      assert.are.equal("t", sim:token("kinformer-sim"))
      assert.are.equal(200, (http("GET", sim.url .. "/api/v1/namespaces", nil, "u")))
      assert.has_error(function() sim:token("") end)
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
