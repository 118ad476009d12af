/* test_json.c -- the binding's JSON codec (csrc/lua/ljson.h): integers vs
 * floats, int64 limits, escapes and surrogates, null, arrays that stay
 * arrays, the nesting limit, malformed input, encode errors with their
 * path, round trips, and Lua memory errors in the middle of a decode. */
#include "kin_test.h"

#include <lauxlib.h>
#include <lualib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kin.h"
#include "limited_alloc.h"
#include "ljson.h"

int luaopen_kinformer_core(lua_State *L);

/* Deep equality in Lua: same types, same number subtypes, same
 * metatables. */
static const char *EQ_SRC =
    "local function eq(a, b)\n"
    "  if type(a) ~= type(b) then return false end\n"
    "  if type(a) == 'number' then return math.type(a) == math.type(b) and a == b end\n"
    "  if type(a) ~= 'table' then return a == b end\n"
    "  if getmetatable(a) ~= getmetatable(b) then return false end\n"
    "  for k, v in pairs(a) do if not eq(v, b[k]) then return false end end\n"
    "  for k in pairs(b) do if a[k] == nil then return false end end\n"
    "  return true\n"
    "end\n"
    "deep_equal = eq\n";

static lua_State *new_state(void) {
  lua_State *L = luaL_newstate();
  assert_non_null(L);
  luaL_openlibs(L);
  luaL_requiref(L, "kinformer.core", luaopen_kinformer_core, 1);
  lua_setglobal(L, "core");
  assert_int_equal(luaL_dostring(L, EQ_SRC), LUA_OK);
  return L;
}

/* Decodes s into the top of the stack; fails the test on error. */
static void decode_ok(lua_State *L, const char *s) {
  char msg[256] = "";
  int top = lua_gettop(L);
  int rc = lkin_json_push_msg(L, s, strlen(s), msg, sizeof(msg));
  if (rc != 0) fail_msg("decode %s: %s", s, msg);
  assert_int_equal(lua_gettop(L), top + 1);
}

/* Encodes the top of the stack (popping it) and returns the JSON in buf;
 * fails the test on error. */
static const char *encode_ok(lua_State *L, char *buf, size_t cap) {
  int top = lua_gettop(L);
  int rc = lkin_json_encode(L, -1);
  if (rc != 0) fail_msg("encode: %s", lua_tostring(L, -1));
  assert_int_equal(lua_gettop(L), top + 1);
  size_t n;
  const char *s = lua_tolstring(L, -1, &n);
  assert_true(n < cap);
  memcpy(buf, s, n + 1);
  lua_pop(L, 2);
  return buf;
}

/* Runs a Lua chunk that must return true. */
static void lua_true(lua_State *L, const char *src) {
  if (luaL_dostring(L, src) != LUA_OK) fail_msg("%s: %s", src, lua_tostring(L, -1));
  if (!lua_toboolean(L, -1)) fail_msg("not true: %s", src);
  lua_settop(L, 0);
}

/* decode -> encode must give back exactly s (single-key objects only). */
static void round_trip_exact(lua_State *L, const char *s) {
  char buf[1024];
  decode_ok(L, s);
  assert_string_equal(encode_ok(L, buf, sizeof(buf)), s);
}

static void test_json_IntegersAndFloats(void **state) {
  lua_State *L = new_state();
  decode_ok(L, "[3, 3.0, -0, 1e2, 1.5, 0, -7, 2E-1, 12345678901234]");
  static const struct {
    int isint;
    double v;
  } want[] = {{1, 3}, {0, 3}, {1, 0}, {0, 100}, {0, 1.5}, {1, 0}, {1, -7}, {0, 0.2}, {1, 12345678901234.0}};
  for (int i = 0; i < 9; i++) {
    lua_rawgeti(L, -1, i + 1);
    if (lua_isinteger(L, -1) != want[i].isint) fail_msg("element %d: wrong subtype", i + 1);
    assert_true(lua_tonumber(L, -1) == want[i].v);
    lua_pop(L, 1);
  }
  lua_setglobal(L, "v");
  lua_true(L, "return ('cm' .. v[1]) == 'cm3' and math.type(v[9]) == 'integer'");
  char buf[256];
  lua_getglobal(L, "v");
  /* integral floats go out as integers, which Go accepts for int fields */
  assert_string_equal(encode_ok(L, buf, sizeof(buf)), "[3,3,0,100,1.5,0,-7,0.2,12345678901234]");
  lua_close(L);
}

