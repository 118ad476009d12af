-- The binding's JSON codec as Lua sees it (csrc/lua/ljson.c):
-- core.json_decode / core.json_encode, the array mark, and objects decoded
-- with integers as Lua integers.
local kinformer = require "kinformer"
local core = require "kinformer.core"
local cjson = require "cjson"

local fixture = require("support.proc").fixture

describe("core.json_decode", function()
  it("gives integers as Lua integers and other numbers as floats", function()
    local v = assert(core.json_decode('{"replicas":3,"ratio":0.5,"big":1e3,"neg":-7}'))
    assert.are.equal("integer", math.type(v.replicas))
    assert.are.equal("cm3", "cm" .. v.replicas)
    assert.are.equal("3", tostring(v.replicas))
    assert.are.equal("float", math.type(v.ratio))
    assert.are.equal("float", math.type(v.big))
    assert.are.equal(-7, v.neg)
    assert.are.equal(math.maxinteger, core.json_decode("9223372036854775807"))
    assert.are.equal(math.mininteger, core.json_decode("-9223372036854775808"))
    assert.are.equal("float", math.type(core.json_decode("9223372036854775808")))
  end)

  it("decodes null as cjson.null and strings with escapes", function()
    local v = assert(core.json_decode('{"a":null,"s":"\\u00e9\\ud83d\\ude00\\n"}'))
    assert.are.equal(cjson.null, v.a)
    assert.are.equal(cjson.null, core.null)
    assert.are.equal("\u{e9}\u{1f600}\n", v.s)
  end)

  it("returns nil, message, EINVAL for malformed JSON", function()
    for _, bad in ipairs({ "", "{", "[1,]", "{\"a\":1} x", "<html>502 Bad Gateway</html>",
                           string.rep("[", 600) .. string.rep("]", 600) }) do
      local v, msg, code = core.json_decode(bad)
      assert.is_nil(v)
      assert.are.equal("EINVAL", code)
      assert.matches("invalid JSON at offset", msg, 1, true)
    end
  end)

  -- One decoder for JSON strings (csrc/core/json/json_str.c): Go's rule, a lone
  -- UTF-16 surrogate becomes U+FFFD, the same in Lua tables and in the C
  -- object's fields.
  it("decodes lone surrogates to U+FFFD, like the C object's fields", function()
    local r = "\u{FFFD}"
    assert.are.equal(r, core.json_decode('"\\ud800"'))
    assert.are.equal(r, core.json_decode('"\\udc00"'))
    assert.are.equal("a" .. r .. "A", core.json_decode('"a\\ud800\\u0041"'))
    assert.are.equal(r .. "\u{10FFFF}", core.json_decode('"\\udfff\\udbff\\udfff"'))
    local js = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a\\ud800b",'
      .. '"namespace":"n","labels":{"k":"\\udc00"}}}'
    local o = assert(core.object(js))
    local t = assert(core.json_decode(js))
    assert.are.equal("a" .. r .. "b", o:name())
    assert.are.equal(o:name(), t.metadata.name)
    assert.are.equal(o:label("k"), t.metadata.labels.k)
    assert.are.equal(o:name(), o:decode().metadata.name)
  end)

  it("keeps \\u0000 as a 0 byte and rejects bad escapes", function()
    assert.are.equal("a\0b", core.json_decode('"a\\u0000b"'))
    for _, bad in ipairs({ '"\\u12"', '"\\u12G4"', '"\\x"', '"\\ud800\\u12"', '"ab\\' }) do
      local v, msg, code = core.json_decode(bad)
      assert.is_nil(v)
      assert.are.equal("EINVAL", code)
      assert.matches("invalid JSON at offset", msg, 1, true)
    end
    local _, msg = core.json_decode('"ab\\u12"')
    assert.matches("invalid \\u escape", msg, 1, true)
    -- the reason and offset come from the core's one string rule (json_str.c)
    for _, case in ipairs({
      { '["ab', "offset 1 ('\"'): unterminated string" },
      { '"ab\\', "offset 0 ('\"'): unterminated string" },
      { '"a\nb"', "offset 2: control character in string" },
      { '{"k":"a\\qb"}', "offset 7 ('\\'): invalid escape in string" },
    }) do
      local v, m = core.json_decode(case[1])
      assert.is_nil(v)
      assert.matches(case[2], m, 1, true)
    end
  end)
end)

