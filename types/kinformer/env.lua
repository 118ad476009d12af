---@meta
-- kinformer.env (csrc/lua/lenv.c): the C state under a manager (one IO
-- engine, REST client and informer factory), mgr.env and ctx.env. Types
-- only, no module; the manager's methods are the usual way in.

---One informer's sync progress (env:sync_progress(), mgr:start's on_progress).
---@class kinformer.SyncProgress
---@field name string the registry name
---@field resource string
---@field synced boolean
---@field listed integer items listed so far
---@field expected integer the list's size as the server announced it (0 while unknown)
---@field cached integer
---@field watch_events integer

---@class kinformer.Env
local Env = {}

---As mgr:informer, without the manager's namespace default.
---@param resource kinformer.Resource
---@param opts? kinformer.InformerOptions
---@return kinformer.Informer? informer
---@return string? msg
---@return kinformer.ErrorCode? code
function Env:informer(resource, opts) end

---Starts every informer (later ones start as they are made).
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Env:start() end

---Blocks up to timeout seconds (nil: forever) for the caches.
---@param timeout? number
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Env:wait_for_cache_sync(timeout) end

---@return kinformer.SyncProgress[]
function Env:sync_progress() end

---@return kinformer.ConnectionHealth
function Env:connection_health() end

---Stops every informer and joins their threads. Idempotent.
function Env:shutdown() end

---A new REST client over this env. With `fenced = false` its writes (outside
---a reconcile) skip the leadership fence: for what every replica writes,
---leader or not (the webhook configurations at start).
---@param opts? {fenced?: boolean}
---@return kinformer.Client
function Env:client(opts) end

---@param component string
---@return kinformer.EventRecorder
function Env:event_recorder(component) end

---The C controller under kinformer.controller (a normalised spec; use mgr:controller).
---@param spec table
---@return kinformer.core.Controller
function Env:controller(spec) end

---@param name string
---@return kinformer.Informer? lister
---@return string? msg
---@return kinformer.ErrorCode? code
function Env:lister(name) end

---@param name kinformer.Resource
---@return kinformer.ResourceInfo? info
---@return string? msg
---@return kinformer.ErrorCode? code
---@return integer? http_code
function Env:resource(name) end

---The kubeconfig context's namespace.
---@return string
function Env:namespace() end

---The server URL.
---@return string
function Env:host() end

---Runs queued main-state handler events after waiting up to timeout seconds.
---@param timeout? number
---@return integer ran
function Env:step(timeout) end

---@return number seconds
---@return "fake"|"real" clock
function Env:clock_now() end

---@param seconds number
---@return number
function Env:clock_advance(seconds) end

---Takes SIGINT/SIGTERM (blocking them in this thread on first use):
---"SIGINT", "SIGTERM", or nil after timeout seconds (default 0).
---@param timeout? number
---@return "SIGINT"|"SIGTERM"|nil
function Env:wait_signal(timeout) end

---Closes the env (the manager's own shuts its informers down).
function Env:close() end
