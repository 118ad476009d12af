-- client:get_raw(path) (csrc/lua/lclient.c): a GET of any path of the
-- server with the client's credentials, the body as text; `kinformer
-- types` reads the OpenAPI documents with it.
local kinformer = require "kinformer"
local core = require "kinformer.core"
local client_sim = require "support.client_sim"

describe("client:get_raw", function()
  local sim, kc, mgr

  setup(function()
    -- HTTPS with a bearer token: a request without the kubeconfig's
    -- credentials is refused, so an answer proves they were sent
    sim, kc = client_sim.start()
    mgr = assert(kinformer.manager { kubeconfig = kc })
  end)

  teardown(function()
    if mgr then mgr:stop() end
    client_sim.stop(sim, kc)
  end)

  it("returns the body and its content type, with the client's credentials", function()
    local body, ctype = mgr.client:get_raw("/openapi/v3")
    assert.is_string(body, ctype)
    assert.matches("^text/plain", ctype) -- kube-apiserver's index has no type: Go sniffs text/plain
    local doc = assert(core.json_decode(body))
    assert.is_table(doc.paths["apis/apps/v1"])
    assert.matches("^/openapi/v3/apis/apps/v1%?hash=", doc.paths["apis/apps/v1"].serverRelativeURL)
    -- the same path without credentials is refused
    local b, code = core.http_get(sim.url .. "/openapi/v3")
    assert.is_nil(b, "the sim answered a request without its token")
    assert.is_not_nil(code)
  end)

  it("keeps the query and returns the document as the server sent it", function()
    local index = assert(core.json_decode((mgr.client:get_raw("/openapi/v3"))))
    local url = index.paths["apis/apps/v1"].serverRelativeURL
    local body, ctype = assert(mgr.client:get_raw(url))
    assert.matches("^application/json", ctype)
    local doc = assert(core.json_decode(body))
    assert.is_table(doc.components.schemas["io.k8s.api.apps.v1.Deployment"])
    assert.equals("3.0.0", doc.openapi)
  end)

  it("fails as the verbs do: nil, message naming the path, reason, HTTP code", function()
    local body, msg, code, http = mgr.client:get_raw("/openapi/v3/apis/nothere.example.com/v1")
    assert.is_nil(body)
    assert.matches("get /openapi/v3/apis/nothere.example.com/v1: ", msg, 1, true)
    assert.equals("NotFound", code)
    assert.equals(404, http)
  end)

  it("raises on a path that is not absolute", function()
    assert.has_error(function() mgr.client:get_raw("openapi/v3") end,
      "bad argument #1 to 'get_raw' (an absolute path expected (\"/openapi/v3\"))")
  end)
end)
