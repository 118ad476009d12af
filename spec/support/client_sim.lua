-- A kinformer.sim set up as a real cluster is for its clients (spec/clients):
-- HTTPS with the fixture certificate (SAN 127.0.0.1), a bearer token, and a
-- kubeconfig that verifies the server against that certificate (no
-- insecure-skip-tls-verify) and sends the token; plus where the e2e tier
-- keeps kubectl, and a way to run a command in the background.
local simmod = require "kinformer.sim"
local proc = require "support.proc"

local M = {}

local ROOT = os.getenv("PWD")
M.TOKEN = "kinformer-clients"
M.CA = ROOT .. "/spec/c/fixtures/sim_tls.crt"

-- Starts the sim (more kinformer.sim.start options in opts, e.g.
-- authorization); returns it and the path of its kubeconfig (removed by
-- M.stop).
function M.start(opts)
  local o = { token = M.TOKEN, tls_cert = M.CA, tls_key = ROOT .. "/spec/c/fixtures/sim_tls.key" }
  for k, v in pairs(opts or {}) do o[k] = v end
  local sim = assert(simmod.start(o))
  local kc = os.tmpname()
  proc.write(kc, ([[
apiVersion: v1
kind: Config
clusters:
- name: sim
  cluster: {server: "%s", certificate-authority: "%s"}
users:
- name: client
  user: {token: "%s"}
contexts:
- name: sim
  context: {cluster: sim, user: client, namespace: default}
current-context: sim
]]):format(sim.url, M.CA, M.TOKEN))
  return sim, kc
end

function M.stop(sim, kc)
  if sim then sim:stop() end
  if kc then os.remove(kc) end
end

-- kubectl of the e2e tier (KINFORMER_E2E_KUBECTL overrides), built by
-- spec/e2e/build.sh kubectl when missing; returns its path or nil and why.
function M.kubectl()
  local k = os.getenv("KINFORMER_E2E_KUBECTL")
  if not k then
    local ver = proc.read(ROOT .. "/spec/e2e/versions.env"):match("K8S_VERSION=(v[%d.]+)")
    local cache = os.getenv("KINFORMER_E2E_CACHE") or (os.getenv("HOME") .. "/.cache/kinformer-e2e")
    k = cache .. "/" .. ver .. "/bin/kubectl"
  end
  local f = io.open(k, "rb")
  if f then f:close(); return k end
  local out, rc = proc.run(ROOT .. "/spec/e2e/build.sh kubectl")
  if rc ~= 0 then return nil, "spec/e2e/build.sh kubectl failed:\n" .. out end
  return k
end

-- Runs cmd in the background with its output in a new temporary file;
-- returns its pid and the file.
function M.spawn(cmd)
  local out = os.tmpname()
  local p = assert(io.popen(("%s >%s 2>&1 & echo $!"):format(cmd, out)))
  local pid = tonumber(p:read("a"):match("%d+"))
  p:close()
  return pid, out
end

-- Waits (up to secs) until pred() is true; returns its last value.
function M.wait_for(pred, secs)
  local deadline = os.time() + (secs or 10)
  repeat
    local v = pred()
    if v then return v end
    os.execute("sleep 0.1")
  until os.time() > deadline
  return pred()
end

return M
