/* test_view.c -- lazy views of cached objects (csrc/lua/lview.h) under the
 * sanitizers: read through a view equals the full decode, encoding a
 * partly read and changed view, views outliving their kinformer.object,
 * and Lua memory errors in the middle of a view's decode (no leak of the
 * kin_obj reference, no half-made view). spec/view_spec.lua covers the
 * behaviour in depth. */
#include "kin_test.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "limited_alloc.h"
#include "kobj.h"
#include "ljson.h"
#include "lview.h"

int luaopen_kinformer_core(lua_State *L);

/* same(a, b): b read through its metamethods (b may be a view) */
static const char *SAME_SRC =
    "local function same(a, b)\n"
    "  if type(a) ~= 'table' then\n"
    "    return a == b and math.type(a) == math.type(b)\n"
    "  end\n"
    "  if type(b) ~= 'table' then return false end\n"
    "  local n = 0\n"
    "  for k, v in pairs(a) do n = n + 1; if not same(v, b[k]) then return false end end\n"
    "  for _ in pairs(b) do n = n - 1 end\n"
    "  return n == 0\n"
    "end\n"
    "same_value = same\n";

static lua_State *new_state(void) {
  lua_State *L = luaL_newstate();
  assert_non_null(L);
  luaL_openlibs(L);
  luaL_requiref(L, "kinformer.core", luaopen_kinformer_core, 1);
  lua_setglobal(L, "core");
  assert_int_equal(luaL_dostring(L, SAME_SRC), LUA_OK);
  return L;
}

static void lua_true(lua_State *L, const char *src) {
  if (luaL_dostring(L, src) != LUA_OK) fail_msg("%s: %s", src, lua_tostring(L, -1));
  if (!lua_toboolean(L, -1)) fail_msg("not true: %s", src);
  lua_settop(L, 0);
}

static void set_pod(lua_State *L) {
  size_t n;
  char *pod = kin_test_fixture("pod.json", &n);
  lua_pushlstring(L, pod, n);
  lua_setglobal(L, "POD");
  free(pod);
}

static void test_view_ReadsAsTheDecode(void **state) {
  lua_State *L = new_state();
  set_pod(L);
  lua_true(L, "local o = assert(core.object(POD))\n"
              "local v = o:view()\n"
              "local ok = v.metadata.name == 'web-7d4b9c8f6d-x2k9p' and rawget(v, 'spec') == nil\n"
              "return ok and same_value(core.json_decode(POD), o:view())\n"
              "  and same_value(core.json_decode(POD), core.materialize(o:view()))");
  /* escapes, unicode, null, numbers, duplicates, nested arrays */
  lua_true(L, "local j = '{\"metadata\":{\"name\":\"x\"},\"s\":\"\\\\u00e9\\\\ud83d\\\\ude00\\\\n\",'\n"
              "  .. '\"k\\\\u00e9\":1,\"n\":null,\"f\":0.5,\"i\":-7,\"a\":[[1,{\"b\":[{}]}]],\"d\":1,\"d\":{\"x\":2}}'\n"
              "local o = assert(core.object(j))\n"
              "local v = o:view()\n"
              "return v.s == '\\u{e9}\\u{1f600}\\n' and v['k\\u{e9}'] == 1 and v.n == core.null\n"
              "  and v.d.x == 2 and same_value(core.json_decode(j), o:view())\n"
              "  and same_value(core.json_decode(j), core.json_decode(core.json_encode(o:view())))");
  lua_close(L);
}

static void test_view_ChangesStayInTheView(void **state) {
  lua_State *L = new_state();
  set_pod(L);
  lua_true(L, "local o = assert(core.object(POD))\n"
              "local a, b = o:view(), o:view()\n"
              "a.metadata.labels.app = nil\n"
              "a.metadata.labels.x = 'y'\n"
              "a.spec = nil\n"
              "local tier = a.metadata.labels.tier\n"
              "a.metadata.labels.tier = nil\n"
              "local e = core.json_decode(core.json_encode(a))\n"
              "return tier == 'frontend' and e.spec == nil and e.metadata.labels.app == nil\n"
              "  and e.metadata.labels.tier == nil and e.metadata.labels.x == 'y'\n"
              "  and same_value(core.json_decode(POD), b)");
  lua_close(L);
}

/* A view keeps its object: the kinformer.object closed and collected,
 * the bytes are still there (ASan would see a use after free). */
static void test_view_OutlivesTheObject(void **state) {
  lua_State *L = new_state();
  set_pod(L);
  lua_true(L, "local o = assert(core.object(POD))\n"
              "local v = o:view()\n"
              "local spec = v.spec\n"
              "o:close(); o = nil; v = nil\n"
              "collectgarbage(); collectgarbage()\n"
              "return spec.containers[1].name == 'web' and spec.volumes[2].projected.sources[1]\n"
              "  .serviceAccountToken.path == 'token'");
  lua_close(L);
}


/* (obj) -> the view fully encoded */
static int view_and_encode(lua_State *L) {
  kin_obj *o = lua_touserdata(L, 1);
  lkin_view_push(L, o);
  lua_getfield(L, -1, "metadata");
  lua_getfield(L, -1, "name");
  lua_pop(L, 2);
  lkin_json_encode(L, -1);
  return 1;
}

/* Every allocation of making, reading and encoding a view may fail: each
 * either works or raises a memory error, and closing the state frees
 * everything, the kin_obj reference included (ASan's leak check). */
static void test_view_LuaMemoryErrors(void **state) {
  size_t n;
  char *pod = kin_test_fixture("pod.json", &n);
  kin_obj *o;
  assert_int_equal(kin_obj_parse(pod, n, &o), 0);
  free(pod);
  int raised = 0, ok = 0;
  for (size_t extra = 0; extra < 64 * 1024; extra += 512) {
    budget b = {0, (size_t)1 << 30};
    lua_State *L = lua_newstate(limited_alloc, &b);
    assert_non_null(L);
    luaL_requiref(L, "kinformer.core", luaopen_kinformer_core, 1);
    lua_settop(L, 0);
    lua_gc(L, LUA_GCCOLLECT);
    b.limit = b.used + extra;
    lua_pushcfunction(L, view_and_encode);
    lua_pushlightuserdata(L, o);
    int st = lua_pcall(L, 1, 1, 0);
    if (st == LUA_OK) ok++;
    else {
      assert_int_equal(st, LUA_ERRMEM);
      raised++;
    }
    lua_settop(L, 0);
    lua_close(L);
    assert_int_equal(b.used, 0);
  }
  kin_obj_unref(o);
  assert_true(raised > 0);
  assert_true(ok > 0);
}

KIN_SUITE(view, cmocka_unit_test(test_view_ReadsAsTheDecode),
          cmocka_unit_test(test_view_ChangesStayInTheView),
          cmocka_unit_test(test_view_OutlivesTheObject),
          cmocka_unit_test(test_view_LuaMemoryErrors))
