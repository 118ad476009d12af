---@meta kinformer
-- LuaCATS definitions of kinformer's Lua API, for editors (lua-language-server,
-- EmmyLua): completion, hover docs and type checks of operator scripts. They
-- describe the API; they are never loaded at run time.
--
-- Point the language server at this folder (types/ of a checkout, or of the
-- installed rock: `$(luarocks --lua-version 5.4 show --rock-dir kinformer)/types`):
--
--   lua-language-server, .luarc.json in your project:
--     { "runtime.version": "Lua 5.4",
--       "workspace.library": [ "/path/to/kinformer/types" ] }
--   Neovim (lspconfig, lua_ls):
--     settings = { Lua = { runtime = { version = "Lua 5.4" },
--                          workspace = { library = { "/path/to/kinformer/types" } } } }
--   EmmyLua (emmylua_ls, emmylua_check), .emmyrc.json:
--     { "runtime": { "version": "Lua5.4" },
--       "workspace": { "library": [ "/path/to/kinformer/types" ] } }
--
-- An operator script gets its manager as `...`; tell the editor what it is:
--
--   ---@type kinformer.Manager
--   local mgr = ...
--
-- Then `mgr:controller{ ... }` completes the config's keys, and a reconciler
-- given as `reconciler = function(req, ctx) ... end` gets `req` and `ctx`
-- typed (kinformer.Request, kinformer.Ctx). Kubernetes objects are
-- kinformer.KObject (apiVersion, kind, metadata, then anything);
-- `kinformer types RESOURCE...` prints classes for a server's kinds
-- (k8s.apps.v1.Deployment, ...) to annotate them precisely:
-- `---@type k8s.apps.v1.Deployment`.
--
-- Layout: one file per module, at the path `require` uses
-- (types/kinformer/manager.lua is require "kinformer.manager"); types that
-- are no module have files of their own (client.lua, informer.lua,
-- env.lua, events.lua). A module's table is the class of its name in
-- lower case (kinformer.manager); the objects it makes are capitalised
-- (kinformer.Manager). spec/types_spec.lua checks these files against the
-- real modules and objects.

---Kubernetes status reasons and kinformer's error names: the `code` of a
---failure (`nil, message, code`).
---@alias kinformer.ErrorCode
---| "NotFound"
---| "Conflict"
---| "AlreadyExists"
---| "Invalid"
---| "BadRequest"
---| "Forbidden"
---| "Unauthorized"
---| "MethodNotAllowed"
---| "Gone"
---| "Expired"
---| "TooManyRequests"
---| "InternalError"
---| "ServiceUnavailable"
---| "Timeout"
---| "AlreadyOwned"
---| "ENOENT"
---| "EINVAL"
---| "EIO"
---| "ETIMEDOUT"
---| "ENOMEM"
---| "EBUSY"
---| "EEXIST"
---| "ECLOSED"
---| "ECONNREFUSED"
---| string

---A resource name: "[group/]version/resource" (the plural discovery lists),
---or "[group/]version/Kind" where a Kind is accepted.
---@alias kinformer.Resource
---| "v1/pods"
---| "v1/configmaps"
---| "v1/secrets"
---| "v1/services"
---| "v1/serviceaccounts"
---| "v1/namespaces"
---| "v1/nodes"
---| "v1/events"
---| "v1/persistentvolumeclaims"
---| "v1/endpoints"
---| "apps/v1/deployments"
---| "apps/v1/replicasets"
---| "apps/v1/statefulsets"
---| "apps/v1/daemonsets"
---| "batch/v1/jobs"
---| "batch/v1/cronjobs"
---| "networking.k8s.io/v1/ingresses"
---| "rbac.authorization.k8s.io/v1/roles"
---| "rbac.authorization.k8s.io/v1/rolebindings"
---| "coordination.k8s.io/v1/leases"
---| "events.k8s.io/v1/events"
---| "apiextensions.k8s.io/v1/customresourcedefinitions"
---| string

---@alias kinformer.LogLevel "error"|"warn"|"info"|"debug"

---An owner reference (metadata.ownerReferences[i]).
---@class kinformer.OwnerReference
---@field apiVersion string
---@field kind string
---@field name string
---@field uid string
---@field controller? boolean
---@field blockOwnerDeletion? boolean

---Object metadata (ObjectMeta); other members as the server sends them.
---@class kinformer.ObjectMeta
---@field name? string
---@field generateName? string
---@field namespace? string
---@field uid? string
---@field resourceVersion? string
---@field generation? integer
---@field creationTimestamp? string
---@field deletionTimestamp? string
---@field deletionGracePeriodSeconds? integer
---@field labels? table<string, string>
---@field annotations? table<string, string>
---@field finalizers? string[]
---@field ownerReferences? kinformer.OwnerReference[]
---@field managedFields? table[]
---@field [string] any

