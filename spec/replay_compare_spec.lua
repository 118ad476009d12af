-- kinformer replay TRACE OLD --compare NEW (kinformer.replay_compare):
-- one trace replayed through two versions of an operator, the difference
-- of their writes per object, exit 2 when they differ and 0 when not.
local core = require "kinformer.core"
local cmp = require "kinformer.replay_compare"
local proc = require "support.proc"

local V1 = "spec/fixtures/replay/shadow_v1.lua"
local V2 = "spec/fixtures/replay/shadow_v2.lua"

-- A trace: ConfigMap one (labelled) listed, two added, one changed,
-- plain (unlabelled) added. Returns its path.
local function trace()
  local function cm(name, labelled, data, rv)
    return { apiVersion = "v1", kind = "ConfigMap", data = data,
             metadata = { name = name, namespace = "default", uid = "uid-" .. name, resourceVersion = rv,
                          creationTimestamp = "2026-01-01T00:00:00Z",
                          labels = labelled and { shadow = "true" } or nil } }
  end
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  for _, l in ipairs{
    { kind = "KinformerTrace", version = 1, resources = { "v1/configmaps" }, namespace = "default" },
    { type = "LIST", resource = "v1/configmaps", offsetMs = 0, items = { cm("one", true, { a = "1" }, "100") } },
    { type = "ADDED", resource = "v1/configmaps", offsetMs = 1000, object = cm("two", true, { b = "2" }, "110") },
    { type = "MODIFIED", resource = "v1/configmaps", offsetMs = 2000, object = cm("one", true, { a = "3" }, "120") },
    { type = "ADDED", resource = "v1/configmaps", offsetMs = 3000, object = cm("plain", false, { c = "4" }, "130") },
  } do f:write(core.json_encode(l), "\n") end
  f:close()
  return path
end

describe("kinformer replay --compare", function()
  local path
  setup(function() path = trace() end)
  teardown(function() os.remove(path) end)

  it("diffs the writes of two versions per object", function()
    local r = cmp.compare{ trace = path, old = V1, new = V2 }
    -- both write the copies of one (twice: a=1 then a=3) and two, nothing for plain
    local keys = {}
    for _, o in ipairs(r.objects) do keys[#keys + 1] = o.key end
    assert.same({ "v1/configmaps default/one-copy", "v1/configmaps default/two-copy" }, keys)
    local d = r.objects[1].diff
    assert.matches("^%-%-%- " .. V1:gsub("%p", "%%%0") .. " v1/configmaps default/one%-copy\n", d)
    assert.matches("\n%+%+%+ " .. V2:gsub("%p", "%%%0") .. " v1/configmaps default/one%-copy\n", d)
    -- the label is the change (and with it ctx:ensure's hash of what it
    -- applies), in each of the copy's two writes
    local labels, changed = 0, {}
    for l in d:gmatch("[^\n]+") do
      if l:match("^[%+%-] ") then
        if l:match("^%+%s+version: \"2\"$") then labels = labels + 1
        elseif not l:match("^%+%s+labels:$") then changed[#changed + 1] = l end
      end
    end
    assert.equal(2, labels, d)
    for _, l in ipairs(changed) do assert.matches("^[%+%-]%s+kinformer%.io/applied: %x+$", l) end
    assert.equal(4, #changed, d)
    assert.equal(r.diff, r.objects[1].diff .. r.objects[2].diff)
  end)

  it("finds nothing between a version and itself", function()
    local r = cmp.compare{ trace = path, old = V1, new = V1 }
    assert.equal("", r.diff)
    assert.same({}, r.objects)
    assert.truthy(#r.old > 0)
  end)

  it("shows an object only one version writes against nothing", function()
    local d = cmp.diff({}, { { verb = "create", resource = "v1/configmaps", namespace = "ns", name = "x",
                               body = { data = { k = "v" } } } }, { old = "a", new = "b" })
    assert.equal("--- a v1/configmaps ns/x\n+++ b v1/configmaps ns/x\n@@ -0,0 +1,3 @@\n+create\n+  data:\n+    k: v\n",
      d.diff)
  end)

  it("kinformer replay --compare exits 2 with the diff, 0 when the same, 1 on a failure", function()
    local out, rc = proc.run("bin/kinformer replay -q " .. path .. " " .. V1 .. " --compare " .. V2 .. " 2>/dev/null")
    assert.equal(2, rc, out)
    assert.matches("%+%+%+ " .. V2:gsub("%p", "%%%0") .. " v1/configmaps default/one%-copy", out)
    assert.matches('\n%+%s+version: "2"\n', out)
    out, rc = proc.run("bin/kinformer replay " .. path .. " " .. V1 .. " --compare " .. V1 .. " 2>&1 >/dev/null")
    assert.equal(0, rc, out)
    assert.matches("make the same writes", out)
    out, rc = proc.run("bin/kinformer replay -q " .. path .. " " .. V1 .. " --compare missing.lua 2>&1")
    assert.equal(1, rc, out)
    assert.matches("cannot open script missing.lua", out)
    out, rc = proc.run("bin/kinformer replay --help")
    assert.equal(0, rc)
    assert.matches("%-%-compare NEW_SCRIPT", out)
  end)
end)
