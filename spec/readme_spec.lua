-- README.md's snippets are real: every ```lua block runs, in order, as one
-- chunk in a separate lua5.4 (its `-->` expectations are checked against
-- what it prints), and the REPL transcript is replayed through lua5.4 -i.
local proc = require "support.proc"
local read, write_tmp, run = proc.read, proc.write_tmp, proc.run

local readme = read("README.md")

-- the expected output of a `print(...)  --> a  b  (comment)` line: the
-- fields (separated by two or more spaces) joined by tabs, as print does
local function expected(line)
  local want = line:match("^%s*print%(.*%-%->%s*(.-)%s*$")
  if not want then return nil end
  want = want:gsub("%s%s+%(.*$", "")
  local fields = {}
  for f in (want .. "  "):gmatch("(.-)%s%s+") do fields[#fields + 1] = f end
  return table.concat(fields, "\t")
end

describe("README.md", function()
  it("has lua snippets that run and print what they say", function()
    local blocks, checks = {}, {}
    for body in readme:gmatch("\n```lua\n(.-)\n```") do
      blocks[#blocks + 1] = body
      for line in body:gmatch("[^\n]+") do
        local want = expected(line)
        if want and not want:find("127.0.0.1", 1, true) then checks[#checks + 1] = want end
      end
    end
    assert.is_true(#blocks >= 8, "expected the API snippets")
    assert.is_true(#checks >= 15, "expected --> lines to check")
    local path = write_tmp(table.concat(blocks, "\n"))
    local errpath = os.tmpname()
    -- stdout only: the handlers' lines go to stderr from other threads
    local out, rc = run("timeout 120 lua5.4 " .. path .. " 2>" .. errpath)
    local err = read(errpath)
    os.remove(path)
    os.remove(errpath)
    assert.equal(0, rc, out .. err)
    assert.matches("added new (initial list: false)", err, 1, true)
    for _, want in ipairs(checks) do
      assert.is_truthy(out:find("\n" .. want .. "\n", 1, true) or out:find("^" .. want:gsub("%p", "%%%0") .. "\n"),
        "README expects a line `" .. want .. "` in:\n" .. out)
    end
  end)

  it("shows examples/hello/operator.lua as it is (run by spec/examples/hello_spec.lua)", function()
    local shown = readme:match("\n```lua examples/hello/operator%.lua\n(.-\n)```")
    assert.is_string(shown)
    assert.equal(read("examples/hello/operator.lua"), shown)
    local n = select(2, shown:gsub("\n", ""))
    assert.is_true(n <= 20, "the 20-line operator has " .. n .. " lines")
  end)

  it("quotes examples/website/operator.lua as it is in its excerpts", function()
    local src = read("examples/website/operator.lua")
    local n = 0
    for body in readme:gmatch("\n```lua excerpt of examples/website/operator%.lua\n(.-)\n```") do
      for line in body:gmatch("[^\n]+") do
        n = n + 1
        assert.is_truthy(src:find(line, 1, true), "not in examples/website/operator.lua: " .. line)
      end
    end
    assert.is_true(n >= 10, "expected the webhooks excerpt")
  end)

  -- the ```text blocks of the REPL section
  local function repl_transcripts()
    local section = assert(readme:match("\n### In a REPL\n(.-)\n### "))
    local blocks = {}
    for body in section:gmatch("\n```text\n(.-)\n```") do blocks[#blocks + 1] = body end
    return blocks
  end

  it("has kinformer repl transcripts that replay through bin/kinformer repl", function()
    local texts = {}
    for _, b in ipairs(repl_transcripts()) do
      if b:match("^%$ bin/kinformer repl ") then texts[#texts + 1] = b end
    end
    assert.is_true(#texts >= 2, "the pretty-print and the reload/plan/why sessions")
    for _, text in ipairs(texts) do
    local args = assert(text:match("^%$ bin/kinformer repl ([^\n]*)\n"))
    local input, outputs = {}, {}
    for line in text:gmatch("[^\n]+") do
      if line:sub(1, 2) == "> " then
        input[#input + 1] = line:sub(3)
      elseif line:sub(1, 2) ~= "$ " then
        -- "..." stands for what differs from run to run, and so does a
        -- controller's state (running or reconciling, its counters)
        line = line:gsub('^(kinformer%.controller "[^"]*" )%(.*%)$', "%1(...)")
        outputs[#outputs + 1] = "^" .. line:gsub("%p", "%%%0"):gsub("%%%.%%%.%%%.", ".-") .. "$"
      end
    end
    assert.is_true(#input >= 4 and #outputs >= 8)
    local path = write_tmp(table.concat(input, "\n") .. "\n")
    local out, rc = run("timeout 60 bin/kinformer repl " .. args .. " < " .. path .. " 2>&1")
    os.remove(path)
    assert.equal(0, rc, out)
    assert.is_nil(out:find("stdin:%d+:"), out) -- no error in any line
    for _, want in ipairs(outputs) do
      local found = false
      for line in out:gmatch("[^\n]+") do
        if line:match(want) then found = true break end
      end
      assert.is_true(found, "transcript expects a line matching `" .. want .. "` in:\n" .. out)
    end
    end
  end)

  it("has a REPL transcript that replays through lua5.4 -i", function()
    local text
    for _, b in ipairs(repl_transcripts()) do
      if b:match("^%$ [^\n]* lua5%.4 %-i\n") then text = b end
    end
    assert.is_string(text)
    local env = assert(text:match("^%$ (.-) lua5%.4 %-i\n"))
    local input, outputs = {}, {}
    for line in text:gmatch("[^\n]+") do
      if line:sub(1, 2) == "> " then
        input[#input + 1] = line:sub(3)
      elseif line:sub(1, 2) ~= "$ " then
        outputs[#outputs + 1] = line
      end
    end
    assert.is_true(#input >= 8 and #outputs >= 5)
    -- the build's C module (LUA_CPATH of the spec run) instead of build/release
    env = env:gsub("LUA_CPATH='[^']*'", "LUA_CPATH='" .. (os.getenv("LUA_CPATH") or "build/release/?.so;;") .. "'")
    local path = write_tmp(table.concat(input, "\n") .. "\n")
    local out, rc = run("timeout 60 env " .. env .. " lua5.4 -i < " .. path)
    os.remove(path)
    assert.equal(0, rc, out)
    assert.is_nil(out:find("stdin:%d+:"), out) -- no error in any line
    for _, want in ipairs(outputs) do
      assert.is_truthy(out:find(want, 1, true), "transcript expects `" .. want .. "` in:\n" .. out)
    end
  end)

  it("has a Writing an operator session whose commands print what it shows", function()
    local section = assert(readme:match("\n## Writing an operator\n(.-)\n## "))
    local shown = assert(section:match("\n```lua examples/namespace%-guard/operator%.lua\n(.-\n)```"))
    assert.equal(read("examples/namespace-guard/operator.lua"), shown)
    local n = select(2, shown:gsub("\n", ""))
    assert.is_true(n < 60, "the namespace guard has " .. n .. " lines")
    local text = assert(section:match("\n```text\n(.-)\n```"))
    -- "$ command" lines, each followed by lines its output must hold, in
    -- order ("..." alone: lines left out; inside a line: anything)
    local runs = {}
    for line in text:gmatch("[^\n]+") do
      if line:sub(1, 2) == "$ " then
        runs[#runs + 1] = { cmd = line:sub(3), want = {} }
      elseif line ~= "..." then
        local w = runs[#runs].want
        w[#w + 1] = "^" .. line:gsub("%p", "%%%0"):gsub("%%%.%%%.%%%.", ".-") .. "$"
      end
    end
    assert.equal(3, #runs)
    for _, r in ipairs(runs) do
      -- run serves until a signal: 4 s are enough for the sim's objects
      local cmd = r.cmd:match("^bin/kinformer run ") and ("timeout -s INT 4 " .. r.cmd) or r.cmd
      local out = run(cmd .. " 2>&1")
      local i = 1
      for line in out:gmatch("[^\n]+") do
        if r.want[i] and line:match(r.want[i]) then i = i + 1 end
      end
      assert.is_nil(r.want[i], ("`%s` printed no line matching `%s` (in order) in:\n%s"):format(r.cmd,
        tostring(r.want[i]), out))
    end
  end)
end)
