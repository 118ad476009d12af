---@meta kinformer.controller
-- kinformer.controller (lua/kinformer/controller.lua, csrc/lua/lcontroller*.c):
-- controllers in the controller-runtime model, made by mgr:controller{...}.

---What a reconcile is for.
---@class kinformer.Request
---@field namespace string "" when cluster-scoped
---@field name string
---@field key string "namespace/name", or "name"

---What a reconciler may return first: nothing (done), a result table,
---or a terminal error (kinformer.terminal: no retry). Returning nil, err
---or raising retries with backoff.
---@class kinformer.ReconcileResult
---@field requeue_after? number run again after this many seconds
---@field priority? integer the requeue's priority in the priority queue (higher first; default the request's: 0 for fresh events, -100 for the initial list and resyncs)
---@field requeue? boolean run again (rate-limited)

---@alias kinformer.ReconcileReturn kinformer.ReconcileResult|kinformer.TerminalError|true

---A reconciler. Given as a function it runs in the workers' own Lua
---states, each with its own copy of its upvalues (local helpers,
---constants, config tables); the manager or any userdata cannot travel.
---@alias kinformer.ReconcileFn fun(req: kinformer.Request, ctx: kinformer.Ctx): kinformer.ReconcileReturn?, any?, string?

---A finalizer's cleanup: called when the object is being deleted (after
---its children were deleted); the finalizer is removed once it returns done.
---@alias kinformer.FinalizeFn fun(req: kinformer.Request, ctx: kinformer.Ctx, obj: kinformer.KObject): kinformer.ReconcileReturn?, any?, string?

---A map function of a watch: the requests an object of the watched
---resource enqueues.
---@alias kinformer.MapFn fun(obj: kinformer.KObject, ctx: kinformer.Ctx): kinformer.Request[]|{ namespace?: string, name: string }[]

---A predicate: a name, {label_selector = "a=b"}, {"and", p...},
---{"or", p...}, {"not", p}; a list of predicates is their AND.
---@alias kinformer.Predicate
---| "generation_changed"
---| "resource_version_changed"
---| "label_changed"
---| "annotation_changed"
---| { label_selector: string }
---| table

---@alias kinformer.Predicates kinformer.Predicate|kinformer.Predicate[]

---The controller's rate limiter (controller-runtime's default: per-key
---exponential backoff and an overall token bucket).
---@class kinformer.RateLimiter
---@field base_delay? number seconds (default 0.005)
---@field max_delay? number seconds (default 1000)
---@field qps? number default 10
---@field burst? integer default 100

---An `owns` entry: children that enqueue their controller owner.
---@class kinformer.OwnsEntry
---@field [1]? kinformer.Resource the resource (or resource =)
---@field resource? kinformer.Resource
---@field predicates? kinformer.Predicates
---@field informer_opts? kinformer.InformerOptions
---@field all_owners? boolean every owner reference of the owner's kind, not only the controller one

---A `watches` entry: objects that enqueue requests through map, owner,
---or themselves.
---@class kinformer.WatchesEntry
---@field [1]? kinformer.Resource the resource (or resource =)
---@field resource? kinformer.Resource
---@field predicates? kinformer.Predicates
---@field informer_opts? kinformer.InformerOptions
---@field map? string|kinformer.MapFn a function (its upvalues copied) or a module name
---@field owner? kinformer.Resource enqueue this owner kind (by owner reference)

---mgr:controller{...}'s config.
---@class kinformer.ControllerConfig
---@field name? string default: the `for` kind in lower case
---@field ["for"]? kinformer.Resource the reconciled resource (EnqueueRequestForObject)
---@field owns? (kinformer.Resource|kinformer.OwnsEntry)[] children enqueuing their controller owner
---@field watches? kinformer.WatchesEntry[]
---@field predicates? kinformer.Predicates applied to every watch
---@field workers? integer default 1
---@field rate_limiter? kinformer.RateLimiter
---@field reconciler string|kinformer.ReconcileFn a module name (returning a function or {reconcile=}) or a function (its upvalues copied to each worker)
---@field memory_limit? integer bytes per worker state
---@field reconcile_timeout? number seconds; default the manager's (none)
---@field busy_warning_after? number seconds; default the manager's (60; 0: never)
---@field priority_queue? boolean default true: controller-runtime's priority queue (the initial list and resyncs behind fresh events); false: client-go's FIFO
---@field informer_opts? kinformer.InformerOptions for every watch without its own
---@field replace? boolean stop a registered controller of that name first
---@field children? kinformer.Resource[] the resources of the objects the reconciler makes with ctx:ensure (watched as owned)
---@field prune? boolean default true: delete the children (of `children`, controlled by the object) that a successful reconcile did not ensure
---@field finalizer? string a finalizer added before the first reconcile, removed once `finalize` succeeded on delete
---@field finalize? string|kinformer.FinalizeFn runs instead of the reconciler when the object is being deleted (a function or a module with .finalize)
---@field selector? string a label selector: objects not matching it are let go (children pruned, finalizer removed), the reconciler not called
---@field rbac? kinformer.RbacRule[] RBAC rules the reconciler needs beyond what `kinformer manifests` derives

