-- Raw HTTP to a kinformer.sim with curl, for specs that must not go
-- through the client under test: returns the decoded body (or nil) and the
-- HTTP status.
local cjson = require "cjson"

local function http(sim, method, path, body)
  local bodyf
  -- a PATCH is a JSON merge patch
  local ctype = method == "PATCH" and "application/merge-patch+json" or "application/json"
  local cmd = string.format("curl -s -o - -w '\\n%%{http_code}' -X %s -H 'Content-Type: %s' ",
    method, ctype)
  if body then
    bodyf = os.tmpname()
    local f = assert(io.open(bodyf, "w"))
    f:write(type(body) == "table" and cjson.encode(body) or body)
    f:close()
    cmd = cmd .. "--data-binary @" .. bodyf .. " "
  end
  local p = assert(io.popen(cmd .. "'" .. sim.url .. path .. "'"))
  local out = p:read("a")
  p:close()
  if bodyf then os.remove(bodyf) end
  local text, code = out:match("^(.*)\n(%d+)$")
  local ok, decoded = pcall(cjson.decode, text)
  return ok and decoded or nil, tonumber(code)
end

return http
