-- `make run`: the Website operator (examples/website) against kinformer.sim
-- seeded with examples/website/seed.json, or against the cluster of
-- $KUBECONFIG when it is set (the CRD is created first). While the operator
-- runs (in this process, 2 worker threads), the demo creates a Website,
-- scales it, changes its image and deletes it, waiting each time for the
-- operator to act; the operator logs each action it takes ("operator:"
-- lines on stderr) and the demo prints what it then finds on the server.
-- Ends by itself with a summary; exit 0 when every step was seen through.
--
--   LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH='build/release/?.so;;' lua5.4 examples/run_demo.lua
local kinformer = require "kinformer"
local core = require "kinformer.core"

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local website = { RESOURCE = "example.kinformer.io/v1/websites" }

local TIMEOUT = tonumber(os.getenv("KINFORMER_DEMO_TIMEOUT") or "") or 30
local t0 = core.monotime()

local function say(fmt, ...)
  io.stdout:write(string.format("[%5.2fs] ", core.monotime() - t0), string.format(fmt, ...), "\n")
  io.stdout:flush()
end

local function die(fmt, ...)
  io.stderr:write("run_demo: ", string.format(fmt, ...), "\n")
  os.exit(1)
end

-- the operator's own log lines, one per action, stand out on stderr
core.set_log_level("info")

-- ---- the server -------------------------------------------------------------
local sim, mgr, msg
local kubeconfig = os.getenv("KUBECONFIG")
if kubeconfig and kubeconfig ~= "" then
  mgr, msg = kinformer.manager{ kubeconfig = kubeconfig }
  if not mgr then die("cannot use KUBECONFIG=%s: %s", kubeconfig, tostring(msg)) end
  say("target: the cluster of KUBECONFIG=%s (%s)", kubeconfig, mgr.env:host())
else
  sim, msg = require("kinformer.sim").start{ seed = here .. "website/seed.json" }
  if not sim then die("cannot start kinformer.sim: %s", tostring(msg)) end
  say("target: kinformer.sim at %s, seeded with examples/website/seed.json", sim.url)
  mgr = assert(kinformer.manager{ sim = sim })
end
local c = mgr.client

local NS = sim and "shop" or "kinformer-demo"
if not sim then
  -- the CRD, then the namespace (both may exist from an earlier run)
  local f = assert(io.open(here .. "website/crd.json"))
  local crd = require("cjson").decode(f:read("a"))
  f:close()
  local _, err, code = c:create("apiextensions.k8s.io/v1/customresourcedefinitions", crd)
  if err and code ~= "AlreadyExists" then die("cannot create the Website CRD: %s", err) end
  say("%s the Website CRD", code == "AlreadyExists" and "found" or "created")
  local ok = mgr:wait_for(function()
    return c:list(website.RESOURCE, NS) ~= nil or mgr.env:resource(website.RESOURCE)
  end, TIMEOUT)
  if not ok then die("the Website CRD is not served after %ds", TIMEOUT) end
  _, err, code = c:create("v1/namespaces", { apiVersion = "v1", kind = "Namespace", metadata = { name = NS } })
  if err and code ~= "AlreadyExists" then die("cannot create namespace %s: %s", NS, err) end
  -- leftovers of an interrupted run
  local old = c:get(website.RESOURCE, NS, "demo")
  if old then
    c:delete(website.RESOURCE, NS, "demo")
    say("deleting Website %s/demo left by an earlier run", NS)
  end
end

-- ---- the operator -------------------------------------------------------------
assert(loadfile(here .. "website/operator.lua"))(mgr, { args = {} })
local ctl = mgr:controllers().website
local ok, serr = mgr:start{ timeout = TIMEOUT }
if not ok then die("%s", tostring(serr)) end
say("operator started: controller %q, 2 workers, caches synced", ctl:name())

-- ---- the scenario ----------------------------------------------------------------
local steps, failed = 0, 0

local function get(res, name, ns) return c:get(res, ns or NS, name) end

local function ready_for(site)
  local cond = site and site.status and site.status.conditions
  for _, x in ipairs(cond or {}) do
    if x.type == "Ready" and x.status == "True" and x.observedGeneration == site.metadata.generation then return x end
  end
  return nil
