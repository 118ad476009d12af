-- kinformer.webhook_patch: the RFC 6902 diff a mutating webhook answers
-- with, checked by applying it back (the patch must turn the original into
-- the result exactly) and by its exact operations where they are chosen.
local core = require "kinformer.core"
local P = require "kinformer.webhook_patch"

local function decode(s) return core.json_decode(s) end

-- diff, apply, and compare through JSON (the encoder's view of the value)
local function roundtrip(a_json, b_json)
  local a, b = decode(a_json), decode(b_json)
  local ops = P.diff(a, b)
  local got = assert(P.apply(a, ops))
  assert.is_true(P.equal(got, b), core.json_encode(ops))
  return ops
end

describe("kinformer.webhook_patch", function()
  it("gives no operation for equal values", function()
    assert.are.same({}, P.diff(decode('{"a":{"b":[1,2,{"c":null}]}}'), decode('{"a":{"b":[1,2,{"c":null}]}}')))
    assert.are.same({}, P.diff(decode('{"n":1}'), { n = 1.0 }))
  end)

  it("adds, removes and replaces members, keys in sorted order", function()
    local ops = roundtrip('{"spec":{"replicas":1,"old":true},"z":1}', '{"spec":{"replicas":3,"image":"x"},"z":1}')
    assert.are.same({
      { op = "remove", path = "/spec/old" },
      { op = "add", path = "/spec/image", value = "x" },
      { op = "replace", path = "/spec/replicas", value = 3 },
    }, ops)
  end)

  it("escapes ~ and / in member names (RFC 6901)", function()
    local ops = roundtrip('{"metadata":{"labels":{}}}', '{"metadata":{"labels":{"app.kubernetes.io/name":"w","a~b":"c"}}}')
    local paths = {}
    for _, o in ipairs(ops) do paths[#paths + 1] = o.path end
    assert.are.same({ "/metadata/labels/app.kubernetes.io~1name", "/metadata/labels/a~0b" }, paths) -- "p" < "~"
    assert.are.equal("/a~1b/c~0d/0", P.pointer({ "a/b", "c~d", 0 }))
  end)

  it("compares arrays of the same length element by element", function()
    local ops = roundtrip('{"c":[{"name":"a","image":"1"},{"name":"b","image":"2"}]}',
      '{"c":[{"name":"a","image":"1"},{"name":"b","image":"3"}]}')
    assert.are.same({ { op = "replace", path = "/c/1/image", value = "3" } }, ops)
  end)

  it("replaces an array whose length changed, whole", function()
    local ops = roundtrip('{"a":[1,2,3]}', '{"a":[1,3]}')
    assert.are.equal(1, #ops)
    assert.are.equal("replace", ops[1].op)
    assert.are.equal("/a", ops[1].path)
    roundtrip('{"a":[1]}', '{"a":[1,2,3]}')
    roundtrip('{"a":[1]}', '{"a":[]}')
    roundtrip('{"a":[]}', '{"a":[{"x":1}]}')
  end)

  it("tells {} from [] and keeps an emptied array an array", function()
    local a = decode('{"a":[1],"o":{"k":1}}')
    local b = decode('{"a":[1],"o":{"k":1}}')
    table.remove(b.a, 1)
    b.o.k = nil
    local ops = P.diff(a, b)
    assert.are.same({ { op = "replace", path = "/a", value = {} }, { op = "remove", path = "/o/k" } }, ops)
    assert.are.equal("[]", core.json_encode(ops[1].value)) -- still an array
    roundtrip('{"x":{}}', '{"x":[]}')
    roundtrip('{"x":[]}', '{"x":{}}')
  end)

  it("replaces on a type change and with null", function()
    assert.are.same({ { op = "replace", path = "/a", value = "1" } }, roundtrip('{"a":1}', '{"a":"1"}'))
    roundtrip('{"a":{"b":1}}', '{"a":null}')
    roundtrip('{"a":null}', '{"a":{"b":1}}')
    roundtrip('{"a":[1,2]}', '{"a":{"0":1}}')
  end)

  it("replaces the root when it is not an object on both sides", function()
    assert.are.same({ { op = "replace", path = "", value = 2 } }, P.diff(1, 2))
    roundtrip('[1,2]', '{"a":1}')
  end)

  it("handles deep nesting and many members", function()
    local a, b = { metadata = { labels = {} } }, { metadata = { labels = {} } }
    for i = 1, 50 do
      a.metadata.labels["k" .. i] = tostring(i)
      b.metadata.labels["k" .. i] = tostring(i % 3 == 0 and -i or i)
    end
    b.metadata.labels.k7 = nil
    b.metadata.labels.new = "n"
    local ops = P.diff(a, b)
    local got = assert(P.apply(a, ops))
    assert.is_true(P.equal(got, b))
    assert.are.equal(18, #ops) -- 16 replaced (3, 6, ... 48), 1 removed, 1 added
  end)

  it("apply refuses operations that do not apply", function()
    assert.is_nil((P.apply({ a = 1 }, { { op = "replace", path = "/b", value = 1 } })))
    assert.is_nil((P.apply({ a = 1 }, { { op = "remove", path = "/b" } })))
    assert.is_nil((P.apply({ a = 1 }, { { op = "move", path = "/a" } })))
  end)
end)