---ctl:stats().
---@class kinformer.ControllerStats
---@field reconcile_success integer
---@field reconcile_requeue integer
---@field reconcile_requeue_after integer
---@field reconcile_errors integer
---@field terminal_reconcile_errors integer
---@field reconcile_panics integer
---@field reconcile_time_count integer
---@field reconcile_time_sum_seconds number
---@field active_workers integer
---@field max_concurrent_reconciles integer
---@field queue_len integer
---@field stopping integer
---@field reconcile_timeouts integer
---@field reconcile_interrupts integer

---A reconcile in flight (ctl:busy()).
---@class kinformer.BusyWorker
---@field worker integer
---@field key string
---@field seconds number

---An item of the workqueue (ctl:queue()).
---@class kinformer.QueueItem
---@field key string
---@field state "ready"|"processing"|"waiting"
---@field due_in number waiting: seconds until it is added (controllers' clock)
---@field processing_for number processing: seconds
---@field requeues integer its retries

---An entry of a key's history (ctl:why(key)); tostring gives its line(s).
---@class kinformer.WhyEntry
---@field type "event"|"reconcile"
---@field time number wall clock, seconds
---@field line string
---@field cause? "add"|"update"|"delete"|"resync"|"owner"|"map"|"requeue"|"requeue_after"|"retry"|"manual" event
---@field enqueued? boolean event: false when a predicate dropped it
---@field detail? string event
---@field predicates? "passed"|"dropped" event
---@field after? number event: requeue_after's seconds
---@field error? string event: a retry's error
---@field number? integer reconcile
---@field worker? integer reconcile (1-based)
---@field duration? number reconcile: seconds
---@field result? "success"|"requeue"|"requeue_after"|"error"|"terminal" reconcile
---@field message? string reconcile
---@field nwrites? integer reconcile
---@field writes? { method: string, path: string, code: integer, denied?: kinformer.Denial }[] reconcile: at most 8

---An admission webhook's denial of a write (ctl:why, ctl:plan).
---@class kinformer.Denial
---@field webhook string the webhook's name (webhooks[].name)
---@field message string its message
---@field failed? boolean plan: the webhook could not be called (or cannot take a dry run)

---A plan's write (see kinformer.PlanReport).
---@class kinformer.PlanWrite
---@field verb string
---@field resource string
---@field namespace? string
---@field name? string
---@field subresource? string
---@field ok boolean
---@field error? string
---@field code? string
---@field denied? kinformer.Denial an admission webhook denied it

---A plan's change of one object.
---@class kinformer.PlanChange
---@field action "create"|"update"|"delete"
---@field kind string
---@field namespace? string
---@field name string
---@field before? table
---@field after? table
---@field diff string
---@field admission? string[] what mutating webhooks changed: diffs "as sent" vs "changed by admission", one per write

---One key of a plan.
---@class kinformer.PlanKey
---@field key string
---@field controller string
---@field result "done"|"requeue"|"requeue_after"|"error"|"terminal"
---@field detail? string
---@field changes kinformer.PlanChange[]
---@field writes kinformer.PlanWrite[]
---@field events { type: string, reason: string, message: string, regarding: string }[]

---What ctl:plan returns; tostring(report) is report.text.
---@class kinformer.PlanReport
---@field changed boolean some object would change
---@field failed boolean some reconcile failed or a key could not be planned
---@field text string unified diffs per key
---@field keys kinformer.PlanKey[]

---@class kinformer.PlanOptions
---@field timeout? number cache sync, seconds
---@field out? any a file (io.stdout, io.open's): the text is also written there

---A controller (mgr:controller). Supports <close>.
---@class kinformer.Controller
local Controller = {}

---Waits for the watched caches and starts the workers (mgr:start does it).
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Controller:start() end

---Stops (queued requests dropped, in-flight reconciles finish, interrupted
---after timeout seconds) and leaves the manager's registry.
---@param timeout? number
function Controller:stop(timeout) end

---Reloads the reconciler: its module again from its file, or code (a
---module name or a self-contained function). Returns true, or nil, msg
---(naming file:line), code when it fails to load (the old code runs on).
---@param code? string|kinformer.ReconcileFn
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Controller:reload(code) end

---Stops taking work without waiting; with timeout, interrupts reconciles
---still running then.
---@param timeout? number
function Controller:shutdown(timeout) end

---The reconciles in flight.
---@return kinformer.BusyWorker[]
function Controller:busy() end

---Stops and frees the controller. Also on <close>.
function Controller:close() end

---@return kinformer.ControllerStats
function Controller:stats() end

---Adds (ns, name) to the queue; ns nil or "" when cluster-scoped.
---@param ns string?
---@param name string
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Controller:enqueue(ns, name) end

---Adds (ns, name) for every name of names in one call (a C loop).
---@param ns string?
---@param names string[]
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Controller:enqueue_many(ns, names) end

---The key's bounded history, oldest first (tostring: one line per entry).
---@param key string|kinformer.Request|kinformer.KObject "ns/name", "name", a request or an object
---@param opts? { print?: boolean }
---@return kinformer.WhyEntry[]? history
---@return string? msg
---@return kinformer.ErrorCode? code
function Controller:why(key, opts) end

---@return string
function Controller:name() end

---How many times key failed in a row (0 when not failing).
---@param key string
---@return integer
function Controller:num_requeues(key) end

---@return integer
function Controller:queue_len() end

---The workqueue's items (at most max), and the smallest due_in of the
---waiting ones (nil when none wait).
---@param max? integer
---@return kinformer.QueueItem[] items
---@return number? next_due
function Controller:queue(max) end

---Runs the reconciler once in the calling state. Returns true (done) or
---the result table, or nil, err, code.
---@param req { namespace?: string, name: string }
---@return true|kinformer.ReconcileResult|nil result
---@return any err
---@return string? code
function Controller:reconcile_once(req) end

---What the reconciler would change for keys (nil: every key of the `for`
---informer), every write a server-side dry run.
---@param keys? string|kinformer.Request|(string|kinformer.Request)[]
---@param opts? kinformer.PlanOptions
---@return kinformer.PlanReport? report
---@return string? msg
---@return kinformer.ErrorCode? code
function Controller:plan(keys, opts) end

---The module: require "kinformer.controller" (mgr:controller is the way in).
---@class kinformer.controller
---@field OPTIONS string[] mgr:controller{...}'s keys
---@field ENTRY_OPTIONS { owns: string[], watches: string[] } the keys of owns and watches entries
---@field RUNTIME table the metatable of a runtime failure raised by new
---@field RBAC_KEYS string[] the keys of an rbac rule
local M = {}

---Checks the rbac option (a list of kinformer.RbacRule) of what ("controller",
---"kinformer.manager"); raises at the caller's line naming the entry.
---Returns rules.
---@param rules? kinformer.RbacRule[]
---@param what string
---@return kinformer.RbacRule[]?
function M.check_rbac(rules, what) end

---What a controller's workers run for cfg (internal): the reconciler, in
---the lifecycle with a finalizer, children or a selector, logged per
---reconcile with the manager's log_reconciles.
---@param mgr kinformer.Manager
---@param name string
---@param cfg kinformer.ControllerConfig
---@param lc_args table {owner resource, children}
---@return string|function
function M.worker_code(mgr, name, cfg, lc_args) end

---The reconciler of a controller with a finalizer, children or a selector
---(internal): cfg's code inside kinformer.lifecycle.
---@param cfg kinformer.ControllerConfig
---@param owner kinformer.ResourceInfo
---@param children { name: string, resource: string, informer: kinformer.Informer }[]
---@return function
function M.lifecycle_reconciler(cfg, owner, children) end

---The name ctl was registered under.
---@param ctl kinformer.Controller
---@return string?
function M.name_of(ctl) end

---What kinformer.plan needs of ctl (internal).
---@param ctl kinformer.Controller
---@return { name: string, reconciler: string|function, env: kinformer.Env, mgr: kinformer.Manager, for_informer?: kinformer.Informer, for_resource?: string }
function M.parts(ctl) end

---Creates a controller from cfg (mgr:controller calls it). Raises on a bad
---config; a runtime failure raises a value with metatable M.RUNTIME.
---@param mgr kinformer.Manager
---@param cfg kinformer.ControllerConfig
---@param opts? { claim?: fun(name: string) }
---@return kinformer.Controller
function M.new(mgr, cfg, opts) end

---The reconcile function of a reconciler (a function, or a module name),
---or nil, message (internal, shared with kinformer.plan).
---@param r string|function
---@return function? fn
---@return string? msg
function M.resolve(r) end

---xpcall's message handler for a reconcile run here (internal).
---@param e any
---@return any
function M.handler(e) end

return M
