-- HTTP GETs of a local endpoint (curl) and reading Prometheus text, for the
-- specs of /metrics, /healthz and /readyz.
local proc = require "support.proc"

local M = {}

-- GET http://127.0.0.1:port<path>: body, status (a number; 0 when nothing
-- answered).
function M.get(port, path)
  local out = proc.run(string.format("curl -s --noproxy '*' -o - -w '\\n%%{http_code}' 'http://127.0.0.1:%d%s'",
    port, path))
  local body, code = out:match("^(.*)\n(%d+)$")
  return body, tonumber(code)
end

-- The value of the series line `series` (exact name and labels) in the
-- exposition text, or nil.
function M.sample(text, series)
  for line in text:gmatch("[^\n]+") do
    local k, v = line:match("^(.-) (%S+)$")
    if k == series then return tonumber(v) end
  end
  return nil
end

return M
