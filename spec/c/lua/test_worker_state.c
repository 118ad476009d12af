/* test_worker_state.c -- worker states (csrc/lua/worker_state.h) driven
 * from several C threads at once, as listeners and controller workers will
 * drive them: for ASan (leaks, the allocator) and TSan (template sharing,
 * the cjson lock, kin_obj shared by reference), and functions sent with
 * copies of their upvalues (worker_copy.c).
 *
 * Run from the repo root (it requires modules from spec/fixtures/lua). */
#include "kin_test.h"

#include <lauxlib.h>
#include <lualib.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "kobj.h"
#include "log.h"
#include "worker_state.h"

#define NTHREADS 4

int luaopen_kinformer_core(lua_State *L);

/* A main state as a script would have: fixtures on package.path. */
static lua_State *main_state(void) {
  lua_State *L = luaL_newstate();
  assert_non_null(L);
  luaL_openlibs(L);
  assert_int_equal(luaL_dostring(L, "package.path = 'spec/fixtures/lua/?.lua;' .. package.path"), 0);
  return L;
}

static int capture(lua_State *L) {
  size_t limit = (size_t)lua_tointeger(L, 2);
  lua_pushlightuserdata(L, lkin_ws_template_new(L, 1, "handler", limit));
  return 1;
}

/* Captures the code given as Lua source (an expression) or NULL with a
 * module name; returns NULL and the message in *err on a Lua error. */
static lkin_ws_template *template_of(lua_State *L, const char *expr, size_t limit, char **err) {
  lua_pushcfunction(L, capture);
  if (expr) {
    char src[512];
    snprintf(src, sizeof(src), "return %s", expr);
    assert_int_equal(luaL_dostring(L, src), 0);
  }
  lua_pushinteger(L, (lua_Integer)limit);
  if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
    *err = strdup(lua_tostring(L, -1));
    lua_pop(L, 1);
    return NULL;
  }
  lkin_ws_template *t = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return t;
}

static lkin_ws_template *module_template(lua_State *L, const char *module, size_t limit) {
  lua_pushstring(L, module);
  lua_pushcfunction(L, capture);
  lua_insert(L, -2);
  lua_pushinteger(L, (lua_Integer)limit);
  assert_int_equal(lua_pcall(L, 2, 1, 0), LUA_OK);
  lkin_ws_template *t = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return t;
}

/* Calls fn() of the code and returns its integer result (-1 on error). */
typedef struct {
  const char *fn;
  lua_Integer result;
} int_call;

static int run_int_call(lua_State *L) {
  int_call *c = lua_touserdata(L, 1);
  c->result = -1;
  if (lkin_ws_push_function(L, c->fn) < 0) return 0;
  if (lkin_ws_call(L, 0, 1) != LUA_OK) return 0;
  if (lua_istable(L, -1)) c->result = (lua_Integer)luaL_len(L, -1);
  else c->result = (lua_Integer)lua_tonumber(L, -1);
  return 0;
}

static lua_Integer call_int(lkin_ws *w, const char *fn) {
  int_call c = {fn, -1};
  char *err = NULL;
  int rc = lkin_ws_protect(w, run_int_call, &c, &err);
  free(err);
  return rc < 0 ? -1 : c.result;
}

typedef struct {
  lkin_ws_template *t;
  kin_obj *a, *b, *bad;
  int events;
  int failures;  /* handler errors seen */
  int delivered; /* #seen() at the end */
  int rc;
} dispatch_job;

static void *dispatch_thread(void *arg) {
  dispatch_job *j = arg;
  lkin_ws *w;
  char *err = NULL;
  j->rc = lkin_ws_open(j->t, "listener", &w, &err);
  free(err);
  if (j->rc < 0) return NULL;
  for (int i = 0; i < j->events; i++) {
    kin_obj *one[1] = {j->a};
    kin_obj *upd[2] = {j->a, i % 10 == 9 ? j->bad : j->b};
    if (lkin_ws_call_handler(w, "on_add", "ns/a", one, 1, NULL) < 0) j->failures++;
    if (lkin_ws_call_handler(w, "on_update", "ns/a", upd, 2, NULL) < 0) j->failures++;
  }
  j->delivered = (int)call_int(w, "seen");
  lkin_ws_close(w);
  return NULL;
}

