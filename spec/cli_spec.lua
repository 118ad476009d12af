-- bin/kinformer and lua/kinformer/cmd/ (cli, run).
local cli = require "kinformer.cmd.cli"
local runcmd = require "kinformer.cmd.run"
local h = require "examples.helper"

local proc = require "support.proc"

-- bin/kinformer with args; returns its exit status and output
local function run(args)
  local out, rc = proc.run("bin/kinformer " .. args .. " 2>&1")
  return rc, out
end

local tmpfile = proc.write_tmp

describe("kinformer.cmd.cli", function()
  describe("parse", function()
    it("reads run's options", function()
      local o = assert(cli.parse { "run", "op.lua", "--kubeconfig", "kc", "--context=dev", "--namespace", "ns",
                                   "-v", "--sync-timeout", "5", "--", "a", "--b" })
      assert.same({ command = "run", script = "op.lua", kubeconfig = "kc", context = "dev", namespace = "ns",
                    verbose = true, sync_timeout = 5, args = { "a", "--b" } }, o)
      o = assert(cli.parse { "run", "op.lua", "--max-response-bytes", "1048576" })
      assert.equal(1048576, o.max_response_bytes)
      o = assert(cli.parse { "run", "op.lua", "--sim", "--seed", "s.json" })
      assert.is_true(o.sim)
      assert.equal("s.json", o.seed)
    end)

    it("reads the webhook server's options and passes them to the manager", function()
      local o = assert(cli.parse { "run", "op.lua", "--webhook-bind-address", ":9444", "--webhook-cert-path=/certs",
                                   "--webhook-cert-name", "c.pem", "--webhook-cert-key", "k.pem" })
      assert.same({ command = "run", script = "op.lua", webhook_bind_address = ":9444", webhook_cert_path = "/certs",
                    webhook_cert_name = "c.pem", webhook_cert_key = "k.pem", args = {} }, o)
      for _, flag in ipairs { "--webhook-bind-address ADDR", "--webhook-cert-path DIR", "--webhook-cert-name F",
        "--webhook-cert-key F" } do
        assert.matches(flag, cli.usage, 1, true)
      end
      -- kinformer.cmd.run hands them to kinformer.manager{...} through the bootstrap
      -- (the process's signal mask, log level and stderr left alone)
      local seen
      local bootstrap, core = require "kinformer.bootstrap", require "kinformer.core"
      local load, block, level, err = bootstrap.load, core.block_signals, core.set_log_level, io.stderr
      bootstrap.load = function(a)
        seen = a.manager
        return nil, "stop here"
      end
      core.block_signals, core.set_log_level = function() end, function() end
      rawset(io, "stderr", io.tmpfile())
      local ok, rc = pcall(runcmd.run, { script = "op.lua", webhook_bind_address = ":9444", webhook_cert_path = "/certs",
                                         webhook_cert_name = "c.pem", webhook_cert_key = "k.pem" })
      io.stderr:seek("set")
      local said = io.stderr:read("a")
      bootstrap.load, core.block_signals, core.set_log_level = load, block, level
      rawset(io, "stderr", err)
      assert.equal("kinformer: stop here\n", said)
      assert.is_true(ok, tostring(rc))
      assert.equal(1, rc)
      assert.equal(":9444", seen.webhook_bind_address)
      assert.equal("/certs", seen.webhook_cert_path)
      assert.equal("c.pem", seen.webhook_cert_name)
      assert.equal("k.pem", seen.webhook_cert_key)
    end)

    it("rejects bad usage with a message", function()
      local cases = {
        [{}] = "no command",
        [{ "run" }] = "run needs a script",
        [{ "run", "x.lua", "--kubeconfig" }] = "--kubeconfig needs a value",
        [{ "run", "x.lua", "--frob" }] = "unknown option --frob",
        [{ "run", "x.lua", "--seed", "s" }] = "--seed needs --sim",
        [{ "run", "x.lua", "--sim", "--kubeconfig", "k" }] = "cannot be combined",
        [{ "run", "x.lua", "y.lua" }] = "unexpected argument y.lua",
        [{ "run", "x.lua", "--sync-timeout", "soon" }] = "positive number",
        [{ "run", "x.lua", "--max-response-bytes", "lots" }] = "--max-response-bytes must be a positive number of bytes",
        [{ "run", "x.lua", "--max-response-bytes", "1.5" }] = "--max-response-bytes must be a positive number of bytes",
        [{ "run", "x.lua", "--webhook-bind-address" }] = "--webhook-bind-address needs a value",
        [{ "run", "x.lua", "--webhook-cert-name", "c.pem" }] = "--webhook-cert-name and --webhook-cert-key need "
          .. "--webhook-cert-path",
        [{ "plan", "x.lua", "--webhook-bind-address", ":9443" }] = "--webhook-* options are options of run",
        [{ "manifests", "x.lua", "--webhook-cert-path", "/d" }] = "--webhook-* options are options of run",
      }
      for argv, msg in pairs(cases) do
        local o, err = cli.parse(argv)
        assert.is_nil(o)
        assert.matches(msg, err, 1, true)
      end
    end)

    it("formats the progress line", function()
      assert.equal("100,000", runcmd.thousands(100000))
      assert.equal("999", runcmd.thousands(999))
      assert.equal("1,234,567", runcmd.thousands(1234567))
      assert.equal("synced 41,000 / 100,000 pods (syncing), 3 / 3 services in shop",
        runcmd.progress_line {
          { name = "v1/pods", resource = "v1/pods", synced = false, listed = 100000, cached = 41000 },
          { name = "v1/services?namespace=shop", resource = "v1/services", synced = true, listed = 3, cached = 3 },
        })
      assert.equal("synced 4,500 / 10,000 configmaps (listing)",
        runcmd.progress_line { { name = "v1/configmaps", resource = "v1/configmaps", synced = false, listed = 4500,
          expected = 10000, cached = 0 } })
    end)

    it("gets the list's size from the server's remainingItemCount while paging", function()
      local seed = os.tmpname()
      local f = assert(io.open(seed, "w"))
      for i = 1, 1200 do
        f:write(string.format('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c%d","namespace":"default"}}\n', i))
      end
      f:close()
      local sim <close> = assert(require("kinformer.sim").start{ seed = seed })
      os.remove(seed)
      local mgr = assert(require("kinformer").manager{ sim = sim })
      assert(mgr:informer("v1/configmaps"))
      local seen = {}
      assert(mgr:start{ timeout = 30, on_progress = function(p) seen[#seen + 1] = p[1] end })
      local last = seen[#seen]
      assert.is_true(last.synced)
      assert.equal(1200, last.expected)
      assert.equal(1200, last.listed)
      assert.equal(1200, last.cached)
      mgr:stop()
    end)
  end)

  describe("kinformer.reconcile_log (-v)", function()
    it("wraps a closure reconciler: it runs in a worker state with its upvalues, one log line per reconcile", function()
      local core = require "kinformer.core"
      local kinformer = require "kinformer"
      local OUTCOMES = { again = { requeue = true }, later = { requeue_after = 1.5 } }
      local calls = 0
      local function outcome(name) return OUTCOMES[name] end
      local function inner(req)
        calls = calls + 1
        if req.name == "bad" then return nil, "went wrong\nsecond line" end
        if req.name == "stop" then return nil, kinformer.terminal("gave up") end
        if req.name == "boom" then error("exploded") end
        return outcome(req.name)
      end
      local w <close> = assert(core.worker(require("kinformer.reconcile_log").wrap("web", inner)))
      local level = core.log_enabled("info")
      core.set_log_level("info")
      core.log_hold(true)
      local results = {}
      for _, name in ipairs { "ok", "again", "later", "bad", "stop", "boom" } do
        results[name] = { w:call(nil, { namespace = "ns", name = name }) }
      end
      local lines = core.log_take()
      core.log_hold(false)
      core.set_log_level(level and "info" or "warn")
      for i, l in ipairs(lines) do lines[i] = l:gsub("%(%d+%.%d ms%)$", "(T)") end
      assert.same({
        "kinformer info [reconcile] web ns/ok: done (T)",
        "kinformer info [reconcile] web ns/again: requeue (T)",
        "kinformer info [reconcile] web ns/later: requeue after 1.5s (T)",
        "kinformer info [reconcile] web ns/bad: error: went wrong (T)",
        "kinformer info [reconcile] web ns/stop: terminal: gave up (T)",
      }, { table.unpack(lines, 1, 5) })
      -- the copy keeps its debug info: the error names this file and line
      assert.matches("^kinformer info %[reconcile%] web ns/boom: error: spec/cli_spec%.lua:%d+: exploded %(T%)$", lines[6])
      assert.equal(6, #lines)
      -- results pass through
      assert.same({}, results.ok)
      assert.same({ { requeue = true } }, results.again)
      assert.same({ { requeue_after = 1.5 } }, results.later)
      assert.same({ nil, "went wrong\nsecond line" }, results.bad)
      assert.is_nil(results.boom[1])
      assert.matches("exploded", results.boom[2], 1, true)
      assert.equal(0, calls) -- counted in the worker's copy
    end)

    it("leaves what it cannot wrap to the controller", function()
      assert.equal(42, require("kinformer.reconcile_log").wrap("web", 42))
    end)
  end)

  describe("bin/kinformer", function()
    it("prints help and version, exit 0", function()
      local rc, out = run("--help")
      assert.equal(0, rc)
      assert.matches("usage: kinformer run SCRIPT", out, 1, true)
      rc, out = run("--version")
      assert.equal(0, rc)
      assert.matches("^kinformer %d+%.%d+%.%d+", out)
    end)

    it("exits 2 on a usage error", function()
      local rc, out = run("run")
      assert.equal(2, rc)
      assert.matches("kinformer: run needs a script", out, 1, true)
    end)

    it("exits 1 with a clear message for a bad kubeconfig, a missing script, a failing script", function()
      local kc = tmpfile("clusters: [oops\n")
      local script = tmpfile("local mgr = ...\n")
      local rc, out = run("run " .. script .. " --kubeconfig " .. kc)
      assert.equal(1, rc)
      assert.matches("kinformer: cannot create the manager: kubeconfig " .. h.esc(kc), out)
      rc, out = run("run " .. script .. " --kubeconfig /nonexistent/kc")
      assert.equal(1, rc)
      assert.matches("cannot open kubeconfig /nonexistent/kc", out, 1, true)
      rc, out = run("run /nonexistent/op.lua --sim")
      assert.equal(1, rc)
      assert.matches("cannot open script /nonexistent/op.lua", out, 1, true)
      local bad = tmpfile("local mgr = ...\nlocal x = nil\nreturn x.field\n")
      rc, out = run("run " .. bad .. " --sim")
      assert.equal(1, rc)
      assert.matches("script " .. h.esc(bad) .. " failed: " .. h.esc(bad) .. ":3: attempt to index", out)
      local syntax = tmpfile("local = 1\n")
      rc, out = run("run " .. syntax .. " --sim")
      assert.equal(1, rc)
      assert.matches("cannot load script: " .. h.esc(syntax) .. ":1:", out)
      for _, f in ipairs { kc, script, bad, syntax } do os.remove(f) end
    end)

    it("fails with the informer's name when the caches do not sync in time", function()
      -- the informer is made (discovery works), then every request fails
      local script = tmpfile('local mgr, opts = ...\nassert(mgr:informer("v1/pods"))\n' ..
        'opts.sim:fault{ kind = "fail", code = 500, count = 1000000 }\n')
      local rc, out = run("run " .. script .. " --sim --sync-timeout 1")
      os.remove(script)
      assert.equal(1, rc)
      assert.matches("pods", out, 1, true)
      assert.matches("kinformer: .*sync", out)
    end)

    it("runs a script against --sim --seed, shows sync progress and one line per reconcile at -v", function()
      local op = h.operator("examples/website/operator.lua", nil,
        { "--sim", "--seed", "examples/website/seed.json", "-v", "--", "extra" })
      finally(function() op:cleanup() end)
      local kc = op:wait_output("kinformer%.sim serving http://[%d.:]+ %(kubeconfig ([^)]+)%)", "err")
      op:wait_output("synced 1 / 1 websites, 0 / 0 deployments, 0 / 0 services", "err")
      op:wait_output("%[reconcile%] website default/hello: done %(%d+%.%d ms%)", "err")
      local core = require "kinformer.core"
      local env = assert(core.env{ kubeconfig = kc })
      local c = env:client()
      local dep = assert(c:get("apps/v1/deployments", "default", "hello"))
      assert.equal("nginx:1.27", dep.spec.template.spec.containers[1].image)
      env:shutdown()
      assert.equal(0, op:stop("TERM"))
    end)

    it("passes args after -- and calls on_start / on_stop", function()
      local script = tmpfile([[
local mgr, opts = ...
assert(mgr:informer("v1/configmaps"))
print("args: " .. table.concat(opts.args, ","))
return { on_start = function() print("started") end, on_stop = function() print("stopped") end }
]])
      local op = h.operator(script, nil, { "--sim", "--", "x", "y" })
      finally(function() op:cleanup(); os.remove(script) end)
      op:wait_output("started")
      assert.matches("args: x,y", op:stdout(), 1, true)
      assert.equal(0, op:stop("INT"))
      assert.matches("started\nstopped", op:stdout(), 1, true)
    end)
  end)
end)
