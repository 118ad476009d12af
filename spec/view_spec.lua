-- Lazy views of cached objects (csrc/lua/lview.c): what handlers, listers
-- and map functions get. A view decodes a member on its first read only,
-- and must otherwise behave as the table ljson decodes.
local kinformer = require "kinformer"
local core = require "kinformer.core"

local fixture = require("support.proc").fixture

local function view(json) return assert(core.object(json)):view() end

-- every seed of the kin_obj fuzz corpus that parses as an object
local function corpus()
  local out = {}
  local p = io.popen("ls spec/fuzz/corpus/kobj/ 2>/dev/null")
  for name in p:lines() do
    local f = io.open("spec/fuzz/corpus/kobj/" .. name, "rb")
    local s = f:read("a")
    f:close()
    if core.object(s) then out[#out + 1] = { name = name, json = s } end
  end
  p:close()
  out[#out + 1] = { name = "pod.json", json = fixture("pod.json") }
  out[#out + 1] = { name = "configmap.json", json = fixture("configmap.json") }
  return out
end

-- deep equality that reads b through its metamethods (b may be a view)
local function same(a, b, path)
  path = path or "$"
  if type(a) ~= "table" then
    assert(a == b or (a ~= a and b ~= b), path .. ": " .. tostring(a) .. " ~= " .. tostring(b))
    assert(math.type(a) == math.type(b), path .. ": number subtype differs")
    return
  end
  assert(type(b) == "table", path .. ": not a table")
  for k, v in pairs(a) do same(v, b[k], path .. "." .. tostring(k)) end
  local n = 0
  for _ in pairs(b) do n = n + 1 end
  local m = 0
  for _ in pairs(a) do m = m + 1 end
  assert(n == m, path .. ": " .. n .. " members, want " .. m)
  assert((getmetatable(a) == core.array_mt) == (getmetatable(b) == core.array_mt), path .. ": array mark")
end

describe("lazy views", function()
  local POD = fixture("pod.json")

  it("are tables that decode only what is read", function()
    local v = view(POD)
    assert.are.equal("table", type(v))
    assert.is_true(core.is_view(v))
    assert.is_nil(next(v)) -- nothing decoded yet
    assert.are.equal("web-7d4b9c8f6d-x2k9p", v.metadata.name)
    assert.is_table(rawget(v, "metadata"))
    assert.is_nil(rawget(v, "spec"))
    assert.is_nil(rawget(v, "status"))
    assert.is_nil(rawget(v, "apiVersion"))
    assert.is_nil(rawget(v.metadata, "labels"))
    assert.is_nil(rawget(v.metadata, "namespace"))
    assert.are.equal("web-7d4b9c8f6d-x2k9p", rawget(v.metadata, "name"))
    assert.is_true(core.is_view(v.metadata))
    assert.is_nil(v.nope)
    assert.is_nil(v[1])
  end)

  it("decode each member as the decoder does: integers, floats, escapes, unicode, null", function()
    local json = '{"metadata":{"name":"x"},"i":3,"neg":-7,"f":0.5,"e":1e3,"big":9223372036854775808,"min":-9223372036854775808,'
      .. '"t":true,"no":false,"nul":null,"s":"plain","esc":"\\u00e9\\ud83d\\ude00\\n\\"\\\\\\/",'
      .. '"lone":"\\ud800x","zero":"a\\u0000b","raw":"h\u{e9}llo \u{1f600}","k\\u00e9y":1,"":"empty",'
      .. '"o":{},"a":[],"nested":[[1,[2,{"x":[{"y":null}]}]],{"z":"q"}]}'
    local v, d = view(json), core.json_decode(json)
    for _, k in ipairs { "i", "neg", "f", "e", "big", "min", "t", "no", "s", "esc", "lone", "zero", "raw", "" } do
      assert.are.equal(d[k], v[k], k)
      assert.are.equal(math.type(d[k]), math.type(v[k]), k)
    end
    assert.are.equal(core.null, v.nul)
    assert.are.equal(1, v["k\u{e9}y"])
    assert.are.equal("\u{e9}\u{1f600}\n\"\\/", v.esc)
    assert.are.equal("\u{fffd}x", v.lone)
    same(d, view(json))
    assert.are.equal(core.array_mt, getmetatable(v.a))
    assert.are.equal(0, #v.a)
    assert.is_true(core.is_view(v.nested[2]))
    assert.are.equal("q", v.nested[2].z)
    assert.is_false(core.is_view(v.nested[2])) -- every member read: a plain table now
    assert.are.equal(core.null, v.nested[1][2][2].x[1].y)
  end)

  it("index arrays with # and ipairs, arrays of objects as views", function()
    local v = view(POD)
    local cs = v.spec.containers
    assert.are.equal(core.array_mt, getmetatable(cs))
    assert.is_true(#cs >= 1)
    local n = 0
    for i, c in ipairs(cs) do
      n = i
      assert.is_string(c.name)
    end
    assert.are.equal(#cs, n)
    assert.are.equal(#core.json_decode(POD).spec.containers, #cs)
    table.insert(cs, { name = "extra" })
    assert.are.equal("extra", cs[#cs].name)
    local views = view(POD)
    assert.are.equal(0, #views) -- an object has no length
    local k = 0
    for _ in ipairs(views) do k = k + 1 end
    assert.are.equal(0, k)
  end)

  it("iterate with pairs over every member, then are plain tables", function()
    local d = core.json_decode(POD)
    local v = view(POD)
    assert.is_string(v.metadata.name) -- some read before
    local keys, want = {}, {}
    for k in pairs(v) do keys[#keys + 1] = k end
    for k in pairs(d) do want[#want + 1] = k end
    table.sort(keys)
    table.sort(want)
    assert.are.same(want, keys)
    assert.is_false(core.is_view(v))
    assert.is_nil(getmetatable(v))
    assert.is_not_nil(next(v))
    assert.is_true(core.is_view(v.spec)) -- members stay lazy
    same(d, v)
  end)

  it("keep changes in the one table: the cache and other views do not see them", function()
    local o = assert(core.object(POD))
    local a, b = o:view(), o:view()
    a.metadata.labels.x = "y"
    a.metadata.labels.app = nil -- read before? no: deleted unread
    a.metadata.name = "changed"
    a.spec = nil
    a.status.phase = "Gone"
    a.metadata.annotations = { only = "this" }
    assert.are.equal("y", a.metadata.labels.x)
    assert.is_nil(a.metadata.labels.app)
    assert.is_nil(a.spec)
    assert.are.equal("changed", a.metadata.name)
    -- deleted after a read, the member stays deleted
    local tier = a.metadata.labels.tier
    assert.is_string(tier)
    a.metadata.labels.tier = nil
    assert.is_nil(a.metadata.labels.tier)
    local enc = core.json_decode(assert(core.json_encode(a)))
    assert.is_nil(enc.spec)
    assert.is_nil(enc.metadata.labels.app)
    assert.is_nil(enc.metadata.labels.tier)
    assert.are.equal("y", enc.metadata.labels.x)
    assert.are.same({ only = "this" }, enc.metadata.annotations)
    assert.are.equal("Gone", enc.status.phase)
    -- the other view and the object are untouched
    same(core.json_decode(POD), b)
    assert.are.equal("web-7d4b9c8f6d-x2k9p", o:name())
    same(core.json_decode(POD), o:view())
  end)

  it("encode to what the full decode encodes, for a corpus of objects", function()
    local objs = corpus()
    assert.is_true(#objs >= 10)
    for _, c in ipairs(objs) do
      local d = core.json_decode(c.json)
      local want = core.json_decode(assert(core.json_encode(d)))
      -- untouched, partly read, and iterated views
      local v1 = view(c.json)
      local v2 = view(c.json)
      local _ = v2.metadata and v2.metadata.name
      local v3 = view(c.json)
      for _ in pairs(v3) do end
      for i, v in ipairs { v1, v2, v3 } do
        local got = core.json_decode(assert(core.json_encode(v)))
        local ok, err = pcall(same, want, got)
        assert(ok, c.name .. " view " .. i .. ": " .. tostring(err))
      end
      local ok, err = pcall(same, d, view(c.json))
      assert(ok, c.name .. ": " .. tostring(err))
    end
  end)

  it("take the last of duplicate members, as the decoder does", function()
    local json = '{"metadata":{"name":"x"},"a":1,"b":{"x":1},"a":2,"b":{"y":2},"c":3}'
    local d = core.json_decode(json)
    local v = view(json)
    assert.are.equal(d.a, v.a)
    assert.are.same(d.b, core.materialize(v.b))
    local w = view(json)
    w.a = nil -- deleting removes every duplicate
    for k in pairs(w) do assert.are_not.equal("a", k) end
    same(d, view(json))
    same(d, core.json_decode(assert(core.json_encode(view(json)))))
  end)

  it("materialize deeply into plain tables (the escape hatch)", function()
    local v = view(POD)
    local m = v.metadata
    assert.are.equal(v, core.materialize(v))
    assert.is_false(core.is_view(v))
    assert.is_false(core.is_view(m))
    assert.is_false(core.is_view(v.spec))
    assert.is_false(core.is_view(v.spec.containers[1]))
    assert.are.same(core.json_decode(POD), v)
    assert.are.equal(kinformer.plain, core.materialize)
    assert.are.equal(3, core.materialize(3))
  end)

  it("outlive the object handle", function()
    local o = assert(core.object(POD))
    local v = o:view()
    local spec = v.spec
    o:close()
    o = nil -- luacheck: ignore
    v = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    assert.is_string(spec.containers[1].name)
  end)

  it("render and copy like decoded objects (dump, pretty, diff copies)", function()
    local d, v = core.json_decode(POD), view(POD)
    assert.are.equal(kinformer.dump(d), kinformer.dump(v))
    local pretty = require "kinformer.cmd.pretty"
    assert.are.equal(pretty.yaml(core.json_decode(POD)), pretty.yaml(view(POD)))
    assert.are.equal(pretty.pretty(core.json_decode(POD)), pretty.pretty(view(POD)))
    -- inside other tables too, and a view prints as a table
    assert.are.equal(pretty.pretty({ items = { core.json_decode(POD) } }), pretty.pretty({ items = { view(POD) } }))
    assert.matches("^table: ", tostring(view(POD)))
    assert.are.equal("table", pretty.type_name(view(POD)))
    local yamlish = require "kinformer.yamlish"
    assert.are.equal(yamlish.render(core.json_decode(POD)), yamlish.render(view(POD)))
  end)

  it("give a tombstone's last state as a view", function()
    local o = assert(core.object(POD))
    local t = core.tombstone("shop/web-7d4b9c8f6d-x2k9p", o)
    assert.are.equal("web-7d4b9c8f6d-x2k9p", t:last_state():view().metadata.name)
  end)
end)

describe("handlers and listers", function()
  local simmod = require "kinformer.sim"
  local http = require "support.sim_http"
  local sim, mgr

  before_each(function()
    sim = assert(simmod.start{})
    mgr = assert(kinformer.manager{ sim = sim })
  end)

  after_each(function()
    mgr:stop()
    sim:stop()
  end)

  it("give each handler its own view of the same object", function()
    local _, code = http(sim, "POST", "/api/v1/namespaces/default/configmaps",
      { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "a", labels = { app = "x" } },
        data = { v = "1", ["s\"q"] = "\u{e9}" } })
    assert.are.equal(201, code)
    local inf = assert(mgr:informer("v1/configmaps"))
    local seen = {}
    -- two handler sets of the main state: the first mutates what it got
    inf:add_handler({ on_add = function(o)
      assert(core.is_view(o))
      o.metadata.labels.app = "mutated"
      o.data = nil
      seen[#seen + 1] = "m"
    end }, { main = true })
    inf:add_handler({ on_add = function(o)
      seen[#seen + 1] = o.metadata.labels.app .. " " .. o.data.v .. " " .. o.data["s\"q"]
    end }, { main = true })
    assert(mgr:start{ timeout = 10 })
    assert.is_true(mgr:wait_for(function() return #seen == 2 end, 20))
    table.sort(seen)
    assert.are.same({ "m", "x 1 \u{e9}" }, seen)
    -- the lister's objects are views too, and the cache kept its own
    local o = inf:get("default/a")
    assert.is_true(core.is_view(o))
    assert.are.equal("x", o.metadata.labels.app)
    assert.are.equal("1", o.data.v)
    -- a view goes back to the server as it is
    o.metadata.labels.app = "y"
    local upd = assert(mgr.client:update(o))
    assert.are.equal("y", upd.metadata.labels.app)
    assert.are.equal("\u{e9}", upd.data["s\"q"])
  end)
end)
