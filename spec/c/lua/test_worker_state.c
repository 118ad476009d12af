/* test_worker_state.c -- worker states (csrc/lua/worker_state.h) driven
 * from several C threads at once, as listeners and controller workers will
 * drive them: for ASan (leaks, the allocator) and TSan (template sharing,
 * the cjson lock, kin_obj shared by reference).
 *
 * NOT built by the Makefile yet: it needs the csrc/lua sources and liblua5.4 in the
 * test binary (see the note that proposes the target). Run from the repo
 * root (it requires modules from spec/fixtures/lua). */
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

/* Registration errors raise in the main state and leak nothing. */
static void test_worker_state_UpvalueRefused(void **state) {
  lua_State *L = main_state();
  char *err = NULL;
  assert_null(template_of(L, "(function() local n = 0; return {ok = function() end, "
                             "on_update = function() n = n + 1 end} end)()", 0, &err));
  assert_non_null(strstr(err, "handler on_update: upvalue 'n' is not allowed; functions sent to "
                              "worker threads must be self-contained"));
  free(err);
  lua_close(L);
}

KIN_SUITE(worker_state, cmocka_unit_test(test_worker_state_ConcurrentHandlers),
          cmocka_unit_test(test_worker_state_ConcurrentOutOfMemory),
          cmocka_unit_test(test_worker_state_HandlerErrorLogged),
          cmocka_unit_test(test_worker_state_UpvalueRefused))
