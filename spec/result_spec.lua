-- What a reconciler's outcome means, decided in one place (issue 13):
-- csrc/lua/lresult.c, used by the controller's workers and exposed as
-- core.reconcile_result / core.is_terminal for controller.lua's
-- reconcile_once and errors.lua. Every return shape gives the answer the
-- workers gave before the rules had one owner.
local kinformer = require "kinformer"
local core = require "kinformer.core"
local errors = require "kinformer.errors"
local ctxmod = require "kinformer.ctx"

local T = kinformer.terminal
local BAD_AFTER = "reconcile returned a bad requeue_after (want seconds >= 0)"
local function bad_type(t)
  return ("reconcile returned a %s; return nothing, {requeue_after = seconds}, "
    .. "{requeue = true} (either with priority = n), or nil and an error"):format(t)
end
local shown = setmetatable({}, { __tostring = function() return "shown by __tostring" end })

-- { name, res, err, kind, detail, once }: once is what reconcile_once
-- returns: "true", "res" (the result table), "err" (nil, err as returned),
-- "res_err" (nil, res: a terminal result), or "detail" (nil, detail).
local RETURNS = {
  { "nothing", nil, nil, "done", nil, "true" },
  { "nil, err", nil, "boom", "error", "boom", "err" },
  { "false", false, nil, "done", nil, "true" },
  { "false, err", false, "boom", "error", "boom", "err" },
  { "true", true, nil, "done", nil, "true" },
  { "true, err (ignored)", true, "ignored", "done", nil, "true" },
  { "{}", {}, nil, "done", nil, "res" },
  { "{requeue = true}", { requeue = true }, nil, "requeue", nil, "res" },
  { "{requeue = false}", { requeue = false }, nil, "done", nil, "res" },
  { "{requeue_after = 5}", { requeue_after = 5 }, nil, "requeue_after", 5, "res" },
  { "{requeue_after = 0.25}", { requeue_after = 0.25 }, nil, "requeue_after", 0.25, "res" },
  { "{requeue_after = '2'}", { requeue_after = "2" }, nil, "requeue_after", 2, "res" },
  { "{requeue_after = 0}", { requeue_after = 0 }, nil, "done", nil, "res" },
  { "{requeue_after = 0, requeue = true}", { requeue_after = 0, requeue = true }, nil, "requeue", nil, "res" },
  { "{requeue_after = 3, requeue = true}", { requeue_after = 3, requeue = true }, nil, "requeue_after", 3, "res" },
  { "{requeue_after = -1}", { requeue_after = -1 }, nil, "error", BAD_AFTER, "detail" },
  { "{requeue_after = 'x'}", { requeue_after = "x" }, nil, "error", BAD_AFTER, "detail" },
  { "{requeue_after = 2e9}", { requeue_after = 2e9 }, nil, "error", BAD_AFTER, "detail" },
  { "{requeue_after = nan}", { requeue_after = 0 / 0 }, nil, "error", BAD_AFTER, "detail" },
  { "terminal", T("t"), nil, "terminal", "terminal error: t", "res_err" },
  { "nil, terminal", nil, T("t"), "terminal", "terminal error: t", "err" },
  { "false, terminal", false, T("t"), "terminal", "terminal error: t", "err" },
  { "{requeue = true}, terminal", { requeue = true }, T("t"), "requeue", nil, "res" },
  { "plain terminal table", { kinformer_terminal = true, message = "x" }, nil, "terminal", "x", "res_err" },
  { "nil, plain terminal table", nil, { kinformer_terminal = true, message = "x" }, "terminal", "x", "err" },
  { "nil, {message =}", nil, { message = "m" }, "error", "m", "err" },
  { "nil, {err =}", nil, { err = "e" }, "error", "e", "err" },
  { "nil, {}", nil, {}, "error", "(error object is a table value)", "err" },
  { "nil, 42", nil, 42, "error", "42", "err" },
  { "nil, __tostring", nil, shown, "error", "shown by __tostring", "err" },
  { "a string", "done?", nil, "error", bad_type("string"), "detail" },
  { "a number", 42, nil, "error", bad_type("number"), "detail" },
  { "a function", print, nil, "error", bad_type("function"), "detail" },
}

