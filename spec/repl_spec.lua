-- kinformer repl: the pretty-printer, help and completion as functions, and
-- the REPL driven as a person would in a terminal (tmux: keys sent, the
-- screen read back) against kinformer.sim with the Website example.
local repl = require "kinformer.cmd.repl"

describe("kinformer.cmd.repl pretty-printer", function()
  it("prints Kubernetes objects as YAML-like text, apiVersion/kind/metadata first", function()
    local text = repl.pretty{
      spec = { replicas = 2, template = { spec = { containers = { { name = "web", image = "nginx:1.27",
        ports = { { containerPort = 8080 } } } } } } },
      metadata = { name = "web", namespace = "default", labels = { b = "2", a = "yes" } },
      kind = "Deployment", apiVersion = "apps/v1", zzz = "", status = {},
    }
    assert.are.equal(table.concat({
      "apiVersion: apps/v1",
      "kind: Deployment",
      "metadata:",
      "  labels:",
      "    a: \"yes\"",
      "    b: \"2\"",
      "  name: web",
      "  namespace: default",
      "spec:",
      "  replicas: 2",
      "  template:",
      "    spec:",
      "      containers:",
      "      - image: nginx:1.27",
      "        name: web",
      "        ports:",
      "        - containerPort: 8080",
      "status: {}",
      "zzz: \"\"",
    }, "\n"), text)
  end)

  it("decodes kinformer.object userdata before printing", function()
    local kinformer = require "kinformer"
    local obj = assert(kinformer.object('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"}}'))
    assert.are.equal("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v", repl.pretty(obj))
  end)

  it("prints other tables sorted, on one line when short, indented when long", function()
    assert.are.equal('{ a = { 1, 2, 3 }, b = 1, c = "x", ["two words"] = true }',
      repl.pretty{ c = "x", b = 1, a = { 1, 2, 3 }, ["two words"] = true })
    assert.are.equal("{}", repl.pretty{})
    local long = {}
    for i = 1, 10 do long["key" .. i] = string.rep("v", 10) end
    local text = repl.pretty(long)
    assert.matches('^{\n  key1 = "vvvvvvvvvv",\n  key10 = "vvvvvvvvvv",\n  key2 = ', text)
    assert.matches('\n}$', text)
  end)

  it("caps depth and size and detects cycles", function()
    local t = { name = "loop" }
    t.self = t
    assert.are.equal('{ name = "loop", self = <cycle ' .. tostring(t) .. "> }", repl.pretty(t))
    local deep = { a = { b = { c = { d = { e = { f = { g = { h = 1 } } } } } } } }
    assert.matches("{%.%.%.}", repl.pretty(deep))
    local big = {}
    for i = 1, 150 do big[i] = i end
    local text = repl.pretty(big)
    assert.matches("%.%.%. %(50 more%)", text)
    assert.not_matches("101", text)
  end)

  it("prints decoded JSON arrays (kinformer.array) as arrays", function()
    local core = require "kinformer.core"
    local t = assert(core.json_decode('{"items":[{"a":1},{"b":[]}],"e":[]}'))
    assert.are.equal("{ e = {}, items = { { a = 1 }, { b = {} } } }", repl.pretty(t))
  end)

  it("prints strings as they are at the top and quoted inside tables", function()
    assert.are.equal("ghost:5", repl.pretty("ghost:5"))
    assert.are.equal('{ "a\\nb" }', repl.pretty{ "a\nb" })
  end)
end)

describe("kinformer.cmd.repl help and completion", function()
  local sim, mgr
  setup(function()
    sim = assert(require("kinformer.sim").start{})
    mgr = assert(require("kinformer").manager{ sim = sim })
  end)
  teardown(function()
    mgr:stop()
    sim:stop()
  end)

  it("help lists the methods found on a value, with known descriptions", function()
    local text = repl.help_text(mgr, 1)
    assert.matches("^kinformer.manager", text)
    assert.matches("\n  :lister +mgr:lister%(resource%)", text)
    assert.matches("\n  :wait_for ", text)
    -- a method no description knows is listed all the same (introspection)
    local client_text = repl.help_text(mgr.client, 1)
    for _, m in ipairs { "get", "list", "create", "apply" } do
      assert.matches("\n  :" .. m .. " ", client_text)
    end
    local obj = setmetatable({}, { __index = { frobnicate = function() end } })
    assert.matches("\n  :frobnicate$", repl.help_text(obj, 1))
    assert.matches("Tab +completes", repl.help_text(nil, 0))
  end)

  it("completes globals, fields and methods", function()
    local env = { mgr = mgr, kinformer = require "kinformer", manifest = 1 }
    assert.are.same({ "mgr:lister" }, repl.complete("mgr:lis", env))
    assert.are.same({ "kinformer.manager" }, repl.complete("kinformer.ma", env))
    assert.are.same({ "manifest", "mgr" }, repl.complete("m", env))
    assert.are.same({ "mgr.env" }, repl.complete("mgr.en", env))
    local informer_methods = repl.complete("mgr.env:inf", env)
    assert.are.same({ "mgr.env:informer" }, informer_methods)
    assert.are.same({}, repl.complete("nothing.here", env))
  end)

  it("compiles expressions without return and reports incomplete input", function()
    local f = assert(repl.compile("1 + 1", {}))
    assert.are.equal("2", (repl.eval(f)))
    local g, msg, incomplete = repl.compile("for i = 1, 2 do", {})
    assert.is_nil(g)
    assert.is_true(incomplete)
    assert.is_string(msg)
    local _, _, inc2 = repl.compile("1 +* 2", {})
    assert.is_false(inc2)
    local out, err = repl.eval(assert(repl.compile("error('boom')", { error = error })))
    assert.is_nil(out)
    assert.matches("boom", err)
  end)
end)

