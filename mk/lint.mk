# Lint and type check of the Lua code (issue 22, editor support).
#
#   make lint       luacheck (Debian's lua-check, installed when missing)
#                   over lua/, bin/kinformer, examples/ and spec/ with
#                   .luacheckrc
#   make typecheck  EmmyLua's checker, emmylua_check (crates.io; built once
#                   with cargo into ~/.cache/kinformer-tools), with
#                   .emmyrc.json over types/ (the LuaCATS definitions), the
#                   examples, what `kinformer types` prints and lua/
#                   (tools/typecheck.sh says what each run checks)

.PHONY: lint typecheck

LINT_PATHS := lua bin/kinformer examples spec

lint:
	@tools/deps.sh lua-check
	luacheck --no-color -q $(LINT_PATHS)

typecheck: deps
	$(MAKE) --no-print-directory MODE=release $(LUA_MOD) $(SIM_MOD)
	tools/typecheck.sh
