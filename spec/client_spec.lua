-- kinformer.client (csrc/lua/lclient.c): the REST verbs from Lua, against
-- kinformer.sim.
local core = require "kinformer.core"

local function cm(name, ns, data, extra)
  local o = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name, namespace = ns or "default" },
              data = data or { k = "v" } }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

describe("kinformer.client", function()
  local sim, env, c

  setup(function()
    -- without the workloads' controllers: they would write the
    -- Deployments these tests write (status, revision)
    sim = assert(require("kinformer.sim").start {
      controllers = "*,-deployment,-replicaset,-statefulset,-daemonset,-job,-cronjob,-scheduler,-kubelet" })
    env = assert(core.env { kubeconfig = sim.kubeconfig })
    c = env:client()
  end)

  teardown(function()
    if c then c:close() end
    if env then env:close() end
    if sim then sim:stop() end
  end)

  it("is a kinformer.client userdata with a tostring naming the server", function()
    assert.are.equal("userdata", type(c))
    assert.matches("^kinformer.client %(http://127%.0%.0%.1:%d+%)$", tostring(c))
  end)

  describe("get", function()
    it("returns the object as a fresh table", function()
      assert(c:create("v1/configmaps", cm("get-a", "default", { x = "1" })))
      local o = assert(c:get("v1/configmaps", "default", "get-a"))
      assert.are.equal("get-a", o.metadata.name)
      assert.are.equal("1", o.data.x)
      assert.is_string(o.metadata.uid)
      o.data.x = "changed"
      assert.are.equal("1", c:get("v1/configmaps", "default", "get-a").data.x)
    end)

    it("returns nil, message, NotFound, 404 for a missing object", function()
      local o, msg, code, http = c:get("v1/configmaps", "default", "nope")
      assert.is_nil(o)
      assert.are.equal("NotFound", code)
      assert.are.equal(404, http)
      assert.matches("get v1/configmaps: ", msg, 1, true)
      assert.matches("nope", msg, 1, true)
    end)

    it("accepts a Kind instead of the resource and a group", function()
      assert(c:create("apps/v1/deployments", {
        apiVersion = "apps/v1", kind = "Deployment",
        metadata = { name = "web", namespace = "default" },
        spec = { selector = { matchLabels = { app = "web" } },
                 template = { metadata = { labels = { app = "web" } },
                              spec = { containers = { { name = "c", image = "nginx" } } } } },
      }))
      local d = assert(c:get("apps/v1/Deployment", "default", "web"))
      assert.are.equal("Deployment", d.kind)
      assert.are.equal("apps/v1", d.apiVersion)
    end)

    it("raises on misuse", function()
      assert.has_error(function() c:get("v1/configmaps", "default") end)
      assert.has_error(function() c:get("v1/configmaps", "default", "") end)
      assert.has_error(function() c:get(nil, "default", "x") end)
      assert.has_error(function() c.get(42, "v1/configmaps", "default", "x") end)
    end)
  end)

  describe("unknown resources", function()
    it("give nil, message, ENOENT on every verb", function()
      local r, msg, code = c:get("v1/nothings", "default", "a")
      assert.is_nil(r)
      assert.are.equal("ENOENT", code)
      assert.matches("unknown resource 'v1/nothings'", msg, 1, true)
      assert.are.equal("ENOENT", select(3, c:list("example.com/v1/widgets")))
      assert.are.equal("ENOENT", select(3, c:delete("v1/nothings", "default", "a")))
      assert.are.equal("ENOENT", select(3, c:patch("v1/nothings", "default", "a", { a = 1 })))
      local _, m2, code2 = c:create { apiVersion = "example.com/v1", kind = "Widget", metadata = { name = "w" } }
      assert.are.equal("ENOENT", code2)
      assert.matches("example.com/v1", m2, 1, true)
      assert.matches("Widget", m2, 1, true)
    end)
  end)

  describe("list", function()
    setup(function()
      for _, ns in ipairs { "lists", "other" } do
        assert(c:create { apiVersion = "v1", kind = "Namespace", metadata = { name = ns } })
      end
      for i = 1, 5 do
        assert(c:create("v1/configmaps", {
          metadata = { name = "l" .. i, namespace = "lists", labels = { group = i % 2 == 0 and "even" or "odd" } },
          data = { i = tostring(i) },
        }))
      end
      assert(c:create("v1/configmaps", cm("elsewhere", "other")))
    end)

    it("lists one namespace", function()
      local l = assert(c:list("v1/configmaps", "lists"))
      assert.are.equal("ConfigMapList", l.kind)
      assert.are.equal(5, #l.items)
      assert.is_string(l.metadata.resourceVersion)
    end)

    it("lists every namespace with a nil or empty namespace", function()
      local names = {}
      for _, o in ipairs(assert(c:list("v1/configmaps")).items) do names[o.metadata.name] = true end
      assert.is_true(names.elsewhere)
      assert.is_true(names.l3)
      assert.are.equal(#assert(c:list("v1/configmaps")).items, #assert(c:list("v1/configmaps", "")).items)
    end)

    it("filters with label and field selectors", function()
      local l = assert(c:list("v1/configmaps", "lists", { label_selector = "group=even" }))
      assert.are.equal(2, #l.items)
      for _, o in ipairs(l.items) do assert.are.equal("even", o.metadata.labels.group) end
      l = assert(c:list("v1/configmaps", nil, { field_selector = "metadata.name=l4" }))
      assert.are.equal(1, #l.items)
      assert.are.equal("lists", l.items[1].metadata.namespace)
    end)

    it("pages with limit and continue", function()
      local seen, token, pages = {}, nil, 0
      repeat
        local l = assert(c:list("v1/configmaps", "lists", { limit = 2, continue = token }))
        pages = pages + 1
        assert.is_true(#l.items <= 2)
        for _, o in ipairs(l.items) do
          assert.is_nil(seen[o.metadata.name])
          seen[o.metadata.name] = true
        end
        token = l.metadata.continue
        if token == "" then token = nil end
      until not token
      assert.are.equal(3, pages)
      for i = 1, 5 do assert.is_true(seen["l" .. i]) end
    end)

    it("raises on a bad option", function()
      assert.has_error(function() c:list("v1/configmaps", "lists", { limit = "two" }) end)
      assert.has_error(function() c:list("v1/configmaps", "lists", { label_selector = 3 }) end)
      assert.has_error(function() c:list("v1/configmaps", "lists", "limit=2") end)
    end)
  end)

  describe("create", function()
    it("returns the created object; the resource may come from apiVersion/kind", function()
      local o = assert(c:create(cm("cr-a")))
      assert.are.equal("cr-a", o.metadata.name)
      assert.is_string(o.metadata.resourceVersion)
      assert.is_string(o.metadata.uid)
    end)

    it("accepts a JSON string", function()
      local o = assert(c:create("v1/configmaps",
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cr-json","namespace":"default"},"data":{"a":"b"}}'))
      assert.are.equal("b", o.data.a)
      o = assert(c:create('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cr-json2","namespace":"default"}}'))
      assert.are.equal("cr-json2", o.metadata.name)
    end)

    it("returns AlreadyExists, 409 for an existing name", function()
      assert(c:create(cm("cr-dup")))
      local o, msg, code, http = c:create(cm("cr-dup"))
      assert.is_nil(o)
      assert.are.equal("AlreadyExists", code)
      assert.are.equal(409, http)
      assert.matches("already exists", msg, 1, true)
    end)

    it("puts a namespaced object without namespace in the kubeconfig's namespace", function()
      local o = assert(c:create { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "cr-nons" } })
      assert.are.equal(c:namespace(), o.metadata.namespace)
      assert(c:get("v1/configmaps", c:namespace(), "cr-nons"))
    end)

    it("creates cluster-scoped objects", function()
      local o = assert(c:create { apiVersion = "v1", kind = "Namespace", metadata = { name = "cr-ns" } })
      assert.are.equal("cr-ns", o.metadata.name)
      assert(c:get("v1/namespaces", nil, "cr-ns"))
    end)

    it("does not persist with dry_run", function()
      local o = assert(c:create(cm("cr-dry"), { dry_run = true, field_manager = "spec" }))
      assert.are.equal("cr-dry", o.metadata.name)
      assert.are.equal("NotFound", select(3, c:get("v1/configmaps", "default", "cr-dry")))
    end)

    it("raises on misuse", function()
      assert.has_error(function() c:create("v1/configmaps", 42) end)
      assert.has_error(function() c:create { metadata = { name = "x" } } end) -- no resource, no kind
      assert.has_error(function() c:create(cm("x"), { field_manager = 1 }) end)
      assert.has_error(function() c:create(cm("x"), { dry_run = 1 }) end)
    end)
  end)

  describe("update", function()
    it("writes the object and returns it with a new resourceVersion", function()
      local o = assert(c:create(cm("up-a", nil, { v = "1" })))
      o.data.v = "2"
      local u = assert(c:update("v1/configmaps", o))
      assert.are.equal("2", u.data.v)
      assert.are_not.equal(o.metadata.resourceVersion, u.metadata.resourceVersion)
      assert.are.equal("2", c:get("v1/configmaps", "default", "up-a").data.v)
      u.data.v = "3"
      assert.are.equal("3", assert(c:update(u)).data.v) -- resource from apiVersion/kind
    end)

    it("returns Conflict, 409 for a stale resourceVersion", function()
      local o = assert(c:create(cm("up-b", nil, { v = "1" })))
      local fresh = assert(c:get("v1/configmaps", "default", "up-b"))
      fresh.data.v = "2"
      assert(c:update("v1/configmaps", fresh))
      o.data.v = "stale"
      local r, msg, code, http = c:update("v1/configmaps", o)
      assert.is_nil(r)
      assert.are.equal("Conflict", code)
      assert.are.equal(409, http)
      assert.matches("modified", msg, 1, true)
      assert.are.equal("2", c:get("v1/configmaps", "default", "up-b").data.v)
    end)

    it("returns NotFound for an object that does not exist", function()
      local _, _, code, http = c:update("v1/configmaps", cm("up-missing"))
      assert.are.equal("NotFound", code)
      assert.are.equal(404, http)
    end)

    it("raises when the object has no name", function()
      assert.has_error(function() c:update("v1/configmaps", { metadata = { namespace = "default" } }) end)
    end)
  end)

  describe("update_status", function()
    it("writes the status subresource only", function()
      local d = assert(c:create("apps/v1/deployments", {
        apiVersion = "apps/v1", kind = "Deployment",
        metadata = { name = "st", namespace = "default" },
        spec = { replicas = 1, selector = { matchLabels = { app = "st" } },
                 template = { metadata = { labels = { app = "st" } },
                              spec = { containers = { { name = "c", image = "nginx" } } } } },
      }))
      d.status = { observedGeneration = 1, replicas = 7 }
      d.spec.replicas = 5
      local u = assert(c:update_status("apps/v1/deployments", d))
      assert.are.equal(7, u.status.replicas)
      local g = assert(c:get("apps/v1/deployments", "default", "st"))
      assert.are.equal(7, g.status.replicas)
      assert.are.equal(1, g.spec.replicas) -- the spec change went nowhere
      g.status.replicas = 8
      assert.are.equal(8, assert(c:update_status(g)).status.replicas)
    end)
  end)

  describe("patch", function()
    before_each(function()
      c:delete("v1/configmaps", "default", "p")
      assert(c:create(cm("p", nil, { a = "1", b = "2" })))
    end)

    it("merge-patches by default, from a table", function()
      local o = assert(c:patch("v1/configmaps", "default", "p", { data = { a = "x", b = core.null } }))
      assert.are.equal("x", o.data.a)
      assert.is_nil(o.data.b)
      assert.are.equal("x", c:get("v1/configmaps", "default", "p").data.a)
    end)

    it("applies JSON patches, from a string", function()
      local o = assert(c:patch("v1/configmaps", "default", "p",
        '[{"op":"replace","path":"/data/a","value":"j"},{"op":"remove","path":"/data/b"}]', { type = "json" }))
      assert.are.equal("j", o.data.a)
      assert.is_nil(o.data.b)
      local _, msg, code, http = c:patch("v1/configmaps", "default", "p",
        { { op = "test", path = "/data/a", value = "not-j" } }, { type = "json" })
      assert.is_not_nil(code)
      assert.is_true(http >= 400)
      assert.is_string(msg)
    end)

    it("applies strategic merge patches", function()
      local o = assert(c:patch("v1/configmaps", "default", "p",
        { metadata = { labels = { s = "yes" } } }, { type = "strategic" }))
      assert.are.equal("yes", o.metadata.labels.s)
      assert.are.equal("1", o.data.a)
    end)

    it("does not persist with dry_run", function()
      local o = assert(c:patch("v1/configmaps", "default", "p", { data = { a = "dry" } }, { dry_run = "All" }))
      assert.are.equal("dry", o.data.a)
      assert.are.equal("1", c:get("v1/configmaps", "default", "p").data.a)
    end)

    it("returns NotFound for a missing object", function()
      assert.are.equal("NotFound", select(3, c:patch("v1/configmaps", "default", "p-missing", { data = {} })))
    end)

    it("raises on an unknown type or a missing name", function()
      assert.has_error(function() c:patch("v1/configmaps", "default", "p", {}, { type = "xml" }) end)
      assert.has_error(function() c:patch("v1/configmaps", "default", nil, {}) end)
      assert.has_error(function() c:patch("v1/configmaps", "default", "p", 5) end)
    end)
  end)

  describe("apply", function()
    -- kinformer.sim answers server-side apply as kube-apiserver does
    -- (spec/differential/scenarios/13_apply.json compares them); the
    -- managedFields entry shows the request was an apply under the manager.
    local function entry(obj, manager)
      for _, e in ipairs(obj.metadata.managedFields or {}) do
        if e.manager == manager then return e end
      end
    end

    it("sends an apply patch for the object's resource, named by the object", function()
      local r = assert(c:apply(cm("ap"), { field_manager = "spec-manager", force = true }))
      assert.are.equal("Apply", entry(r, "spec-manager").operation)
      assert.are.equal("v1", entry(r, "spec-manager").apiVersion)
      -- without field_manager the client applies as "kinformer"
      r = assert(c:apply("v1/configmaps", cm("ap")))
      assert.are.equal("Apply", entry(r, "kinformer").operation)
      r = assert(c:patch("v1/configmaps", "default", "ap", cm("ap"), { type = "apply", field_manager = "m" }))
      assert.are.equal("Apply", entry(r, "m").operation)
      -- the server's errors carry the apply's label
      local bad = cm("ap")
      bad.apiVersion = "apps/v1"
      local _, msg, code, http = c:apply("v1/configmaps", bad)
      assert.are.equal("BadRequest", code)
      assert.are.equal(400, http)
      assert.matches("apply v1/configmaps", msg, 1, true)
      assert.matches("invalid object type: apps/v1, Kind=ConfigMap", msg, 1, true)
    end)

    it("raises for an object without name or kind", function()
      assert.has_error(function() c:apply { apiVersion = "v1", kind = "ConfigMap", metadata = {} } end)
      assert.has_error(function() c:apply { metadata = { name = "x" } } end)
    end)
  end)

  describe("delete", function()
    it("deletes and returns true; a second delete is NotFound", function()
      assert(c:create(cm("d-a")))
      assert.are.equal(true, c:delete("v1/configmaps", "default", "d-a"))
      assert.are.equal("NotFound", select(3, c:get("v1/configmaps", "default", "d-a")))
      local r, _, code, http = c:delete("v1/configmaps", "default", "d-a")
      assert.is_nil(r)
      assert.are.equal("NotFound", code)
      assert.are.equal(404, http)
    end)

    it("checks uid and resourceVersion preconditions", function()
      local o = assert(c:create(cm("d-pre")))
      local r, msg, code, http = c:delete("v1/configmaps", "default", "d-pre", { uid = "00000000-0000-0000-0000-000000000000" })
      assert.is_nil(r)
      assert.are.equal("Conflict", code)
      assert.are.equal(409, http)
      assert.matches("UID", msg, 1, true)
      code = select(3, c:delete("v1/configmaps", "default", "d-pre", { resource_version = "1" }))
      assert.are.equal("Conflict", code)
      assert(c:get("v1/configmaps", "default", "d-pre"))
      assert.is_true(c:delete("v1/configmaps", "default", "d-pre",
        { uid = o.metadata.uid, resource_version = o.metadata.resourceVersion,
          propagation_policy = "Background", grace_period = 0 }))
      assert.are.equal("NotFound", select(3, c:get("v1/configmaps", "default", "d-pre")))
    end)

    it("deletes the object a table names", function()
      local o = assert(c:create(cm("d-obj")))
      assert.is_true(c:delete(o))
      assert.are.equal("NotFound", select(3, c:get("v1/configmaps", "default", "d-obj")))
    end)

    it("leaves a finalized object until its finalizers are removed", function()
      local o = assert(c:create(cm("d-fin", nil, nil, nil)))
      o.metadata.finalizers = { "example.com/keep" }
      assert(c:update(o))
      assert.is_true(c:delete("v1/configmaps", "default", "d-fin"))
      local g = assert(c:get("v1/configmaps", "default", "d-fin"))
      assert.is_string(g.metadata.deletionTimestamp)
      g.metadata.finalizers = nil
      assert(c:update(g))
      assert.are.equal("NotFound", select(3, c:get("v1/configmaps", "default", "d-fin")))
    end)

    it("does not delete with dry_run", function()
      assert(c:create(cm("d-dry")))
      assert.is_true(c:delete("v1/configmaps", "default", "d-dry", { dry_run = true }))
      assert(c:get("v1/configmaps", "default", "d-dry"))
    end)

    it("raises on bad options", function()
      assert.has_error(function() c:delete("v1/configmaps", "default", "x", { propagation_policy = "Sometimes" }) end)
      assert.has_error(function() c:delete("v1/configmaps", "default", "x", { grace_period = -1 }) end)
      assert.has_error(function() c:delete("v1/configmaps", "default") end)
    end)
  end)

  describe("lifetime", function()
    it("keeps the env alive after the env userdata is closed", function()
      local e2 = assert(core.env { kubeconfig = sim.kubeconfig })
      local c2 = e2:client()
      e2:close()
      collectgarbage()
      assert(c2:create(cm("life")))
      assert(c2:get("v1/configmaps", "default", "life"))
      c2:close()
      c2:close() -- idempotent
      assert.has_error(function() c2:get("v1/configmaps", "default", "life") end, nil)
      assert.matches("closed", tostring(c2))
    end)

    it("reports a server that went away as EIO with http code 0", function()
      local s2 = assert(require("kinformer.sim").start {})
      local e2 = assert(core.env { kubeconfig = s2.kubeconfig, timeout = 5 })
      local c2 = e2:client()
      assert(c2:list("v1/configmaps")) -- discovery is cached now
      s2:stop()
      local r, msg, code, http = c2:get("v1/configmaps", "default", "x")
      assert.is_nil(r)
      assert.is_true(code == "EIO" or code == "ETIMEDOUT", tostring(code))
      assert.are.equal(0, http)
      assert.is_string(msg)
      c2:close()
      e2:close()
    end)
  end)

  describe("env:resource / client:resource", function()
    it("resolves resources and kinds", function()
      local r = assert(c:resource("apps/v1/Deployment"))
      assert.are.same({ group = "apps", version = "v1", resource = "deployments", kind = "Deployment", namespaced = true }, r)
      r = assert(c:resource("v1/namespaces"))
      assert.is_false(r.namespaced)
      assert.are.equal("ENOENT", select(3, c:resource("v1/nothings")))
    end)
  end)

  describe("in a worker state", function()
    it("works from a worker thread's own Lua state", function()
      local w <close> = assert(core.worker(function(kubeconfig)
        local core2 = require "kinformer.core"
        local e = assert(core2.env { kubeconfig = kubeconfig })
        local cl = e:client()
        local o = assert(cl:create { apiVersion = "v1", kind = "ConfigMap",
                                     metadata = { name = "from-worker", namespace = "default" },
                                     data = { who = "worker" } })
        local _, _, code = cl:get("v1/configmaps", "default", "missing")
        cl:close()
        e:close()
        return o.metadata.uid .. " " .. code
      end))
      local out = assert(w:call(nil, sim.kubeconfig))
      local uid, code = out:match("^(%S+) (%S+)$")
      assert.are.equal("NotFound", code)
      local o = assert(c:get("v1/configmaps", "default", "from-worker"))
      assert.are.equal(uid, o.metadata.uid)
      assert.are.equal("worker", o.data.who)
    end)
  end)

  describe("core.log", function()
    it("raises on an unknown level", function()
      assert.has_error(function() core.log("loud", "x", "y") end)
      assert.has_error(function() core.log(7, "x", "y") end)
      assert.is_boolean(core.log_enabled("error"))
      assert.is_true(core.log_enabled("error"))
    end)
  end)
end)
