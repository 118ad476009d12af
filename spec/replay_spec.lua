-- kinformer record and kinformer.replay: a trace recorded from the target
-- server (kinformer.sim, or kube-apiserver when the e2e tier sets
-- KINFORMER_E2E_KUBECONFIG: spec/examples/helper.lua's h.target), replayed
-- through examples/configmap-mirror against a sim, with and without faults;
-- a committed website trace against its golden writes; the golden refresh.
local core = require "kinformer.core"
local replay = require "kinformer.replay"
local golden = require "kinformer.testing.replay"
local h = require "examples.helper"
local proc = require "support.proc"
local quiet = require "support.quiet"

local MIRROR = "examples/configmap-mirror/operator.lua"
local WEBSITE_TRACE = "spec/fixtures/replay/website.jsonl"
local WEBSITE_GOLDEN = "spec/fixtures/replay/website.writes.json"
local SECRETS = "v1/secrets"

local function lines(path)
  local out = {}
  for l in io.lines(path) do out[#out + 1] = core.json_decode(l) end
  return out
end

local function find(writes, verb, resource, name)
  for _, w in ipairs(writes) do
    if w.verb == verb and w.resource == resource and w.name == name then return w end
  end
  return nil
end

-- Records v1/configmaps of a fresh namespace of the target while making
-- changes; returns the trace's path and the namespace (once per run: the
-- replay tests reuse it).
local recorded
local function record()
  if recorded then return recorded.trace, recorded.ns end
  local t = h.target()
  local ns = h.namespace(t, "rec")
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. dir))
  local trace = dir .. "/trace.jsonl"
  local function cm(name, labelled, data)
    return { apiVersion = "v1", kind = "ConfigMap",
             metadata = { name = name, namespace = ns,
                          labels = labelled and { ["kinformer.io/mirror"] = "true" } or nil },
             data = data }
  end
  assert(t.client:create(cm("pre", true, { a = "1" })))
  assert(t.client:create(cm("plain", false, { b = "2" })))
  -- in the background, its pid in dir/pid and its exit status in dir/rc
  assert(os.execute(string.format(
    "(sh -c 'echo $$ > %s/pid; exec bin/kinformer record -o %s --kubeconfig %s --namespace %s v1/configmaps' "
      .. ">%s/out 2>&1; echo $? > %s/rc) &",
    dir, trace, t.kubeconfig, ns, dir, dir)))
  h.eventually(function() return h.read(trace):find('"type":"LIST"', 1, true) end, "the LIST line")
  assert(t.client:create(cm("a", true, { x = "1" })))
  local a = assert(t.client:get("v1/configmaps", ns, "a"))
  a.data.x = "2"
  assert(t.client:update("v1/configmaps", a))
  assert(t.client:delete("v1/configmaps", ns, "pre"))
  h.eventually(function() return h.read(trace):find('"DELETED"', 1, true) end, "the DELETED line")
  assert(os.execute("kill -TERM $(cat " .. dir .. "/pid)"))
  h.eventually(function() return h.read(dir .. "/rc"):match("%d") end, "record to exit")
  assert.equal("0", h.read(dir .. "/rc"):match("%d+"), h.read(dir .. "/out"))
  assert.matches("recorded 3 events to", h.read(dir .. "/out"))
  h.cleanup_namespace(t, ns, { "v1/configmaps", SECRETS })
  t.stop()
  recorded = { trace = trace, ns = ns, dir = dir }
  return trace, ns
end

local WEBSITE = "examples/website/operator.lua"
local WEBSITES = "example.kinformer.io/v1/websites"
local DEPLOYMENTS = "apps/v1/deployments"
local DRIVER = "replay-spec-driver"

local function site(name, image, port)
  return { apiVersion = "example.kinformer.io/v1", kind = "Website",
           metadata = { name = name, namespace = "default" }, spec = { image = image, port = port } }
end

