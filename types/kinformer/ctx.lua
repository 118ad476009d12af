---@meta kinformer.ctx
-- kinformer.ctx (lua/kinformer/ctx.lua): what a reconciler gets as its
-- second argument (also map functions). The object helpers are called
-- ctx.f(obj, ...) (with a dot); the methods event and ensure with a colon.

---ctx:ensure's options.
---@class kinformer.EnsureOptions
---@field owner? false|kinformer.KObject the controller owner set on obj: default the request's object; false: none
---@field resource? kinformer.Resource default: from obj.apiVersion and obj.kind
---@field force? boolean default true: take fields other field managers own
---@field field_manager? string default: the controller's name
---@field adopt? boolean default true: an existing object nobody controls becomes the owner's; false: a terminal error

---@alias kinformer.EnsureResult "created"|"updated"|"unchanged"

---A reconcile's context.
---@class kinformer.Ctx
---@field client kinformer.Client the REST client (made on first use)
---@field listers table<string, kinformer.Informer?> listers["v1/pods"]: a read-only informer of the manager, or nil
---@field lister fun(name: string): kinformer.Informer?, string?, kinformer.ErrorCode? the same, or nil, message, code (ctx.lister, not ctx:lister)
---@field log kinformer.Logger tagged with the controller and key (ctx.log:info(...))
---@field request kinformer.Request
---@field controller string the controller's name
---@field worker integer the worker's index (0: reconcile_once, plan)
---@field env kinformer.Env
---@field for_resource? string the controller's For informer (ctx:object reads it)
local Ctx = {}

---The reconciled object: the For informer's cached copy of the request's
---key (a lazy view), or nil when it is gone; the server's copy before the
---cache synced (reconcile_once before mgr:start).
---@return kinformer.KObject?
function Ctx:object() end

---Writes an Event about obj from this controller (reportingController =
---its name), asynchronously: true once queued, nil, message, "EBUSY" when
---the queue is full.
---@param obj kinformer.KObject
---@param type kinformer.EventType
---@param reason string
---@param message? string
---@param action? string
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Ctx:event(obj, type, reason, message, action) end

---Makes the server's object match obj: creates it, or updates the fields
---obj sets (server-side apply under the controller's field manager), with
---the request's object as controller owner unless opts.owner says
---otherwise; no request when it already is as described. Returns the
---object and what happened, or nil, message, code (a terminal error when
---another owner controls it). Mind: `local o, state = ctx:ensure(x); if
---not o then return nil, state end`.
---@param obj kinformer.KObject
---@param opts? kinformer.EnsureOptions
---@return kinformer.KObject? obj
---@return kinformer.EnsureResult|string|nil result_or_msg "created", "updated" or "unchanged"; on failure the message
---@return kinformer.ErrorCode? code
---@return_overload kinformer.KObject, kinformer.EnsureResult
---@return_overload nil, string, kinformer.ErrorCode
function Ctx:ensure(obj, opts) end

---Whether obj.metadata.finalizers holds name.
---@param obj kinformer.KObject
---@param name string
---@return boolean
function Ctx.has_finalizer(obj, name) end

---Adds finalizer name; true when added (then update obj), false when present.
---@param obj kinformer.KObject
---@param name string
---@return boolean
function Ctx.ensure_finalizer(obj, name) end

---Removes finalizer name; true when one was removed.
---@param obj kinformer.KObject
---@param name string
---@return boolean
function Ctx.remove_finalizer(obj, name) end

---Whether obj has a deletionTimestamp.
---@param obj kinformer.KObject
---@return boolean
function Ctx.is_being_deleted(obj) end

---Makes owner obj's managing controller (an ownerReference with
---controller = true). Returns true, or nil, message, "AlreadyOwned" |
---"Invalid".
---@param owner kinformer.KObject
---@param obj kinformer.KObject
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Ctx.set_controller_reference(owner, obj) end

---Adds a plain ownerReference to owner on obj.
---@param owner kinformer.KObject
---@param obj kinformer.KObject
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Ctx.set_owner_reference(owner, obj) end

---The condition of type typ in obj.status.conditions, or nil.
---@param obj kinformer.KObject
---@param typ string
---@return kinformer.StatusCondition?
function Ctx.get_condition(obj, typ) end

---Sets a condition as meta.SetStatusCondition; true when anything changed.
---@param obj kinformer.KObject
---@param cond kinformer.ConditionInput
---@return boolean
function Ctx.set_condition(obj, cond) end

---Whether obj's condition typ has status "True".
---@param obj kinformer.KObject
---@param typ string
---@return boolean
function Ctx.is_condition_true(obj, typ) end

---kinformer.terminal.
---@param err any
---@return kinformer.TerminalError
function Ctx.terminal(err) end

---kinformer.is_terminal.
---@param v any
---@return boolean
function Ctx.is_terminal(v) end

---The module: require "kinformer.ctx". The helpers are also its functions.
---@class kinformer.ctx
---@field ENSURE_OPTIONS string[] ctx:ensure's option names
---@field metatable table every ctx's metatable (a controller's workers build each reconcile's ctx with it, as for_request does)
local M = {}

M.has_finalizer = Ctx.has_finalizer
M.ensure_finalizer = Ctx.ensure_finalizer
M.remove_finalizer = Ctx.remove_finalizer
M.is_being_deleted = Ctx.is_being_deleted
M.set_controller_reference = Ctx.set_controller_reference
M.set_owner_reference = Ctx.set_owner_reference
M.get_condition = Ctx.get_condition
M.set_condition = Ctx.set_condition
M.is_condition_true = Ctx.is_condition_true
M.terminal = Ctx.terminal
M.is_terminal = Ctx.is_terminal

---kinformer.log.logger.
---@param controller? string
---@param key? string
---@param component? string
---@return kinformer.Logger
function M.logger(controller, key, component) end

---A ctx over env (a kinformer.env) for info {controller=, worker=, request=, for_resource=}.
---@param env kinformer.Env
---@param info? { controller?: string, worker?: integer, request?: { namespace?: string, name: string, key?: string }, for_resource?: string }
---@return kinformer.Ctx
function M.new(env, info) end

---The workers' constructor: a ctx for one reconcile.
---@param env kinformer.Env
---@param controller string
---@param worker integer
---@param req kinformer.Request
---@param for_resource? string the For informer's name
---@return kinformer.Ctx
function M.for_request(env, controller, worker, req, for_resource) end

---"group/version/resource" ("version/resource" for the core group) of a
---resource table (client:resource's).
---@param r kinformer.ResourceInfo
---@return string
function M.resource_name(r) end

---What ctx:ensure ensured in this reconcile: a set of "<resource>\0<key>"
---(kinformer.lifecycle prunes the rest).
---@param ctx kinformer.Ctx
---@return table<string, true>
function M.ensured(ctx) end

---Makes ctx:object() return obj for the rest of this reconcile.
---@param ctx kinformer.Ctx
---@param obj kinformer.KObject
function M.set_object(ctx, obj) end

return M