describe("kinformer repl's command line", function()
  local cli = require "kinformer.cmd.cli"
  it("takes an optional script and run's connection options", function()
    local o = assert(cli.parse{ "repl", "--sim", "--seed", "seed.json", "op.lua", "-q" })
    assert.are.equal("repl", o.command)
    assert.are.equal("op.lua", o.script)
    assert.are.equal("seed.json", o.seed)
    assert.is_true(o.sim and o.quiet)
    o = assert(cli.parse{ "repl", "--kubeconfig", "kc", "--context", "dev", "--namespace", "shop" })
    assert.is_nil(o.script)
    assert.are.same({ "kc", "dev", "shop" }, { o.kubeconfig, o.context, o.namespace })
    assert.are.same({ nil, "--seed needs --sim" }, { cli.parse{ "repl", "--seed", "s.json" } })
    assert.are.same({ nil, "--sim cannot be combined with --kubeconfig or --context" },
      { cli.parse{ "repl", "--sim", "--kubeconfig", "kc" } })
    assert.are.same({ nil, "unexpected argument b.lua" }, { cli.parse{ "repl", "a.lua", "b.lua" } })
  end)

  it("reads plain lines when stdin is not a terminal", function()
    local p = io.popen([[printf 'x = 20 +\n 22\nx\nerror("boom")\nx + 1\n' | bin/kinformer repl --sim -q 2>&1; echo status=$?]])
    local out = p:read("a")
    p:close()
    assert.matches("\n42\n", out)
    assert.matches("stdin:1: boom", out)
    assert.matches("\n43\nstatus=0\n$", out)
  end)
end)

