-- Worker states (csrc/lua/worker_state.c, lworker.c): C threads that each
-- own a lua_State and run user code sent by module name or as functions
-- with copies of their upvalues (csrc/lua/worker_copy.c).
local kinformer = require "kinformer"
local core = require "kinformer.core"
local cjson = require "cjson"

local FIXTURES = "spec/fixtures/lua/?.lua;"

local function pod(name, rv, extra)
  return assert(kinformer.object(string.format(
    '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","namespace":"ns","resourceVersion":"%s"}%s}',
    name, rv or "1", extra or "")))
end

-- Runs a Lua script in a fresh interpreter with this process's paths and
-- the log level at info; returns its stdout and stderr (the log).
local function run_lua(code)
  local script, errf = os.tmpname(), os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(string.format("package.path = %q\npackage.cpath = %q\n", package.path, package.cpath), code)
  f:close()
  local p = assert(io.popen("KINFORMER_LOG_LEVEL=2 lua5.4 " .. script .. " 2>" .. errf))
  local out = p:read("a")
  p:close()
  f = assert(io.open(errf))
  local log = f:read("a")
  f:close()
  os.remove(script)
  os.remove(errf)
  return out, log
end

describe("kinformer.core.worker", function()
  local saved_path
  setup(function()
    saved_path = package.path
    package.path = FIXTURES .. package.path
  end)
  teardown(function() package.path = saved_path end)

  describe("code by module name", function()
    it("requires the module in the worker; each state has its own module-level variables", function()
      local a <close> = assert(core.worker("workerfix.counter"))
      local b <close> = assert(core.worker("workerfix.counter"))
      assert.are.equal(1, a:call("incr"))
      assert.are.equal(3, a:call("incr", 2))
      assert.are.equal(1, b:call("incr"))
      assert.are.equal(3, a:call("get"))
      assert.is_nil(package.loaded["workerfix.counter"]) -- never loaded in the main state
    end)

    it("calls a module that returns a function without a name", function()
      local w <close> = assert(core.worker("workerfix.reconcile"))
      assert.are.equal("reconciled ns/a", w:call(nil, { key = "ns/a" }))
      local r, msg, code = w:call("reconcile")
      assert.is_nil(r)
      assert.are.equal("ENOENT", code)
      assert.matches("module 'workerfix.reconcile' is a single function: it has no function 'reconcile'", msg, 1, true)
    end)

    it("needs a name for a table of functions and reports missing ones", function()
      local w <close> = assert(core.worker("workerfix.counter"))
      local r, msg, code = w:call("nope")
      assert.is_nil(r)
      assert.are.equal("ENOENT", code)
      assert.are.equal("module 'workerfix.counter' has no function 'nope'", msg)
      r, msg, code = w:call()
      assert.is_nil(r)
      assert.are.equal("ENOENT", code)
      assert.matches("is a table of functions: name the one to call", msg, 1, true)
    end)

    it("returns nil, msg, ELUA when the module cannot be loaded", function()
      local w, msg, code = core.worker("workerfix.no_such_module")
      assert.is_nil(w)
      assert.are.equal("ELUA", code)
      assert.matches("module 'workerfix.no_such_module' not found", msg, 1, true)
      w, msg, code = core.worker("workerfix.broken")
      assert.is_nil(w)
      assert.are.equal("ELUA", code)
      assert.matches("broken.lua:2: broken module body", msg, 1, true)
      assert.matches("stack traceback:", msg, 1, true)
      assert.matches("load_config", msg, 1, true)
      w, msg, code = core.worker("workerfix.number")
      assert.is_nil(w)
      assert.are.equal("ELUA", code)
      assert.matches("module 'workerfix.number' returned a number", msg, 1, true)
    end)

    it("uses package.path as it was when the worker was made", function()
      local w <close> = assert(core.worker({
        find = function(name) return package.searchpath(name, package.path) end,
      }))
      assert.are.equal("spec/fixtures/lua/workerfix/counter.lua", w:call("find", "workerfix.counter"))
      package.path = saved_path
      local ok, err = pcall(function()
        assert.are.equal("spec/fixtures/lua/workerfix/counter.lua", w:call("find", "workerfix.counter"))
        local later, _, code = core.worker("workerfix.counter")
        assert.is_nil(later)
        assert.are.equal("ELUA", code)
      end)
      package.path = FIXTURES .. saved_path
      assert(ok, err)
    end)
  end)

  describe("functions", function()
    it("sends a function with string.dump; it sees the worker's globals", function()
      local w <close> = assert(core.worker(function(a, b)
        return string.format("%s-%s", a, b), math.max(#a, #b), _G ~= nil
      end))
      local s, n, g = w:call(nil, "x", "yz")
      assert.are.equal("x-yz", s)
      assert.are.equal(2, n)
      assert.is_true(g)
    end)

    it("sends a table of functions, each one by its name", function()
      local w <close> = assert(core.worker({
        double = function(x) return 2 * x end,
        greet = function(who) return "hello " .. who end,
      }))
      assert.are.equal(8, w:call("double", 4))
      assert.are.equal("hello kube", w:call("greet", "kube"))
      local r, msg, code = w:call("triple", 1)
      assert.is_nil(r)
      assert.are.equal("ENOENT", code)
      assert.are.equal("the code has no function 'triple'", msg)
    end)

    it("keeps state in globals of its own state only", function()
      local f = function() counter = (counter or 0) + 1; return counter end -- luacheck: ignore
      local a <close> = assert(core.worker(f))
      local b <close> = assert(core.worker(f))
      assert.are.equal(1, a:call())
      assert.are.equal(2, a:call())
      assert.are.equal(1, b:call())
      assert.is_nil(rawget(_G, "counter"))
    end)

    it("copies upvalues into each state: helpers, constants, tables; changes stay in that state", function()
      local PREFIX, LIMIT, RATIO, ON, NOTHING = "n=", 3, 2.5, true, nil
      local state = { count = 0, seen = {} }
      state.self = state
      local function clamp(n) return math.min(n, LIMIT) end
      local function describe_count() return PREFIX .. clamp(state.count) end
      local f = function()
        state.count = state.count + 1
        state.seen[#state.seen + 1] = state.count
        return describe_count(), #state.seen, math.type(LIMIT), math.type(RATIO), ON, NOTHING == nil,
          state.self == state
      end
      local a <close> = assert(core.worker(f))
      local b <close> = assert(core.worker(f))
      assert.same({ "n=1", 1, "integer", "float", true, true, true }, { a:call() })
      assert.same({ "n=2", 2, "integer", "float", true, true, true }, { a:call() })
      a:call()
      assert.same({ "n=3", 4, "integer", "float", true, true, true }, { a:call() })
      assert.same({ "n=1", 1, "integer", "float", true, true, true }, { b:call() })
      assert.equal(0, state.count) -- the main state's table is untouched
      assert.same({}, state.seen)
    end)

    it("shares an upvalue between the functions of a table, and a table reached twice", function()
      local n = 0
      local box = {}
      local alias = box
      local w <close> = assert(core.worker({
        incr = function() n = n + 1; return n end,
        get = function() return n end,
        put = function(v) box.v = v end,
        take = function() return alias.v end,
      }))
      assert.equal(1, w:call("incr"))
      assert.equal(2, w:call("incr"))
      assert.equal(2, w:call("get"))
      w:call("put", "shared")
      assert.equal("shared", w:call("take"))
      assert.equal(0, n)
    end)

    it("sends modules and their fields by name: the worker's own", function()
      local fmt, str = string.format, string
      local ctx = require "kinformer.ctx"
      local terminal = kinformer.terminal
      local null, array_mt = core.null, core.array_mt
      local list = setmetatable({}, array_mt) -- a copied table with a module's metatable
      local w <close> = assert(core.worker(function()
        return fmt == string.format, str == string, ctx == require "kinformer.ctx",
          terminal == require("kinformer").terminal, null == require("kinformer.core").null,
          kinformer == require "kinformer", getmetatable(list) == require("kinformer.core").array_mt,
          require("kinformer.core").json_encode(list)
      end))
      assert.same({ true, true, true, true, true, true, true, "[]" }, { w:call() })
    end)

    it("sends a kept lazy view of a cached object as the plain table it reads as", function()
      local cm = pod("kept", "7", ',"data":{"a":"1","list":[1,2]}'):view()
      assert.is_true(core.is_view(cm))
      local w <close> = assert(core.worker(function()
        return cm.metadata.name, cm.data.a, #cm.data.list, getmetatable(cm) == nil
      end))
      assert.same({ "kept", "1", 2, true }, { w:call() })
      assert.is_false(core.is_view(cm)) -- decoded in place to be sent
      assert.equal("kept", cm.metadata.name)
    end)

    it("refuses upvalues that cannot be sent, naming every one with its path", function()
      local co = coroutine.create(function() end)
      local holder = { deep = { list = { 1, 2, io.tmpfile() } } }
      local count = 0
      local ok, err = pcall(core.worker, function() count = count + 1; return co, holder end)
      assert.is_false(ok)
      assert.matches("bad argument #1", err, 1, true)
      assert.matches("handler: cannot send to worker threads: upvalue 'co' (a coroutine), " ..
                     "upvalue 'holder' (holder.deep.list[3] is a FILE* userdata); a handler runs in its own " ..
                     "Lua state: ", err, 1, true)
      assert.is_nil(err:find("'count'", 1, true))
    end)

    it("names the handler of a table whose upvalue cannot be sent", function()
      local seen = {}
      local w <close> = assert(core.worker({
        on_add = function(o) return o end,
        on_update = function(_, new) seen[#seen + 1] = new end,
      }))
      local ok, err = pcall(core.worker, {
        on_add = function() return w end,
        on_delete = function() return seen end,
        on_update = function() return coroutine.running() end,
      })
      assert.is_false(ok)
      assert.matches("handler: cannot send to worker threads: on_add's upvalue 'w' (a kinformer.worker userdata); ",
                     err, 1, true)
    end)

    it("binds _ENV, whatever it was, to the worker's globals", function()
      local f = load("local _ENV = { x = 1, string = string }; return function() return x, string.rep('a', 2) end")()
      local w <close> = assert(core.worker(f))
      assert.are.equal("aa", select(2, w:call()))
      assert.is_nil((w:call()))
    end)

    it("refuses C functions, non-functions and other types", function()
      local ok, err = pcall(core.worker, print)
      assert.is_false(ok)
      assert.matches("handler: a C function cannot be sent to a worker thread", err, 1, true)
      ok, err = pcall(core.worker, { on_add = string.len })
      assert.is_false(ok)
      assert.matches("handler on_add: a C function", err, 1, true)
      ok, err = pcall(core.worker, { on_add = 42 })
      assert.is_false(ok)
      assert.matches("handler on_add is a number, not a function", err, 1, true)
      ok, err = pcall(core.worker, { [1] = function() end })
      assert.is_false(ok)
      assert.matches("keys must be function names", err, 1, true)
      assert.has_error(function() core.worker({}) end)
      assert.has_error(function() core.worker(42) end)
      assert.has_error(function() core.worker("") end)
      assert.has_error(function() core.worker(function() end, { memory_limit = 1024 }) end)
      assert.has_error(function() core.worker(function() end, { memory_limit = "big" }) end)
    end)
  end)

  describe("calls", function()
    it("returns a Lua error with its traceback; the worker keeps working", function()
      local w <close> = assert(core.worker("workerfix.counter"))
      assert.are.equal(1, w:call("incr"))
      local r, msg, code = w:call("fail", "kaput")
      assert.is_nil(r)
      assert.are.equal("ELUA", code)
      assert.matches("counter.lua:%d+: kaput", msg)
      assert.matches("stack traceback:", msg, 1, true)
      assert.matches("in upvalue 'deep'", msg, 1, true)
      assert.matches("in function 'workerfix.counter.fail'", msg, 1, true)
      r, msg, code = w:call("fail_table")
      assert.is_nil(r)
      assert.are.equal("ELUA", code)
      assert.matches("(error object is a table value)", msg, 1, true)
      assert.are.equal(2, w:call("incr"))
      local st = w:stats()
      assert.are.equal(4, st.calls)
      assert.are.equal(2, st.errors)
      assert.are.equal(0, st.rebuilds)
    end)

    it("sends arguments and results as JSON, keeping nil positions", function()
      local w <close> = assert(core.worker(function(...)
        return select("#", ...), ...
      end))
      local n, a, b, c, d = w:call(nil, nil, "s", { list = { 1, 2, 3 }, map = { k = true } }, core.null)
      assert.are.equal(4, n)
      assert.is_nil(a)
      assert.are.equal("s", b)
      assert.are.same({ list = { 1, 2, 3 }, map = { k = true } }, c)
      assert.are.equal(core.null, d)
      assert.are.same({ 0 }, { w:call(nil) })
      -- lua-cjson 2.1.0 decodes every number as a float: equal, not identical
      assert.are.equal(3, select(2, w:call(nil, 3)))
    end)

    it("raises for arguments that cannot be encoded, fails for such results", function()
      local w <close> = assert(core.worker(function(kind)
        if kind == "function" then return print end
        return kind
      end))
      assert.has_error(function() w:call(nil, print) end)
      assert.has_error(function() w:call(nil, { f = print }) end)
      assert.has_error(function() w:call(42) end)
      local r, msg, code = w:call(nil, "function")
      assert.is_nil(r)
      assert.are.equal("EINVAL", code)
      assert.matches("result #1 cannot be sent back", msg, 1, true)
      assert.are.equal("ok", w:call(nil, "ok"))
    end)

    it("gives each state its own cjson instance", function()
      local w <close> = assert(core.worker(function(v)
        local user = require "cjson"
        user.encode_max_depth(1) -- the user's module: not the binding's instance
        user.decode_max_depth(1)
        return v, user.encode_max_depth()
      end))
      local nested = { a = { b = { c = "deep" } } }
      local v, depth = w:call(nil, nested)
      assert.are.same(nested, v)
      assert.are.equal(1, depth)
      assert.are.equal('{"a":{"b":1}}', cjson.encode({ a = { b = 1 } })) -- the main state's module is untouched
      local saved = cjson.encode_max_depth()
      cjson.encode_max_depth(1)
      local ok, again = pcall(w.call, w, nil, nested)
      cjson.encode_max_depth(saved)
      assert(ok, again)
      assert.are.same(nested, again)
    end)

    it("can require kinformer inside a worker", function()
      local w <close> = assert(core.worker(function(json)
        local k = require "kinformer"
        local o = assert(k.object(json))
        return k._VERSION, o:key(), o:decode().metadata.name
      end))
      local version, key, name = w:call(nil, '{"metadata":{"name":"x","namespace":"n"}}')
      assert.are.equal(kinformer._VERSION, version)
      assert.are.equal("n/x", key)
      assert.are.equal("x", name)
    end)

    it("closes: joins the thread, then calls raise; close is idempotent", function()
      local w = assert(core.worker(function() return 1 end))
      assert.matches("^kinformer.worker worker %(functions%)$", tostring(w))
      w:close()
      w:close()
      assert.are.equal("kinformer.worker (closed)", tostring(w))
      assert.has_error(function() w:call() end, "calling 'call' on bad self (worker is closed)")
      do
        local scoped <close> = assert(core.worker("workerfix.counter", { name = "scoped" }))
        assert.matches("kinformer.worker scoped (workerfix.counter)", tostring(scoped), 1, true)
      end
      for _ = 1, 5 do core.worker(function() end) end -- left to __gc
      collectgarbage()
      collectgarbage()
    end)
  end)

  describe("objects", function()
    it("arrive as fresh tables: mutating one cannot touch the cache", function()
      local w <close> = assert(core.worker(function(obj)
        local before = obj.metadata.name
        obj.metadata.name = "changed"
        obj.data = nil
        return before, obj.metadata.name
      end))
      local o = pod("web", "7", ',"data":{"k":"v"}')
      assert.are.same({ "web", "changed" }, { w:call(nil, o) })
      assert.are.same({ "web", "changed" }, { w:call(nil, o) }) -- decoded afresh each time
      assert.are.equal("web", o:name())
      assert.are.equal("web", o:decode().metadata.name)
      assert.are.same({ k = "v" }, o:decode().data)
    end)

    it("arrive as tombstones {key, object, final_state_unknown}", function()
      local w <close> = assert(core.worker(function(t) return t end))
      local t = w:call(nil, kinformer.tombstone("ns/gone", pod("gone", "9")))
      assert.are.equal("ns/gone", t.key)
      assert.is_true(t.final_state_unknown)
      assert.are.equal("9", t.object.metadata.resourceVersion)
      t = w:call(nil, kinformer.tombstone("ns/gone"))
      assert.are.same({ key = "ns/gone", final_state_unknown = true }, t)
    end)

    it("come back as objects when a worker returns one", function()
      local w <close> = assert(core.worker(function(json)
        return require("kinformer").object(json)
      end))
      local o = w:call(nil, '{"metadata":{"name":"back","namespace":"ns"}}')
      assert.are.equal("ns/back", o:key())
      local closed = pod("x")
      closed:close()
      assert.has_error(function() w:call(nil, closed) end)
    end)
  end)

  describe("dispatch (as a listener delivers events)", function()
    it("calls on_add/on_update/on_delete with fresh tables", function()
      local w <close> = assert(core.worker("workerfix.handlers"))
      local a1, a2 = pod("a", "1"), pod("a", "2")
      assert.is_true(w:dispatch("on_add", "ns/a", a1))
      assert.is_true(w:dispatch("on_update", "ns/a", a1, a2))
      assert.is_true(w:dispatch("on_delete", "ns/a", a2))
      assert.is_true(w:dispatch("on_delete", "ns/b", kinformer.tombstone("ns/b")))
      assert.are.same({ "add a", "update 1->2", "delete a", "delete unknown ns/b last=none" }, w:call("seen"))
      assert.are.equal("a", a1:name())
      local r, msg, code = w:dispatch("on_sync", "ns/a", a1)
      assert.is_nil(r)
      assert.are.equal("ENOENT", code)
      assert.matches("has no function 'on_sync'", msg, 1, true)
      assert.has_error(function() w:dispatch("on_add", "ns/a", { metadata = {} }) end)
    end)

    it("logs a handler error with the key and the handler name and goes on", function()
      local out, log = run_lua([[
        package.path = "spec/fixtures/lua/?.lua;" .. package.path
        local k = require "kinformer"
        local w = assert(k.core.worker("workerfix.handlers", { name = "cm-listener" }))
        local old = k.object('{"metadata":{"name":"a","namespace":"ns","resourceVersion":"1"}}')
        local bad = k.object('{"metadata":{"name":"a","namespace":"ns","resourceVersion":"2"},"data":{"explode":"1"}}')
        local good = k.object('{"metadata":{"name":"a","namespace":"ns","resourceVersion":"3"}}')
        local r, msg, code = w:dispatch("on_update", "ns/a", old, bad)
        print(r, code, msg:match("cannot handle a\nstack traceback:") ~= nil)
        print(w:dispatch("on_update", "ns/a", old, good))
        print(table.concat(w:call("seen"), ","))
      ]])
      local lines = {}
      for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
      assert.are.equal("nil\tELUA\ttrue", lines[#lines - 2])
      assert.are.equal("true", lines[#lines - 1])
      assert.are.equal("update 1->3", lines[#lines])
      assert.matches("kinformer error [worker] cm-listener: handler on_update for ns/a failed: ", log, 1, true)
      assert.matches("handlers.lua:%d+: cannot handle a\nstack traceback:", log)
    end)
  end)

  describe("memory limit", function()
    it("rebuilds a state that runs out of memory, reloads the code and logs it", function()
      local out, log = run_lua([[
        package.path = "spec/fixtures/lua/?.lua;" .. package.path
        local core = require "kinformer.core"
        local function show(...) -- integral floats (lua-cjson 2.1.0) printed as integers
          local t = table.pack(...)
          for i = 1, t.n do t[i] = tostring(math.type(t[i]) == "float" and math.tointeger(t[i]) or t[i]) end
          print(table.concat(t, "\t", 1, t.n))
        end
        local w = assert(core.worker("workerfix.counter", { memory_limit = 4 * 1024 * 1024, name = "hungry" }))
        package.path = "" -- the rebuild uses the path captured at creation
        show(w:call("incr"), w:call("incr"))
        show(w:call("hog"))
        local st = w:stats()
        show(st.rebuilds, st.errors, st.memory < 4 * 1024 * 1024)
        show(w:call("incr"))
        show(w:call("hog_caught"))
        show(w:stats().rebuilds, w:call("get"))
        w:close()
      ]])
      assert.are.same({
        "1\t2",
        "nil\tnot enough memory (memory_limit 4194304 bytes); the worker's Lua state was rebuilt\tENOMEM",
        "1\t1\ttrue",
        "1", -- module-level state started over
        "false\tnot enough memory",
        "2\t0",
      }, (function()
        local t = {}
        for l in out:gmatch("[^\n]+") do t[#t + 1] = l end
        return t
      end)())
      local _, n = log:gsub("kinformer warn %[worker%] hungry: the Lua state ran out of memory %(limit 4194304 bytes%); " ..
                            "closed the Lua state and built a new one %(module%-level state starts over%)", "")
      assert.are.equal(2, n)
    end)
  end)
end)