describe("core.json_encode", function()
  it("keeps integers exact and floats round-tripping", function()
    assert.are.equal("9223372036854775807", core.json_encode(math.maxinteger))
    assert.are.equal("0.1", core.json_encode(0.1))
    assert.are.equal(1 / 3, core.json_decode(core.json_encode(1 / 3)))
    assert.are.equal("3", core.json_encode(3.0))
  end)

  it("encodes arrays as arrays, even empty ones", function()
    assert.are.equal("[1,2,3]", core.json_encode({ 1, 2, 3 }))
    assert.are.equal("{}", core.json_encode({}))
    assert.are.equal("[]", core.json_encode(core.empty_array()))
    assert.are.equal("[]", core.json_encode(setmetatable({}, core.array_mt)))
    assert.are.equal('{"finalizers":[]}', core.json_encode(core.json_decode('{"finalizers":[]}')))
    local v = core.json_decode('{"finalizers":["a"]}')
    table.remove(v.finalizers, 1)
    assert.are.equal('{"finalizers":[]}', core.json_encode(v))
    assert.are.equal('{"a":null}', core.json_encode({ a = cjson.null }))
  end)

  it("returns nil, message naming the place, EINVAL for what JSON cannot hold", function()
    local cyc = {}
    cyc.self = { cyc }
    for _, case in ipairs({
      { { spec = { 1, x = 2 } }, "cannot encode table with mixed keys at $.spec" },
      { { a = { b = 0 / 0 } }, "cannot encode nan at $.a.b" },
      { { 1, math.huge }, "cannot encode inf at $[2]" },
      { { f = print }, "cannot encode a function at $.f" },
      { cyc, "cannot encode a table that contains itself at $.self[1]" },
    }) do
      local s, msg, code = core.json_encode(case[1])
      assert.is_nil(s)
      assert.are.equal(case[2], msg)
      assert.are.equal("EINVAL", code)
    end
  end)

  it("round-trips a Pod", function()
    local a = assert(core.json_decode(fixture("pod.json")))
    local b = assert(core.json_decode(assert(core.json_encode(a))))
    assert.are.same(a, b)
    assert.are.equal("integer", math.type(b.spec.containers[1].ports[1].containerPort))
  end)
end)

describe("kinformer.object(json):decode()", function()
  it("gives integers", function()
    local o = assert(kinformer.object(fixture("pod.json")))
    local t = o:decode()
    assert.are.equal("integer", math.type(t.metadata.generation))
    assert.are.equal("integer", math.type(t.spec.terminationGracePeriodSeconds))
    assert.are.equal("30", tostring(t.spec.terminationGracePeriodSeconds))
    assert.are.equal(8080, t.spec.containers[1].ports[1].containerPort)
    assert.are.equal("integer", math.type(t.spec.containers[1].ports[1].containerPort))
  end)

  it("keeps empty lists as arrays", function()
    local o = assert(kinformer.object('{"metadata":{"name":"a","namespace":"n","finalizers":[]},"spec":{"replicas":3}}'))
    local t = o:decode()
    assert.are.equal(3, t.spec.replicas)
    assert.are.equal("integer", math.type(t.spec.replicas))
    assert.matches('"finalizers":[]', core.json_encode(t), 1, true)
  end)
end)

describe("kinformer.dump", function()
  it("renders objects as indented JSON with sorted keys and keeps arrays", function()
    local s = kinformer.dump({ metadata = { name = "a", finalizers = kinformer.core.empty_array() }, b = { 1, 2.5 } })
    assert.are.equal('{\n  "b": [\n    1,\n    2.5\n  ],\n  "metadata": {\n    "finalizers": [],\n    "name": "a"\n  }\n}', s)
  end)
  it("reports values it cannot encode", function()
    local s, msg, code = kinformer.dump({ 1, x = 2 })
    assert.is_nil(s)
    assert.are.equal("EINVAL", code)
    assert.is_string(msg)
  end)
end)