static void test_json_Int64Limits(void **state) {
  lua_State *L = new_state();
  decode_ok(L, "[9223372036854775807, -9223372036854775808, 9223372036854775808, "
               "-9223372036854775809, 18446744073709551616]");
  lua_rawgeti(L, -1, 1);
  assert_true(lua_isinteger(L, -1) && lua_tointeger(L, -1) == LUA_MAXINTEGER);
  lua_rawgeti(L, -2, 2);
  assert_true(lua_isinteger(L, -1) && lua_tointeger(L, -1) == LUA_MININTEGER);
  lua_rawgeti(L, -3, 3);
  assert_false(lua_isinteger(L, -1));
  assert_true(lua_tonumber(L, -1) == 9223372036854775808.0);
  lua_rawgeti(L, -4, 4);
  assert_false(lua_isinteger(L, -1));
  assert_true(lua_tonumber(L, -1) == -9223372036854775808.0);
  lua_rawgeti(L, -5, 5);
  assert_false(lua_isinteger(L, -1));
  lua_settop(L, 0);

  char buf[128];
  lua_pushinteger(L, LUA_MAXINTEGER);
  assert_string_equal(encode_ok(L, buf, sizeof(buf)), "9223372036854775807");
  lua_pushinteger(L, LUA_MININTEGER);
  assert_string_equal(encode_ok(L, buf, sizeof(buf)), "-9223372036854775808");
  /* floats keep 17 digits where they need them (cjson: 14) */
  lua_true(L, "for _, x in ipairs({0.1, 1/3, 1e300, 5e-324, -2.5, 2^51 + 0.5, 123456.789012345678}) do\n"
              "  local y = core.json_decode(core.json_encode(x))\n"
              "  if y ~= x or math.type(y) ~= 'float' then error(tostring(x)) end\n"
              "end\n"
              "return core.json_encode(0.1) == '0.1' and core.json_encode(1/3) == '0.3333333333333333'");
  lua_close(L);
}

static void test_json_EscapesAndSurrogates(void **state) {
  lua_State *L = new_state();
  decode_ok(L, "\"q\\\"b\\\\s\\/\\b\\f\\n\\r\\tA\\u0041\\u00e9\\u20ac\\uD83D\\uDE00\\u0000z\"");
  size_t n;
  const char *s = lua_tolstring(L, -1, &n);
  static const char want[] = "q\"b\\s/\b\f\n\r\tAA\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\0z";
  assert_int_equal(n, sizeof(want) - 1);
  assert_memory_equal(s, want, n);
  /* and back: control characters escaped, UTF-8 left alone */
  char buf[256];
  assert_string_equal(encode_ok(L, buf, sizeof(buf)),
                      "\"q\\\"b\\\\s/\\b\\f\\n\\r\\tAA\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\\u0000z\"");
  lua_pushliteral(L, "\x01\x1f\x7f");
  assert_string_equal(encode_ok(L, buf, sizeof(buf)), "\"\\u0001\\u001f\x7f\"");
  /* raw UTF-8 and a string that ends right after an escape */
  decode_ok(L, "{\"k\\u00e9y\":\"caf\xc3\xa9\\\\\"}");
  lua_getfield(L, -1, "k\xc3\xa9y");
  assert_string_equal(lua_tostring(L, -1), "caf\xc3\xa9\\");
  lua_close(L);
}

