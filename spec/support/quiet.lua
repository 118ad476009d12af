-- Specs whose scenario makes kinformer log errors or warnings on purpose
-- (a failing handler, a reconciler that raises, a module that cannot load).
-- kinformer.core has no log sink for Lua, so such a spec runs itself in a
-- child busted (only that test, selected with --filter) whose stderr is
-- captured: the parent asserts that the child's test passed and that its
-- log holds the expected lines, and the lines stay out of the run's output.
--
--   local quiet = require "support.quiet"
--   quiet.it(it, "logs a handler's error", { "handler on_add for default/bad failed" }, function() ... end)
--
-- (it: busted's, which a spec file sees but a module it requires does not)
--
-- want: Lua patterns, each must match a line of the child's log, or
-- { pattern, times = n }: exactly n lines match. In the child
-- (KIN_SPEC_CHILD set) the test runs in place.
local assert = require "luassert"
local proc = require "support.proc"

local M = {}

-- The busted command the child runs under (KIN_BUSTED overrides it).
local BUSTED = os.getenv("KIN_BUSTED") or "lua5.4 /usr/bin/busted"

local function escape(s) return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")) end
local function shq(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

function M.it(it, name, want, fn)
  if os.getenv("KIN_SPEC_CHILD") then return it(name, fn) end
  local file = debug.getinfo(2, "S").source:match("^@(.*)$")
  it(name, function()
    local errf = os.tmpname()
    local out, rc = proc.run(string.format("KIN_SPEC_CHILD=1 %s %s -o TAP --filter=%s %s 2>%s",
      proc.paths_env(), BUSTED, shq(escape(name) .. "$"), shq(file), errf))
    local log = proc.slurp(errf)
    assert.equal(0, rc, out .. log)
    local ran = 0
    for _ in ("\n" .. out):gmatch("\nok %d+ ") do ran = ran + 1 end
    assert.equal(1, ran, "expected the child to run exactly this test:\n" .. out)
    for _, pat in ipairs(want) do
      if type(pat) == "table" then
        local n = 0
        for line in log:gmatch("[^\n]+") do
          if line:find(pat[1]) then n = n + 1 end
        end
        assert.equal(pat.times, n, string.format("lines matching %q in:\n%s", pat[1], log))
      else
        assert.is_truthy(log:find(pat), string.format("no log line matches %q in:\n%s", pat, log))
      end
    end
  end)
end

return M
