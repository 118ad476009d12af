---@meta kinformer.util.condition
-- kinformer.util.condition (lua/kinformer/util/condition.lua): status
-- conditions, as apimachinery's meta.FindStatusCondition,
-- SetStatusCondition, IsStatusConditionTrue.

---A condition in obj.status.conditions.
---@class kinformer.StatusCondition
---@field type string
---@field status "True"|"False"|"Unknown"
---@field reason? string
---@field message? string
---@field observedGeneration? integer
---@field lastTransitionTime? string

---set_condition's cond.
---@class kinformer.ConditionInput
---@field type string
---@field status "True"|"False"|"Unknown"|boolean
---@field reason? string
---@field message? string
---@field observed_generation? integer default obj.metadata.generation
---@field observedGeneration? integer
---@field last_transition_time? string default now (RFC 3339)
---@field lastTransitionTime? string

---@class kinformer.util.condition
---@field CONDITION_OPTIONS string[] set_condition's cond keys
local M = {}

---The condition of type typ, or nil.
---@param obj kinformer.KObject
---@param typ string
---@return kinformer.StatusCondition?
function M.get_condition(obj, typ) end

---Sets a condition (lastTransitionTime changes only with the status).
---Returns true when anything changed.
---@param obj kinformer.KObject
---@param cond kinformer.ConditionInput
---@return boolean
function M.set_condition(obj, cond) end

---Whether the condition typ has status "True".
---@param obj kinformer.KObject
---@param typ string
---@return boolean
function M.is_condition_true(obj, typ) end

return M