/* Lone surrogates become U+FFFD (as Go does); malformed escapes fail. */
static void test_json_InvalidSurrogates(void **state) {
  lua_State *L = new_state();
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"\"\\ud800x\"", "\xef\xbf\xbdx"},
      {"\"\\udc00\"", "\xef\xbf\xbd"},
      {"\"\\ud800\\u0041\"", "\xef\xbf\xbd" "A"},
      {"\"a\\ud800\"", "a\xef\xbf\xbd"},
      {"\"\\ud800\\ud800\\udc00\"", "\xef\xbf\xbd\xf0\x90\x80\x80"},
      {"\"\\uDBFF\\uDFFF\"", "\xf4\x8f\xbf\xbf"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    decode_ok(L, cases[i].in);
    assert_string_equal(lua_tostring(L, -1), cases[i].out);
    lua_pop(L, 1);
  }
  static const char *bad[] = {"\"\\u12G4\"", "\"\\u12\"", "\"\\u", "\"\\ud800\\u12\"", "\"\\x41\""};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char msg[256] = "";
    assert_int_equal(lkin_json_push_msg(L, bad[i], strlen(bad[i]), msg, sizeof(msg)), KIN_EINVAL);
    assert_int_equal(lua_gettop(L), 0);
  }
  lua_close(L);
}

static void test_json_Null(void **state) {
  lua_State *L = new_state();
  decode_ok(L, "{\"a\":null,\"b\":[null,1]}");
  lua_setglobal(L, "v");
  lua_true(L, "local cjson = require 'cjson'\n"
              "return v.a == cjson.null and v.b[1] == cjson.null and v.b[2] == 1 and #v.b == 2\n"
              "  and core.null == cjson.null");
  decode_ok(L, "null");
  assert_true(lua_islightuserdata(L, -1) && lua_touserdata(L, -1) == NULL);
  char buf[64];
  assert_string_equal(encode_ok(L, buf, sizeof(buf)), "null");
  round_trip_exact(L, "{\"a\":null}");
  round_trip_exact(L, "[null,null]");
  lua_pushnil(L);
  assert_string_equal(encode_ok(L, buf, sizeof(buf)), "null");
  /* other light userdata are refused */
  lua_pushlightuserdata(L, buf);
  assert_int_equal(lkin_json_encode(L, -1), KIN_EINVAL);
  lua_close(L);
}

static void test_json_EmptyArraysRoundTrip(void **state) {
  lua_State *L = new_state();
  round_trip_exact(L, "[]");
  round_trip_exact(L, "{}");
  round_trip_exact(L, "{\"finalizers\":[]}");
  round_trip_exact(L, "[[],{},[[]],[{}]]");
  round_trip_exact(L, "{\"a\":{\"b\":[]}}");
  /* an array Lua code emptied stays an array; a user-made one too */
  lua_true(L, "local v = core.json_decode('{\"finalizers\":[\"x\"]}')\n"
              "table.remove(v.finalizers)\n"
              "local w = {items = core.empty_array(), meta = {}, also = setmetatable({}, core.array_mt)}\n"
              "local wj = core.json_encode(w)\n"
              "return core.json_encode(v) == '{\"finalizers\":[]}'\n"
              "  and wj:find('\"items\":[]', 1, true) and wj:find('\"meta\":{}', 1, true)\n"
              "  and wj:find('\"also\":[]', 1, true)\n"
              "  and getmetatable(core.json_decode('[]')) == core.array_mt\n"
              "  and core.json_encode({}) == '{}' and core.json_encode({1, 2}) == '[1,2]'");
  /* the array mark does not allow other keys */
  lua_true(L, "local a = core.empty_array(); a.x = 1\n"
              "local r, msg, code = core.json_encode(a)\n"
              "return r == nil and code == 'EINVAL' and msg:find('mixed keys', 1, true)");
  lua_close(L);
}

static char *nested(const char *open, const char *close, int depth) {
  size_t o = strlen(open), c = strlen(close);
  char *s = malloc((size_t)depth * (o + c) + 2);
  assert_non_null(s);
  char *p = s;
  for (int i = 0; i < depth; i++, p += o) memcpy(p, open, o);
  *p++ = '1';
  for (int i = 0; i < depth; i++, p += c) memcpy(p, close, c);
  *p = 0;
  return s;
}