-- A live run of the Website operator against a sim, recorded: Website a
-- and its children exist (the operator made them) before the recording
-- starts; then b is created, a's image changed, a's Deployment scaled by
-- hand (the operator puts it back) and b deleted (the finalizer deletes
-- its children). Returns the trace's path and the writes the operator made
-- while it was recorded (kinformer.replay.write_of's form), once per run.
local website_run
local function record_website_run()
  if website_run then return website_run.trace, website_run.writes end
  local sim <close> = assert(require("kinformer.sim").start{ seed = "examples/website/crd.json" })
  local env = assert(core.env{ url = sim.url, user_agent = DRIVER })
  local c = env:client()
  local function ready(name, gen)
    local w = c:get(WEBSITES, "default", name)
    return w and type(w.status) == "table" and w.status.observedGeneration == gen
  end
  assert(c:create(site("a", "nginx:1", 80)))
  local op = h.operator(WEBSITE, { kubeconfig = sim.kubeconfig }, { "-q" })
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. dir))
  local trace = dir .. "/website-run.jsonl"
  local ok, err = pcall(function()
    h.eventually(function() return ready("a", 1) end, "Website a Ready")
    assert(os.execute(string.format(
      "(sh -c 'echo $$ > %s/pid; exec bin/kinformer record -q -o %s --kubeconfig %s --namespace default "
        .. "%s %s v1/services' >%s/out 2>&1; echo $? > %s/rc) &",
      dir, trace, sim.kubeconfig, WEBSITES, DEPLOYMENTS, dir, dir)))
    h.eventually(function()
      local n = 0
      for _ in h.read(trace):gmatch('"type":"LIST"') do n = n + 1 end
      return n == 3
    end, "the 3 LIST lines")
    sim:write_log_start() -- from here on, the writes a replay must make again
    assert(c:create(site("b", "nginx:2", 8080)))
    h.eventually(function() return ready("b", 1) and c:get("v1/services", "default", "b") end, "Website b Ready")
    local a = assert(c:get(WEBSITES, "default", "a"))
    a.spec.image = "nginx:3"
    assert(c:update(WEBSITES, a))
    h.eventually(function() return ready("a", 2) end, "Website a Ready at generation 2")
    assert(c:patch(DEPLOYMENTS, "default", "a", { spec = { replicas = 5 } }, { type = "merge" }))
    h.eventually(function()
      local d = c:get(DEPLOYMENTS, "default", "a")
      return d and d.spec.replicas == 1 and d.metadata.managedFields[#d.metadata.managedFields].manager ~= DRIVER
    end, "the operator to scale Deployment a back to 1")
    assert(c:delete(WEBSITES, "default", "b"))
    h.eventually(function()
      return not c:get(WEBSITES, "default", "b") and not c:get(DEPLOYMENTS, "default", "b")
    end, "Website b and its Deployment gone")
    h.eventually(function()
      for _, x in ipairs(lines(trace)) do
        if x.type == "DELETED" and x.resource == WEBSITES then return true end
      end
    end, "the DELETED line of Website b")
  end)
  os.execute("kill -TERM $(cat " .. dir .. "/pid) 2>/dev/null")
  h.eventually(function() return h.read(dir .. "/rc"):match("%d") end, "record to exit")
  local rc = op:stop()
  local op_err = op:stderr() .. op:stdout()
  op:cleanup()
  env:shutdown()
  assert(ok, err)
  assert.equal(0, rc, op_err)
  assert.not_matches("terminal", op_err)
  local writes = {}
  for _, e in ipairs(core.json_decode(assert(sim:write_log_take()))) do
    local w = e.userAgent ~= DRIVER and replay.write_of(e)
    if w then writes[#writes + 1] = w end
  end
  website_run = { trace = trace, writes = writes, dir = dir }
  return trace, writes
end

-- Runs fn with kin's log lines held; returns fn's values and the lines.
local function logged(fn)
  local level = core.log_enabled("info")
  core.set_log_level("info")
  core.log_hold(true)
  local ok, a, b = pcall(fn)
  local held = core.log_take()
  core.log_hold(false)
  core.set_log_level(level and "info" or "warn")
  if not ok then error(a, 0) end
  return a, b, held
end

describe("kinformer record", function()
  it("saves the LIST and the watch events, raw, with their offsets, until SIGTERM", function()
    local trace, ns = record()
    local l = lines(trace)
    assert.equal(5, #l)
    assert.equal("KinformerTrace", l[1].kind)
    assert.same({ "v1/configmaps" }, l[1].resources)
    assert.equal(ns, l[1].namespace)
    assert.matches("^%d%d%d%d%-%d%d%-%d%dT", l[1].start)
    assert.matches("^v1%.", l[1].server.gitVersion)
    assert.equal("LIST", l[2].type)
    assert.equal("v1/configmaps", l[2].resource)
    local listed = {}
    for _, o in ipairs(l[2].items) do listed[o.metadata.name] = o end
    assert.truthy(listed.pre and listed.plain)
    -- raw server JSON: uid and resourceVersion as the server gave them
    assert.matches("%-", listed.pre.metadata.uid)
    assert.truthy(tonumber(l[2].resourceVersion) >= tonumber(listed.plain.metadata.resourceVersion))
    local got = {}
    local last = 0
    for i = 3, 5 do
      got[#got + 1] = l[i].type .. " " .. l[i].object.metadata.name
      assert.equal("v1/configmaps", l[i].resource)
      assert.equal("integer", math.type(l[i].offsetMs))
      assert.truthy(l[i].offsetMs >= last)
      last = l[i].offsetMs
    end
    assert.same({ "ADDED a", "MODIFIED a", "DELETED pre" }, got)
    assert.equal("2", l[4].object.data.x)
  end)

  it("rejects a usage error with status 2", function()
    local out, rc = proc.run("bin/kinformer record v1/configmaps")
    assert.equal(2, rc)
    assert.matches("record needs %-o TRACE", out)
  end)
end)

describe("the sim's write log", function()
  it("keeps the API writes with their User-Agent and body once started", function()
    local sim <close> = assert(require("kinformer.sim").start{})
    local r1, m1, c1 = sim:write_log_take()
    assert.same({ nil, "EINVAL" }, { r1, c1 })
    assert.matches("not started", m1)
    local env = assert(core.env{ url = sim.url, user_agent = "replay-spec/1" })
    local c = env:client()
    assert(c:create{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "before", namespace = "default" } })
    sim:write_log_start()
    assert(c:get("v1/configmaps", "default", "before"))
    assert(c:create{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "x", namespace = "default" },
      data = { k = "v" } })
    assert(c:delete("v1/configmaps", "default", "x"))
    local log = core.json_decode(assert(sim:write_log_take()))
    assert.equal(2, #log)
    assert.same({ "POST", "/api/v1/namespaces/default/configmaps", "replay-spec/1" },
      { log[1].method, log[1].uri, log[1].userAgent })
    assert.equal("v", core.json_decode(log[1].body).data.k)
    assert.same({ "DELETE", "/api/v1/namespaces/default/configmaps/x" }, { log[2].method, log[2].uri })
    assert.equal(0, #core.json_decode(assert(sim:write_log_take())))
    env:shutdown()
  end)
end)

describe("kinformer.replay", function()
  teardown(function()
    for _, r in ipairs({ website_run or {}, recorded or {} }) do
      if r.dir then os.execute("rm -rf " .. r.dir) end
    end
    website_run, recorded = nil, nil
  end)

  it("feeds the trace through the operator against a sim and returns its writes", function()
    local trace, ns = record()
    local writes = replay.run{ trace = trace, script = MIRROR }
    -- the LIST's labelled ConfigMap, then the watch's: each Secret applied
    -- (ctx:ensure), the ConfigMap's finalizer added first
    local pre = assert(find(writes, "patch", SECRETS, "pre"), replay.format(writes))
    assert.equal(ns, pre.namespace)
    assert.equal("MQ==", pre.body.data.a)
    assert.is_nil(pre.body.metadata.uid)
    assert.truthy(find(writes, "patch", SECRETS, "a"))
    assert.truthy(find(writes, "delete", SECRETS, "pre"))
    assert.is_nil(find(writes, "patch", SECRETS, "plain"))
    -- the update of a reached the Secret: the last write of a holds x=2
    local last_a
    for _, w in ipairs(writes) do
      if w.name == "a" and w.resource == SECRETS and w.body and w.body.data then last_a = w end
    end
    assert.equal("Mg==", last_a.body.data.x)
    -- of the ConfigMaps, the operator writes their finalizer only, never what the replay wrote
    for _, w in ipairs(writes) do
      if w.resource == "v1/configmaps" then
        assert.equal("patch", w.verb)
        assert.same({ "metadata" }, (function() local k = {} for x in pairs(w.body) do k[#k + 1] = x end return k end)())
        local f = w.body.metadata.finalizers -- added (a list), or the last removed (null)
        assert.is_true(type(f) == "table" or f == core.null)
      end
    end
  end)

  quiet.it(it, "gives the same writes with watches dropped, history compacted and a request failed mid-stream", {}, function()
    local trace = record()
    local plain = replay.set(replay.run{ trace = trace, script = MIRROR })
    local faulted = replay.set(replay.run{ trace = trace, script = MIRROR, faults = {
      { at = 1, fault = "drop_watches" }, { at = 2, fault = "compact" }, { at = 2, fault = "drop_watches" },
      { at = 3, fault = "fail_next", code = 503 },
    } })
    assert.equal(replay.format(plain), replay.format(faulted))
  end)

  it("replays a committed website trace to its golden writes", function()
    -- as a set: the operator may repeat a patch when its Deployment cache
    -- lags behind its own last write
    local writes = golden.assert_writes_match(WEBSITE_TRACE, "examples/website/operator.lua", WEBSITE_GOLDEN,
      { set = true })
    assert.truthy(find(writes, "patch", "apps/v1/deployments", "b")) -- applied (ctx:ensure)
    -- a deleted Website's children are the garbage collector's to delete
    assert.falsy(find(writes, "delete", "v1/services", "b"))
  end)

  it("rewrites the golden file on request and shows a diff on a mismatch", function()
    local g = os.tmpname()
    os.remove(g)
    local ok, err = pcall(golden.assert_writes_match, WEBSITE_TRACE, "examples/website/operator.lua", g, { set = true })
    assert.falsy(ok)
    assert.matches("KINFORMER_UPDATE_GOLDEN=1", err)
    local code = proc.paths_prologue() .. string.format(
      "require('kinformer.core').set_log_level('warn') "
        .. "require('kinformer.testing.replay').assert_writes_match(%q, %q, %q, { set = true })",
      WEBSITE_TRACE, "examples/website/operator.lua", g)
    local out, rc = proc.run("KINFORMER_UPDATE_GOLDEN=1 lua5.4 -e " .. h.quote(code))
    assert.equal(0, rc, out)
    local text = proc.read(g)
    assert.equal(proc.read(WEBSITE_GOLDEN), text)
    proc.write(g, (text:gsub('"nginx:3"', '"nginx:4"', 1)))
    ok, err = pcall(golden.assert_writes_match, WEBSITE_TRACE, "examples/website/operator.lua", g, { set = true })
    assert.falsy(ok)
    assert.matches('\n%-%s*"image": "nginx:4"', err)
    assert.matches('\n%+%s*"image": "nginx:3"', err)
    os.remove(g)
  end)

  it("kinformer replay prints the writes as JSON", function()
    local out, rc = proc.run("bin/kinformer replay -q --set " .. WEBSITE_TRACE .. " examples/website/operator.lua 2>/dev/null")
    assert.equal(0, rc, out)
    assert.equal(proc.read(WEBSITE_GOLDEN), out)
  end)

  it("runs the controllers on a fake clock that follows the recorded offsets, at full speed", function()
    -- a hand-written trace: t labelled at 0 s, changed at 100 s; the
    -- operator counts each reconcile and requeues after 30 s
    local function t(v)
      return { apiVersion = "v1", kind = "ConfigMap", data = { v = v },
               metadata = { name = "t", namespace = "default", labels = { tick = "true" } } }
    end
    local trace = os.tmpname()
    local f = assert(io.open(trace, "w"))
    for _, l in ipairs{
      { kind = "KinformerTrace", version = 1, resources = { "v1/configmaps" }, namespace = "default" },
      { type = "LIST", resource = "v1/configmaps", offsetMs = 0, items = setmetatable({}, core.array_mt) },
      { type = "ADDED", resource = "v1/configmaps", offsetMs = 0, object = t("1") },
      { type = "MODIFIED", resource = "v1/configmaps", offsetMs = 100000, object = t("2") },
    } do f:write(core.json_encode(l), "\n") end
    f:close()
    local function counts(writes)
      local out = {}
      for _, w in ipairs(writes) do
        assert.same({ "v1/configmaps", "default", "t-count" }, { w.resource, w.namespace, w.name })
        out[#out + 1] = w.verb .. " " .. w.body.data.n .. " " .. w.body.data.v
      end
      return out
    end
    local t0 = core.monotime()
    local writes = replay.run{ trace = trace, script = "spec/fixtures/replay/ticker.lua" }
    -- at 0 s the ADDED; at 30, 60 and 90 s the requeues; at 100 s the
    -- MODIFIED (its requeue at 130 s is past the end)
    assert.same({ "create 1 1", "update 2 1", "update 3 1", "update 4 1", "update 5 2" }, counts(writes))
    assert.is_true(core.monotime() - t0 < 10, "100 s of recorded time took " .. (core.monotime() - t0) .. " s")
    -- tail: the clock runs on 50 s past the last event (the requeue due at
    -- 120 s stays: the MODIFIED's 130 s is later)
    writes = replay.run{ trace = trace, script = "spec/fixtures/replay/ticker.lua", tail = 50 }
    assert.same({ "create 1 1", "update 2 1", "update 3 1", "update 4 1", "update 5 2", "update 6 2",
                  "update 7 2" }, counts(writes))
    os.remove(trace)
  end)

  it("replays a recorded Website run to the live run's writes: recorded identities, no ownership conflict", function()
    local trace, live = record_website_run()
    local l = lines(trace)
    -- the recording: Website a and the children the operator made, with
    -- their uids and owner references, then the changes
    local uid_a, listed = nil, {}
    for _, x in ipairs(l) do
      for _, o in ipairs(x.type == "LIST" and x.items or {}) do
        listed[x.resource .. " " .. o.metadata.name] = o
        if x.resource == WEBSITES then uid_a = o.metadata.uid end
      end
    end
    assert.truthy(uid_a)
    assert.equal(uid_a, listed[DEPLOYMENTS .. " a"].metadata.ownerReferences[1].uid)
    local writes, _, log = logged(function() return replay.run{ trace = trace, script = WEBSITE } end)
    local text = table.concat(log, "\n")
    assert.not_matches("terminal", text)
    assert.not_matches("controlled by", text)
    assert.not_matches("ChildConflict", replay.format(writes))
    -- the same writes: the same creates (b's Deployment and Service), a's
    -- Deployment patched to nginx:3 and back to 1 replica, what b's
    -- deletion made the operator do (its finalizer: delete the children);
    -- none for a's children before
    assert.equal(replay.format(replay.set(live)), replay.format(replay.set(writes)))
    assert.truthy(find(writes, "patch", DEPLOYMENTS, "b"))
    assert.truthy(find(writes, "patch", "v1/services", "b"))
    assert.equal(not find(live, "delete", DEPLOYMENTS, "b"), not find(writes, "delete", DEPLOYMENTS, "b"))
    local creates = 0
    for _, w in ipairs(writes) do
      if w.verb == "create" then creates = creates + 1 end
      assert.is_false(w.resource == "v1/services" and w.name == "a", "a write of Service a: " .. replay.format({ w }))
    end
    assert.equal(0, creates) -- ctx:ensure creates by apply (patch)
  end)

  it("compares two versions on the recorded Website run: one without the Service deletes what the other made", function()
    local trace = record_website_run()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local src, n = h.read(WEBSITE):gsub("ipairs { deployment, service }", "ipairs { deployment }")
    assert.equal(1, n)
    proc.write(dir .. "/operator.lua", src)
    local r = require("kinformer.replay_compare").compare{ trace = trace, old = WEBSITE, new = dir .. "/operator.lua" }
    os.execute("rm -rf " .. dir)
    local keys = {}
    for _, o in ipairs(r.objects) do keys[#keys + 1] = o.key end
    assert.same({ "v1/services default/a", "v1/services default/b" }, keys)
    -- Service a (made before the recording, in the trace's LIST) is pruned
    assert.matches("\n%+delete\n", r.objects[1].diff)
    assert.not_matches("\n%-", r.objects[1].diff)
    -- Service b is no longer applied
    assert.matches("\n%-patch\n", r.objects[2].diff)
    -- the Deployments and Websites see the same writes
    assert.not_matches("deployments", r.diff)
    assert.not_matches("websites", r.diff)
  end)

  it("applies the events in commit order (resourceVersion), a deletion no earlier than recorded", function()
    local function ev(t, name, rv) return { type = t, object = { metadata = { name = name, resourceVersion = rv } } } end
    local function names(evs)
      local out = {}
      for _, e in ipairs(evs) do out[#out + 1] = e.type:sub(1, 1) .. e.object.metadata.name end
      return table.concat(out, " ")
    end
    -- the child's watch delivered before its owner's; x's deletion seen by
    -- a relist carries its last state (rv 12)
    assert.equal("Aowner Achild Mowner Dx Aother", names(replay.commit_order{
      ev("ADDED", "child", "16"), ev("ADDED", "owner", "14"), ev("MODIFIED", "owner", "20"),
      ev("DELETED", "x", "12"), ev("ADDED", "other", "21") }))
    -- a resourceVersion that is not a number: as recorded
    assert.equal("Ab Aa", names(replay.commit_order{ ev("ADDED", "b", "9"), ev("ADDED", "a", "x1") }))
  end)

  it("puts the recorded objects with their uids, creationTimestamps and resourceVersions", function()
    local trace = record_website_run()
    local l = lines(trace)
    -- without the workloads' controllers: the deployment controller would
    -- write the put Deployments (revision, status) and move their versions
    local sim <close> = assert(require("kinformer.sim").start{ seed = "examples/website/crd.json",
      controllers = "*,-deployment,-replicaset,-statefulset,-daemonset,-job,-cronjob,-scheduler,-kubelet" })
    local known = {}
    local a
    for _, x in ipairs(l) do
      for _, o in ipairs(x.type == "LIST" and x.items or {}) do
        if x.resource == WEBSITES then a = o end
      end
    end
    assert(sim:put(a))
    local got = sim:get("example.kinformer.io/v1", "Website", "default", "a")
    assert.same({ a.metadata.uid, a.metadata.creationTimestamp, a.metadata.resourceVersion },
      { got.metadata.uid, got.metadata.creationTimestamp, got.metadata.resourceVersion })
    -- each event in commit order: the object then carries the recorded
    -- identity and resourceVersion (the sim's counter jumps to it)
    local events = {}
    for _, x in ipairs(l) do
      if x.type == "ADDED" or x.type == "MODIFIED" then events[#events + 1] = x end
    end
    for _, x in ipairs(replay.commit_order(events)) do
      local rv = assert(replay.apply_event(sim, x, known))
      local m = x.object.metadata
      local cur = sim:get(x.object.apiVersion, x.object.kind, m.namespace, m.name)
      if cur then
        assert.equal(m.uid, cur.metadata.uid)
        if rv ~= true then assert.equal(m.resourceVersion, cur.metadata.resourceVersion) end
      end
    end
    assert.truthy(sim:resource_version() >= tonumber(a.metadata.resourceVersion))
  end)

  it("raises on misuse", function()
    assert.has_error(function() replay.run{ trace = WEBSITE_TRACE } end, "replay.run: script (a file name) expected")
    assert.has_error(function() replay.run{ trace = WEBSITE_TRACE, script = MIRROR, fault = {} } end,
      "replay.run: unknown option fault")
    assert.has_error(function()
      replay.run{ trace = WEBSITE_TRACE, script = MIRROR, faults = { { at = 1, fault = "explode" } } }
    end)
    assert.has_error(function() replay.run{ trace = WEBSITE_TRACE, script = MIRROR, tail = -1 } end,
      "replay.run: tail must be a number of seconds >= 0")
  end)
end)
