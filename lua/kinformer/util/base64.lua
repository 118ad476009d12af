--- kinformer.util.base64: base64 (RFC 4648, the standard alphabet) in
-- plain Lua, for the caBundle fields of webhook configurations and CRDs
-- (kinformer.webhook, kinformer.webhook_install). Internal to the library;
-- not part of the documented API.
local M = {}

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local B64_VAL = {}
for i = 1, 64 do B64_VAL[B64:byte(i)] = i - 1 end

--- s in base64, padded.
function M.encode(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local n = a * 65536 + (b or 0) * 256 + (c or 0)
    local q = {}
    for j = 1, 4 do
      local v = (n >> (6 * (4 - j))) & 63
      q[j] = B64:sub(v + 1, v + 1)
    end
    if not b then q[3] = "=" end
    if not c then q[4] = "=" end
    out[#out + 1] = table.concat(q)
  end
  return table.concat(out)
end

--- The bytes of base64 text s (whitespace and padding ignored), or nil
-- when s holds another character.
function M.decode(s)
  s = s:gsub("[%s=]", "")
  local out, n, bits = {}, 0, 0
  for i = 1, #s do
    local v = B64_VAL[s:byte(i)]
    if not v then return nil end
    n, bits = (n << 6) | v, bits + 6
    if bits >= 8 then
      bits = bits - 8
      out[#out + 1] = string.char((n >> bits) & 255)
      n = n & ((1 << bits) - 1)
    end
  end
  return table.concat(out)
end

return M
