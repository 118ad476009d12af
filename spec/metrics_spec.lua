-- Prometheus metrics and health probes of the manager, against
-- kinformer.sim: an operator reconciles known keys, then /metrics is
-- scraped over HTTP (curl) and its series asserted by controller-runtime's
-- and client-go's names; `promtool check metrics` lints the exposition; a
-- real Prometheus (Debian's) scrapes the running operator and its query API
-- returns the series; /healthz and /readyz follow the caches and the user's
-- checks; user metrics are registered and updated from the main state and
-- from reconcilers (worker states).
local kinformer = require "kinformer"
local support_mgr = require "support.mgr"
local metrics = require "kinformer.metrics"
local proc = require "support.proc"
local scrape = require "support.scrape"

local sim, tmpdir
local nmod = 0

local function clock() return kinformer.core.monotime() end

local eventually = support_mgr.eventually

local get, sample = scrape.get, scrape.sample

-- A reconciler module (in tmpdir, on package.path for worker states).
local function module(body)
  nmod = nmod + 1
  local name = ("kin_metrics_spec_m%d"):format(nmod)
  proc.write(("%s/%s.lua"):format(tmpdir, name), body)
  return name
end

local function cm(ns, name)
  return { apiVersion = "v1", kind = "ConfigMap", metadata = { namespace = ns, name = name }, data = {} }
end

local function new_namespace(mgr) return support_mgr.new_namespace(mgr, "metrics") end

-- An operator: controller `name` over the configmaps of a new namespace;
-- key "later" requeues after 60 s, the others succeed, and every
-- reconcile counts itself in the user metric spec_reconciles_total{ns}.
-- Creates the configmaps a, b, later and waits for the three reconciles.
local function operator(mgr, name)
  local mod = module [[
local metrics = require "kinformer.metrics"
local n = metrics.counter{ name = "spec_reconciles_total", help = "Reconciles seen by the spec",
                           labels = { "ns" } }
local t = metrics.histogram{ name = "spec_key_length", help = "Key lengths",
                             labels = { "ns" }, buckets = { 5, 20 } }
return function(req, ctx)
  n:inc{ ns = req.namespace }
  t:observe(#req.key, { req.namespace })
  if req.name == "later" then return { requeue_after = 60 } end
end]]
  local ns = new_namespace(mgr)
  local ctl = assert(mgr:controller { name = name, ["for"] = "v1/configmaps", reconciler = mod,
                                      workers = 2, informer_opts = { namespace = ns } })
  assert(mgr:start { timeout = 30 })
  for _, k in ipairs { "a", "b", "later" } do assert(mgr.client:create("v1/configmaps", cm(ns, k))) end
  eventually(mgr, function()
    local st = ctl:stats()
    if st.reconcile_success + st.reconcile_requeue_after < 3 then return false end
    -- a worker marks its item done (work_duration) after it counts the
    -- reconcile: wait for that too
    for _, it in ipairs(ctl:queue()) do
      if it.state == "processing" then return false end
    end
    return true
  end, 20, "three reconciles")
  return ns, ctl
end

describe("kinformer metrics", function()
  local mgr

  setup(function()
    sim = assert(require("kinformer.sim").start {})
    tmpdir = os.tmpname()
    os.remove(tmpdir)
    assert(os.execute("mkdir -p " .. tmpdir))
    package.path = tmpdir .. "/?.lua;" .. package.path
  end)

  teardown(function()
    if sim then sim:stop() end
    if tmpdir then os.execute("rm -rf " .. tmpdir) end
  end)

  after_each(function()
    if mgr then mgr:stop() end
    mgr = nil
  end)

  it("serves controller-runtime's and client-go's series at /metrics", function()
    mgr = assert(kinformer.manager { sim = sim, metrics_bind = "127.0.0.1:0" })
    local port = assert(mgr:metrics_port())
    assert.is_nil(mgr:metrics_port("health"))
    local ns = operator(mgr, "metrics-web")
    local text, code = get(port, "/metrics")
    assert.equal(200, code)
    local c = 'controller="metrics-web"'
    assert.equal(2, sample(text, ('controller_runtime_reconcile_total{%s,result="success"}'):format(c)))
    assert.equal(1, sample(text, ('controller_runtime_reconcile_total{%s,result="requeue_after"}'):format(c)))
    assert.equal(0, sample(text, ('controller_runtime_reconcile_total{%s,result="error"}'):format(c)))
    assert.equal(0, sample(text, ('controller_runtime_reconcile_errors_total{%s}'):format(c)))
    assert.equal(0, sample(text, ('controller_runtime_terminal_reconcile_errors_total{%s}'):format(c)))
    assert.equal(2, sample(text, ('controller_runtime_max_concurrent_reconciles{%s}'):format(c)))
    assert.equal(0, sample(text, ('controller_runtime_active_workers{%s}'):format(c)))
    assert.equal(3, sample(text, ('controller_runtime_reconcile_time_seconds_count{%s}'):format(c)))
    assert.equal(3, sample(text, ('controller_runtime_reconcile_time_seconds_bucket{%s,le="+Inf"}'):format(c)))
    assert.equal(3, sample(text, ('controller_runtime_reconcile_time_seconds_bucket{%s,le="60"}'):format(c)))
    assert.matches("# TYPE controller_runtime_reconcile_time_seconds histogram\n", text, 1, true)
    local q = 'controller="metrics-web",name="metrics-web"'
    assert.equal(3, sample(text, ('workqueue_adds_total{%s}'):format(q)))
    assert.equal(1, sample(text, ('workqueue_retries_total{%s}'):format(q)))
    assert.equal(0, sample(text, ('workqueue_depth{%s}'):format(q)))
    assert.equal(3, sample(text, ('workqueue_queue_duration_seconds_count{%s}'):format(q)))
    assert.equal(3, sample(text, ('workqueue_work_duration_seconds_count{%s}'):format(q)))
    assert.equal(0, sample(text, ('workqueue_unfinished_work_seconds{%s}'):format(q)))
    assert.equal(0, sample(text, ('workqueue_longest_running_processor_seconds{%s}'):format(q)))
    -- the manager's client: the namespace and the three configmaps were POSTed
    local host = sim.url:match("^https?://([^/]+)")
    assert.equal(4, sample(text, ('rest_client_requests_total{code="201",host="%s",method="POST"}'):format(host)))
    assert.is_true(sample(text, ('rest_client_request_duration_seconds_count{host="%s",verb="POST"}'):format(host)) >= 4)
    -- user metrics updated by the reconcilers in their worker states
    assert.equal(3, sample(text, ('spec_reconciles_total{ns="%s"}'):format(ns)))
    assert.equal(0, sample(text, ('spec_key_length_bucket{ns="%s",le="5"}'):format(ns)))
    assert.equal(3, sample(text, ('spec_key_length_bucket{ns="%s",le="20"}'):format(ns)))
    assert.equal(3, sample(text, ('spec_key_length_count{ns="%s"}'):format(ns)))
    -- kinformer's own: the informer (its registry name) and the watchdog
    local inf = ('informer="v1/configmaps?namespace=%s"'):format(ns)
    assert.equal(3, sample(text, ("kinformer_informer_objects{%s}"):format(inf)), text:match("kinformer_informer_objects[^\n]*"))
    assert.equal(1, sample(text, ("kinformer_informer_synced{%s}"):format(inf)))
    assert.equal(1, sample(text, ("kinformer_reflector_lists_total{%s}"):format(inf)))
    assert.equal(0, sample(text, ("kinformer_reflector_relists_total{%s}"):format(inf)))
    assert.equal(3, sample(text, ("kinformer_reflector_events_total{%s}"):format(inf)))
    assert.is_true(sample(text, ("kinformer_reflector_watches_total{%s}"):format(inf)) >= 1)
    assert.equal(0, sample(text, ('kinformer_reconcile_timeouts_total{%s}'):format(c)))
    for w = 1, 2 do -- both worker states are open (a worker that reconciled nothing: since start)
      assert.is_true(sample(text, ('kinformer_lua_state_memory_bytes{%s,worker="%d"}'):format(c, w)) > 10000)
    end
    -- the exposition is what promtool accepts, without a lint warning
    local f = proc.write_tmp(text)
    local out, rc = proc.run("promtool check metrics < " .. f)
    os.remove(f)
    assert.equal("", out)
    assert.equal(0, rc)
  end)

  it("user metrics: counter, gauge, histogram with labels; one registry for every state", function()
    local c = metrics.counter { name = "spec_user_total", help = "A counter", labels = { "kind", "code" } }
    c:inc { kind = "a", code = 200 }
    c:inc({ "a", "200" }, 2)
    assert.equal(3, c:get { kind = "a", code = "200" })
    assert.is_nil(c:get { kind = "b", code = "200" })
    -- the same shape again is the same metric; another shape is an error
    assert.equal(3, metrics.counter { name = "spec_user_total", help = "A counter", labels = { "kind", "code" } }
      :get { "a", "200" })
    assert.has_error(function() metrics.gauge { name = "spec_user_total", help = "A counter", labels = { "kind", "code" } } end,
      "metric spec_user_total is already registered with another type, help, label names or buckets")
    assert.has_error(function() c:inc({ kind = "a", code = 1 }, -1) end, "metric spec_user_total: a counter cannot decrease")
    assert.has_error(function() c:inc { kind = "a" } end)
    local g = metrics.gauge { name = "spec_user_gauge", help = "A gauge" }
    g:set(5); g:inc(); g:dec(nil, 2); g:add(0.5)
    assert.equal(4.5, g:get())
    local h = metrics.histogram { name = "spec_user_seconds", help = "A histogram",
                                  buckets = metrics.exponential_buckets(0.1, 10, 3) }
    h:observe(0.05); h:observe(5); h:observe(500)
    local text = assert(metrics.render())
    assert.equal(3, sample(text, 'spec_user_total{code="200",kind="a"}') or sample(text, 'spec_user_total{kind="a",code="200"}'))
    assert.equal(4.5, sample(text, "spec_user_gauge"))
    assert.equal(1, sample(text, 'spec_user_seconds_bucket{le="0.1"}'))
    assert.equal(1, sample(text, 'spec_user_seconds_bucket{le="1"}'))
    assert.equal(2, sample(text, 'spec_user_seconds_bucket{le="10"}'))
    assert.equal(3, sample(text, 'spec_user_seconds_bucket{le="+Inf"}'))
    assert.equal(505.05, sample(text, "spec_user_seconds_sum"))
    assert.has_error(function() metrics.counter { name = "bad name" } end)
    -- the leader election gauge (kin_metrics_leader_election_status in C)
    metrics.leader_election_status("spec-lease", true)
    assert.equal(1, sample(metrics.render(), 'leader_election_master_status{name="spec-lease"}'))
    metrics.leader_election_status("spec-lease", false)
    assert.equal(0, sample(metrics.render(), 'leader_election_master_status{name="spec-lease"}'))
  end)

  it("/healthz, and /readyz: 500 (as controller-runtime) until the caches synced, then the user's checks", function()
    mgr = assert(kinformer.manager { sim = sim, health_bind = "127.0.0.1:0" })
    local port = assert(mgr:metrics_port("health"))
    assert.is_nil(mgr:metrics_port())
    local body, code = get(port, "/healthz")
    assert.equal(200, code)
    assert.equal("ok", body)
    body, code = get(port, "/readyz")
    assert.equal(500, code)
    assert.equal("[-]informers failed: caches not synced\nreadyz check failed\n", body)
    mgr:informer("v1/configmaps")
    assert(mgr:start { timeout = 30 })
    body, code = get(port, "/readyz?verbose")
    assert.equal(200, code)
    assert.equal("[+]informers ok\nreadyz check passed\n", body)
    local db_up = false
    assert(mgr:add_readyz_check("db", function()
      if not db_up then return false, "db is down" end
      return true
    end))
    assert(mgr:add_healthz_check("loop", function() end))
    body, code = get(port, "/readyz")
    assert.equal(500, code)
    assert.equal("[+]informers ok\n[-]db failed: db is down\nreadyz check failed\n", body)
    body, code = get(port, "/readyz/db")
    assert.equal(500, code)
    assert.equal("internal server error: db is down\n", body)
    assert.equal(200, select(2, get(port, "/readyz/informers")))
    assert.equal(404, select(2, get(port, "/readyz/nope")))
    body, code = get(port, "/healthz?verbose")
    assert.equal(200, code)
    assert.equal("[+]ping ok\n[+]loop ok\nhealthz check passed\n", body)
    db_up = true
    -- the manager's loop runs the checks about every second
    eventually(mgr, function() return select(2, get(port, "/readyz")) == 200 end, 10, "readyz 200")
    local ok, msg, c = mgr:add_readyz_check("db", function() end)
    assert.is_nil(ok)
    assert.equal("EEXIST", c, msg)
    assert.has_error(function() mgr:add_readyz_check("a/b", function() end) end)
  end)

  it("a bind address in use or malformed fails the manager; 0 disables", function()
    mgr = assert(kinformer.manager { sim = sim, metrics_bind = "127.0.0.1:0" })
    local addr = "127.0.0.1:" .. mgr:metrics_port()
    local m2, msg, code = kinformer.manager { sim = sim, metrics_bind = addr }
    assert.is_nil(m2)
    assert.equal("EBUSY", code)
    assert.matches(addr, msg, 1, true)
    m2, msg, code = kinformer.manager { sim = sim, health_bind = "localhost" }
    assert.is_nil(m2)
    assert.equal("EINVAL", code, msg)
    m2 = assert(kinformer.manager { sim = sim, metrics_bind = "0", health_bind = 0 })
    assert.is_nil(m2:metrics_port())
    assert.is_nil(m2:metrics_port("health"))
    local ok, _, c = m2:add_readyz_check("x", function() end)
    assert.is_nil(ok)
    assert.equal("EINVAL", c)
    m2:stop()
  end)
end)

-- A port nothing listens on (bound and released: may race, rarely).
local function free_port()
  local s = assert(kinformer.core.metrics_server { metrics_bind = "127.0.0.1:0" })
  local p = s:port("metrics")
  s:close()
  return p
end

-- Polls fn (no manager to pump) every 0.1 s for up to timeout seconds.
local function wait_until(fn, timeout, what)
  local deadline = clock() + timeout
  while not fn() do
    if clock() > deadline then error("timed out waiting for " .. what, 2) end
    os.execute("sleep 0.1")
  end
end

describe("kinformer run", function()
  it("takes controller-runtime's --metrics-bind-address and --health-probe-bind-address", function()
    local cli = require "kinformer.cmd.cli"
    local o = assert(cli.parse { "run", "op.lua", "--metrics-bind-address", ":8080",
                                 "--health-probe-bind-address=127.0.0.1:8081" })
    assert.equal(":8080", o.metrics_bind)
    assert.equal("127.0.0.1:8081", o.health_bind)
    local script = proc.write_tmp [[
local mgr = ...
mgr:controller { name = "cli-web", ["for"] = "v1/configmaps", reconciler = function() end }
]]
    local mp, hp = free_port(), free_port()
    local log = os.tmpname()
    local p = assert(io.popen(string.format(
      "%s bin/kinformer run %s --sim --metrics-bind-address 127.0.0.1:%d "
        .. "--health-probe-bind-address 127.0.0.1:%d >%s 2>&1 & echo $!",
      proc.paths_env(), script, mp, hp, log)))
    local pid = assert(tonumber(p:read("a"):match("%d+")))
    p:close()
    local ok, err = pcall(function()
      wait_until(function() return select(2, get(hp, "/readyz")) == 200 end, 30, "/readyz 200")
      assert.equal(200, select(2, get(hp, "/healthz")))
      local text = get(mp, "/metrics")
      assert.equal(1, sample(text, 'controller_runtime_max_concurrent_reconciles{controller="cli-web"}'))
      assert.equal(1, sample(text, 'kinformer_informer_synced{informer="v1/configmaps"}'))
    end)
    os.execute("kill -TERM " .. pid)
    wait_until(function() return not os.execute("kill -0 " .. pid .. " 2>/dev/null") end, 30, "exit")
    local out = proc.read(log, true)
    os.remove(script)
    assert(ok, tostring(err) .. "\n" .. out)
  end)
end)

describe("a real Prometheus", function()
  local mgr, prom_pid, prom_dir

  setup(function()
    sim = assert(require("kinformer.sim").start {})
    tmpdir = os.tmpname()
    os.remove(tmpdir)
    assert(os.execute("mkdir -p " .. tmpdir))
    package.path = tmpdir .. "/?.lua;" .. package.path
  end)

  teardown(function()
    if prom_pid then os.execute("kill " .. prom_pid .. " 2>/dev/null; wait " .. prom_pid .. " 2>/dev/null") end
    if mgr then mgr:stop() end
    if sim then sim:stop() end
    if prom_dir then os.execute("rm -rf " .. prom_dir) end
    if tmpdir then os.execute("rm -rf " .. tmpdir) end
  end)

  it("scrapes the running operator and answers queries by controller-runtime's names", function()
    local _, has = proc.run("command -v prometheus")
    assert(has == 0, "prometheus is not installed (make deps installs Debian's prometheus)")
    mgr = assert(kinformer.manager { sim = sim, metrics_bind = "127.0.0.1:0" })
    local target = "127.0.0.1:" .. mgr:metrics_port()
    local ns = operator(mgr, "prom-web")
    prom_dir = os.tmpname()
    os.remove(prom_dir)
    assert(os.execute("mkdir -p " .. prom_dir .. "/data"))
    proc.write(prom_dir .. "/prometheus.yml", ([[
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: kinformer
    static_configs:
      - targets: ["%s"]
]]):format(target))
    local pport = free_port()
    local p = assert(io.popen(string.format(
      "prometheus --config.file=%s/prometheus.yml --storage.tsdb.path=%s/data "
        .. "--web.listen-address=127.0.0.1:%d >%s/prometheus.log 2>&1 & echo $!",
      prom_dir, prom_dir, pport, prom_dir)))
    prom_pid = assert(tonumber(p:read("a"):match("%d+")))
    p:close()
    local cjson = require "cjson"
    -- the value of the instant query q, once Prometheus has it
    local function query(q)
      local enc = q:gsub("[^%w_]", function(ch) return ("%%%02X"):format(ch:byte()) end)
      local body, code = get(pport, "/api/v1/query?query=" .. enc)
      if code ~= 200 then return nil end
      local ok, doc = pcall(cjson.decode, body)
      if not ok or doc.status ~= "success" or #doc.data.result == 0 then return nil end
      return tonumber(doc.data.result[1].value[2])
    end
    local function wait_query(q, want)
      local v
      local okw = pcall(eventually, mgr, function()
        v = query(q)
        return v == want
      end, 60, q)
      if not okw then
        error(("query %s: got %s, want %s; prometheus log:\n%s"):format(q, tostring(v), want,
          proc.read(prom_dir .. "/prometheus.log")))
      end
    end
    wait_query(('up{job="kinformer",instance="%s"}'):format(target), 1)
    wait_query('controller_runtime_reconcile_total{controller="prom-web",result="success"}', 2)
    wait_query('controller_runtime_reconcile_total{controller="prom-web",result="requeue_after"}', 1)
    wait_query('controller_runtime_reconcile_errors_total{controller="prom-web"}', 0)
    wait_query('controller_runtime_reconcile_time_seconds_count{controller="prom-web"}', 3)
    wait_query('controller_runtime_reconcile_time_seconds_bucket{controller="prom-web",le="+Inf"}', 3)
    wait_query('workqueue_adds_total{controller="prom-web",name="prom-web"}', 3)
    wait_query('workqueue_depth{name="prom-web"}', 0)
    wait_query(('spec_reconciles_total{ns="%s"}'):format(ns), 3)
    local host = sim.url:match("^https?://([^/]+)")
    wait_query(('rest_client_requests_total{code="201",method="POST",host="%s"}'):format(host), 4)
  end)
end)