static void quiet_sink(void *ud, kin_log_level level, const char *component, const char *msg) {
  (void)ud, (void)level, (void)component, (void)msg;
}

/* The same template and the same objects, four threads at once: every
 * state loads the module, decodes the shared kin_obj, and survives its
 * handler's errors. */
static void test_worker_state_ConcurrentHandlers(void **state) {
  lua_State *L = main_state();
  lkin_ws_template *t = module_template(L, "workerfix.handlers", 0);
  kin_obj *a = kin_test_obj("ns", "a", "1", NULL);
  kin_obj *b = kin_test_obj("ns", "a", "2", NULL);
  static const char bad_json[] =
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"3\"},"
      "\"data\":{\"explode\":\"y\"}}";
  kin_obj *bad = NULL;
  assert_int_equal(kin_obj_parse(bad_json, sizeof(bad_json) - 1, &bad), 0);
  kin_log_set_sink(quiet_sink, NULL);
  dispatch_job jobs[NTHREADS];
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    jobs[i] = (dispatch_job){t, a, b, bad, 50, 0, 0, 0};
    assert_int_equal(pthread_create(&th[i], NULL, dispatch_thread, &jobs[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  kin_log_set_sink(NULL, NULL);
  for (int i = 0; i < NTHREADS; i++) {
    assert_int_equal(jobs[i].rc, 0);
    assert_int_equal(jobs[i].failures, 5);        /* every tenth update raised */
    assert_int_equal(jobs[i].delivered, 50 + 45); /* and the rest were recorded */
  }
  kin_obj_unref(a);
  kin_obj_unref(b);
  kin_obj_unref(bad);
  lkin_ws_template_unref(t);
  lua_close(L); /* the template outlives the main state */
}

typedef struct {
  lkin_ws_template *t;
  int hog_rc;
  unsigned rebuilds;
  lua_Integer after;
} oom_job;

static void *oom_thread(void *arg) {
  oom_job *j = arg;
  lkin_ws *w;
  char *err = NULL;
  if (lkin_ws_open(j->t, "hungry", &w, &err) < 0) {
    free(err);
    return NULL;
  }
  call_int(w, "incr");
  call_int(w, "incr");
  j->hog_rc = lkin_ws_call_handler(w, "hog", "-", NULL, 0, NULL);
  j->rebuilds = lkin_ws_rebuilds(w);
  j->after = call_int(w, "incr");
  lkin_ws_close(w);
  return NULL;
}

/* Out of memory in several states at once: each is rebuilt on its own
 * thread, and its module-level state starts over. */
static void test_worker_state_ConcurrentOutOfMemory(void **state) {
  lua_State *L = main_state();
  lkin_ws_template *t = module_template(L, "workerfix.counter", (size_t)2 << 20);
  lua_close(L);
  kin_log_set_sink(quiet_sink, NULL);
  oom_job jobs[NTHREADS];
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    jobs[i] = (oom_job){t, 0, 0, 0};
    assert_int_equal(pthread_create(&th[i], NULL, oom_thread, &jobs[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  kin_log_set_sink(NULL, NULL);
  for (int i = 0; i < NTHREADS; i++) {
    assert_int_equal(jobs[i].hog_rc, KIN_ENOMEM);
    assert_int_equal(jobs[i].rebuilds, 1);
    assert_int_equal(jobs[i].after, 1);
  }
  lkin_ws_template_unref(t);
}

static char g_log[4096];
static void capture_sink(void *ud, kin_log_level level, const char *component, const char *msg) {
  if (level == KIN_LOG_ERROR && !g_log[0]) snprintf(g_log, sizeof(g_log), "[%s] %s", component, msg);
}

/* A handler error is logged with the key, the handler name and the
 * traceback; the state keeps serving. */
static void test_worker_state_HandlerErrorLogged(void **state) {
  lua_State *L = main_state();
  char *err = NULL;
  lkin_ws_template *t = template_of(
      L, "{on_add = function(o) if o.metadata.name == 'bad' then error('no ' .. o.metadata.name) end end}",
      0, &err);
  assert_non_null(t);
  lua_close(L);
  lkin_ws *w;
  assert_int_equal(lkin_ws_open(t, "cm-handlers", &w, &err), 0);
  kin_obj *good = kin_test_obj("ns", "good", "1", NULL), *bad = kin_test_obj("ns", "bad", "1", NULL);
  g_log[0] = 0;
  kin_log_set_sink(capture_sink, NULL);
  assert_int_equal(lkin_ws_call_handler(w, "on_add", "ns/bad", &bad, 1, &err), KIN_EINVAL);
  kin_log_set_sink(NULL, NULL);
  assert_non_null(strstr(err, "no bad"));
  free(err);
  assert_non_null(strstr(g_log, "[worker] cm-handlers: handler on_add for ns/bad failed: "));
  assert_non_null(strstr(g_log, "no bad\nstack traceback:"));
  assert_int_equal(lkin_ws_call_handler(w, "on_add", "ns/good", &good, 1, NULL), 0);
  assert_int_equal(lkin_ws_call_handler(w, "on_delete", "ns/good", &good, 1, NULL), KIN_ENOENT);
  kin_obj_unref(good);
  kin_obj_unref(bad);
  lkin_ws_close(w);
  lkin_ws_template_unref(t);
}

/* ---- functions with their upvalues ---------------------------------------- */

/* Captures the code that the Lua chunk returns; NULL and the message in
 * *err (caller frees) when the capture raised. */
static lkin_ws_template *template_chunk(lua_State *L, const char *chunk, size_t limit, char **err) {
  lua_pushcfunction(L, capture);
  if (luaL_loadstring(L, chunk) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK)
    fail_msg("chunk: %s", lua_tostring(L, -1));
  lua_pushinteger(L, (lua_Integer)limit);
  if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
    *err = strdup(lua_tostring(L, -1));
    lua_pop(L, 1);
    return NULL;
  }
  lkin_ws_template *t = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return t;
}

typedef struct {
  const char *fn;
  char *result;
} str_call;

static int run_str_call(lua_State *L) {
  str_call *c = lua_touserdata(L, 1);
  if (lkin_ws_push_function(L, c->fn) == 0 && lkin_ws_call(L, 0, 1) == LUA_OK)
    c->result = strdup(luaL_tolstring(L, -1, NULL));
  else
    c->result = strdup(lua_tostring(L, -1));
  return 0;
}

/* Calls fn() of w's code; returns its result as a string, or the error
 * (caller frees). */
static char *call_str(lkin_ws *w, const char *fn) {
  str_call c = {fn, NULL};
  char *err = NULL;
  if (lkin_ws_protect(w, run_str_call, &c, &err) < 0) return err;
  free(err);
  return c.result;
}

static void expect_call(lkin_ws *w, const char *fn, const char *want) {
  char *got = call_str(w, fn);
  assert_non_null(got);
  assert_string_equal(got, want);
  free(got);
}

static lkin_ws *open_ws(lkin_ws_template *t) {
  lkin_ws *w = NULL;
  char *err = NULL;
  if (lkin_ws_open(t, "closure", &w, &err) < 0) fail_msg("open: %s", err ? err : "?");
  return w;
}

/* Local helpers (one calling another) and constants of every plain type
 * travel with the function. */
static void test_worker_state_ClosureHelpers(void **state) {
  lua_State *L = main_state();
  char *err = NULL;
  lkin_ws_template *t = template_chunk(L,
      "local PREFIX, N, F, YES, NO, NOTHING = 'team-', 3, 0.5, true, false, nil\n"
      "local function double(x) return 2 * x end\n"
      "local function quad(x) return double(double(x)) end\n"
      "return { run = function()\n"
      "  return string.format('%s%d %s %s %s %s %s %s', PREFIX, quad(N), math.type(N),\n"
      "    math.type(F), tostring(F), tostring(YES), tostring(NO), tostring(NOTHING))\n"
      "end }", 0, &err);
  assert_non_null(t);
  lua_close(L); /* the copy does not need the main state any more */
  lkin_ws *w = open_ws(t);
  expect_call(w, "run", "team-12 integer float 0.5 true false nil");
  lkin_ws_close(w);
  lkin_ws_template_unref(t);
}

/* Integers stay integers and floats floats, as values and as keys. */
static void test_worker_state_ClosureNumbers(void **state) {
  lua_State *L = main_state();
  char *err = NULL;
  lkin_ws_template *t = template_chunk(L,
      "local t = { [1] = 'i', [2.5] = 'f', [math.maxinteger] = 'max', [-1] = 'neg',\n"
      "            big = 2^53, mi = math.mininteger, negz = -0.0, three = 3.0 }\n"
      "return function()\n"
      "  return string.format('%s %s %s %s %s %s %s %s %s', t[1], t[2.5], t[math.maxinteger], t[-1],\n"
      "    math.type(t.big), tostring(t.big == 2^53), tostring(t.mi == math.mininteger),\n"
      "    tostring(1 / t.negz), math.type(t.three))\n"
      "end", 0, &err);
  assert_non_null(t);
  lkin_ws *w = open_ws(t);
  expect_call(w, NULL, "i f max neg float true true -inf float");
  lkin_ws_close(w);
  lkin_ws_template_unref(t);
  lua_close(L);
}

/* Deep tables with cycles, a table reached through two upvalues and as a
 * key, metatables: one copy per state, identities kept inside it. */
static void test_worker_state_ClosureTables(void **state) {
  lua_State *L = main_state();
  char *err = NULL;
  lkin_ws_template *t = template_chunk(L,
      "local shared = { n = 1 }\n"
      "local a = { s = shared, deep = { deeper = { deepest = 'bottom' } } }\n"
      "a.self = a\n"
      "local b = { list = { shared, shared } }\n"
      "local mt = { __index = function(_, k) return k .. '!' end }\n"
      "local o1, o2 = setmetatable({}, mt), setmetatable({ x = 1 }, mt)\n"
      "local keyt = {}\n"
      "local bykey = { [keyt] = 'found', [shared] = 'by shared' }\n"
      "return function()\n"
      "  shared.n = shared.n + 1 -- seen through a and b: one table\n"
      "  return table.concat({ tostring(a.self == a), tostring(a.s == b.list[1]),\n"
      "    tostring(b.list[1] == b.list[2]), tostring(a.s == shared), tostring(b.list[2].n),\n"
      "    a.deep.deeper.deepest, o1.hello, tostring(getmetatable(o1) == getmetatable(o2)),\n"
      "    tostring(o2.x), bykey[keyt], bykey[shared] }, ' ')\n"
      "end", 0, &err);
  assert_non_null(t);
  lkin_ws *w = open_ws(t);
  expect_call(w, NULL, "true true true true 2 bottom hello! true 1 found by shared");
  expect_call(w, NULL, "true true true true 3 bottom hello! true 1 found by shared");
  lkin_ws_close(w);
  lkin_ws_template_unref(t);
  lua_close(L);
}

/* Modules and their fields go by name: the worker's own (its module-level
 * state its own), not copies. */
static void test_worker_state_ClosureModuleRefs(void **state) {
  lua_State *L = main_state();
  char *err = NULL;
  lkin_ws_template *t = template_chunk(L,
      "local counter = require 'workerfix.counter'\n"
      "counter.incr(5) -- in the main state's module\n"
      "local incr = counter.incr\n"
      "local fmt, str, G, pkgloaded = string.format, string, _G, package.loaded\n"
      "return function()\n"
      "  return fmt('%s %s %s %s %s %d %d', tostring(counter == require 'workerfix.counter'),\n"
      "    tostring(incr == counter.incr), tostring(fmt == string.format),\n"
      "    tostring(str == string and G == _G), tostring(pkgloaded == package.loaded),\n"
      "    incr(), counter.get())\n"
      "end", 0, &err);
  assert_non_null(t);
  lkin_ws *w = open_ws(t);
  expect_call(w, NULL, "true true true true true 1 1");
  lkin_ws_close(w);
  lkin_ws_template_unref(t);
  lua_close(L);
}

/* Two functions closing over one local share it in the copy too. */
static void test_worker_state_ClosureSharedUpvalue(void **state) {
  lua_State *L = main_state();
  char *err = NULL;
  lkin_ws_template *t = template_chunk(L,
      "local n = 0\n"
      "local function bump() n = n + 1 end\n"
      "local function get() return n end\n"
      "return { bump = function() bump(); bump(); return n end,\n"
      "         read = function() return get() end,\n"
      "         direct = function() n = n + 10; return n end }", 0, &err);
  assert_non_null(t);
  lkin_ws *w = open_ws(t);
  expect_call(w, "bump", "2");
  expect_call(w, "read", "2");
  expect_call(w, "direct", "12");
  expect_call(w, "read", "12");
  lkin_ws_close(w);
  lkin_ws_template_unref(t);
  lua_close(L);
}

/* Stripped bytecode names no upvalue: the one holding the global table is
 * the worker's globals, the others are copied. */
static void test_worker_state_ClosureStripped(void **state) {
  lua_State *L = main_state();
  char *err = NULL;
  lkin_ws_template *t = template_chunk(L,
      "local K = 7\n"
      "local s = load(string.dump(function() return K, string.rep('a', 2) end, true), 's', 'b')\n"
      "debug.setupvalue(s, 1, K)\n"
      "debug.setupvalue(s, 2, _G)\n"
      "return { get = function() local k, a = s(); return k .. a end }", 0, &err);
  assert_non_null(t);
  lkin_ws *w = open_ws(t);
  expect_call(w, "get", "7aa");
  lkin_ws_close(w);
  lkin_ws_template_unref(t);
  lua_close(L);
}

typedef struct {
  lkin_ws_template *t;
  char *after;  /* bump's result after the rounds */
  char *reborn; /* after the state was rebuilt */
} copy_job;

static void *copy_thread(void *arg) {
  copy_job *j = arg;
  lkin_ws *w = open_ws(j->t);
  for (int i = 0; i < 99; i++) free(call_str(w, "bump"));
  j->after = call_str(w, "bump");
  lkin_ws_call_handler(w, "hog", "-", NULL, 0, NULL); /* out of memory: rebuilt */
  j->reborn = call_str(w, "bump");
  lkin_ws_close(w);
  return NULL;
}

/* Every state gets its own copy, at every (re)build: what one changes
 * stays in it, and the main state's table is untouched. */
static void test_worker_state_ClosureCopyPerState(void **state) {
  lua_State *L = main_state();
  char *err = NULL;
  lkin_ws_template *t = template_chunk(L,
      "CLOSURE_T = { n = 0 }\n"
      "local t = CLOSURE_T\n"
      "return { bump = function() t.n = t.n + 1; return t.n end,\n"
      "         hog = function() local x = {} for i = 1, math.maxinteger do x[i] = i end end }",
      (size_t)2 << 20, &err);
  assert_non_null(t);
  kin_log_set_sink(quiet_sink, NULL);
  copy_job jobs[NTHREADS];
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    jobs[i] = (copy_job){t, NULL, NULL};
    assert_int_equal(pthread_create(&th[i], NULL, copy_thread, &jobs[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  kin_log_set_sink(NULL, NULL);
  for (int i = 0; i < NTHREADS; i++) {
    assert_string_equal(jobs[i].after, "100");
    assert_string_equal(jobs[i].reborn, "1");
    free(jobs[i].after);
    free(jobs[i].reborn);
  }
  assert_int_equal(luaL_dostring(L, "assert(CLOSURE_T.n == 0)"), LUA_OK);
  lkin_ws_template_unref(t);
  lua_close(L);
}

/* A module the worker cannot load, or a field it lacks: the build fails
 * naming the module and the upvalue. */
static void test_worker_state_ClosureModuleMissing(void **state) {
  lua_State *L = main_state();
  char *err = NULL;
  lkin_ws_template *t = template_chunk(L,
      "package.loaded['kin_only_here'] = { x = 1 }\n"
      "local m = require 'kin_only_here'\n"
      "return function() return m end", 0, &err);
  assert_non_null(t);
  lkin_ws *w = NULL;
  assert_int_equal(lkin_ws_open(t, "missing", &w, &err), KIN_EINVAL);
  assert_null(w);
  assert_non_null(strstr(err, "handler: upvalue 'm' is module 'kin_only_here' in the main state, but "
                              "require 'kin_only_here' failed in this worker state: module "
                              "'kin_only_here' not found"));
  free(err);
  err = NULL;
  lkin_ws_template_unref(t);
  t = template_chunk(L,
      "local counter = require 'workerfix.counter'\n"
      "counter.added = {}\n"
      "local cfg = { list = { counter.added } }\n"
      "return function() return cfg end", 0, &err);
  assert_non_null(t);
  assert_int_equal(lkin_ws_open(t, "missing", &w, &err), KIN_EINVAL);
  assert_non_null(strstr(err, "handler: upvalue 'cfg' (cfg.list[1]) is workerfix.counter.added in the "
                              "main state, but module 'workerfix.counter' has no field 'added' in "
                              "this worker state"));
  free(err);
  lkin_ws_template_unref(t);
  lua_close(L);
}

/* Registration errors name every upvalue that cannot be sent, with the
 * path to the culprit, and leak nothing (ASan), also after the buffer
 * grew and for a graph over the size limit. */
static void test_worker_state_ClosureRefused(void **state) {
  lua_State *L = main_state();
  luaL_newmetatable(L, "test.thing");
  lua_pop(L, 1);
  lua_newuserdatauv(L, 8, 0);
  luaL_setmetatable(L, "test.thing");
  lua_setglobal(L, "thing");
  lua_newtable(L);
  lua_pushcfunction(L, capture);
  lua_setfield(L, -2, "cf");
  lua_pushlightuserdata(L, g_log);
  lua_setfield(L, -2, "lu");
  lua_setglobal(L, "things");
  char *err = NULL;
  assert_null(template_chunk(L,
      "local big = string.rep('x', 100000) -- the buffer has grown by then\n"
      "local env = { name = 'x', nested = { handle = thing } }\n"
      "local co = coroutine.create(function() end)\n"
      "local fine = { 1, 2, 3 }\n"
      "local cf, lu = things.cf, things.lu\n"
      "local function helper() return env end\n"
      "local alias = env\n"
      "return { on_add = function() return big, env, co, fine end,\n"
      "         on_update = function() return cf, lu, helper, alias end }", 0, &err));
  assert_string_equal(err,
      "bad argument #1 to '?' (handler: cannot send to worker threads: on_add's upvalue 'env' "
      "(env.nested.handle is a test.thing userdata), on_add's upvalue 'co' (a coroutine), "
      "on_update's upvalue 'cf' (a C function that is no field of a loaded module), "
      "on_update's upvalue 'lu' (a light userdata), on_update's upvalue 'helper' (helper, whose "
      "upvalue env is the same variable as env), on_update's upvalue 'alias' (the same table as "
      "env); a handler runs in its own Lua state: send plain "
      "values (strings, numbers, tables of them) or modules, and make clients, informers and the "
      "like inside the function (require \"kinformer.core\"))");
  free(err);
  err = NULL;
  /* over 64 MiB */
  assert_null(template_chunk(L,
      "local huge = string.rep('x', (64 << 20) + 1)\n"
      "return function() return huge end", 0, &err));
  assert_non_null(strstr(err, "handler: cannot send to worker threads: the code and its upvalues come "
                              "to more than 64 MiB (upvalue 'huge' went over)"));
  free(err);
  lua_close(L);
}

KIN_SUITE(worker_state, cmocka_unit_test(test_worker_state_ConcurrentHandlers),
          cmocka_unit_test(test_worker_state_ConcurrentOutOfMemory),
          cmocka_unit_test(test_worker_state_HandlerErrorLogged),
          cmocka_unit_test(test_worker_state_ClosureHelpers),
          cmocka_unit_test(test_worker_state_ClosureNumbers),
          cmocka_unit_test(test_worker_state_ClosureTables),
          cmocka_unit_test(test_worker_state_ClosureModuleRefs),
          cmocka_unit_test(test_worker_state_ClosureSharedUpvalue),
          cmocka_unit_test(test_worker_state_ClosureStripped),
          cmocka_unit_test(test_worker_state_ClosureCopyPerState),
          cmocka_unit_test(test_worker_state_ClosureModuleMissing),
          cmocka_unit_test(test_worker_state_ClosureRefused))
