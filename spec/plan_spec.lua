-- kinformer.plan: ctl:plan(keys) and `kinformer plan` (dry-run reconciles
-- shown as unified diffs), with examples/website against kinformer.sim, or
-- the real kube-apiserver under `make e2e-lua` (spec/examples/helper.lua's
-- h.target()); plus kinformer.yamlish and kinformer.diff on their own.
local h = require "examples.helper"
local proc = require "support.proc"
local core = require "kinformer.core"
local kinformer = require "kinformer"
local yamlish = require "kinformer.yamlish"
local diff = require "kinformer.diff"

local RES = "example.kinformer.io/v1/websites"
local DEPS, SVCS = "apps/v1/deployments", "v1/services"

-- the Website operator's script, registered on a manager as `kinformer run`
-- does, given a finalizer (the example leaves its children to the garbage
-- collector) so that plan's finalizer steps are shown too
local website = {
  register = function(mgr)
    local proxy = setmetatable({}, { __index = function(_, k)
      if k == "controller" then
        return function(_, cfg)
          cfg.finalizer = "example.kinformer.io/children"
          return mgr:controller(cfg)
        end
      end
      local v = mgr[k]
      if type(v) == "function" then return function(_, ...) return v(mgr, ...) end end
      return v
    end })
    assert(loadfile("examples/website/operator.lua"))(proxy, { args = {} })
    return mgr:controllers().website
  end,
}

describe("kinformer.yamlish", function()
  it("renders objects with a stable key order and quotes what YAML would misread", function()
    local obj = core.json_decode([[{"spec":{"b":[],"a":{},"list":[{"x":1,"name":"n"},"s"]},
      "metadata":{"namespace":"ns","labels":{"z":"true","a":"80"},"name":"o"},
      "kind":"ConfigMap","apiVersion":"v1","data":{"k":"a: b","e":"","f":1.5,"nl":"x\ny","n":null}}]])
    assert.equal(table.concat({
      "apiVersion: v1",
      "kind: ConfigMap",
      "metadata:",
      "  name: o",
      "  namespace: ns",
      "  labels:",
      '    a: "80"',
      '    z: "true"',
      "data:",
      '  e: ""',
      "  f: 1.5",
      '  k: "a: b"',
      '  "n": null', -- YAML 1.1 reads a bare n as false
      '  nl: "x\\ny"',
      "spec:",
      "  a: {}",
      "  b: []",
      "  list:",
      '  - name: "n"',
      "    x: 1",
      "  - s",
    }, "\n") .. "\n", yamlish.render(obj))
    -- the same object built in another order renders the same
    local again = core.json_decode(core.json_encode(obj))
    assert.equal(yamlish.render(obj), yamlish.render(again))
  end)
end)