describe("core.reconcile_result (the one owner of the reconcile-result rules)", function()
  for _, c in ipairs(RETURNS) do
    local name, res, err, kind, detail = c[1], c[2], c[3], c[4], c[5]
    it("returned " .. name .. " -> " .. kind, function()
      local k, d = core.reconcile_result(true, res, err)
      assert.are.equal(kind, k)
      assert.are.equal(detail, d)
    end)
  end

  it("classifies raised errors: terminal or a retry", function()
    assert.are.same({ "error", "boom" }, { core.reconcile_result(false, "boom") })
    assert.are.same({ "terminal", "terminal error: t" }, { core.reconcile_result(false, T("t")) })
    assert.are.same({ "error", "m" }, { core.reconcile_result(false, { message = "m" }) })
    assert.are.same({ "error", "(error object is a nil value)" }, { core.reconcile_result(false, nil) })
  end)

  it("is the test every module uses for a terminal error", function()
    assert.are.equal(core.is_terminal, errors.is_terminal)
    assert.are.equal(core.is_terminal, kinformer.is_terminal)
    assert.are.equal(core.is_terminal, ctxmod.is_terminal)
    assert.is_true(core.is_terminal(T("x")))
    assert.is_true(core.is_terminal({ kinformer_terminal = true }))
    assert.is_false(core.is_terminal({ kinformer_terminal = 1 })) -- true, and only true
    assert.is_false(core.is_terminal({ kinformer_terminal = "yes" }))
    assert.is_false(core.is_terminal(setmetatable({}, { __index = { kinformer_terminal = true } })))
    assert.is_false(core.is_terminal("terminal error: x"))
    assert.is_false(core.is_terminal(nil))
    assert.is_false(core.is_terminal())
    assert.are.equal(T("x").message, "x")
    local t = T("x")
    assert.are.equal(t, T(t)) -- a terminal error is returned unchanged
  end)
end)

describe("ctl:reconcile_once follows the same rules", function()
  local sim, mgr, ctl
  setup(function()
    sim = assert(require("kinformer.sim").start {})
    mgr = assert(kinformer.manager { sim = sim })
    ctl = mgr:controller {
      name = "shapes", ["for"] = "v1/configmaps",
      -- runs in this state: the globals below are this state's
      reconciler = function(_req) return KIN_RESULT_SPEC_RES, KIN_RESULT_SPEC_ERR end,
    }
  end)
  teardown(function()
    KIN_RESULT_SPEC_RES, KIN_RESULT_SPEC_ERR = nil, nil
    if mgr then mgr:stop() end
    if sim then sim:stop() end
  end)

  for _, c in ipairs(RETURNS) do
    local name, res, err, detail, once = c[1], c[2], c[3], c[5], c[6]
    it("returned " .. name, function()
      KIN_RESULT_SPEC_RES, KIN_RESULT_SPEC_ERR = res, err
      local a, b = ctl:reconcile_once { namespace = "default", name = "x" }
      if once == "true" then
        assert.are.equal(true, a)
      elseif once == "res" then
        assert.are.equal(res, a)
      else
        assert.is_nil(a)
        local want = once == "err" and err or once == "res_err" and res or detail
        assert.are.equal(want, b)
      end
    end)
  end

  it("raised: a traceback, or the terminal error as is", function()
    local t = T("stop")
    ctl._reconciler = function() error(KIN_RESULT_SPEC_RES) end
    KIN_RESULT_SPEC_RES = t
    local a, b = ctl:reconcile_once { name = "x" }
    assert.is_nil(a)
    assert.are.equal(t, b)
    KIN_RESULT_SPEC_RES = "exploded"
    a, b = ctl:reconcile_once { name = "x" }
    assert.is_nil(a)
    assert.matches("exploded", b, 1, true)
    assert.matches("traceback", b, 1, true)
  end)
end)
