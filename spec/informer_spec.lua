-- Informers from Lua (csrc/lua/linformer.c, lhandler.c): the cache seen as
-- fresh tables, and handler sets each on its own listener thread and state,
-- against kinformer.sim.
local kinformer = require "kinformer"
local simmod = require "kinformer.sim"
local core = require "kinformer.core"
-- tests that make kinformer log errors on purpose run in a child busted
-- whose log is captured and asserted
local quiet = require "support.quiet"

-- HTTP to the sim with curl: returns the decoded body (or nil) and the code.
local http = require "support.sim_http"

local function cm_path(ns, name)
  return "/api/v1/namespaces/" .. ns .. "/configmaps" .. (name and ("/" .. name) or "")
end

local function create_cm(sim, ns, name, data, labels)
  local obj, code = http(sim, "POST", cm_path(ns),
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name, namespace = ns, labels = labels }, data = data })
  assert(code == 201, "create " .. ns .. "/" .. name .. ": " .. tostring(code))
  return obj
end

local function update_cm(sim, ns, name, data)
  local obj, code = http(sim, "GET", cm_path(ns, name))
  assert(code == 200)
  obj.data = data
  local new, c2 = http(sim, "PUT", cm_path(ns, name), obj)
  assert(c2 == 200, "update: " .. tostring(c2))
  return new
end

local function delete_cm(sim, ns, name)
  local _, code = http(sim, "DELETE", cm_path(ns, name))
  assert(code == 200, "delete: " .. tostring(code))
end

local function create_ns(sim, name)
  local _, code = http(sim, "POST", "/api/v1/namespaces", { apiVersion = "v1", kind = "Namespace", metadata = { name = name } })
  assert(code == 201 or code == 409)
end

-- Handler functions built from source (the path a literal in each) that
-- append one line per event to path: they run in a listener's own state.
local function recorder(path, opts)
  opts = opts or {}
  local rec = string.format([[local f = assert(io.open(%q, "a")); f:write(line, "\n"); f:close()]], path)
  local function fn(body) return assert(load("return function(...) " .. body .. " end"))() end
  return {
    on_add = fn(string.format([[
      local o, initial = ...
      -- the main state's globals are not here: this is another state
      local line = string.format("add %%s %%s %%s %%s", o.metadata.namespace, o.metadata.name,
        tostring(initial), tostring(rawget(_G, "MAIN_STATE_MARKER")))
      %s
      if o.metadata.name == %q then error("boom on " .. o.metadata.name) end]], rec, opts.fail_on or "")),
    on_update = fn(string.format([[
      local old, new = ...
      local line = string.format("update %%s %%s->%%s", new.metadata.name, old.data and old.data.v or "-",
        new.data and new.data.v or "-")
      %s]], rec)),
    on_delete = fn(string.format([[
      local o = ...
      local line
      if o.final_state_unknown then
        line = string.format("tombstone %%s %%s", o.key, o.object and o.object.data.v or "-")
      else
        line = string.format("delete %%s %%s", o.metadata.name, o.data and o.data.v or "-")
      end
      %s]], rec)),
  }
end