describe("kinformer.diff", function()
  -- the length of a longest common subsequence (what a shortest script keeps)
  local function lcs(a, b)
    local prev = {}
    for j = 0, #b do prev[j] = 0 end
    for i = 1, #a do
      local cur = { [0] = 0 }
      for j = 1, #b do
        cur[j] = a[i] == b[j] and prev[j - 1] + 1 or math.max(prev[j], cur[j - 1])
      end
      prev = cur
    end
    return prev[#b]
  end

  it("finds a shortest edit script that rebuilds both sides", function()
    math.randomseed(15)
    for _ = 1, 500 do
      local a, b = {}, {}
      for i = 1, math.random(0, 15) do a[i] = tostring(math.random(1, 4)) end
      for i = 1, math.random(0, 15) do b[i] = tostring(math.random(1, 4)) end
      local ra, rb, kept = {}, {}, 0
      for _, e in ipairs(diff.edits(a, b)) do
        if e[1] ~= "+" then ra[#ra + 1] = e[2] end
        if e[1] ~= "-" then rb[#rb + 1] = e[2] end
        if e[1] == " " then kept = kept + 1 end
      end
      assert.same(a, ra)
      assert.same(b, rb)
      assert.equal(lcs(a, b), kept)
    end
  end)

  it("falls back to delete-all, insert-all past MAX_D, still rebuilding both sides", function()
    local saved = diff.MAX_D
    diff.MAX_D = 2
    local a, b = { "k", "1", "2", "3", "4", "k" }, { "k", "5", "2", "6", "k" }
    local ok, es = pcall(diff.edits, a, b)
    diff.MAX_D = saved
    assert(ok, es)
    local ops = {}
    for _, e in ipairs(es) do ops[#ops + 1] = e[1] .. e[2] end
    assert.same({ " k", "-1", "-2", "-3", "-4", "+5", "+2", "+6", " k" }, ops)
  end)

  it("prints hunks as GNU diff -u does", function()
    local a = { "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m" }
    local b = { "a", "X", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n" }
    local pa, pb = proc.write_tmp(table.concat(a, "\n") .. "\n"), proc.write_tmp(table.concat(b, "\n") .. "\n")
    local out = proc.run(string.format("diff -u %s %s | tail -n +3", pa, pb))
    os.remove(pa)
    os.remove(pb)
    local mine = diff.unified(a, b, { from = "x", to = "y" })
    assert.equal("--- x\n+++ y\n" .. out, mine)
    assert.equal("", diff.unified(a, a))
    assert.equal("--- /dev/null\n+++ b\n@@ -0,0 +1,2 @@\n+p\n+q\n", diff.unified({}, { "p", "q" }))
  end)
end)

describe("kinformer.plan with examples/website", function()
  local t, ns, mgr, ctl, watch

  -- every watch event after the initial lists, as "resource TYPE name"
  local seen = {}
  local function watcher()
    local w = assert(kinformer.manager{ kubeconfig = t.kubeconfig, namespace = ns })
    for _, res in ipairs { RES, DEPS, SVCS } do
      local inf = assert(w:informer(res))
      inf:add_handler({
        on_add = function(o, initial)
          if not initial then seen[#seen + 1] = res .. " ADDED " .. o.metadata.name end
        end,
        on_update = function(_, o)
          -- the cluster's deployment controller (the sim's, or
          -- kube-controller-manager's) writes the sentinel Deployments
          -- (revision, status): not the plan's writes
          if o.metadata.name:match("^sentinel%-") then return end
          seen[#seen + 1] = res .. " MODIFIED " .. o.metadata.name
        end,
        on_delete = function(o) seen[#seen + 1] = res .. " DELETED " .. (o.key or o.metadata.name) end,
      }, { main = true })
    end
    assert(w:start{ timeout = 30 })
    return w
  end

  -- real writes the watcher must see (in each stream, after anything the
  -- plan would have caused); returns the events seen up to them
  local n_sentinel = 0
  local function events_through_sentinels()
    n_sentinel = n_sentinel + 1
    local name = "sentinel-" .. n_sentinel
    assert(t.client:create(DEPS, { apiVersion = "apps/v1", kind = "Deployment",
      metadata = { name = name, namespace = ns },
      spec = { selector = { matchLabels = { s = name } }, template = { metadata = { labels = { s = name } },
        spec = { containers = { { name = "c", image = "busybox" } } } } } }))
    assert(t.client:create(SVCS, { apiVersion = "v1", kind = "Service", metadata = { name = name, namespace = ns },
      spec = { ports = { { port = 80 } } } }))
    assert(t.client:create(RES, { apiVersion = "example.kinformer.io/v1", kind = "Website",
      metadata = { name = name, namespace = ns }, spec = { image = "busybox" } }))
    local want = { DEPS .. " ADDED " .. name, SVCS .. " ADDED " .. name, RES .. " ADDED " .. name }
    assert(watch:wait_for(function()
      local have = {}
      for _, e in ipairs(seen) do have[e] = true end
      for _, w in ipairs(want) do if not have[w] then return false end end
      return true
    end, 20))
    local got = seen
    seen = {}
    -- the sentinels go again (a Website without finalizer is deleted at once)
    for _, res in ipairs { DEPS, SVCS, RES } do assert(t.client:delete(res, ns, name)) end
    assert(watch:wait_for(function() return #seen >= 3 end, 20))
    seen = {}
    table.sort(got)
    table.sort(want)
    return got, want
  end

  local function rv(res, name)
    local o = t.client:get(res, ns, name)
    return o and o.metadata.resourceVersion
  end

  local function site(name, spec)
    return { apiVersion = "example.kinformer.io/v1", kind = "Website",
             metadata = { name = name, namespace = ns }, spec = spec }
  end

  setup(function()
    t = h.target()
    local _, err, code = t.client:create("apiextensions.k8s.io/v1/customresourcedefinitions",
      core.json_decode(h.read("examples/website/crd.json")))
    assert(not err or code == "AlreadyExists", err)
    h.eventually(function() return t.client:list(RES, "default") end, "the Website CRD to be served")
    ns = h.namespace(t, "plan")
    assert(t.client:create(RES, site("shop", { image = "nginx:1.27", replicas = 2, port = 8080 })))
    assert(t.client:create(RES, site("blog", { image = "nginx:1.26" })))
    watch = watcher()
    mgr = assert(kinformer.manager{ kubeconfig = t.kubeconfig, namespace = ns })
    ctl = website.register(mgr)
  end)

  teardown(function()
    if mgr then mgr:stop() end
    if watch then watch:stop() end
    if t then
      if ns then h.cleanup_namespace(t, ns, { RES, DEPS, SVCS }) end
      t.stop()
    end
  end)

  it("shows the creates of a Deployment and a Service and the Website's update, writing nothing", function()
    local rv_shop = rv(RES, "shop")
    local report = assert(ctl:plan(ns .. "/shop"))
    assert.is_true(report.changed)
    assert.is_false(report.failed)
    assert.equal(1, #report.keys)
    local e = report.keys[1]
    assert.equal(ns .. "/shop", e.key)
    assert.equal("done", e.result)
    local actions = {}
    for _, c in ipairs(e.changes) do actions[#actions + 1] = c.action .. " " .. c.kind .. " " .. c.name end
    assert.same({ "update Website shop", "create Deployment shop", "create Service shop" }, actions)
    -- the planned objects are the server's dry-run answers
    local dep = e.changes[2].after
    assert.equal(2, dep.spec.replicas)
    assert.equal("nginx:1.27", dep.spec.template.spec.containers[1].image)
    assert.equal("Website", h.controller_ref(dep).kind)
    assert.equal("True", e.changes[1].after.status.conditions[1].status)
    -- the text: one header per key, a diff per object, the Events not sent
    local text = tostring(report)
    assert.matches("== website " .. h.esc(ns) .. "/shop: done, 3 objects would change", text)
    assert.matches("\n%-%-%- Website " .. h.esc(ns) .. "/shop\n%+%+%+ Website " .. h.esc(ns) .. "/shop %(planned%)\n", text)
    assert.matches("\n%+  finalizers:\n%+  %- example%.kinformer%.io/children\n", text)
    assert.matches("\n%+status:\n", text)
    assert.matches("\n%+    reason: Reconciled\n", text)
    assert.matches("\n%-%-%- /dev/null\n%+%+%+ Deployment " .. h.esc(ns)
      .. "/shop %(planned%)\n@@ %-0,0 %+1,%d+ @@\n%+apiVersion: apps/v1\n", text)
    assert.matches("\n%+kind: Service\n", text)
    assert.matches("\nevent Normal Created on Website " .. h.esc(ns) .. "/shop: created Deployment", text)
    assert.not_matches("resourceVersion", text)
    assert.not_matches("managedFields", text)
    assert.matches("\nplan: 1 key, 3 changes, 0 failed\n$", text)

    -- nothing was written: no object changed, no watch event, no Event
    assert.equal(rv_shop, rv(RES, "shop"))
    assert.equal("NotFound", select(3, t.client:get(DEPS, ns, "shop")))
    assert.equal("NotFound", select(3, t.client:get(SVCS, ns, "shop")))
    local got, want = events_through_sentinels()
    assert.same(want, got)
    mgr.env:event_recorder("website"):flush(5)
    -- only the controller's own: kube-apiserver's repair loops may write
    -- Events about the sentinel Service (seen once in the e2e tier)
    local evs = t.client:list("events.k8s.io/v1/events", ns)
    local ours, all = {}, {}
    for _, ev in ipairs(evs.items) do
      local s = string.format("%s %s %s/%s at %s", tostring(ev.reportingController), tostring(ev.reason),
        tostring(ev.regarding and ev.regarding.kind), tostring(ev.regarding and ev.regarding.name),
        tostring(ev.eventTime or ev.metadata.creationTimestamp))
      all[#all + 1] = s
      if ev.reportingController == "website" then ours[#ours + 1] = s end
    end
    assert.same({}, ours, "Events in the namespace: " .. table.concat(all, "; "))
  end)

  it("plans every key of the For informer by default, and the keys asked for", function()
    -- the sentinels' deletes reached the watcher; on kube-apiserver the
    -- controller's own cache may still be a moment behind: wait for it
    local inf = require("kinformer.controller").parts(ctl).for_informer
    assert(mgr:wait_for(function()
      for _, k in ipairs(inf:keys()) do if k:match("/sentinel%-") then return false end end
      return true
    end, 20))
    local all = assert(ctl:plan())
    local keys = {}
    for _, e in ipairs(all.keys) do keys[#keys + 1] = e.key end
    assert.same({ ns .. "/blog", ns .. "/shop" }, keys)
    local one = assert(ctl:plan({ { namespace = ns, name = "blog" } }))
    assert.equal(1, #one.keys)
    assert.equal(ns .. "/blog", one.keys[1].key)
    assert.equal(80, one.keys[1].changes[3].after.spec.ports[1].port) -- the spec's default
    assert.has_error(function() ctl:plan(42) end)
    assert.has_error(function() ctl:plan({ 42 }) end)
  end)

  local function plan_cli(...)
    local args = { "bin/kinformer", "plan", "examples/website/operator.lua", "--kubeconfig", t.kubeconfig,
                   "--namespace", ns, ... }
    for i, a in ipairs(args) do args[i] = h.quote(a) end
    local errf = os.tmpname()
    local out, rc = proc.run(table.concat(args, " ") .. " 2>" .. errf)
    return out, rc, proc.slurp(errf)
  end

  it("kinformer plan prints the diffs and exits 2 when something would change", function()
    local rv_shop = rv(RES, "shop")
    local out, rc, err = plan_cli("--key", ns .. "/shop")
    assert.equal(2, rc, err)
    assert.equal("", err)
    assert.matches("== website " .. h.esc(ns) .. "/shop: done, 3 objects would change\n", out)
    assert.matches("\ncreate Deployment " .. h.esc(ns) .. "/shop\n", out)
    assert.matches("\n%+      %- name: web\n%+        image: nginx:1%.27\n", out)
    assert.not_matches("/blog", out)
    assert.equal(rv_shop, rv(RES, "shop"))
    assert.equal("NotFound", select(3, t.client:get(DEPS, ns, "shop")))
    -- a usage error is 2 too, but says so on stderr
    local _, urc, uerr = plan_cli("--key", "a/b/c")
    assert.equal(2, urc)
    assert.matches("--key wants NAMESPACE/NAME", uerr, 1, true)
  end)

  it("shows no change (exit 0) once the operator reconciled for real", function()
    assert(ctl:reconcile_once{ namespace = ns, name = "shop" })
    -- the cache has the children and the Website's own status patch (Ready
    -- True): a plan read from a cache without it would set the condition
    -- again, with a lastTransitionTime a second later
    assert(mgr:wait_for(function()
      local cached = mgr:lister(RES):get(ns .. "/shop")
      local conds = cached and cached.status and cached.status.conditions
      return mgr:lister(DEPS):get(ns .. "/shop") and mgr:lister(SVCS):get(ns .. "/shop")
        and conds and conds[1] and conds[1].status == "True"
    end, 20))
    local report = assert(ctl:plan(ns .. "/shop"))
    assert.is_false(report.changed, tostring(report))
    assert.matches("== website " .. h.esc(ns) .. "/shop: done, no changes\n", tostring(report))
    local out, rc, err = plan_cli("--key", ns .. "/shop")
    assert.equal(0, rc, out .. err)
    assert.matches("plan: 1 key, 0 changes, 0 failed", out)
  end)

  it("shows deletes, and a spec change as a diff of the live object", function()
    -- a spec change: the Deployment would be patched
    assert(t.client:patch(RES, ns, "shop", { spec = { replicas = 5 } }, { type = "merge" }))
    assert(mgr:wait_for(function()
      local s = mgr:lister(RES):get(ns .. "/shop")
      return s and s.spec.replicas == 5
    end, 20))
    events_through_sentinels() -- what this spec wrote itself so far
    local rv_dep = rv(DEPS, "shop")
    local report = assert(ctl:plan(ns .. "/shop"))
    local c = report.keys[1].changes
    assert.equal("update Deployment", c[1].action .. " " .. c[1].kind)
    assert.matches("\n%-  replicas: 2\n%+  replicas: 5\n", c[1].diff)
    assert.equal(rv_dep, rv(DEPS, "shop"))

    -- a Website being deleted: its children would be deleted, its finalizer removed
    assert(t.client:delete(RES, ns, "shop"))
    assert(mgr:wait_for(function()
      local s = mgr:lister(RES):get(ns .. "/shop")
      return s and s.metadata.deletionTimestamp
    end, 20))
    events_through_sentinels()
    local rv_site = rv(RES, "shop")
    report = assert(ctl:plan(ns .. "/shop"))
    local actions = {}
    for _, ch in ipairs(report.keys[1].changes) do actions[#actions + 1] = ch.action .. " " .. ch.kind end
    assert.same({ "delete Deployment", "delete Service", "update Website" }, actions)
    local del = report.keys[1].changes[1].diff
    assert.matches("^%-%-%- Deployment " .. h.esc(ns) .. "/shop\n%+%+%+ /dev/null\n@@ %-1,%d+ %+0,0 @@\n", del)
    assert.matches("\n%-  finalizers:\n", report.keys[1].changes[3].diff)
    assert.equal(rv_dep, rv(DEPS, "shop"))
    assert.equal(rv_site, rv(RES, "shop"))
    assert.is_truthy(t.client:get(SVCS, ns, "shop"))
    local got, want = events_through_sentinels()
    assert.same(want, got)
  end)

  it("gives the reconciler a client that refuses what it cannot dry-run", function()
    local m2 = assert(kinformer.manager{ kubeconfig = t.kubeconfig, namespace = ns })
    local c2 = assert(m2:controller{ name = "odd", ["for"] = RES, reconciler = function(_req, ctx)
      return ctx.client:watch("example.kinformer.io/v1/websites")
    end })
    local report = assert(c2:plan(ns .. "/blog"))
    m2:stop()
    assert.is_true(report.failed)
    assert.equal("error", report.keys[1].result)
    assert.matches("ctx.client.watch is not available in a plan (dry run)", report.keys[1].detail, 1, true)
  end)

  it("reports a failed reconcile per key (exit 1)", function()
    local m2 = assert(kinformer.manager{ kubeconfig = t.kubeconfig, namespace = ns })
    local c2 = assert(m2:controller{ name = "failing", ["for"] = RES, reconciler = function(req, _ctx)
      if req.name == "blog" then return nil, "cannot reconcile " .. req.name end
      return { requeue_after = 7 }
    end })
    local report = assert(c2:plan())
    m2:stop()
    assert.is_true(report.failed)
    assert.is_false(report.changed)
    local by = {}
    for _, e in ipairs(report.keys) do by[e.key] = e end
    assert.equal("error", by[ns .. "/blog"].result)
    assert.equal("cannot reconcile blog", by[ns .. "/blog"].detail)
    assert.matches("== failing " .. h.esc(ns) .. "/blog: error: cannot reconcile blog, no changes\n", report.text)
    assert.matches("== failing " .. h.esc(ns) .. "/shop: requeue after 7s, no changes\n", report.text)
  end)
end)

describe("kinformer plan --sim", function()
  local function run(...)
    local args = { "bin/kinformer", "plan", "examples/website/operator.lua", "--sim", "--seed",
                   "examples/website/seed.json", ... }
    for i, a in ipairs(args) do args[i] = h.quote(a) end
    local errf = os.tmpname()
    local out, rc = proc.run(table.concat(args, " ") .. " 2>" .. errf)
    return out, rc, proc.slurp(errf)
  end

  it("plans the seeded Website: creates, a status update, exit 2", function()
    local out, rc, err = run()
    assert.equal(2, rc, out .. err)
    assert.equal("", err)
    assert.matches("^== website default/hello: done, 3 objects would change\n", out)
    assert.matches("\nupdate Website default/hello\n", out)
    assert.matches("\n%+status:\n", out)
    assert.matches("\ncreate Deployment default/hello\n%-%-%- /dev/null\n", out)
    assert.matches("\ncreate Service default/hello\n%-%-%- /dev/null\n", out)
    assert.matches("\nplan: 1 key, 3 changes, 0 failed\n$", out)
  end)

  it("--key selects keys; a key with no object plans nothing (exit 0)", function()
    local out, rc = run("--key", "default/nothere")
    assert.equal(0, rc, out)
    assert.equal("== website default/nothere: done, no changes\nplan: 1 key, 0 changes, 0 failed\n", out)
    out, rc = run("--key", "default/hello", "--key", "default/nothere")
    assert.equal(2, rc, out)
    assert.matches("== website default/hello: done, 3 objects would change\n", out)
    assert.matches("\nplan: 2 keys, 3 changes, 0 failed\n$", out)
  end)

  it("ctl:plan works beside a running manager, whose workers keep writing for real", function()
    local sim = assert(require("kinformer.sim").start{ seed = "examples/website/seed.json" })
    local mgr = assert(kinformer.manager{ sim = sim })
    local ok, err = pcall(function()
      local ctl = website.register(mgr)
      assert(mgr:start())
      local deps = mgr:lister(DEPS)
      assert(mgr:wait_for(function()
        local s = mgr:lister(RES):get("default/hello")
        local c = s and s.status and s.status.conditions and s.status.conditions[1]
        return c and c.status == "True" and deps:get("default/hello")
      end, 20))
      local report = assert(ctl:plan("default/hello"))
      assert.is_false(report.changed, report.text)
      assert.equal("done", report.keys[1].result)
      -- the workers still write for real: a change reaches the Deployment
      assert(mgr.client:patch(RES, "default", "hello", { spec = { replicas = 4 } }, { type = "merge" }))
      assert(mgr:wait_for(function()
        local d = deps:get("default/hello")
        return d and d.spec.replicas == 4
      end, 20))
    end)
    mgr:stop()
    sim:stop()
    assert(ok, err)
  end)

  it("rejects what plan does not take", function()
    local cli = require "kinformer.cmd.cli"
    assert.same({ "a/b", "c" }, cli.parse({ "plan", "s.lua", "--key", "a/b", "--key=c" }).keys)
    assert.matches("option of plan", select(2, cli.parse({ "run", "s.lua", "--key", "a/b" })))
    assert.matches("plan takes no", select(2, cli.parse({ "plan", "s.lua", "--leader-elect" })))
    assert.matches("plan needs a script", select(2, cli.parse({ "plan" })))
    assert.matches("--seed needs --sim", select(2, cli.parse({ "plan", "s.lua", "--seed", "f" })), 1, true)
    local out, rc = proc.run("bin/kinformer plan examples/website/operator.lua --sim --key /x")
    assert.equal(2, rc)
    assert.matches("--key wants NAMESPACE/NAME or NAME, not '/x'", out, 1, true)
  end)
end)
