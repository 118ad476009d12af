--- kinformer.util.condition: status conditions, as apimachinery's
-- meta.FindStatusCondition / SetStatusCondition / IsStatusConditionTrue.
-- Each edits the table it is given; writing it back (client:update_status)
-- is up to the caller. Also ctx.get_condition etc.
local O = require "kinformer.util.object"

local options = require "kinformer.util.options"
local M = {}

--- The condition of type typ in obj.status.conditions, or nil.
function M.get_condition(obj, typ)
  O.check(obj, "get_condition")
  local st = obj.status
  local conds = type(st) == "table" and st.conditions
  if type(conds) ~= "table" then return nil end
  for _, c in ipairs(conds) do
    if c.type == typ then return c end
  end
  return nil
end

local function now_rfc3339()
  return os.date("!%Y-%m-%dT%H:%M:%SZ")
end

--- Sets a condition in obj.status.conditions, as apimachinery's
-- meta.SetStatusCondition: cond = {type=, status="True"|"False"|"Unknown",
-- reason=, message=, observed_generation= (default obj.metadata.generation),
-- last_transition_time= (default now)}. lastTransitionTime changes only
-- when the status changes (or the condition is new); reason, message and
-- observedGeneration are always set. Returns true when anything changed.
-- An unknown key in cond raises (with the closest valid one).
M.CONDITION_OPTIONS = { -- set_condition's cond keys: add new ones here
  "type", "status", "reason", "message", "observed_generation", "observedGeneration",
  "last_transition_time", "lastTransitionTime",
}
function M.set_condition(obj, cond)
  O.check(obj, "set_condition")
  if type(cond) ~= "table" then error("set_condition: cond must be a table", 2) end
  options.check(cond, M.CONDITION_OPTIONS, "set_condition")
  if type(cond.type) ~= "string" or cond.type == "" then error("set_condition: cond.type is required", 2) end
  local status = cond.status
  if status == true then status = "True" elseif status == false then status = "False" end
  if status ~= "True" and status ~= "False" and status ~= "Unknown" then
    error("set_condition: cond.status must be \"True\", \"False\" or \"Unknown\"", 2)
  end
  local gen = cond.observed_generation or cond.observedGeneration
  if gen == nil and type(obj.metadata) == "table" and O.present(obj.metadata.generation) then
    gen = obj.metadata.generation
  end
  if math.type(gen) == "float" and gen == math.floor(gen) then gen = math.tointeger(gen) end
  local ltt = cond.last_transition_time or cond.lastTransitionTime or now_rfc3339()
  if type(obj.status) ~= "table" then obj.status = {} end
  local st = obj.status
  if type(st.conditions) ~= "table" then st.conditions = {} end
  local existing = M.get_condition(obj, cond.type)
  if not existing then
    st.conditions[#st.conditions + 1] = {
      type = cond.type, status = status, reason = cond.reason, message = cond.message,
      observedGeneration = gen, lastTransitionTime = ltt,
    }
    return true
  end
  local changed = false
  if existing.status ~= status then
    existing.status = status
    existing.lastTransitionTime = ltt
    changed = true
  end
  for k, v in pairs { reason = cond.reason, message = cond.message, observedGeneration = gen } do
    if existing[k] ~= v then
      existing[k] = v
      changed = true
    end
  end
  return changed
end

--- Whether obj's condition typ has status "True".
function M.is_condition_true(obj, typ)
  local c = M.get_condition(obj, typ)
  return c ~= nil and c.status == "True"
end

return M