---A Kubernetes object as a Lua table: decoded JSON, or the lazy view
---handlers, listers and map functions get (read it as a table). For a
---precise type of a kind, see `kinformer types`.
---@class kinformer.KObject
---@field apiVersion? string
---@field kind? string
---@field metadata? kinformer.ObjectMeta
---@field spec? table
---@field status? table
---@field data? table<string, string>
---@field [string] any

---What on_delete gets when the last state was missed (DeletedFinalStateUnknown).
---@class kinformer.Tombstone
---@field key string
---@field object? kinformer.KObject

---A list answer (client:list).
---@class kinformer.KList
---@field apiVersion string
---@field kind string
---@field metadata { resourceVersion?: string, continue?: string, remainingItemCount?: integer }
---@field items kinformer.KObject[]

---A parsed object over its immutable JSON (kinformer.object): metadata
---accessors decode nothing; :decode() gives a fresh table. Supports <close>.
---@class kinformer.Object
local Object = {}

---"namespace/name", or "name" when cluster-scoped.
---@return string
function Object:key() end

---@return string
function Object:namespace() end

---@return string
function Object:name() end

---@return string
function Object:uid() end

---@return string
function Object:resource_version() end

---@return string
function Object:api_version() end

---@return string
function Object:kind() end

---metadata.generation (0 when absent).
---@return integer
function Object:generation() end

---@return boolean
function Object:is_tombstone() end

---Whether metadata.deletionTimestamp is set.
---@return boolean
function Object:being_deleted() end

---A tombstone's last known state, or nil.
---@return kinformer.Object?
function Object:last_state() end

---metadata.labels as a fresh table.
---@return table<string, string>
function Object:labels() end

---One label's value, or nil.
---@param key string
---@return string?
function Object:label(key) end

---The controller owner reference, or nil.
---@return { api_version: string, kind: string, name: string, uid: string }?
function Object:controller() end

---The cached JSON text.
---@return string
function Object:json() end

---A fresh table decoded from the JSON (integers as Lua integers), or
---nil, message, "EINVAL" when it nests too deeply.
---@return kinformer.KObject? obj
---@return string? msg
---@return kinformer.ErrorCode? code
---@return_overload kinformer.KObject
---@return_overload nil, string, kinformer.ErrorCode
function Object:decode() end

---A lazy view of the object, as handlers get it.
---@return kinformer.KObject
function Object:view() end

---Drops the object's reference (also on <close> and collection).
function Object:close() end

---The module: require "kinformer".
---@class kinformer
---@field _VERSION string "kinformer <version>"
---@field core kinformer.core the C module (csrc/lua)
local M = {}

---Parses one Kubernetes object from JSON. Returns the object, or nil,
---message, "EINVAL" when the JSON is malformed.
---@param json string
---@return kinformer.Object? obj
---@return string? msg
---@return kinformer.ErrorCode? code
---@return_overload kinformer.Object
---@return_overload nil, string, kinformer.ErrorCode
function M.object(json) end

---Makes a DeletedFinalStateUnknown tombstone for key, optionally holding
---the last known state.
---@param key string
---@param last? kinformer.Object
---@return kinformer.Object
function M.tombstone(key, last) end

---Decodes every lazy view in v, in place and deeply; returns v (plain
---tables afterwards, for next() and rawget()).
---@generic T
---@param v T
---@return T
function M.plain(v) end

---Whether v is a lazy view not yet decoded whole.
---@param v any
---@return boolean
function M.is_view(v) end

---Creates a manager (see kinformer.manager). Returns the manager, or nil,
---message, code; misuse raises at the caller's line.
---@param opts? kinformer.ManagerOptions
---@return kinformer.Manager? mgr
---@return string? msg
---@return kinformer.ErrorCode? code
---@return_overload kinformer.Manager
---@return_overload nil, string, kinformer.ErrorCode
function M.manager(opts) end

---Wraps err as a terminal error: a reconciler that raises or returns it
---is not retried. A terminal error is returned unchanged.
---@param err any
---@return kinformer.TerminalError
function M.terminal(err) end

---Whether v is a terminal error.
---@param v any
---@return boolean
function M.is_terminal(v) end

---v as indented JSON with sorted keys (for reading objects), or nil,
---message, "EINVAL" when it cannot be encoded.
---@param v any
---@return string? json
---@return string? msg
---@return kinformer.ErrorCode? code
---@return_overload string
---@return_overload nil, string, kinformer.ErrorCode
function M.dump(v) end

return M