describe("kinformer.readline", function()
  local function readelf(args, name)
    local path = assert(package.searchpath(name, package.cpath), name .. " not on package.cpath")
    local p = io.popen("readelf " .. args .. " " .. path .. " 2>&1")
    local out = p:read("a")
    p:close()
    return out
  end

  it("is its own module: libedit is linked by it, not by kinformer.core", function()
    assert.matches("libedit", readelf("-d", "kinformer.readline"))
    assert.not_matches("libedit", readelf("-d", "kinformer.core"))
    local exported = {}
    for sym in readelf("--dyn-syms -W", "kinformer.readline"):gmatch("GLOBAL%s+DEFAULT%s+%d+%s+(%S+)") do
      exported[#exported + 1] = sym
    end
    assert.are.same({ "luaopen_kinformer_readline" }, exported)
  end)
end)

describe("core.log_hold", function()
  it("holds kin's log lines until taken, 1000 at most", function()
    local core = require "kinformer.core"
    local level = core.log_enabled("info")
    core.set_log_level("info")
    assert.is_false(core.log_hold(true))
    core.log("info", "repl_spec", "held line")
    local lines, dropped = core.log_take()
    assert.are.same({ "kinformer info [repl_spec] held line" }, lines)
    assert.are.equal(0, dropped)
    for i = 1, 1005 do core.log("info", "repl_spec", "line " .. i) end
    lines, dropped = core.log_take()
    assert.are.equal(1000, #lines)
    assert.are.equal("kinformer info [repl_spec] line 1000", lines[1000])
    assert.are.equal(5, dropped)
    assert.is_true(core.log_hold(false))
    assert.are.same({}, (core.log_take()))
    core.set_log_level(level and "info" or "warn")
  end)
end)

-- ---- in a terminal ------------------------------------------------------------

local function sh(cmd)
  local p = io.popen(cmd .. " 2>&1")
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

local have_tmux = sh("command -v tmux") ~= ""

describe("kinformer repl in a terminal (tmux)", function()
  local sock = "kinrepl-" .. tostring(os.time()) .. "-" .. os.tmpname():match("([^/]+)$")
  local marker = os.tmpname()
  local function tmux(args) return sh("tmux -L " .. sock .. " -f /dev/null " .. args) end
  -- the screen and its history, wrapped lines joined, trailing spaces cut
  local function screen()
    return (tmux("capture-pane -p -J -S -400 -t repl"):gsub("[ \t]+\n", "\n"))
  end
  -- polls the screen until fn(screen) is true (20 s at most); returns it
  local function wait_screen(fn, what)
    local deadline = os.time() + 20
    local s
    repeat
      s = screen()
      if fn(s) then return s end
      sh("sleep 0.1")
    until os.time() > deadline
    error("timed out waiting for " .. what .. "; screen:\n" .. s)
  end
  local function wait_for(text)
    return wait_screen(function(s) return s:find(text, 1, true) ~= nil end, text)
  end
  local function keys(text) tmux("send-keys -t repl -l " .. string.format("%q", text):gsub("%$", "\\$")) end
  local function key(name) tmux("send-keys -t repl " .. name) end
  -- the last non-empty line of the screen
  local function last_line(s)
    local last
    for l in s:gmatch("[^\n]+") do if l:match("%S") then last = l end end
    return last and (last:gsub("%s+$", ""))
  end
  local function at_prompt(s) return last_line(s) == ">" end

  setup(function()
    if not have_tmux then return end
    os.remove(marker)
    local env = string.format("LUA_PATH='%s' LUA_CPATH='%s'", os.getenv("LUA_PATH") or "lua/?.lua;lua/?/init.lua;;",
      os.getenv("LUA_CPATH") or "build/release/?.so;;")
    tmux("new-session -d -s repl -x 160 -y 50 \"" .. env
      .. " bin/kinformer repl --sim --seed examples/website/seed.json examples/website/operator.lua\"")
  end)
  teardown(function()
    if not have_tmux then return end
    tmux("kill-server")
    os.remove(marker)
  end)

  it("starts the script's controllers, logging at info level", function()
    assert.is_true(have_tmux, "tmux is needed (make deps installs it)")
    local s = wait_screen(at_prompt, "the first prompt")
    assert.matches("kinformer info %[controller%] website: starting 2 workers", s)
    wait_for("set Website default/hello Ready=True")
  end)

  it("completes methods and fields with Tab", function()
    keys("mgr:contr")
    key("Tab")
    wait_screen(function(s) return last_line(s) == "> mgr:controller" end, "mgr:controller completed")
    key("C-c") -- at the prompt: drops the line
    wait_screen(at_prompt, "a fresh prompt")
    keys("kinformer.ma")
    key("Tab")
    wait_screen(function(s) return last_line(s) == "> kinformer.manager" end, "kinformer.manager completed")
    key("C-c")
    wait_screen(at_prompt, "a fresh prompt")
  end)

  it("pretty-prints objects, tables and controllers", function()
    keys([[mgr:wait_for(function() return mgr:lister("apps/v1/deployments"):get("default/hello") end)]])
    key("Enter")
    local s = wait_screen(function(x) return at_prompt(x) and x:find("\nkind: Deployment\n", 1, true) end, "the Deployment")
    assert.matches("\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n", s)
    assert.matches("\n      %- image: nginx:1%.27\n        name: web\n", s)
    keys([[{b = 1, a = {1, 2, 3}, c = "x"}]])
    key("Enter")
    wait_for('\n{ a = { 1, 2, 3 }, b = 1, c = "x" }\n>')
    keys("controllers")
    key("Enter")
    wait_screen(function(x)
      return x:find('website = kinformer%.controller "website" %(%a+, 2 workers, %d+ active, queue %d+')
    end,
      "the controller's state")
  end)

  it("help(mgr) lists the manager's methods", function()
    keys("help(mgr)")
    key("Enter")
    local s = wait_screen(function(x) return at_prompt(x) and x:find(":wait_for", 1, true) end, "help(mgr)")
    assert.matches("\n  :controller +mgr:controller", s)
    assert.matches("\n  :lister ", s)
  end)

  it("Ctrl-C interrupts a running statement; the session and the sim go on", function()
    tmux("clear-history -t repl")
    key("C-l")
    keys('print("looping") while true do end')
    key("Enter")
    -- the statement runs: no prompt after what it printed
    wait_screen(function(s) return last_line(s) == "looping" end, "the loop running")
    key("C-c")
    wait_screen(function(s) return s:find("interrupted", 1, true) and at_prompt(s) end, "interrupted")
    keys("40 + 2")
    key("Enter")
    wait_for("\n42\n>")
    keys([[mgr.client:get("apps/v1/deployments", "default", "hello").metadata.name]])
    key("Enter")
    wait_for("\nhello\n>")
  end)

  it("holds log lines while a line is typed and shows them before the next prompt", function()
    tmux("clear-history -t repl")
    key("C-l")
    -- a controller whose reconciler logs 1 s after a ConfigMap appears,
    -- then creates the marker file
    keys(string.format([[slow = mgr:controller{name = "slow", ["for"] = "v1/configmaps", ]]
      .. [[reconciler = function(req, ctx) os.execute("sleep 1") ctx.log:info("slow done " .. req.name) ]]
      .. [[io.open(%q, "w"):close() end}]], marker))
    key("Enter")
    wait_for("starting 1 workers")
    keys([[mgr.client:create{apiVersion = "v1", kind = "ConfigMap", ]]
      .. [[metadata = {name = "x", namespace = "default"}}.metadata.name]])
    key("Enter")
    wait_for("\nx\n>")
    keys("1 +")
    wait_screen(function(s) return last_line(s) == "> 1 +" end, "the typed text")
    -- the reconcile logged (the marker exists) while "1 +" was being typed
    local deadline = os.time() + 20
    while not io.open(marker) and os.time() < deadline do sh("sleep 0.1") end
    assert.truthy(io.open(marker), "the slow reconcile ran")
    sh("sleep 0.3") -- a few of the REPL's 50 ms input waits
    local s = screen()
    assert.are.equal("> 1 +", last_line(s))
    assert.not_matches("slow done x", s)
    keys(" 2")
    key("Enter")
    s = wait_screen(function(x) return at_prompt(x) and x:find("slow done x", 1, true) end, "the held log line")
    assert.matches("\n> 1 %+ 2\n3\nkinformer info %[reconcile%] %[controller=slow key=default/x%] slow done x\n>", s)
    -- at an empty prompt, a log line is shown at once, above the prompt
    os.remove(marker)
    keys([[mgr.client:create{apiVersion = "v1", kind = "ConfigMap", ]]
      .. [[metadata = {name = "y", namespace = "default"}}.metadata.name]])
    key("Enter")
    s = wait_screen(function(x) return at_prompt(x) and x:find("slow done y", 1, true) end, "the log line at an idle prompt")
    assert.matches("\ny\nkinformer info %[reconcile%] %[controller=slow key=default/y%] slow done y\n>", s)
  end)

  it("ends on SIGTERM, also while a statement runs", function()
    local env = string.format("LUA_PATH='%s' LUA_CPATH='%s'", os.getenv("LUA_PATH") or "lua/?.lua;lua/?/init.lua;;",
      os.getenv("LUA_CPATH") or "build/release/?.so;;")
    tmux("new-session -d -s term -x 120 -y 20 \"" .. env .. " bin/kinformer repl --sim -q; echo EXIT=\\$?; sleep 60\"")
    local function term_screen() return (tmux("capture-pane -p -J -t term")) end
    local deadline = os.time() + 20
    while not term_screen():find("\n> ", 1, true) and os.time() < deadline do sh("sleep 0.1") end
    tmux("send-keys -t term -l 'print(\"spinning\") while true do end'")
    tmux("send-keys -t term Enter")
    while not term_screen():find("\nspinning", 1, true) and os.time() < deadline do sh("sleep 0.1") end
    local pane = tmux("display -p -t term '#{pane_pid}'"):match("%d+")
    local pid = sh("pgrep -P " .. pane .. " lua5.4"):match("%d+")
    assert.is_string(pid, "the REPL's process")
    sh("kill -TERM " .. pid)
    while not term_screen():find("EXIT=", 1, true) and os.time() < deadline do sh("sleep 0.1") end
    local s = term_screen()
    assert.matches("interrupted", s)
    assert.matches("\nEXIT=0\n", s)
    tmux("kill-session -t term")
  end)

  it("reloads a reconciler typed at the prompt; the workers run the new code", function()
    keys("ctl = controllers.website")
    key("Enter")
    wait_screen(at_prompt, "a prompt")
    keys([[ctl:reload(function(req, ctx) ctx.log:info("new code for %s", req.key) end)]])
    key("Enter")
    wait_for("\ntrue\n>")
    keys([[ctl:enqueue("default", "hello")]])
    key("Enter")
    wait_screen(function(x) return at_prompt(x) and x:find("new code for default/hello", 1, true) end,
      "the reloaded reconciler's log line")
    -- a reconciler that does not compile is refused with its line; the new one stays
    keys([[ctl:reload("no_such_module_anywhere")]])
    key("Enter")
    wait_screen(function(x) return at_prompt(x) and x:find("old code keeps running", 1, true) end, "the refusal")
  end)

  it("leaves on Ctrl-D, stopping the manager and the sim", function()
    key("C-d")
    local deadline = os.time() + 20
    local _, alive
    repeat
      _, alive = tmux("has-session -t repl")
      if alive then sh("sleep 0.1") end
    until not alive or os.time() > deadline
    assert.is_falsy(alive)
  end)
end)
