---@meta
-- The REST client (kinformer.client, csrc/lua/lclient.c): mgr.client,
-- ctx.client, env:client(). Types only, no module. Every verb blocks the
-- calling thread until the answer; a failure returns nil, message, code,
-- http_code (code: the Status reason, "NotFound", "Conflict", ..., or
-- "ENOENT", "EIO", "ETIMEDOUT"; http_code 0 when no answer came).

---@class kinformer.ListOptions
---@field label_selector? string
---@field field_selector? string
---@field limit? integer page size
---@field continue? string the previous page's metadata.continue
---@field resource_version? string

---@class kinformer.CreateOptions
---@field field_manager? string
---@field dry_run? boolean|"All" server-side dry run: validated, not stored
---@field subresource? string

---@class kinformer.UpdateOptions
---@field field_manager? string
---@field dry_run? boolean|"All"

---@class kinformer.PatchOptions
---@field type? "merge"|"json"|"strategic"|"apply" default "merge"
---@field field_manager? string ("kinformer" for apply)
---@field force? boolean apply: take fields other managers own
---@field subresource? string "status", "scale"
---@field dry_run? boolean|"All"

---@class kinformer.ApplyOptions
---@field field_manager? string default "kinformer"
---@field force? boolean
---@field dry_run? boolean|"All"
---@field subresource? string

---@class kinformer.DeleteOptions
---@field propagation_policy? "Foreground"|"Background"|"Orphan"
---@field grace_period? integer seconds
---@field uid? string precondition: "Conflict" when it does not hold
---@field resource_version? string precondition
---@field dry_run? boolean|"All"

---What discovery says of a resource.
---@class kinformer.ResourceInfo
---@field group string "" for the core group
---@field version string
---@field resource string the plural
---@field kind string
---@field namespaced boolean

---The server's /version document.
---@class kinformer.ServerVersion
---@field major string
---@field minor string
---@field gitVersion string
---@field [string] any

---@class kinformer.Client
local Client = {}

---GET one object (namespace nil or "" when cluster-scoped).
---@param resource kinformer.Resource
---@param namespace string?
---@param name string
---@return kinformer.KObject? obj
---@return string? msg
---@return kinformer.ErrorCode? code
---@return integer? http_code
---@return_overload kinformer.KObject
---@return_overload nil, string, kinformer.ErrorCode, integer
function Client:get(resource, namespace, name) end

---LIST (namespace nil: every namespace).
---@param resource kinformer.Resource
---@param namespace? string
---@param opts? kinformer.ListOptions
---@return kinformer.KList? list
---@return string? msg
---@return kinformer.ErrorCode? code
---@return integer? http_code
---@return_overload kinformer.KList
---@return_overload nil, string, kinformer.ErrorCode, integer
function Client:list(resource, namespace, opts) end

---POST obj (a table or JSON text); without resource it comes from
---obj.apiVersion and obj.kind. Returns the created object.
---@param resource kinformer.Resource
---@param obj kinformer.KObject|string
---@param opts? kinformer.CreateOptions
---@return kinformer.KObject? obj
---@return string? msg
---@return kinformer.ErrorCode? code
---@return integer? http_code
---@return_overload kinformer.KObject
---@return_overload nil, string, kinformer.ErrorCode, integer
---@overload fun(self: kinformer.Client, obj: kinformer.KObject|string, opts?: kinformer.CreateOptions): kinformer.KObject?, string?, kinformer.ErrorCode?, integer?
function Client:create(resource, obj, opts) end

---PUT obj with optimistic concurrency ("Conflict" when its
---metadata.resourceVersion is stale).
---@param resource kinformer.Resource
---@param obj kinformer.KObject|string
---@param opts? kinformer.UpdateOptions
---@return kinformer.KObject? obj
---@return string? msg
---@return kinformer.ErrorCode? code
---@return integer? http_code
---@return_overload kinformer.KObject
---@return_overload nil, string, kinformer.ErrorCode, integer
---@overload fun(self: kinformer.Client, obj: kinformer.KObject|string, opts?: kinformer.UpdateOptions): kinformer.KObject?, string?, kinformer.ErrorCode?, integer?
function Client:update(resource, obj, opts) end

---PUT obj's status subresource.
---@param resource kinformer.Resource
---@param obj kinformer.KObject|string
---@param opts? kinformer.UpdateOptions
---@return kinformer.KObject? obj
---@return string? msg
---@return kinformer.ErrorCode? code
---@return integer? http_code
---@return_overload kinformer.KObject
---@return_overload nil, string, kinformer.ErrorCode, integer
---@overload fun(self: kinformer.Client, obj: kinformer.KObject|string, opts?: kinformer.UpdateOptions): kinformer.KObject?, string?, kinformer.ErrorCode?, integer?
function Client:update_status(resource, obj, opts) end

---PATCH (a table, JSON-encoded, or a string).
---@param resource kinformer.Resource
---@param namespace string?
---@param name string
---@param patch table|string
---@param opts? kinformer.PatchOptions
---@return kinformer.KObject? obj
---@return string? msg
---@return kinformer.ErrorCode? code
---@return integer? http_code
---@return_overload kinformer.KObject
---@return_overload nil, string, kinformer.ErrorCode, integer
function Client:patch(resource, namespace, name, patch, opts) end

---Server-side apply of obj (a table, or YAML/JSON text) under
---field_manager; name and namespace come from obj.
---@param resource kinformer.Resource
---@param obj kinformer.KObject|string
---@param opts? kinformer.ApplyOptions
---@return kinformer.KObject? obj
---@return string? msg
---@return kinformer.ErrorCode? code
---@return integer? http_code
---@return_overload kinformer.KObject
---@return_overload nil, string, kinformer.ErrorCode, integer
---@overload fun(self: kinformer.Client, obj: kinformer.KObject|string, opts?: kinformer.ApplyOptions): kinformer.KObject?, string?, kinformer.ErrorCode?, integer?
function Client:apply(resource, obj, opts) end

---DELETE by name, or the object named by obj (resource from its
---apiVersion and kind).
---@param resource kinformer.Resource
---@param namespace string?
---@param name string
---@param opts? kinformer.DeleteOptions
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
---@return integer? http_code
---@return_overload true
---@return_overload nil, string, kinformer.ErrorCode, integer
---@overload fun(self: kinformer.Client, obj: kinformer.KObject, opts?: kinformer.DeleteOptions): true?, string?, kinformer.ErrorCode?, integer?
function Client:delete(resource, namespace, name, opts) end

---The server's /version.
---@return kinformer.ServerVersion? version
---@return string? msg
---@return kinformer.ErrorCode? code
---@return integer? http_code
---@return_overload kinformer.ServerVersion
---@return_overload nil, string, kinformer.ErrorCode, integer
function Client:server_version() end

---GET of a path of the server ("/openapi/v3", "/apis"): the body as text
---and its Content-Type.
---@param path string
---@return string? body
---@return string? content_type_or_msg the Content-Type; on failure the message
---@return kinformer.ErrorCode? code
---@return integer? http_code
---@return_overload string, string
---@return_overload nil, string, kinformer.ErrorCode, integer
function Client:get_raw(path) end

---Discovery's answer for a resource name.
---@param name kinformer.Resource
---@return kinformer.ResourceInfo? info
---@return string? msg
---@return kinformer.ErrorCode? code
---@return integer? http_code
---@return_overload kinformer.ResourceInfo
---@return_overload nil, string, kinformer.ErrorCode, integer
function Client:resource(name) end

---The kubeconfig context's namespace ("default").
---@return string
function Client:namespace() end

---Drops the client's reference to the manager's state. Idempotent.
function Client:close() end
