---@meta
-- The event recorder (kinformer.event_recorder, csrc/lua/levent.c):
-- mgr:event_recorder(component); ctx:event uses the controller's. Types
-- only, no module.

---@class kinformer.EventRecorderStats
---@field queued integer
---@field dropped integer
---@field created integer
---@field patched integer
---@field spam_filtered integer
---@field failed integer
---@field api? "events.k8s.io/v1"|"v1" the API in use (nil before the first event)

---@alias kinformer.EventType "Normal"|"Warning"

---@class kinformer.EventRecorder
local EventRecorder = {}

---Queues an Event about obj (an object, or a reference {kind=, name=,
---namespace=, ...}) from this component, written asynchronously (client-go's
---correlator). Returns true once queued, nil, message, "EBUSY" when the
---queue is full.
---@param obj kinformer.KObject|table
---@param type kinformer.EventType
---@param reason string
---@param message? string
---@param action? string
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function EventRecorder:event(obj, type, reason, message, action) end

---Waits until every queued event was handled (timeout seconds, default 10).
---@param timeout? number
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function EventRecorder:flush(timeout) end

---The manager's recorder's counters.
---@return kinformer.EventRecorderStats
function EventRecorder:stats() end

---Drops this userdata's reference.
function EventRecorder:close() end