static void test_json_NestedDepthLimit(void **state) {
  lua_State *L = new_state();
  char msg[256];
  char *ok = nested("[", "]", LKIN_JSON_MAX_DEPTH);
  decode_ok(L, ok);
  /* what was decoded encodes back */
  assert_int_equal(lkin_json_encode(L, -1), 0);
  assert_string_equal(lua_tostring(L, -1), ok);
  lua_settop(L, 0);
  free(ok);
  ok = nested("{\"a\":", "}", LKIN_JSON_MAX_DEPTH);
  decode_ok(L, ok);
  lua_settop(L, 0);
  free(ok);

  char *deep = nested("[", "]", LKIN_JSON_MAX_DEPTH + 1);
  assert_int_equal(lkin_json_push_msg(L, deep, strlen(deep), msg, sizeof(msg)), KIN_EINVAL);
  assert_non_null(strstr(msg, "nesting deeper than 512"));
  assert_int_equal(lua_gettop(L), 0);
  free(deep);
  deep = nested("{\"a\":", "}", LKIN_JSON_MAX_DEPTH + 1);
  assert_int_equal(lkin_json_push(L, deep, strlen(deep)), KIN_EINVAL);
  free(deep);
  /* hostile: a megabyte of '[' fails fast without touching the C stack */
  size_t big = 1 << 20;
  char *open = malloc(big);
  assert_non_null(open);
  memset(open, '[', big);
  assert_int_equal(lkin_json_push(L, open, big), KIN_EINVAL);
  free(open);
  assert_int_equal(lua_gettop(L), 0);

  /* encoding: 512 nested tables go, 513 do not */
  lua_true(L, "local function nest(n) local t = {} for _ = 2, n do t = {t} end return t end\n"
              "local ok = core.json_encode(nest(512))\n"
              "local r, msg, code = core.json_encode(nest(513))\n"
              "return ok ~= nil and r == nil and code == 'EINVAL' and msg:find('nesting deeper than 512', 1, true)");
  lua_close(L);
}

static void test_json_Malformed(void **state) {
  lua_State *L = new_state();
  static const char *bad[] = {
      "", " ", "{", "[", "[1,", "[1 2]", "{\"a\" 1}", "{\"a\":1,}", "[1,]", "[,1]", "{,}",
      "tru", "nul", "falsy", "01", "-01", "1.", ".5", "-", "1e", "1e+", "+1", "\"abc",
      "\"a\x01" "b\"", "\"a\nb\"", "{\"a\":1} x", "{\"a\":1}}", "[1]]", "{'a':1}", "{a:1}",
      "NaN", "Infinity", "-Infinity", "[1,2,3", "{\"a\":{\"b\":[1,2,{\"c\":", "\xef\xbb\xbf{}",
      "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
      "{\"a\":1}\0",
  };
  lua_pushliteral(L, "sentinel");
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char msg[256] = "";
    size_t n = strlen(bad[i]) + (i == sizeof(bad) / sizeof(bad[0]) - 1); /* the last has a NUL */
    int rc = lkin_json_push_msg(L, bad[i], n, msg, sizeof(msg));
    if (rc != KIN_EINVAL) fail_msg("accepted: '%s'", bad[i]);
    assert_int_equal(lua_gettop(L), 1);
    assert_non_null(strstr(msg, "invalid JSON at offset"));
  }
  char msg[256];
  const char *html = bad[sizeof(bad) / sizeof(bad[0]) - 2];
  lkin_json_push_msg(L, html, strlen(html), msg, sizeof(msg));
  assert_string_equal(msg, "invalid JSON at offset 0 ('<'): unexpected character");
  lkin_json_push_msg(L, "{\"a\":1} x", 9, msg, sizeof(msg));
  assert_string_equal(msg, "invalid JSON at offset 8 ('x'): unexpected characters after the value");
  /* only len bytes are read: no NUL needed, none looked at */
  decode_ok(L, "  7 ");
  assert_int_equal(lua_tointeger(L, -1), 7);
  assert_int_equal(lkin_json_push(L, "123456", 3), 0);
  assert_int_equal(lua_tointeger(L, -1), 123);
  assert_int_equal(lkin_json_push(L, "[1,2]xyz", 5), 0);
  assert_int_equal(lkin_json_push(L, NULL, 0), KIN_EINVAL);
  /* the Lua face: nil, message, "EINVAL" */
  lua_true(L, "local v, msg, code = core.json_decode('{\"a\":')\n"
              "return v == nil and code == 'EINVAL' and msg:find('offset 5', 1, true)");
  lua_close(L);
}