end

-- Runs one step: action(), then waits until check() returns a description.
local function step(title, action, check)
  steps = steps + 1
  say("step %d: %s", steps, title)
  if action then
    local r, err = action()
    if not r then
      failed = failed + 1
      say("  FAILED: %s", tostring(err))
      return
    end
  end
  local what = mgr:wait_for(check, TIMEOUT)
  if not what then
    failed = failed + 1
    say("  FAILED: nothing after %ds", TIMEOUT)
    return
  end
  say("  seen: %s", what)
end

local function describe_children(name, ns)
  local site, dep, svc = get(website.RESOURCE, name, ns), get("apps/v1/deployments", name, ns), get("v1/services", name, ns)
  local cond = ready_for(site)
  if not (dep and svc and cond) then return nil end
  local ctr = dep.spec.template.spec.containers[1]
  return string.format("Deployment %s/%s %d x %s, Service port %d, Website Ready=True for generation %d",
    ns or NS, name, math.tointeger(dep.spec.replicas), ctr.image, math.tointeger(svc.spec.ports[1].port),
    math.tointeger(site.metadata.generation))
end

if sim then
  step("the seeded Website default/hello is reconciled at start", nil, function()
    return describe_children("hello", "default")
  end)
end

step("create Website " .. NS .. "/demo (nginx:1.27, 2 replicas, port 8080)", function()
  return c:create({ apiVersion = "example.kinformer.io/v1", kind = "Website", metadata = { name = "demo", namespace = NS },
                    spec = { image = "nginx:1.27", replicas = 2, port = 8080 } })
end, function() return describe_children("demo") end)

step("scale it to 4 replicas", function()
  return c:patch(website.RESOURCE, NS, "demo", { spec = { replicas = 4 } }, { type = "merge" })
end, function()
  local d = get("apps/v1/deployments", "demo")
  return d and d.spec.replicas == 4 and ready_for(get(website.RESOURCE, "demo")) and describe_children("demo")
end)

step("change its image to nginx:1.28", function()
  return c:patch(website.RESOURCE, NS, "demo", { spec = { image = "nginx:1.28" } }, { type = "merge" })
end, function()
  local d = get("apps/v1/deployments", "demo")
  return d and d.spec.template.spec.containers[1].image == "nginx:1.28"
    and ready_for(get(website.RESOURCE, "demo")) and describe_children("demo")
end)

step("delete its Deployment behind the operator's back", function()
  local d = get("apps/v1/deployments", "demo")
  if not d then return nil, "no deployment" end
  local uid = d.metadata.uid
  local r, err = c:delete("apps/v1/deployments", NS, "demo")
  if r then rawset(_G, "demo_old_uid", uid) end
  return r, err
end, function()
  local d = get("apps/v1/deployments", "demo")
  return d and d.metadata.uid ~= rawget(_G, "demo_old_uid")
    and string.format("Deployment %s/demo recreated (%d x %s)", NS, math.tointeger(d.spec.replicas),
      d.spec.template.spec.containers[1].image)
end)

step("delete the Website (its finalizer makes the operator delete the children)", function()
  return c:delete(website.RESOURCE, NS, "demo")
end, function()
  local _, _, a = get(website.RESOURCE, "demo")
  local _, _, b = get("apps/v1/deployments", "demo")
  local _, _, s = get("v1/services", "demo")
  return a == "NotFound" and b == "NotFound" and s == "NotFound"
    and string.format("Website, Deployment and Service %s/demo are gone", NS)
end)

-- ---- summary -------------------------------------------------------------
local st = ctl:stats()
mgr:stop()
if sim then sim:stop() end
say("summary: %d steps, %d ok, %d failed; controller %q: %d reconciles (%d errors, %d terminal, %d requeues), "
  .. "%.1f ms reconciling",
  steps, steps - failed, failed, ctl:name(), st.reconcile_time_count or 0, st.reconcile_errors or 0,
  st.terminal_reconcile_errors or 0, (st.reconcile_requeue or 0) + (st.reconcile_requeue_after or 0),
  (st.reconcile_time_sum_seconds or 0) * 1000)
os.exit(failed == 0 and 0 or 1)
