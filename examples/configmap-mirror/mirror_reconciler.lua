--- The ConfigMap mirror's reconciler (examples/configmap-mirror).
--
-- A ConfigMap labelled kinformer.io/mirror=true gets a Secret of the same
-- name and namespace holding the same data (base64, as Secret.data wants),
-- with the ConfigMap as its controller owner. When the ConfigMap loses the
-- label or is deleted, the Secret is deleted: garbage-collection-style
-- cleanup done by the operator, since kinformer.sim and a bare
-- kube-apiserver run no garbage collector. A Secret of that name that the
-- ConfigMap does not control is never touched (terminal error).
local M = {}

M.LABEL = "kinformer.io/mirror"
M.MIRROR_OF = "kinformer.io/mirror-of"

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

--- Standard base64 with padding.
function M.base64(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local n = (a << 16) | ((b or 0) << 8) | (c or 0)
    local q = {
      B64:sub((n >> 18) + 1, (n >> 18) + 1),
      B64:sub(((n >> 12) & 63) + 1, ((n >> 12) & 63) + 1),
      b and B64:sub(((n >> 6) & 63) + 1, ((n >> 6) & 63) + 1) or "=",
      c and B64:sub((n & 63) + 1, (n & 63) + 1) or "=",
    }
    out[#out + 1] = table.concat(q)
  end
  return table.concat(out)
end

--- The Secret data for a ConfigMap: data base64-encoded, binaryData as is.
function M.secret_data(cm)
  local data, n = {}, 0
  for k, v in pairs(type(cm.data) == "table" and cm.data or {}) do
    if type(v) == "string" then data[k] = M.base64(v); n = n + 1 end
  end
  for k, v in pairs(type(cm.binaryData) == "table" and cm.binaryData or {}) do
    if type(v) == "string" then data[k] = v; n = n + 1 end
  end
  return data, n
end

local function same(a, b)
  for k, v in pairs(a) do if b[k] ~= v then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

local function wanted(cm)
  local l = cm and cm.metadata.labels
  return cm ~= nil and type(l) == "table" and l[M.LABEL] == "true"
    and not (cm.metadata.deletionTimestamp and cm.metadata.deletionTimestamp ~= "")
end

-- Whether the Secret's controller is the ConfigMap named name (any uid: the
-- ConfigMap may be gone already).
local function mirrors(secret, name)
  for _, r in ipairs(secret.metadata.ownerReferences or {}) do
    if r.controller and r.kind == "ConfigMap" and r.apiVersion == "v1" and r.name == name then return r end
  end
  return nil
end

function M.reconcile(req, ctx)
  local ns, name = req.namespace, req.name
  -- the cache is enough for the ConfigMap: every change of it enqueues again
  local cm = ctx.listers["v1/configmaps"]:get(req.key)
  local secret, err, code = ctx.client:get("v1/secrets", ns, name)
  if not secret and code ~= "NotFound" then error(err, 0) end

  if not wanted(cm) then
    local ref = secret and mirrors(secret, name)
    if not ref then return end
    if cm and ref.uid ~= cm.metadata.uid then return end -- a newer ConfigMap: not ours to judge
    local ok, derr, dcode = ctx.client:delete("v1/secrets", ns, name, { uid = secret.metadata.uid })
    if not ok and dcode ~= "NotFound" then error(derr, 0) end
    ctx.log:info("deleted Secret %s/%s (ConfigMap %s)", ns, name, cm and "no longer labelled" or "deleted")
    return
  end

  local data, n = M.secret_data(cm)
  if not secret then
    local s = {
      apiVersion = "v1", kind = "Secret", type = "Opaque",
      metadata = { name = name, namespace = ns, labels = { [M.MIRROR_OF] = name } },
      data = data,
    }
    assert(ctx.set_controller_reference(cm, s))
    local _, cerr, ccode = ctx.client:create("v1/secrets", s)
    if cerr then
      if ccode == "AlreadyExists" then return { requeue = true } end
      error(cerr, 0)
    end
    ctx.log:info("created Secret %s/%s with %d keys", ns, name, n)
    return
  end

  local ref = mirrors(secret, name)
  if not ref or ref.uid ~= cm.metadata.uid then
    -- a stale mirror of a deleted ConfigMap of the same name is replaced
    if ref then
      local ok, derr, dcode = ctx.client:delete("v1/secrets", ns, name, { uid = secret.metadata.uid })
      if not ok and dcode ~= "NotFound" then error(derr, 0) end
      ctx.log:info("deleted stale Secret %s/%s (mirror of an older ConfigMap)", ns, name)
      return { requeue = true }
    end
    return nil, ctx.terminal(("Secret %s/%s exists and is not a mirror of ConfigMap %s"):format(ns, name, name))
  end
  if same(data, type(secret.data) == "table" and secret.data or {}) then return end
  -- a merge patch cannot drop keys: replace the whole data map with an update
  secret.data = data
  local _, uerr = ctx.client:update("v1/secrets", secret)
  if uerr then error(uerr, 0) end
  ctx.log:info("updated Secret %s/%s (%d keys)", ns, name, n)
end

--- Registers the mirror controller on mgr. Returns the controller.
function M.register(mgr, opts)
  opts = opts or {}
  return mgr:controller{
    name = "configmap-mirror",
    ["for"] = "v1/configmaps",
    owns = { "v1/secrets" },
    workers = opts.workers or 1,
    reconciler = "mirror_reconciler",
  }
end

return M