static void test_json_EncodeErrors(void **state) {
  lua_State *L = new_state();
  static const struct {
    const char *expr, *msg;
  } cases[] = {
      {"{1, a = 2}", "cannot encode table with mixed keys at $"},
      {"{a = 1, [1] = 2, b = 3}", "cannot encode table with mixed keys at $"},
      {"{spec = {list = {'x', {[1] = 1, b = 2}}}}", "cannot encode table with mixed keys at $.spec.list[2]"},
      {"{[1] = 1, [3] = 3}", "cannot encode sparse array (keys are not 1..n) at $"},
      {"{[0] = 1}", "cannot encode table with mixed keys at $"},
      {"{[1.5] = 1}", "cannot encode table with mixed keys at $"},
      {"{[true] = 1}", "cannot encode table with mixed keys at $"},
      {"{a = {b = 0/0}}", "cannot encode nan at $.a.b"},
      {"{1, 2, math.huge}", "cannot encode inf at $[3]"},
      {"{x = -math.huge}", "cannot encode inf at $.x"},
      {"{f = print}", "cannot encode a function at $.f"},
      {"{co = coroutine.create(print)}", "cannot encode a thread at $.co"},
      {"{u = io.stdout}", "cannot encode a userdata at $.u"},
      {"(function() local t = {a = {}} t.a.b = {t} return t end)()",
       "cannot encode a table that contains itself at $.a.b[1]"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char src[256];
    snprintf(src, sizeof(src), "return %s", cases[i].expr);
    assert_int_equal(luaL_dostring(L, src), LUA_OK);
    lua_pushliteral(L, "above");
    assert_int_equal(lkin_json_encode(L, -2), KIN_EINVAL);
    assert_int_equal(lua_gettop(L), 3); /* exactly the message pushed */
    assert_string_equal(lua_tostring(L, -1), cases[i].msg);
    lua_settop(L, 0);
  }
  /* the same value twice is no cycle */
  lua_true(L, "local s = {1} return core.json_encode({s, s, {a = s}}) == '[[1],[1],{\"a\":[1]}]'");
  lua_true(L, "local r, msg, code = core.json_encode({f = print})\n"
              "return r == nil and msg == 'cannot encode a function at $.f' and code == 'EINVAL'");
  lua_close(L);
}

static void test_json_PodFixtureRoundTrip(void **state) {
  lua_State *L = new_state();
  size_t n;
  char *pod = kin_test_fixture("pod.json", &n);
  char msg[256];
  assert_int_equal(lkin_json_push_msg(L, pod, n, msg, sizeof(msg)), 0);
  free(pod);
  lua_setglobal(L, "a");
  lua_getglobal(L, "a");
  assert_int_equal(lkin_json_encode(L, -1), 0);
  size_t jn;
  const char *j = lua_tolstring(L, -1, &jn);
  assert_int_equal(lkin_json_push_msg(L, j, jn, msg, sizeof(msg)), 0);
  lua_setglobal(L, "b");
  lua_settop(L, 0);
  lua_true(L, "return deep_equal(a, b)\n"
              "  and math.type(a.metadata.generation) == 'integer'\n"
              "  and math.type(a.spec.containers[1].ports[1].containerPort) == 'integer'\n"
              "  and a.spec.containers[1].ports[1].containerPort == 8080\n"
              "  and tostring(a.spec.terminationGracePeriodSeconds) == '30'\n"
              "  and a.kind == 'Pod'");
  lua_close(L);
}

/* A large document (a list of 2000 pods, ~11 MB) decodes and encodes, and
 * the result is the same. Not a benchmark: prints the times. */
static void test_json_LargeDocument(void **state) {
  lua_State *L = new_state();
  size_t n;
  char *pod = kin_test_fixture("pod.json", &n);
  while (n && (pod[n - 1] == '\n' || pod[n - 1] == ' ')) n--;
  enum { COPIES = 2000 };
  size_t cap = 64 + COPIES * (n + 1);
  char *list = malloc(cap), *p = list;
  assert_non_null(list);
  p += sprintf(p, "{\"kind\":\"PodList\",\"items\":[");
  for (int i = 0; i < COPIES; i++) {
    if (i) *p++ = ',';
    memcpy(p, pod, n);
    p += n;
  }
  p += sprintf(p, "]}");
  free(pod);
  struct timespec t0, t1, t2;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  assert_int_equal(lkin_json_push(L, list, (size_t)(p - list)), 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_int_equal(lkin_json_encode(L, -1), 0);
  clock_gettime(CLOCK_MONOTONIC, &t2);
  size_t jn;
  lua_tolstring(L, -1, &jn);
  print_message("json: %zu bytes decoded in %.1f ms, encoded (%zu bytes) in %.1f ms\n",
                (size_t)(p - list),
                (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6, jn,
                (double)(t2.tv_sec - t1.tv_sec) * 1e3 + (double)(t2.tv_nsec - t1.tv_nsec) / 1e6);
  free(list);
  lua_setglobal(L, "json");
  lua_setglobal(L, "list");
  lua_true(L, "local again = core.json_decode(json)\n"
              "return #list.items == 2000 and deep_equal(list, again)");
  lua_close(L);
}

/* Under a limited allocator (limited_alloc.h) every decode either succeeds
 * or raises a memory error (never crashes, never half-pushes); the state
 * stays usable. */
static int decode_in_pcall(lua_State *L) {
  size_t n;
  const char *s = lua_tolstring(L, 1, &n);
  lua_pushinteger(L, lkin_json_push(L, s, n));
  return 2;
}

static int encode_in_pcall(lua_State *L) {
  lua_pushinteger(L, lkin_json_encode(L, 1));
  return 2;
}

static void test_json_LuaMemoryErrors(void **state) {
  size_t n;
  char *pod = kin_test_fixture("pod.json", &n);
  int raised = 0, ok = 0;
  for (size_t extra = 0; extra < 96 * 1024; extra += 1024) {
    budget b = {0, (size_t)1 << 30};
    lua_State *L = lua_newstate(limited_alloc, &b);
    assert_non_null(L);
    lua_pushlstring(L, pod, n);
    lua_gc(L, LUA_GCCOLLECT);
    b.limit = b.used + extra;
    lua_pushcfunction(L, decode_in_pcall);
    lua_pushvalue(L, 1);
    int st = lua_pcall(L, 1, 2, 0);
    if (st == LUA_OK) {
      ok++;
      assert_int_equal(lua_tointeger(L, -1), 0);
      assert_true(lua_istable(L, -2));
      /* and encoding it under the same limit */
      lua_pop(L, 1);
      lua_pushcfunction(L, encode_in_pcall);
      lua_insert(L, -2);
      st = lua_pcall(L, 1, 2, 0);
      assert_true(st == LUA_OK || st == LUA_ERRMEM);
    } else {
      assert_int_equal(st, LUA_ERRMEM);
      raised++;
    }
    lua_settop(L, 0);
    b.limit = (size_t)1 << 30;
    lua_pushcfunction(L, decode_in_pcall);
    lua_pushlstring(L, pod, n);
    assert_int_equal(lua_pcall(L, 1, 2, 0), LUA_OK);
    lua_close(L);
    assert_int_equal(b.used, 0);
  }
  free(pod);
  assert_true(raised > 0);
  assert_true(ok > 0);
}

KIN_SUITE(json, cmocka_unit_test(test_json_IntegersAndFloats), cmocka_unit_test(test_json_Int64Limits),
          cmocka_unit_test(test_json_EscapesAndSurrogates),
          cmocka_unit_test(test_json_InvalidSurrogates), cmocka_unit_test(test_json_Null),
          cmocka_unit_test(test_json_EmptyArraysRoundTrip),
          cmocka_unit_test(test_json_NestedDepthLimit), cmocka_unit_test(test_json_Malformed),
          cmocka_unit_test(test_json_EncodeErrors), cmocka_unit_test(test_json_PodFixtureRoundTrip),
          cmocka_unit_test(test_json_LargeDocument), cmocka_unit_test(test_json_LuaMemoryErrors))
