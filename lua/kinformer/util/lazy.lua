--- kinformer.util.lazy: tables whose fields are made on first use, kept
-- once made (the reconcile ctx, kinformer.ctx, and the webhook handler's
-- ctx, kinformer.webhook_run). Internal to the library; not part of the
-- documented API. Requires nothing, so any Lua state (worker states
-- included) may load it.
local M = {}

--- An __index metamethod: a field k of make is made as make[k](self) on
-- first read and stored in self (rawset, so later reads find it there);
-- any other k is looked up in methods.
function M.index(make, methods)
  return function(self, k)
    local f = make[k]
    if f then
      local v = f(self)
      rawset(self, k, v)
      return v
    end
    return methods[k]
  end
end

return M
