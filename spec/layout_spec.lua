-- The house rules of the source tree (issue 13), checked on every
-- `make test`: the include graph of each C folder runs one way (no cycle
-- between units or layer folders, tools/include-graph.sh), no source
-- file is over 800 lines, and ARCHITECTURE.md's map names every source
-- file. The checkers are shown to fail, so a green run means something.
local proc = require "spec.support.proc"

-- True when text names the file `name` ("x.c", "dir/x.lua"): as its file
-- name ("x.c", also inside a path "cache/x.c"), as "x.h/.c" (a .c or .h:
-- the map's way of naming both), or as `x` in backquotes (the map's lists
-- of one folder's units: `laux`, `manager`).
local function names(text, name)
  local base = name:match("[^/]+$")
  local stem, ext = base:match("^(.*)(%.%w+)$")
  local function word(w)
    local i = 1
    while true do
      local a, b = text:find(w, i, true)
      if not a then return false end
      local before, after = text:sub(a - 1, a - 1), text:sub(b + 1, b + 1)
      if not before:match("[%w_%.%-]") and not after:match("[%w_]") then return true end
      i = a + 1
    end
  end
  return word(base) or ((ext == ".c" or ext == ".h") and word(stem .. ".h/.c"))
    or text:find("`" .. stem .. "`", 1, true) ~= nil
end

-- The files under csrc/ (.c, .h) and lua/ (.lua) that text does not name.
local function unnamed(text)
  local out = proc.run("find csrc \\( -name '*.c' -o -name '*.h' \\) -type f; find lua -name '*.lua' -type f")
  local missing, n = {}, 0
  for path in out:gmatch("%S+") do
    n = n + 1
    if not names(text, path) then missing[#missing + 1] = path end
  end
  table.sort(missing)
  return missing, n
end

-- flags "-i": includes only (csrc/core and csrc/lua: their call cycles
-- are not yet broken); none: includes and calls.
local function graph(dir, flags)
  return proc.run("bash tools/include-graph.sh -q " .. (flags or "") .. " " .. dir .. " 2>&1")
end

describe("source layout", function()
  for _, dir in ipairs { "csrc/core", "csrc/lua" } do
    it("has no include cycle in " .. dir, function()
      local out, rc = graph(dir, "-i")
      assert.are.equal(0, rc, out)
      assert.matches("no cycle", out, 1, true)
    end)
  end

  it("has no cycle of includes or calls in csrc/sim", function()
    local out, rc = graph("csrc/sim")
    assert.are.equal(0, rc, out)
    assert.matches("no cycle", out, 1, true)
  end)

  it("reports two files that call each other as a cycle", function()
    local d = os.tmpname()
    os.remove(d)
    assert(os.execute("mkdir -p " .. d))
    -- no include between them: only the calls (a hub header declares both)
    proc.write(d .. "/hub.h", "int a_one(void);\nint b_two(void);\n")
    proc.write(d .. "/a.c", '#include "hub.h"\nint a_one(void) {\n  return b_two();\n}\n')
    proc.write(d .. "/b.c", '#include "hub.h"\n/* a_one() in a comment is no call */\n'
      .. 'static int helper(void) {\n  return a_one();\n}\nint b_two(void) {\n  return helper();\n}\n')
    local out, rc = proc.run("bash tools/include-graph.sh -q -p '' " .. d .. " 2>&1")
    local inc, irc = proc.run("bash tools/include-graph.sh -q -i -p '' " .. d .. " 2>&1")
    proc.write(d .. "/b.c", '#include "hub.h"\n/* a_one() in a comment is no call */\nint b_two(void) {\n  return 2;\n}\n')
    local one, orc = proc.run("bash tools/include-graph.sh -q -p '' " .. d .. " 2>&1")
    os.execute("rm -rf " .. d)
    assert.are.equal(1, rc, out)
    assert.matches("cycle: a b", out, 1, true)
    assert.are.equal(0, irc, inc) -- includes alone see none
    assert.are.equal(0, orc, one) -- a call one way, and a comment, make none
  end)

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

  it("keeps libcurl inside csrc/core/transport (and the sim's own HTTP)", function()
    local out, rc = proc.run("bash tools/include-graph.sh -s curl/curl.h csrc 2>&1")
    assert.are.equal(0, rc, out)
    local outside = {}
    for path in out:gmatch("[^\n]+") do
      if not path:match("^csrc/core/transport/") and not path:match("^csrc/sim/") then
        outside[#outside + 1] = path
      end
    end
    assert.are.same({}, outside)
    assert.matches("csrc/core/transport/io_engine.c", out, 1, true) -- the search did run
  end)

  it("tells a file outside the transport that includes curl", function()
    local d = os.tmpname()
    os.remove(d)
    os.execute("mkdir -p " .. d .. "/x && printf '#include <curl/curl.h>\\n' > " .. d .. "/x/a.c")
    local out = proc.run("bash tools/include-graph.sh -s curl/curl.h " .. d .. " 2>&1")
    os.execute("rm -rf " .. d)
    assert.matches("x/a.c", out, 1, true)
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

  it("names every file of csrc/ and lua/ in ARCHITECTURE.md", function()
    local f = assert(io.open("ARCHITECTURE.md"))
    local doc = f:read("a")
    f:close()
    local missing, n = unnamed(doc)
    assert.is_true(n > 150, "the listing did run") -- about 190 files
    assert.are.same({}, missing)
  end)

  it("tells a file named from one that is not", function()
    local doc = "`cache/indexer.h/.c`, reflector.c, `util/buf.c`, `controller/controller.c`; `laux`"
    assert.is_true(names(doc, "csrc/core/cache/indexer.c"))
    assert.is_true(names(doc, "csrc/core/cache/indexer.h"))
    assert.is_true(names(doc, "csrc/core/cache/reflector.c"))
    assert.is_true(names(doc, "csrc/lua/laux.h"))
    assert.is_false(names(doc, "csrc/core/cache/indexer_int.h"))
    assert.is_false(names(doc, "csrc/core/cache/reflector_int.h"))
    assert.is_false(names(doc, "csrc/lua/lcontroller.c")) -- "controller.c" is not its name
    assert.is_false(names(doc, "csrc/core/util/uf.c"))
    local missing = unnamed(doc)
    assert.is_true(#missing > 150)
  end)

  -- The library (lua/kinformer) and the commands (lua/kinformer/cmd): a
  -- command may require the library, never the other way round.
  local function library_requires_of_commands(files)
    local bad = {}
    for _, path in ipairs(files) do
      local f = assert(io.open(path))
      local src = f:read("a")
      f:close()
      local code = src:gsub("%-%-[^\n]*", "") -- comments may name a command
      for mod in code:gmatch("require%s*%(?%s*[\"']([%w_.]+)[\"']") do
        if mod:match("^kinformer%.cmd%.") then bad[#bad + 1] = path .. " requires " .. mod end
      end
    end
    return bad
  end

  it("keeps the library from requiring a command", function()
    local out = proc.run("find lua/kinformer -name '*.lua' -type f -not -path 'lua/kinformer/cmd/*'")
    local files = {}
    for path in out:gmatch("%S+") do files[#files + 1] = path end
    assert.is_true(#files > 20, "the listing did run")
    assert.are.same({}, library_requires_of_commands(files))
    -- and the check sees one
    local tmp = os.tmpname()
    proc.write(tmp, 'local x = require("kinformer.cmd.run")\n')
    assert.are.same({ tmp .. " requires kinformer.cmd.run" }, library_requires_of_commands({ tmp }))
    os.remove(tmp)
  end)
end)
