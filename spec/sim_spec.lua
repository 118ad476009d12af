-- kinformer.sim from Lua: start, serve, kubeconfig, stop (explicit, <close>, GC).
local simmod = require "kinformer.sim"
local cjson = require "cjson"

-- HTTP through the curl command: the Lua client arrives with the REST client.
local function http(method, url, body, token)
  local cmd = string.format("curl -s -o - -w '\\n%%{http_code}' -X %s -H 'Content-Type: application/json'%s%s '%s'",
    method, token and (" -H 'Authorization: Bearer " .. token .. "'") or "",
    body and (" --data-binary '" .. body .. "'") or "", url)
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
    local sim, msg, code = simmod.start{ seed = "/nonexistent/seed.json" }
    assert.is_nil(sim)
    assert.matches("start sim", msg)
    assert.are.equal("EINVAL", code)
  end)
end)
