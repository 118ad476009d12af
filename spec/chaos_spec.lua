-- Chaos (issue 17): spec/chaos/chaos.lua's seeded random writers and faults
-- against an informer and a controller, three fixed seeds for about 10 s
-- each. In `make test` the server is kinformer.sim (its faults and the
-- fault proxy's); in `make e2e` (KINFORMER_E2E_ADMIN_KUBECONFIG set) it is
-- kube-apiserver, with the proxy's faults only. Each run is a child
-- process: the warnings the faults provoke land in its stderr, which is
-- read and asserted here, so a green run prints only the summary lines.
-- `make chaos` runs random seeds for as long as asked (spec/chaos/run.sh).
local h = require "examples.helper"
local proc = require "support.proc"
local chaos = require "chaos.chaos"

local SEEDS = { 1, 42, 20260517 }
local SECONDS = tonumber(os.getenv("KINFORMER_CHAOS_SPEC_SECONDS") or "") or 10

-- What the faults may make the manager log: the reflector's warnings about
-- broken, cut, stalled or refused watches and lists, the IO engine's about
-- dead connections (the proxy's pauses over HTTP/2), and
-- the driver's note on a slow convergence. Anything else (an error from a
-- handler or a reconciler, a Lua traceback) fails the run.
local ALLOWED = {
  "^kinformer warn %[reflector%] ",
  "^kinformer warn %[io_engine%] ",
  "^chaos: slow convergence ",
}

local function unexpected(stderr) return proc.unexpected_lines(stderr, ALLOWED) end

describe("chaos", function()
  it("the reconcile-overlap check finds a key held by two workers", function()
    local bad, n = chaos.overlaps { "S a/x", "S a/y", "E a/y", "S a/x", "E a/x", "E a/x", "E a/z" }
    assert.equal(3, n)
    assert.equal(2, #bad)
    assert.same({ key = "a/x", line = 4, what = "reconciled by two workers at once" }, bad[1])
    assert.same({ key = "a/z", line = 7, what = "end without start" }, bad[2])
    assert.same({}, (chaos.overlaps { "S a/x", "E a/x", "S a/x", "E a/x" }))
  end)

  it("the generator replays a seed", function()
    local a, b, c = chaos.rng(7), chaos.rng(7), chaos.rng(8)
    local sa, sb, sc = {}, {}, {}
    for i = 1, 50 do sa[i], sb[i], sc[i] = a(1000), b(1000), c(1000) end
    assert.same(sa, sb)
    assert.are_not.same(sa, sc)
  end)

  for _, seed in ipairs(SEEDS) do
    it("seed " .. seed .. ": cache, handlers and controller agree with the server after the faults", function()
      local proxy_bin = chaos.build_dir() .. "kin-fault-proxy"
      assert.is_true(io.open(proxy_bin) ~= nil, proxy_bin .. " is missing: make fault-proxy")
      local rlog = os.tmpname()
      local errf = os.tmpname()
      local cmd = string.format("KINFORMER_CHAOS_RLOG=%s %s timeout 150 lua5.4 spec/chaos/chaos.lua %d %g %s 2>%s",
        h.quote(rlog), proc.paths_env(), seed, SECONDS, h.quote(h.real_kubeconfig() or ""), errf)
      local out, rc = proc.run(cmd)
      local err = proc.slurp(errf)
      os.remove(rlog)
      assert.are.equal(0, rc, out .. "\n" .. err)
      local line = out:match("(chaos seed=%d+ [^\n]*)")
      assert.is_not_nil(line, out .. "\n" .. err)
      local bad = unexpected(err)
      assert.are.equal(0, #bad, "unexpected log lines:\n" .. table.concat(bad, "\n"))
      print("\n" .. line)
    end)
  end
end)
