-- Files and child processes for the specs: reading and writing (temporary)
-- files, a shell command with its output and exit status, and a Lua chunk
-- run in a fresh lua5.4 with this process's package paths, so that what it
-- logs lands in a captured stderr that the spec asserts instead of printing
-- it into the run.
local M = {}

-- The contents of path; with remove, the file is deleted after reading.
function M.read(path, remove)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  if remove then os.remove(path) end
  return s
end

-- Reads and deletes path (a temporary file a child wrote).
function M.slurp(path) return M.read(path, true) end

-- The lines of text that match none of the Lua patterns in the lists
-- given (a child's stderr against what its faults explain).
function M.unexpected_lines(text, ...)
  local lists, bad = { ... }, {}
  for line in text:gmatch("[^\n]+") do
    local ok = false
    for _, l in ipairs(lists) do
      for _, p in ipairs(l) do
        if line:find(p) then ok = true break end
      end
      if ok then break end
    end
    if not ok then bad[#bad + 1] = line end
  end
  return bad
end

-- spec/c/fixtures/<name>, shared by the C and the Lua specs.
function M.fixture(name) return M.read("spec/c/fixtures/" .. name) end

-- Writes text to path (created or replaced).
function M.write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- Writes text to a new temporary file; returns its path (the caller
-- removes it).
function M.write_tmp(text)
  local p = os.tmpname()
  M.write(p, text)
  return p
end

-- Runs cmd in the shell; returns its output (stdout, and stderr unless cmd
-- redirects it itself) and its exit status.
function M.run(cmd)
  if not cmd:find(" 2>", 1, true) then cmd = cmd .. " 2>&1" end
  local p = assert(io.popen(cmd .. "; echo \"rc=$?\""))
  local out = p:read("a")
  p:close()
  local rc = tonumber(out:match("rc=(%d+)%s*$"))
  return (out:gsub("rc=%d+%s*$", "")), rc
end

-- Runs cmd in the shell; returns its stdout (stderr as cmd leaves it).
function M.sh(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end

-- curl's status code and total time (seconds) for a GET of url (TLS not
-- verified: the endpoints under test are self-signed), with a bearer token
-- and extra curl arguments when given.
function M.curl(url, token, extra)
  local out = M.sh(("curl -sk --max-time 10 -o /dev/null -w '%%{http_code} %%{time_total}' %s %s '%s'")
    :format(token and ("-H 'Authorization: Bearer " .. token .. "'") or "", extra or "", url))
  local code, t = out:match("^(%d+) ([%d.]+)")
  return tonumber(code), tonumber(t)
end

-- The first lines of a child script: this process's package.path and
-- package.cpath, so the child loads the same modules.
function M.paths_prologue()
  return string.format("package.path = %q\npackage.cpath = %q\n", package.path, package.cpath)
end

-- LUA_PATH/LUA_CPATH assignments (for a shell command line) that give a
-- child (bin/kinformer, lua5.4 -i) this process's package paths.
function M.paths_env()
  return string.format("LUA_CPATH=%q LUA_PATH=%q", package.cpath, package.path)
end

-- `bin/kinformer manifests ARGS` with no kubeconfig reachable (planning
-- must not connect); returns the exit status, stdout and stderr.
function M.manifests(args)
  local errf = os.tmpname()
  local out, rc = M.run(string.format("KUBECONFIG=/nonexistent %s bin/kinformer manifests %s 2>%s",
    M.paths_env(), args, errf))
  return rc, out, M.slurp(errf)
end

-- Runs code (a Lua chunk) in a fresh lua5.4 with this process's paths.
-- opts (optional): env, shell assignments put before the command (e.g.
-- "KINFORMER_LOG_LEVEL=2"); extra, shell run once the child has started,
-- with its pid in $pid. Returns stdout, stderr and the exit status.
function M.run_lua(code, opts)
  opts = opts or {}
  local script, outf, errf = M.write_tmp(M.paths_prologue() .. code), os.tmpname(), os.tmpname()
  local sh = string.format("%s lua5.4 %s >%s 2>%s & pid=$!; %s wait $pid; echo $?",
    opts.env or "", script, outf, errf, opts.extra or "")
  local p = assert(io.popen(sh))
  local rc = tonumber(p:read("a"):match("(%d+)"))
  p:close()
  os.remove(script)
  return M.slurp(outf), M.slurp(errf), rc
end

-- build/<mode>/ of the kinformer.core that package.cpath (LUA_CPATH) names,
-- where the test programs (kin-fault-proxy, ...) of that build are.
function M.build_dir()
  for p in package.cpath:gmatch("[^;]+") do
    local d = p:match("^(.-build/[^/]+/)%?%.so$")
    if d then return d end
  end
  return "build/release/"
end

return M
