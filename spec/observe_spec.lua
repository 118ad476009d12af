-- `kinformer manifests --observe` (lua/kinformer/cmd/observe.lua): the RBAC
-- rules read off the requests an operator made against kinformer.sim, and
-- their comparison with the rules kinformer manifests derives, for every
-- example (driven by spec/fixtures/observe/<example>.lua).
local observe = require "kinformer.cmd.observe"
local proc = require "support.proc"

describe("kinformer manifests --observe", function()
  it("turns request log entries into rules: the user's, resources only, apply-creates as create", function()
    local U = observe.USER
    local rules = observe.rules_of({
      { verb = "list", apiGroup = "", resource = "configmaps", user = U, code = 200 },
      { verb = "watch", apiGroup = "", resource = "configmaps", user = U, code = 200 },
      { verb = "patch", apiGroup = "apps", resource = "deployments", user = U, code = 201 },
      { verb = "patch", apiGroup = "apps", resource = "deployments", subresource = "status", user = U, code = 200 },
      { verb = "get", nonResourceURL = "/version", user = U, code = 200 },
      { verb = "delete", apiGroup = "", resource = "secrets", user = "someone-else", code = 200 },
    }, U)
    assert.equal(3, #rules)
    assert.same({ "", "configmaps", { list = true, watch = true } }, { rules[1].group, rules[1].resource, rules[1].verbs })
    assert.same({ "apps", "deployments", { patch = true, create = true } },
      { rules[2].group, rules[2].resource, rules[2].verbs })
    assert.same({ "apps", "deployments/status", { patch = true } }, { rules[3].group, rules[3].resource, rules[3].verbs })
  end)

  it("marks what was used and not granted, and what was granted and not used", function()
    local observed = { { group = "", resource = "configmaps", verbs = { list = true, update = true } } }
    local derived = { { group = "", resource = "configmaps", verbs = { "get", "list" } },
                      { groups = { "" }, resources = { "events" }, verbs = { "create" } } }
    local lines, missing, unused = observe.compare(observed, derived)
    assert.same({ "core configmaps                              =list +update -get",
                  "core events                                  -create" }, lines)
    assert.equal(1, missing)
    assert.equal(2, unused)
    -- a wildcard grants everything
    lines, missing = observe.compare(observed, { { group = "*", resource = "*", verbs = { "*" } } })
    assert.equal(0, missing)
    assert.same({ "core configmaps                              =list =update" }, lines)
  end)

  for _, ex in ipairs { "hello", "website", "configmap-mirror", "namespace-guard", "pod-label-auditor", "team-namespace" } do
    it("finds every request of examples/" .. ex .. " granted by the derived rules", function()
      local out, rc = proc.run(("bin/kinformer manifests examples/%s/operator.lua --observe --seed examples/%s/seed.json "
        .. "--drive spec/fixtures/observe/%s.lua --duration 0.5 2>&1"):format(ex, ex, ex))
      assert.equal(0, rc, out)
      assert.matches("\nobserve: 0 verbs used and not granted, %d+ granted and not used\n$", out)
      assert.is_nil(out:find("\n[^#\n]* %+%a", 1), out) -- no "+verb" mark
      assert.matches("%d+ requests as system:serviceaccount:kinformer%-observe:operator", out)
    end)
  end

  it("replays a recorded trace through the operator (--trace) and finds its requests granted", function()
    local out, rc = proc.run("bin/kinformer manifests examples/website/operator.lua --observe "
      .. "--trace spec/fixtures/replay/website.jsonl 2>&1")
    assert.equal(0, rc, out)
    -- the trace creates, changes and deletes Websites: every verb of the
    -- children is used but delete (a deleted Website's children are the
    -- garbage collector's, and pruning found nothing to delete)
    assert.matches("\napps deployments +=get =list =watch =create =patch %-delete\n", out)
    assert.matches("\nexample.kinformer.io websites/status +=patch\n", out)
    assert.matches("\nobserve: 0 verbs used and not granted", out)
  end)

  it("exits 1 when a request is not granted (the script's own client call, resource not determinable)", function()
    local script = proc.write_tmp([[
local mgr = ...
-- the resource only known at run time: manifests cannot derive it, so this
-- script declares nothing and the derived rules miss it
local which = os.getenv("HOME") and "v1/secrets" or "v1/configmaps"
mgr:controller{ name = "peek", ["for"] = "v1/configmaps", rbac = { { resources = { "v1/configmaps" }, verbs = { "update" } } },
  reconciler = function(req, ctx) ctx.client:list(which, req.namespace) end }
]])
    local out, rc = proc.run(("bin/kinformer manifests %s --observe --seed examples/hello/seed.json --duration 0.5 2>&1")
      :format(script))
    os.remove(script)
    assert.equal(1, rc, out)
    assert.matches("core secrets +%+list", out)
    assert.matches("\nobserve: 1 verb used and not granted", out)
  end)
end)
