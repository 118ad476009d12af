---@meta kinformer.replay
-- kinformer.replay (lua/kinformer/replay.lua): feeds a trace of
-- `kinformer record` through an operator script against kinformer.sim
-- and returns the writes its reconcilers made (the `kinformer replay`
-- command's parsing is not part of this API).

---A fault applied right after the at-th watch event.
---@class kinformer.ReplayFault
---@field at integer 0: before the first event
---@field fault "drop_watches"|"cut_watches"|"compact"|"fail_next"
---@field code? integer fail_next: the status (default 500)
---@field count? integer fail_next: how many requests (default 1)

---kinformer.replay.run's options.
---@class kinformer.ReplayOptions
---@field trace string the trace file
---@field script string the operator script
---@field faults? kinformer.ReplayFault[]
---@field namespace? string the manager's (default the trace's)
---@field settle? number seconds without a reconcile that count as quiet (default 0.1)
---@field timeout? number seconds an event or clock step may take to settle (default 30)
---@field tail? number seconds the fake clock runs on after the last event (default 1)
---@field args? string[] the script's opts.args
---@field user? string run the operator as this user (a token of the sim's) and return its requests too

---A write the operator made.
---@class kinformer.ReplayWrite
---@field verb "create"|"update"|"update_status"|"patch"|"delete"
---@field resource string
---@field namespace? string
---@field name? string
---@field subresource? string
---@field body? table

---A trace file's contents.
---@class kinformer.Trace
---@field header table the KinformerTrace line
---@field lists table[] the LIST lines
---@field events table[] the watch events

---The module: require "kinformer.replay".
---@class kinformer.replay
---@field FAULTS table<string, fun(sim: kinformer.Sim, f: kinformer.ReplayFault)> the faults by name
---@field USER_AGENT string writes with this User-Agent are left out (the replay itself puts through sim:put)
local M = {}

---Reads a trace file (raises on a malformed line, naming it).
---@param path string
---@return kinformer.Trace
function M.read_trace(path) end

---A write log entry {method, uri, userAgent, body} as a write, or nil for
---one the replay does not keep (its own, dry runs, Events, Leases).
---@param e { method: string, uri: string, userAgent?: string, body?: string }
---@return kinformer.ReplayWrite?
function M.write_of(e) end

---Replays opts.trace through opts.script; returns the writes (and, with
---opts.user, the sim's request log entries of that user). Misuse and
---failures raise.
---@param opts kinformer.ReplayOptions
---@return kinformer.ReplayWrite[] writes
---@return kinformer.SimRequest[]? requests
function M.run(opts) end

---Applies one recorded watch event ({type, resource, object}) to sim with
---sim:put: the change from the object's previous recorded state (in known,
---which maps the replay's keys to the last recorded states, false once
---deleted, and is updated) onto the sim's object, with the recorded uid,
---creationTimestamp, resourceVersion and generation; nothing when the sim's
---object already says the same. Returns true or the resourceVersion
---written, or nil and a message.
---@param sim kinformer.Sim
---@param ev { type: "ADDED"|"MODIFIED"|"DELETED", resource: string, object: table }
---@param known table<string, table|false>
---@return (true|integer)? ok
---@return string? err
function M.apply_event(sim, ev, known) end

---Sorts a trace's watch events in place into commit order (by numeric
---resourceVersion when every event has one; a DELETED no earlier than the
---events recorded before it); returns them.
---@param events table[]
---@return table[]
function M.commit_order(events) end

---Steps mgr until its controllers are quiet for settle seconds; raises
---after timeout.
---@param mgr kinformer.Manager
---@param settle number
---@param timeout number
function M.wait_quiet(mgr, settle, timeout) end

---The writes as indented JSON with sorted keys.
---@param writes kinformer.ReplayWrite[]
---@return string
function M.format(writes) end

---The distinct writes, sorted by their text.
---@param writes kinformer.ReplayWrite[]
---@return kinformer.ReplayWrite[]
function M.set(writes) end

return M