local function read_lines(path)
  local f = io.open(path)
  if not f then return {} end
  local t = {}
  for l in f:lines() do t[#t + 1] = l end
  f:close()
  return t
end

local function sleep(s) os.execute("sleep " .. s) end

-- Waits (without pumping anything in the main state) until fn() is true.
local function eventually(fn, timeout)
  local deadline = core.monotime() + (timeout or 15)
  while core.monotime() < deadline do
    if fn() then return true end
    sleep(0.02)
  end
  return fn()
end

local function contains(lines, want)
  for _, l in ipairs(lines) do if l == want then return true end end
  return false
end

describe("kinformer.informer", function()
  local sim, mgr, files

  before_each(function()
    sim = assert(simmod.start{})
    mgr = assert(kinformer.manager{ sim = sim })
    files = {}
  end)

  after_each(function()
    mgr:stop()
    sim:stop()
    for _, f in ipairs(files) do os.remove(f) end
    MAIN_STATE_MARKER = nil
  end)

  local function tmpfile()
    local f = os.tmpname()
    files[#files + 1] = f
    return f
  end

  it("keeps a cache that matches the server across create, update and delete", function()
    create_cm(sim, "default", "a", { v = "1" })
    create_cm(sim, "default", "b", { v = "1" })
    local inf = assert(mgr:informer("v1/configmaps"))
    assert.is_false(inf:has_synced())
    assert(mgr:start{ timeout = 10 })
    assert.is_true(inf:has_synced())
    local function matches_server()
      local list = http(sim, "GET", "/api/v1/configmaps")
      local want = {}
      for _, o in ipairs(list.items) do want[o.metadata.namespace .. "/" .. o.metadata.name] = o.metadata.resourceVersion end
      local got = {}
      for _, o in ipairs(inf:list()) do got[o.metadata.namespace .. "/" .. o.metadata.name] = o.metadata.resourceVersion end
      local keys = inf:keys()
      if #keys ~= inf:len() then return false end
      for _, k in ipairs(keys) do if not want[k] then return false end end
      for k, rv in pairs(want) do
        if got[k] ~= rv then return false end
        local o = inf:get(k)
        if not o or o.metadata.resourceVersion ~= rv then return false end
      end
      for k in pairs(got) do if not want[k] then return false end end
      return true
    end
    assert.is_true(eventually(matches_server))
    assert.are.same({ "default/a", "default/b" }, inf:keys())
    update_cm(sim, "default", "a", { v = "2" })
    create_cm(sim, "default", "c", { v = "1" })
    delete_cm(sim, "default", "b")
    assert.is_true(eventually(function() return inf:get("default/b") == nil and inf:get("default/c") ~= nil end))
    assert.is_true(eventually(matches_server))
    assert.are.equal("2", inf:get("default/a").data.v)
    assert.is_nil(inf:get("default/nope"))
    assert.are.equal("v1/configmaps", inf:name())
    assert.are.equal("v1/configmaps", inf:resource())
  end)

  it("hands out fresh tables: mutating one cannot change the cache", function()
    create_cm(sim, "default", "a", { v = "1" })
    local inf = assert(mgr:informer("v1/configmaps"))
    assert(mgr:start{ timeout = 10 })
    local o = inf:get("default/a")
    o.data.v = "mutated"
    o.metadata.name = "zzz"
    inf:list()[1].data.v = "mutated too"
    inf:by_index("namespace", "default")[1].data.v = "and again"
    assert.are.equal("1", inf:get("default/a").data.v)
    assert.are.equal("a", inf:get("default/a").metadata.name)
    assert.are_not.equal(inf:get("default/a"), inf:get("default/a"))
  end)

  it("delivers events in order on its own thread, is_in_initial_list true then false, last state on delete", function()
    create_cm(sim, "default", "a", { v = "1" })
    create_cm(sim, "default", "b", { v = "1" })
    MAIN_STATE_MARKER = "main"
    local inf = assert(mgr:informer("v1/configmaps"))
    local path = tmpfile()
    local h = inf:add_handler(recorder(path))
    assert.is_false(h:has_synced())
    assert(mgr:start{ timeout = 10 })
    -- the main state only sleeps from here: deliveries happen elsewhere
    -- a batch is counted (delivered, last_delivered) after its handlers ran
    assert.is_true(eventually(function() return h:has_synced() and h:stats().delivered == 2 end))
    local lines = read_lines(path)
    table.sort(lines)
    assert.are.same({ "add default a true nil", "add default b true nil" }, lines)

    local monotime = require("kinformer.core").monotime
    local synced_at = h:stats().last_delivered -- the initial adds' batch
    assert.is_number(synced_at)
    local t0 = monotime()
    assert.is_true(synced_at <= t0)
    create_cm(sim, "default", "c", { v = "1" })
    update_cm(sim, "default", "c", { v = "2" })
    update_cm(sim, "default", "c", { v = "3" })
    delete_cm(sim, "default", "c")
    assert.is_true(eventually(function() return #read_lines(path) == 6 and h:stats().delivered == 6 end))
    lines = read_lines(path)
    assert.are.same({ "add default c false nil", "update c 1->2", "update c 2->3", "delete c 3" },
      { lines[3], lines[4], lines[5], lines[6] })
    local st = h:stats()
    assert.are.equal(6, st.delivered)
    assert.are.equal(0, st.errors)
    -- when the last batch was handled, on core.monotime()'s scale
    assert.is_true(st.last_delivered > t0 and st.last_delivered <= monotime())
    assert.matches("^listener v1/configmaps #%d+$", h:name())
  end)

  it("gives a handler added after start the cached objects as initial adds", function()
    create_cm(sim, "default", "a", { v = "1" })
    local inf = assert(mgr:informer("v1/configmaps"))
    assert(mgr:start{ timeout = 10 })
    local path = tmpfile()
    local h = inf:add_handler(recorder(path))
    assert.is_true(eventually(function() return h:has_synced() end))
    create_cm(sim, "default", "b", { v = "1" })
    assert.is_true(eventually(function() return #read_lines(path) == 2 end))
    assert.are.same({ "add default a true nil", "add default b false nil" }, read_lines(path))
  end)

  it("gives on_delete a tombstone when the delete itself was missed", function()
    create_cm(sim, "default", "a", { v = "1" })
    create_cm(sim, "default", "b", { v = "7" })
    local inf = assert(mgr:informer("v1/configmaps"))
    local path = tmpfile()
    inf:add_handler(recorder(path))
    assert(mgr:start{ timeout = 10 })
    assert.is_true(eventually(function() return #read_lines(path) == 2 end))
    -- the watch goes silent, the delete happens, and the history that had
    -- it is compacted: the reflector relists and only sees b gone
    sim:fault{ kind = "stall", ms = 1200 }
    delete_cm(sim, "default", "b")
    create_cm(sim, "default", "c", { v = "1" })
    sim:fault{ kind = "compact" }
    assert.is_true(eventually(function() return contains(read_lines(path), "tombstone default/b 7") end, 10))
    assert.is_true(eventually(function() return inf:get("default/c") ~= nil end))
    assert.is_nil(inf:get("default/b"))
    assert.is_false(contains(read_lines(path), "delete b 7"))
  end)

  quiet.it(it, "logs a handler's error and goes on with the next event", {
    "kinformer error %[worker%] listener v1/configmaps #%d+: handler on_add for default/bad failed",
  }, function()
    local inf = assert(mgr:informer("v1/configmaps"))
    local path = tmpfile()
    local h = inf:add_handler(recorder(path, { fail_on = "bad" }))
    assert(mgr:start{ timeout = 10 })
    create_cm(sim, "default", "bad", { v = "1" })
    create_cm(sim, "default", "good", { v = "1" })
    update_cm(sim, "default", "bad", { v = "2" })
    assert.is_true(eventually(function() return #read_lines(path) == 3 end))
    assert.are.same({ "add default bad false nil", "add default good false nil", "update bad 1->2" }, read_lines(path))
    assert.are.equal(1, h:stats().errors)
  end)

  it("a handler set shares a local table between on_add and on_update, in its listener's state", function()
    local inf = assert(mgr:informer("v1/configmaps"))
    local path = tmpfile()
    local last = {} -- name -> the data.v seen last: one copy, shared by the set's functions
    local function record(line)
      local f = assert(io.open(path, "a"))
      f:write(line, "\n")
      f:close()
    end
    inf:add_handler {
      on_add = function(o) last[o.metadata.name] = o.data and o.data.v end,
      on_update = function(_, new)
        local name = new.metadata.name
        record(("update %s %s->%s"):format(name, tostring(last[name]), new.data.v))
        last[name] = new.data.v
      end,
    }
    assert(mgr:start{ timeout = 10 })
    create_cm(sim, "default", "shared", { v = "1" })
    update_cm(sim, "default", "shared", { v = "2" })
    update_cm(sim, "default", "shared", { v = "3" })
    assert.is_true(eventually(function() return #read_lines(path) == 2 end))
    assert.are.same({ "update shared 1->2", "update shared 2->3" }, read_lines(path))
    assert.are.same({}, last) -- the main state's table is not the listener's
  end)

  it("refuses a handler closing over the informer, naming the upvalue", function()
    local inf = assert(mgr:informer("v1/configmaps"))
    local ok, err = pcall(inf.add_handler, inf, { on_add = function(o) return inf:get(o) end })
    assert.is_false(ok)
    assert.matches("handler: cannot send to worker threads: on_add's upvalue 'inf' (a kinformer.informer userdata); " ..
                   "a handler runs in its own Lua state", err, 1, true)
    -- a main-state handler may close over anything
    assert.is_truthy(inf:add_handler({ on_add = function(o) return inf:get(o) end }, { main = true }))
  end)

  it("stops deliveries after remove_handler", function()
    local inf = assert(mgr:informer("v1/configmaps"))
    local p1, p2 = tmpfile(), tmpfile()
    local h1 = inf:add_handler(recorder(p1))
    inf:add_handler(recorder(p2))
    assert(mgr:start{ timeout = 10 })
    create_cm(sim, "default", "a", { v = "1" })
    assert.is_true(eventually(function() return #read_lines(p1) == 1 and #read_lines(p2) == 1 end))
    assert.is_true(inf:remove_handler(h1))
    local r, msg, code = inf:remove_handler(h1)
    assert.is_nil(r)
    assert.are.equal("ENOENT", code)
    assert.matches("already removed", msg)
    create_cm(sim, "default", "b", { v = "1" })
    assert.is_true(eventually(function() return #read_lines(p2) == 2 end))
    sleep(0.2)
    assert.are.same({ "add default a false nil" }, read_lines(p1))
  end)

  it("indexes by namespace and by label", function()
    create_ns(sim, "other")
    create_cm(sim, "default", "a", { v = "1" }, { app = "x" })
    create_cm(sim, "other", "b", { v = "1" }, { app = "x" })
    create_cm(sim, "other", "c", { v = "1" }, { app = "y" })
    local inf = assert(mgr:informer("v1/configmaps"))
    assert.is_true(inf:add_index("by_app", "label:app"))
    local r, _, code = inf:add_index("by_app", "label:app")
    assert.is_nil(r)
    assert.are.equal("EEXIST", code)
    assert.has_error(function() inf:add_index("bad", "field:x") end)
    assert(mgr:start{ timeout = 10 })
    local function names(list)
      local t = {}
      for _, o in ipairs(list) do t[#t + 1] = o.metadata.name end
      table.sort(t)
      return t
    end
    assert.are.same({ "b", "c" }, names(inf:by_index("namespace", "other")))
    assert.are.same({ "a" }, names(inf:by_index("namespace", "default")))
    assert.are.same({ "a", "b" }, names(inf:by_index("by_app", "x")))
    assert.are.same({}, names(inf:by_index("by_app", "none")))
    assert.has_error(function() inf:by_index("nope", "x") end,
      "bad argument #1 to 'by_index' (no index 'nope' (add it with add_index))")
  end)

  it("restricts a namespaced informer and names it by its options", function()
    create_ns(sim, "other")
    create_cm(sim, "default", "a", { v = "1" })
    create_cm(sim, "other", "b", { v = "1" })
    local inf = assert(mgr:informer("v1/configmaps", { namespace = "other" }))
    assert.matches("namespace=other", inf:name(), 1, true)
    assert(mgr:start{ timeout = 10 })
    assert.are.same({ "other/b" }, inf:keys())
    assert.are.same(inf:name(), mgr:informer("v1/configmaps", { namespace = "other" }):name())
  end)

  it("applies a transform before caching", function()
    create_cm(sim, "default", "a", { v = "1" })
    local inf = assert(mgr:informer("v1/configmaps", {
      transform = function(o)
        o.data = { v = "T" .. o.data.v }
        return o
      end,
    }))
    assert(mgr:start{ timeout = 10 })
    assert.are.equal("T1", inf:get("default/a").data.v)
    update_cm(sim, "default", "a", { v = "2" })
    assert.is_true(eventually(function() return inf:get("default/a").data.v == "T2" end))
  end)

  it("applies a transform closure: its constant and helper are copied to the reflector's state", function()
    create_cm(sim, "default", "a", { v = "1" })
    local PREFIX = "T"
    local function tag(v) return PREFIX .. v .. "!" end
    local inf = assert(mgr:informer("v1/configmaps", {
      transform = function(o)
        o.data = { v = tag(o.data.v) }
        return o
      end,
    }))
    assert(mgr:start{ timeout = 10 })
    assert.are.equal("T1!", inf:get("default/a").data.v)
  end)

  it("gives read-only listers", function()
    create_cm(sim, "default", "a", { v = "1" })
    assert(mgr:informer("v1/configmaps"))
    assert(mgr:start{ timeout = 10 })
    local l = assert(mgr:lister("v1/configmaps"))
    assert.are.equal("1", l:get("default/a").data.v)
    assert.has_error(function() l:add_handler{ on_add = function() end } end)
    local none, msg, code = mgr:lister("v1/secrets")
    assert.is_nil(none)
    assert.are.equal("ENOENT", code)
    assert.matches("v1/secrets", msg, 1, true)
  end)

  quiet.it(it, "reports a handler module that cannot load", {
    "kinformer error %[handler%] listener v1/configmaps #%d+: cannot build its Lua state: "
      .. "module 'no.such.handler.module' not found",
    "kinformer error %[listener%] v1/configmaps: handler on_start failed %(%-22%): listener aborted",
  }, function()
    local inf = assert(mgr:informer("v1/configmaps"))
    local h = inf:add_handler("no.such.handler.module")
    assert(mgr:start{ timeout = 10 })
    assert.is_true(eventually(function() return h:error() ~= nil end))
    assert.matches("no.such.handler.module", h:error(), 1, true)
  end)
end)
