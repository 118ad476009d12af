-- luacheck (Debian's lua-check) configuration: `make lint` (mk/lint.mk)
-- checks lua/, bin/kinformer, examples/ and spec/ with it.
std = "lua54"
max_line_length = 130
-- lines of long strings and comments are text, not code
max_string_line_length = false
max_comment_line_length = false

-- busted's globals (describe, it, assert.are.same, ...) in the specs and
-- their helpers
files["spec"] = { std = "+busted" }

-- `kinformer repl` sets these globals for the session (lua/kinformer/cmd/repl.lua)
files["lua/kinformer/cmd/repl.lua"] = { globals = { "mgr", "sim", "kinformer", "controllers", "help", "pp" } }

-- Globals some specs set on purpose: a reconciler or handler that runs in
-- another Lua state (or the main state's handler queue) reads them there.
files["spec/controller_spec.lua"] = { globals = { "KIN_CTL_SPEC_ONCE" } }
files["spec/informer_spec.lua"] = { globals = { "MAIN_STATE_MARKER" } }
files["spec/result_spec.lua"] = { globals = { "KIN_RESULT_SPEC_RES", "KIN_RESULT_SPEC_ERR" } }

-- An operator's callbacks keep their whole signature (reconcile(req, ctx),
-- finalize(req, ctx, obj)) even where one argument is not used.
files["examples"] = { ignore = { "212/req" } }
files["spec/ensure_spec.lua"] = { globals = { "KIN_ENSURE_SPEC" } }
