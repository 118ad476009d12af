-- The ConfigMap mirror: `kinformer run examples/configmap-mirror/operator.lua
-- --sim --seed examples/configmap-mirror/seed.json`.
--
-- A ConfigMap labelled kinformer.io/mirror=true gets a Secret of the same
-- name and namespace holding the same data (base64, as Secret.data wants),
-- controlled by the ConfigMap. A data key removed from the ConfigMap goes
-- from the Secret; a Secret edited or deleted by hand is put back. When the
-- ConfigMap loses the label the Secret is pruned; when it is deleted, its
-- finalizer deletes the Secret first (so that it works on a bare
-- kube-apiserver too, which runs no garbage collector; kinformer.sim and a
-- cluster with kube-controller-manager would delete it through its owner
-- reference). A Secret of that name that the
-- ConfigMap does not control is never touched (terminal error).
---@type kinformer.Manager
local mgr = ...

local MIRROR_OF = "kinformer.io/mirror-of"
local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

-- Standard base64 with padding.
local function base64(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local n = (a << 16) | ((b or 0) << 8) | (c or 0)
    local function at(shift) local k = ((n >> shift) & 63) + 1 return B64:sub(k, k) end
    out[#out + 1] = at(18) .. at(12) .. (b and at(6) or "=") .. (c and at(0) or "=")
  end
  return table.concat(out)
end

-- The Secret data for a ConfigMap: data base64-encoded, binaryData as is.
local function secret_data(cm)
  local data, n = {}, 0
  for k, v in pairs(type(cm.data) == "table" and cm.data or {}) do
    if type(v) == "string" then data[k], n = base64(v), n + 1 end
  end
  for k, v in pairs(type(cm.binaryData) == "table" and cm.binaryData or {}) do
    if type(v) == "string" then data[k], n = v, n + 1 end
  end
  return data, n
end

assert(mgr:controller{
  name = "configmap-mirror",
  ["for"] = "v1/configmaps",
  selector = "kinformer.io/mirror=true",   -- the ConfigMaps it mirrors; one unlabelled is let go
  children = { "v1/secrets" },              -- the mirrors: what it no longer ensures is deleted
  finalizer = "kinformer.io/mirror",        -- deletes the mirror before the ConfigMap goes
  reconciler = function(req, ctx)
    local cm = ctx:object()
    if not cm then return end
    local data, n = secret_data(cm)
    local secret, state = ctx:ensure({
      apiVersion = "v1", kind = "Secret", type = "Opaque",
      metadata = { name = req.name, namespace = req.namespace, labels = { [MIRROR_OF] = req.name } },
      data = data,
    }, { adopt = false })                   -- a Secret nobody controls stays someone else's
    if not secret then return nil, state end
    if state ~= "unchanged" then ctx.log:info("%s Secret %s with %d keys", state, req.key, n) end
  end,
})
