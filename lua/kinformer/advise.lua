--- kinformer.advise: the projection each informer could use, from what
-- handlers and reconcilers have actually read of its objects (the lazy
-- views record the first read of each member: read_paths.h), with the
-- cache's JSON bytes per object now and with it. mgr:advise() in a script
-- or the REPL; `kinformer inspect advise` asks a running operator the same
-- through its admin endpoint (GET /advise).
--
--   for _, a in ipairs(mgr:advise()) do print(a.informer, a.fields and table.concat(a.fields, ",")) end
--   io.write(require("kinformer.advise").format(mgr:advise()), "\n")
local M = {}

--- The advice for every informer of mgr: an array of {informer =,
-- api_version =, kind =, objects =, bytes_per_object =,
-- advised_bytes_per_object =, fields = {paths...} | nil, reads_all =}.
-- fields is nil when nothing was read yet (reads_all false) or when whole
-- objects were read (reads_all true: iterated with pairs, encoded, ...).
function M.of(mgr)
  local out = {}
  for _, p in ipairs(mgr.env:sync_progress()) do
    local inf = mgr:lister(p.name)
    local a = inf and inf:advise()
    if a then
      a.informer = p.name
      out[#out + 1] = a
    end
  end
  table.sort(out, function(x, y) return x.informer < y.informer end)
  return out
end

local function quote_list(fields)
  local q = {}
  for i, f in ipairs(fields) do q[i] = string.format("%q", f) end
  return "{ " .. table.concat(q, ", ") .. " }"
end

--- Text for a list of advice (M.of's, or the admin endpoint's "advise").
function M.format(list)
  local out = { "ADVISE (informer option fields = {...}: keeps what was read, plus apiVersion, kind, metadata)" }
  if #list == 0 then out[#out + 1] = "  (no informers)" end
  for _, a in ipairs(list) do
    local now, adv = a.bytes_per_object or 0, a.advised_bytes_per_object or 0
    local fields = type(a.fields) == "table" and a.fields or nil -- JSON null: not a table
    out[#out + 1] = string.format("  %s (%s %s): %d objects, %.0f bytes each", a.informer,
      a.api_version or "?", a.kind or "?", a.objects or 0, now)
    if fields and #fields > 0 then
      out[#out + 1] = string.format("    with fields = %s: %.0f bytes each (%.2fx)", quote_list(fields), adv,
        now > 0 and adv / now or 1)
    elseif a.reads_all then
      out[#out + 1] = "    whole objects are read (pairs, encoding, kinformer.plain): keep everything"
    else
      out[#out + 1] = "    nothing read yet: run the handlers and reconcilers, then ask again"
    end
  end
  return table.concat(out, "\n")
end

return M
