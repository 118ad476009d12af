-- The house rules of the source tree (issue 13), checked on every
-- `make test`: the include graph of each C folder runs one way (no cycle
-- between units or layer folders, tools/include-graph.sh), and no source
-- file is over 800 lines. The checker is shown to fail on a cycle, so a
-- green run means something.
local proc = require "spec.support.proc"

local function graph(dir)
  return proc.run("bash tools/include-graph.sh -q " .. dir .. " 2>&1")
end

describe("source layout", function()
  for _, dir in ipairs { "csrc/core", "csrc/lua", "csrc/sim" } do
    it("has no include cycle in " .. dir, function()
      local out, rc = graph(dir)
      assert.are.equal(0, rc, out)
      assert.matches("no cycle", out, 1, true)
    end)
  end

  it("reports a cycle when there is one", function()
    local d = os.tmpname()
    os.remove(d)
    assert(os.execute("mkdir -p " .. d))
    proc.write(d .. "/a.c", '#include "b.h"\n')
    proc.write(d .. "/a.h", "\n")
    proc.write(d .. "/b.c", '#include "a.h"\n')
    proc.write(d .. "/b.h", "\n")
    local out, rc = proc.run("bash tools/include-graph.sh -q -p '' " .. d .. " 2>&1")
    os.execute("rm -rf " .. d)
    assert.are.equal(1, rc, out)
    assert.matches("cycle: a b", out, 1, true)
  end)

  it("has no source file over 800 lines", function()
    local out = proc.run("find csrc lua bin include -type f \\( -name '*.c' -o -name '*.h' -o -name '*.lua' \\)"
      .. " -exec wc -l {} + | grep -v ' total$'")
    local long = {}
    for n, path in out:gmatch("(%d+) (%S+)") do
      if tonumber(n) > 800 then long[#long + 1] = path .. " (" .. n .. " lines)" end
    end
    assert.are.same({}, long)
    assert.matches("csrc/core/cache/reflector.c", out, 1, true) -- the listing did run
  end)
end)
