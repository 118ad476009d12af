-- Lua wrapper of spec/e2e/cluster.sh, for busted specs that need a real
-- kube-apiserver.
--
--   local cluster = require("e2e.cluster")     -- LUA_PATH has spec/?.lua
--   local c = cluster.start()                  -- raises with the log on failure
--   c.server, c.ca, c.admin_kubeconfig, c.token_kubeconfig, c.token, ...
--   local out, ok = cluster.kubectl(c, "get ns -o name")
--   cluster.stop(c)
--
-- The cluster's owner is this Lua process: if it dies without calling stop
-- (crash, Ctrl-C), the cluster.sh watchdog stops the cluster and removes its
-- state dir. cluster.attach() returns the cluster named by KINFORMER_E2E_DIR
-- (as exported by `cluster.sh run`) without owning it.

local M = {}

local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
M.script = here .. "cluster.sh"

local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- The pid of this Lua process: /proc/self is the process that opens it.
local function self_pid()
  local f = assert(io.open("/proc/self/stat", "r"))
  local line = f:read("l")
  f:close()
  return line:match("^(%d+)")
end

-- parse turns `export KEY='value'` lines into a table: KINFORMER_E2E_FOO
-- becomes field foo; every variable is also kept under env[KEY].
local function parse(text)
  local c = { env = {} }
  for key, value in text:gmatch("export ([%w_]+)='([^']*)'") do
    c.env[key] = value
    local short = key:match("^KINFORMER_E2E_(.+)$")
    if short then c[short:lower()] = value end
  end
  return c
end

-- start: starts a cluster owned by this process; returns its table.
-- opts.apiserver_flags / opts.etcd_flags: extra server flags (strings).
function M.start(opts)
  opts = opts or {}
  local env = ""
  if opts.apiserver_flags then env = env .. "KINFORMER_E2E_APISERVER_FLAGS=" .. quote(opts.apiserver_flags) .. " " end
  if opts.etcd_flags then env = env .. "KINFORMER_E2E_ETCD_FLAGS=" .. quote(opts.etcd_flags) .. " " end
  local errfile = os.tmpname()
  local p = assert(io.popen(env .. quote(M.script) .. " start --owner " .. self_pid() .. " 2>" .. quote(errfile), "r"))
  local out = p:read("a")
  local ok = p:close()
  local ef = io.open(errfile, "r")
  local err = ef and ef:read("a") or ""
  if ef then ef:close() end
  os.remove(errfile)
  local c = parse(out)
  if not ok or not c.dir then
    error("cluster.sh start failed:\n" .. err, 2)
  end
  c.owned = true
  c.log = err
  return c
end

-- attach: the already running cluster named by KINFORMER_E2E_DIR, or nil.
function M.attach()
  local dir = os.getenv("KINFORMER_E2E_DIR")
  if not dir or dir == "" then return nil end
  local f = io.open(dir .. "/env", "r")
  if not f then return nil end
  local c = parse(f:read("a"))
  f:close()
  c.owned = false
  return c
end

-- stop: stops a cluster this process started (an attached one is left).
function M.stop(c)
  if c and c.owned and c.dir then
    local ok = os.execute(quote(M.script) .. " stop " .. quote(c.dir))
    c.dir_stopped = c.dir
    c.dir = nil
    return ok
  end
  return true
end

-- kubectl: runs the built kubectl as the admin user (or as
-- opts.user = "token" / "nobody"); returns its output and success.
function M.kubectl(c, args, opts)
  local user = (opts and opts.user) or "admin"
  local kubeconfig = c[user .. "_kubeconfig"]
  local p = assert(io.popen(quote(c.kubectl) .. " --kubeconfig " .. quote(kubeconfig) .. " " .. args .. " 2>&1", "r"))
  local out = p:read("a")
  local ok = p:close()
  return out, ok == true
end

return M
