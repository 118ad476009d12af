--- kinformer.plan_admission: what admission webhooks did to a planned
-- (dry-run) write, for kinformer.plan.
--
--   local A = require "kinformer.plan_admission"
--   A.denial(msg)      -- {webhook =, message =} when msg is a webhook's denial
--                      -- ("admission webhook \"x\" denied the request: ..."),
--                      -- {webhook =, message =, failed = true} when calling it
--                      -- failed ("failed calling webhook \"x\": ...") or it
--                      -- cannot take a dry run, else nil
--   A.changes(w)       -- diff text: what the server changed in w's object
--                      -- beyond what was sent, "" when nothing
--
-- A dry run goes through the whole admission chain, so the answer holds
-- what mutating webhooks did. The answer is compared with what the write
-- sent (a create, update or apply: the object; a merge patch: the object
-- before with the patch applied) and the differences are kept when a
-- webhook, not the server's defaulting, can have made them: a value the
-- write set that the answer changes or drops (defaulting never changes a
-- set field), and a field the answer adds that neither the write nor the
-- object before had, in metadata.labels / metadata.annotations of any
-- object and anywhere in a custom resource (built-in resources get
-- defaults the server fills in, which are not shown; a CRD's structural
-- schema defaults do show, as the server's answer cannot tell them from a
-- webhook's). Fields the server
-- always sets (resourceVersion, uid, managedFields, namespace...) and
-- .status are left out. JSON patches and strategic merge patches are not
-- compared (what they send is not an object). The diff is the object as
-- sent vs as sent with those changes, labelled "changed by admission".
local core = require "kinformer.core"
local yamlish = require "kinformer.yamlish"
local diff = require "kinformer.diff"
local builtin = require "kinformer.util.builtin_resources"

local M = {}

local NULL = core.null
local SERVER_META = { resourceVersion = true, managedFields = true, uid = true, creationTimestamp = true,
  generation = true, selfLink = true, namespace = true, name = true }

--- The denial of an admission webhook in msg (a write's error), or nil.
function M.denial(msg)
  if type(msg) ~= "string" then return nil end
  local name, rest = msg:match('admission webhook "([^"]+)" denied the request(.*)$')
  if name then
    local text = rest:match("^: (.*)$") or (rest:match("without explanation") and "(without explanation)") or rest
    return { webhook = name, message = text }
  end
  name, rest = msg:match('failed calling webhook "([^"]+)"[:;] (.*)$')
  if name then return { webhook = name, message = rest, failed = true } end
  name = msg:match('admission webhook "([^"]+)" does not support dry run')
  if name then
    return { webhook = name, failed = true,
      message = "it does not support dry run (its sideEffects is not None or NoneOnDryRun)" }
  end
  return nil
end

local function is_map(v) return type(v) == "table" and getmetatable(v) ~= core.array_mt and (next(v) == nil or #v == 0) end
local function is_array(v) return type(v) == "table" and not is_map(v) end

local values = require "kinformer.util.value"
local deep_copy, deep_equal = values.copy, values.equal

-- RFC 7386: target with the merge patch applied (a copy).
local function merge_patch(target, patch)
  if not is_map(patch) then return deep_copy(patch) end
  local out = is_map(target) and deep_copy(target) or {}
  for k, v in pairs(patch) do
    if v == NULL then out[k] = nil else out[k] = merge_patch(out[k], v) end
  end
  return out
end

-- Walks sent (e) against the answer (a), the object before (b) at the same
-- place; appends {path, value = (nil: removed)} to out for the admission
-- changes. adds(path): whether a field added at path counts.
local function walk(e, a, b, path, adds, out)
  if is_map(e) and is_map(a) then
    for k, v in pairs(e) do
      local p = path .. "\0" .. tostring(k)
      local skip = (path == "" and k == "status") or (path == "\0metadata" and SERVER_META[k])
      if not skip then
        if a[k] == nil then
          if v ~= NULL then out[#out + 1] = { path = p, keys = { k } } end
        else
          walk(v, a[k], is_map(b) and b[k] or nil, p, adds, out)
        end
      end
    end
    for k, v in pairs(a) do
      local p = path .. "\0" .. tostring(k)
      local skip = (path == "" and k == "status") or (path == "\0metadata" and SERVER_META[k])
      if e[k] == nil and not skip and not (is_map(b) and b[k] ~= nil) and adds(path, k) then
        out[#out + 1] = { path = p, value = v }
      end
    end
  elseif is_array(e) and is_array(a) and #e == #a then
    for i = 1, #e do walk(e[i], a[i], is_array(b) and b[i] or nil, path .. "\0" .. i, adds, out) end
  elseif not deep_equal(e, a) then
    out[#out + 1] = { path = path, value = a, changed = true }
  end
end

-- Sets (or removes, value nil) the field at path ("\0"-separated, numbers
-- for array items) in t.
local function set_path(t, path, value)
  local parts = {}
  for p in path:gmatch("%z([^%z]*)") do parts[#parts + 1] = p end
  if #parts == 0 then return value end
  local cur = t
  for i = 1, #parts - 1 do
    local k = parts[i]
    k = (is_array(cur) and tonumber(k)) or k
    if type(cur[k]) ~= "table" then cur[k] = {} end
    cur = cur[k]
  end
  local k = parts[#parts]
  k = (is_array(cur) and tonumber(k)) or k
  cur[k] = value
  return t
end

local function strip(obj)
  local c = deep_copy(obj)
  if type(c) == "table" then
    c.status = nil
    if type(c.metadata) == "table" then
      for k in pairs(SERVER_META) do
        if k ~= "name" and k ~= "namespace" then c.metadata[k] = nil end
      end
    end
  end
  return c
end

--- The diff of what admission changed in planned write w (kinformer.plan's
-- write record: verb, resource, label, namespace, name, subresource,
-- before, after, sent, patch_type), or "" (nothing, or not comparable).
function M.changes(w)
  if not w.ok or type(w.after) ~= "table" or w.subresource or w.verb == "delete" then return "" end
  local expected
  if w.verb == "patch" then
    if w.patch_type ~= nil and w.patch_type ~= "merge" then return "" end
    if not is_map(w.sent) or type(w.before) ~= "table" then return "" end
    expected = merge_patch(w.before, w.sent)
  elseif is_map(w.sent) then
    expected = w.sent
  else
    return ""
  end
  local group = w.resource and w.resource.group or ""
  local custom = group ~= "" and not builtin.GROUP_SET[group]
  local function adds(path, k)
    if custom then return true end
    if path == "\0metadata" then return k == "labels" or k == "annotations" end
    return path == "\0metadata\0labels" or path == "\0metadata\0annotations"
  end
  local before = (w.verb ~= "create") and w.before or nil
  local found = {}
  walk(expected, w.after, before, "", adds, found)
  if #found == 0 then return "" end
  local shown = strip(expected)
  local changed = deep_copy(shown)
  for _, f in ipairs(found) do changed = set_path(changed, f.path, deep_copy(f.value)) end
  local md = type(w.after.metadata) == "table" and w.after.metadata or {}
  local ns, name = md.namespace or w.namespace, md.name or w.name
  local label = string.format("%s %s", tostring(w.after.kind or w.label),
    (ns and ns ~= "") and (ns .. "/" .. tostring(name)) or tostring(name))
  return diff.unified(yamlish.lines(shown), yamlish.lines(changed),
    { from = label .. " (as sent)", to = label .. " (changed by admission)" })
end

return M
