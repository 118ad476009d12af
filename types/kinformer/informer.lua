---@meta
-- Informers (kinformer.informer, csrc/lua/linformer.c) and their handlers
-- (kinformer.handler, csrc/lua/lhandler.c): types only, no module.

---mgr:informer's options. The same resource and options give the same
---shared informer.
---@class kinformer.InformerOptions
---@field namespace? string only this namespace (default all, or the manager's namespace option)
---@field label_selector? string "app=web,tier!=db"
---@field field_selector? string "metadata.name=x"
---@field shard_selector? string KEP-5866 ranges ("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"), sent as ?shardSelector= and applied on the client too
---@field metadata_only? boolean cache PartialObjectMetadata only
---@field watch_list? boolean sync with a streaming watch instead of LIST
---@field content_type? "auto"|"json"|"protobuf" the encoding asked for (default the manager's: protobuf for built-in types, JSON for custom resources); the cache holds JSON either way
---@field keep_managed_fields? boolean keep metadata.managedFields (dropped by default)
---@field fields? string[] projection: cache only these dotted paths ("spec.replicas", "status") plus apiVersion, kind and metadata; the rest is dropped before caching (part of the identity)
---@field resync? number resync period in seconds (math.huge: never)
---@field watch_idle_timeout? number re-establish the watch after this long without a byte
---@field read_idle_timeout? number the watch connection's health check (seconds)
---@field ping_timeout? number the watch connection's health check (seconds)
---@field transform? string|fun(obj: kinformer.KObject): kinformer.KObject a self-contained function or a module name: runs on the reflector thread, table in, table out
---@field transform_memory_limit? integer bytes of the transform's Lua state
---@field transform_timeout? number seconds each transform call may run (default the manager's, 10; 0: none)
---@field transform_on_timeout? "keep"|"drop" a transform cut at its limit caches the object untransformed ("keep", the default) or as its identity only ("drop")

---An informer's handler functions: self-contained functions (no upvalues)
---or, with `main = true`, any closures run in the main state.
---@class kinformer.HandlerFuncs
---@field on_add? fun(obj: kinformer.KObject, in_initial_list: boolean)
---@field on_update? fun(old: kinformer.KObject, new: kinformer.KObject)
---@field on_delete? fun(obj: kinformer.KObject|kinformer.Tombstone)

---inf:add_handler's options.
---@class kinformer.HandlerOptions
---@field main? boolean run the functions in the main state, when mgr:step/mgr:wait_for/mgr:run pump events
---@field resync? number this handler's resync period (seconds)
---@field memory_limit? integer bytes of the handler's Lua state (a main handler: what one call may add to the main state; default the manager's main_memory_limit)

---@class kinformer.HandlerStats
---@field delivered integer
---@field errors integer
---@field pending integer
---@field last_delivered? number when the handler finished its last batch of notifications (core.monotime() seconds); absent before the first

---A handler set registered with inf:add_handler.
---@class kinformer.Handler
local Handler = {}

---True once the handler has handled its initial list.
---@return boolean
function Handler:has_synced() end

---Counters, nil once removed.
---@return kinformer.HandlerStats?
function Handler:stats() end

---Why the handler's Lua state could not be built, or nil.
---@return string?
function Handler:error() end

---"listener v1/pods #1", nil once removed.
---@return string?
function Handler:name() end

---A shared informer (mgr:informer) or a read-only lister (mgr:lister,
---ctx.listers): reads go to its cache; objects come out as lazy views.
---@class kinformer.Informer
local Informer = {}

---The cached object of key ("namespace/name" or "name"), or nil.
---@param key string
---@return kinformer.KObject?
function Informer:get(key) end

---Every cached object (unspecified order).
---@return kinformer.KObject[]
function Informer:list() end

---Every key, sorted.
---@return string[]
function Informer:keys() end

---How many objects are cached.
---@return integer
function Informer:len() end

---The cache's JSON bytes per object now and if each object were projected
---onto fields (the `fields` option's list), from the cached objects.
---@param fields string[]
---@return { objects: integer, bytes_per_object: number, projected_bytes_per_object: number }
function Informer:projected_size(fields) end

---What handlers and reconcilers have read of this informer's objects, as
---the fields projection that keeps it (kinformer.advise).
---@class kinformer.Advice
---@field informer? string the informer's name (mgr:advise, kinformer inspect advise)
---@field api_version string of its objects
---@field kind string
---@field objects integer cached now
---@field bytes_per_object number the cache's JSON bytes per object now
---@field advised_bytes_per_object number with fields
---@field fields? string[] the advised paths; nil when nothing was read yet, or when whole objects were (reads_all)
---@field reads_all boolean whole objects were read (pairs, encoding): nothing to drop

---The projection keeping what code read of this informer's objects, and
---the bytes per object now and with it.
---@return kinformer.Advice? advice
---@return string? msg
---@return kinformer.ErrorCode? code
function Informer:advise() end

---The objects whose index name has value (an unknown index raises).
---@param name string
---@param value string
---@return kinformer.KObject[]
function Informer:by_index(name, value) end

---Adds an index by a label's value (spec "label:<key>"); before start or after.
---@param name string
---@param spec string
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Informer:add_index(name, spec) end

---@return boolean
function Informer:has_synced() end

---Changes the informer's shard selector (nil or "": none); a running
---informer lists again at once: what left is deleted, what came added.
---@param selector? string
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Informer:set_shard_selector(selector) end

---The informer's sharding state.
---@class kinformer.ShardStatus
---@field selector? string the ranges, nil when none
---@field server_sharded? boolean the last list carried metadata.shardInfo (the server filtered); false: the client filters; nil: no list with a selector yet
---@field client_dropped integer objects the client-side filter dropped
---@field relists integer re-lists after set_shard_selector

---@return kinformer.ShardStatus
function Informer:shard_status() end

---The registry name: the resource and its options ("v1/configmaps?namespace=default").
---@return string
function Informer:name() end

---The resource as the informer was asked ("[group/]version/resource").
---@return string?
function Informer:resource() end

---Registers handler functions (a table, or a module name that returns
---one), each set on its own listener thread and Lua state unless main.
---Raises on a read-only lister.
---@param h kinformer.HandlerFuncs|string
---@param opts? kinformer.HandlerOptions
---@return kinformer.Handler
function Informer:add_handler(h, opts) end

---Stops and unregisters a handler set.
---@param h kinformer.Handler
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Informer:remove_handler(h) end
