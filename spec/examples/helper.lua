-- Shared by the example specs (spec/examples/*_spec.lua): the target server
-- (a kinformer.sim started here, or the real kube-apiserver of `make e2e`
-- when KINFORMER_E2E_KUBECONFIG / KINFORMER_E2E_ADMIN_KUBECONFIG is set), a
-- REST client on it, a fresh namespace, polling, and the example operators
-- run as `bin/kinformer run ...` subprocesses.
--
--   local h = require("examples.helper")     -- LUA_PATH has spec/?.lua
--   local t = h.target()                     -- t.kubeconfig, t.client, t.real, t:stop()
--   local ns = h.namespace(t)
--   local op = h.operator("examples/website/operator.lua", t, { "--namespace", ns, "-v" })
--   h.eventually(function() return t.client:get("apps/v1/deployments", ns, "x") end, "deployment x")
--   assert.equal(0, op:stop())
local core = require "kinformer.core"

local M = {}

M.TIMEOUT = tonumber(os.getenv("KINFORMER_EXAMPLE_TIMEOUT") or "") or 20

local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end
M.quote = quote

--- s with the magic characters of Lua patterns escaped.
function M.esc(s)
  return (tostring(s):gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0"))
end

local function sleep(s)
  os.execute("sleep " .. tostring(s))
end
M.sleep = sleep

--- The kubeconfig of the real cluster when the e2e tier runs these specs.
function M.real_kubeconfig()
  for _, v in ipairs { "KINFORMER_E2E_KUBECONFIG", "KINFORMER_E2E_ADMIN_KUBECONFIG" } do
    local k = os.getenv(v)
    if k and k ~= "" then return k end
  end
  return nil
end

--- The server to run against: {kubeconfig=, client=, env=, real=bool,
-- sim=, stop=fn}. opts.seed: a seed file for the sim, opts.feature_gates
-- its feature gates (both ignored on a real cluster).
function M.target(opts)
  opts = opts or {}
  local t = {}
  local kc = M.real_kubeconfig()
  if kc then
    t.real, t.kubeconfig = true, kc
  else
    t.sim = assert(require("kinformer.sim").start{ seed = opts.seed, feature_gates = opts.feature_gates })
    t.kubeconfig = t.sim.kubeconfig
  end
  t.env = assert(core.env{ kubeconfig = t.kubeconfig })
  t.client = t.env:client()
  function t.stop()
    if t.env then t.env:shutdown() end
    if t.sim then t.sim:stop() end
  end
  return t
end

--- Polls fn() (every 50 ms) until it returns a true value; returns it. Fails
-- the spec with what and fn's last extra return values after M.TIMEOUT s.
function M.eventually(fn, what, timeout)
  local deadline = core.monotime() + (timeout or M.TIMEOUT)
  local last
  while true do
    local r = table.pack(fn())
    if r[1] then return r[1], table.unpack(r, 2, r.n) end
    last = r
    if core.monotime() >= deadline then
      local extra = {}
      for i = 2, last.n do extra[#extra + 1] = tostring(last[i]) end
      error(string.format("timed out after %gs waiting for %s%s", timeout or M.TIMEOUT, what,
        #extra > 0 and (" (" .. table.concat(extra, ", ") .. ")") or ""), 2)
    end
    sleep(0.05)
  end
end

--- A fresh namespace on the target (kinformer-ex-<prefix>-<random>).
function M.namespace(t, prefix)
  math.randomseed(os.time() + math.floor(core.monotime() * 1e6))
  local name = string.format("kinformer-ex-%s-%05d", prefix or "x", math.random(0, 99999))
  assert(t.client:create("v1/namespaces", { apiVersion = "v1", kind = "Namespace", metadata = { name = name } }))
  return name
end

--- Reads a whole file ("" when missing).
function M.read(path)
  local f = io.open(path, "r")
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end

local Op = {}
Op.__index = Op

--- Starts `bin/kinformer run script --kubeconfig <target> args...` in the
-- background, stdout and stderr to files. env: extra environment
-- ("K=V" strings). Returns the operator process {pid, out, err}.
function M.operator(script, t, args, env)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. quote(dir)))
  local cmd = { "bin/kinformer", "run", script }
  if t then
    cmd[#cmd + 1] = "--kubeconfig"
    cmd[#cmd + 1] = t.kubeconfig
  end
  for _, a in ipairs(args or {}) do cmd[#cmd + 1] = a end
  for i, a in ipairs(cmd) do cmd[i] = quote(a) end
  local envs = {}
  for _, e in ipairs(env or {}) do envs[#envs + 1] = quote(e) end
  -- a shell that waits for the operator and records its exit status
  local inner = string.format("env %s %s >%s/out 2>%s/err & echo $! >%s/pid; wait $!; echo $? >%s/rc",
    table.concat(envs, " "), table.concat(cmd, " "), dir, dir, dir, dir)
  assert(os.execute("sh -c " .. quote(inner) .. " >/dev/null 2>&1 &"))
  local op = setmetatable({ dir = dir }, Op)
  op.pid = M.eventually(function()
    local p = M.read(dir .. "/pid"):match("%d+")
    return p and tonumber(p)
  end, "the operator's pid", 5)
  return op
end

function Op:stdout() return M.read(self.dir .. "/out") end
function Op:stderr() return M.read(self.dir .. "/err") end

--- The exit status once the process ended, else nil.
function Op:status()
  local rc = M.read(self.dir .. "/rc"):match("%d+")
  return rc and tonumber(rc)
end

--- Waits until pattern (a Lua pattern) appears in stdout ("out") or
-- stderr ("err"); returns the captures / match. Fails with both outputs.
function Op:wait_output(pattern, which, timeout)
  return M.eventually(function()
    local text = which == "err" and self:stderr() or self:stdout()
    if self:status() then
      error(string.format("operator exited (%s) before printing %q\nstdout:\n%s\nstderr:\n%s",
        tostring(self:status()), pattern, self:stdout(), self:stderr()), 0)
    end
    return text:match(pattern)
  end, string.format("%q in the operator's %s", pattern, which == "err" and "stderr" or "stdout"), timeout)
end

--- Sends sig (default TERM) and waits for the exit; returns the status.
function Op:stop(sig)
  if not self:status() then os.execute(string.format("kill -%s %d 2>/dev/null", sig or "TERM", self.pid)) end
  local rc = M.eventually(function() return self:status() end, "the operator to exit", 30)
  return rc
end

--- Kills it (spec teardown after a failure) and removes its files.
function Op:cleanup()
  if not self:status() then
    os.execute(string.format("kill -KILL %d 2>/dev/null", self.pid))
    M.eventually(function() return self:status() end, "the operator to die", 10)
  end
  os.execute("rm -rf " .. quote(self.dir))
end

--- Deletes the namespace's objects of the given resources (real cluster:
-- the namespace itself stays Terminating without a controller-manager, so
-- its contents are removed here).
function M.cleanup_namespace(t, ns, resources)
  for _, res in ipairs(resources or {}) do
    local l = t.client:list(res, ns)
    for _, o in ipairs(l and l.items or {}) do
      if o.metadata.finalizers then
        o.metadata.finalizers = nil
        t.client:update(res, o)
      end
      t.client:delete(res, ns, o.metadata.name)
    end
  end
  t.client:delete("v1/namespaces", "", ns)
end

--- The controller owner reference of obj, or nil.
function M.controller_ref(obj)
  for _, r in ipairs(obj.metadata.ownerReferences or {}) do
    if r.controller then return r end
  end
  return nil
end

return M
