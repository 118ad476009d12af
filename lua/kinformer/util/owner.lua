--- kinformer.util.owner: owner references, as controller-runtime's
-- controllerutil.SetControllerReference / SetOwnerReference. Each edits
-- the table it is given; writing it back is up to the caller. Also
-- ctx.set_controller_reference and ctx.set_owner_reference.
local O = require "kinformer.util.object"

local M = {}

-- The API group of an apiVersion ("apps/v1" -> "apps", "v1" -> "").
local function group_of(api_version)
  return api_version:match("^(.*)/[^/]*$") or ""
end

-- The ownerReference for owner (raises when owner lacks an identity field,
-- at the level-th caller above owner_ref's caller: O.check's count).
local function owner_ref(owner, what, level)
  O.check(owner, what, level)
  local m = owner.metadata
  local function need(v, field)
    if type(v) ~= "string" or v == "" then
      error(string.format("%s: the owner has no %s", what, field), level + 1)
    end
  end
  need(owner.apiVersion, "apiVersion")
  need(owner.kind, "kind")
  need(type(m) == "table" and m.name, "metadata.name")
  need(m.uid, "metadata.uid (was it read from the server?)")
  return { apiVersion = owner.apiVersion, kind = owner.kind, name = m.name, uid = m.uid }
end

-- Same object: same API group, kind and name (the version may differ).
local function same_owner(a, b)
  return type(a.apiVersion) == "string" and group_of(a.apiVersion) == group_of(b.apiVersion)
      and a.kind == b.kind and a.name == b.name
end

local function check_namespaces(owner, obj, what)
  local ons = type(owner.metadata) == "table" and owner.metadata.namespace
  local ns = type(obj.metadata) == "table" and obj.metadata.namespace
  if O.present(ons) and ons ~= "" and O.present(ns) and ns ~= "" and ons ~= ns then
    return nil, string.format("%s: cross-namespace owner references are disallowed: owner %s/%s, object in namespace %s",
      what, ons, owner.metadata.name, ns), "Invalid"
  end
  return true
end

local function upsert(obj, ref)
  local m = O.meta(obj)
  if type(m.ownerReferences) ~= "table" then m.ownerReferences = {} end
  local refs = m.ownerReferences
  for i, r in ipairs(refs) do
    if same_owner(r, ref) then
      refs[i] = ref
      return
    end
  end
  refs[#refs + 1] = ref
end

-- What both setters start with: owner's reference (raises when owner or
-- obj is not an object, or owner lacks an identity field) and obj's
-- current references (a table, maybe empty). Returns ref, refs; or nil,
-- msg, "Invalid" for owner and object in different namespaces.
local function prepare(owner, obj, what)
  local ref = owner_ref(owner, what, 4)
  O.check(obj, what, 3)
  local ok, msg, code = check_namespaces(owner, obj, what)
  if not ok then return nil, msg, code end
  local refs = type(obj.metadata) == "table" and obj.metadata.ownerReferences
  return ref, type(refs) == "table" and refs or {}
end

--- Makes owner the managing controller of obj: an ownerReference with
-- controller = true and blockOwnerDeletion = true (so garbage collection
-- deletes obj with owner, and Owns() watches map obj to owner). owner
-- must come from the server (metadata.uid). Returns true; or nil, msg,
-- "AlreadyOwned" when another object is obj's controller (controller-
-- runtime's AlreadyOwnedError), nil, msg, "Invalid" for owner and object
-- in different namespaces. Raises when owner or obj is not an object.
function M.set_controller_reference(owner, obj)
  local ref, refs, code = prepare(owner, obj, "set_controller_reference")
  if not ref then return nil, refs, code end
  for _, r in ipairs(refs) do
    if r.controller == true and not same_owner(r, ref) then
      return nil, string.format("object %s is already owned by another %s controller %s",
        O.label(obj), tostring(r.kind), tostring(r.name)), "AlreadyOwned"
    end
  end
  ref.controller = true
  ref.blockOwnerDeletion = true
  upsert(obj, ref)
  return true
end

--- Adds (or refreshes) a plain ownerReference to owner on obj, without
-- making it the controller; an existing reference to the same owner keeps
-- its controller and blockOwnerDeletion flags. Returns true, or nil, msg,
-- "Invalid" for different namespaces.
function M.set_owner_reference(owner, obj)
  local ref, refs, code = prepare(owner, obj, "set_owner_reference")
  if not ref then return nil, refs, code end
  for _, r in ipairs(refs) do
    if same_owner(r, ref) then
      ref.controller, ref.blockOwnerDeletion = r.controller, r.blockOwnerDeletion
      break
    end
  end
  upsert(obj, ref)
  return true
end

return M
