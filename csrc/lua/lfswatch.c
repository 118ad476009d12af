/* lfswatch.c -- core.fs_watch(env, dirs, fn [, debounce_s]): watches the
 * directories (fs_watch.h: libuv on a thread of its own) and calls
 * fn(paths) in the main state, from env:step (so from mgr:run's loop),
 * with the list of paths changed since the last call, once no change was
 * seen for debounce_s (default 0.1). The watcher's thread queues the paths
 * to the env's main-state queue (lkin_mainq_post); nothing user-written
 * runs on it.
 *
 * Ownership: the userdata owns one lfw (a watcher and an env reference);
 * closing it (w:close(), __gc, __close) joins the watcher's thread. Events
 * already queued name the watcher by number: those of a closed watcher
 * find no function and are skipped. */
#include "lfswatch.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "fs_watch.h"
#include "kin.h"
#include "laux.h"
#include "lenv.h"
#include "lhandler.h"

#define FSWATCH_MT "kinformer.fs_watch"
/* Registry table of the main state: watcher number -> fn. */
#define CALLBACKS_KEY "kinformer.fs_watch_callbacks"

typedef struct {
  kin_fs_watch *w;
  lkin_env *e;    /* one reference */
  lua_Integer id; /* key of its function; immutable */
} lfw;

typedef struct {
  lfw *p; /* NULL once closed */
} lfw_ud;

/* One delivery queued for the main state; owns paths and each string. */
typedef struct {
  lua_Integer id;
  char **paths;
  size_t n;
} fw_event;

static const lkin_type fswatch_type; /* below, with the methods */

static void event_drop(void *arg) {
  fw_event *ev = arg;
  for (size_t i = 0; i < ev->n; i++) free(ev->paths[i]);
  free(ev->paths);
  free(ev);
}

/* lkin_mainq_post's call, in the main state: fn(paths). Raises what fn
 * raises (the queue logs it). */
static int run_event(lua_State *L) {
  fw_event *ev = lua_touserdata(L, 1);
  lkin_callbacks_push(L, CALLBACKS_KEY);
  if (lua_rawgeti(L, -1, ev->id) != LUA_TFUNCTION) return 0; /* closed */
  lua_createtable(L, (int)ev->n, 0);
  for (size_t i = 0; i < ev->n; i++) {
    lua_pushstring(L, ev->paths[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_call(L, 1, 0);
  return 0;
}

/* The watcher's thread: copies the paths and queues them. Out of memory:
 * this delivery is lost (a later change is seen). */
static void on_change(void *ud, const char *const *paths, size_t n) {
  lfw *p = ud;
  fw_event *ev = calloc(1, sizeof(*ev));
  if (!ev) return;
  ev->id = p->id;
  if (!(ev->paths = calloc(n, sizeof(*ev->paths)))) {
    free(ev);
    return;
  }
  for (; ev->n < n; ev->n++) {
    if (!(ev->paths[ev->n] = strdup(paths[ev->n]))) {
      event_drop(ev);
      return;
    }
  }
  lkin_mainq_post(p->e, "fs_watch callback", run_event, event_drop, ev);
}

/* core.fs_watch(env, dirs, fn [, debounce_s]) -> watcher, or nil, msg,
 * code ("ENOENT": a directory cannot be watched). dirs: a non-empty list
 * of directory paths. Misuse raises. Main state only. */
static int l_fs_watch(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  lua_Number deb = luaL_optnumber(L, 4, 0.1);
  luaL_argcheck(L, deb >= 0 && deb <= 3600, 4, "debounce must be 0..3600 seconds");
  lua_Integer n = luaL_len(L, 2);
  luaL_argcheck(L, n >= 1 && n <= 4096, 2, "a list of 1..4096 directories expected");
  const char **dirs = lua_newuserdatauv(L, sizeof(*dirs) * (size_t)n, 0); /* freed by the GC */
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 2, i);
    luaL_argcheck(L, lua_type(L, -1) == LUA_TSTRING, 2, "directories must be strings");
    dirs[i - 1] = lua_tostring(L, -1);
    lua_pop(L, 1); /* still referenced by the table */
  }
  if (lkin_mainq_prepare(e) < 0) return lkin_fail(L, KIN_ENOMEM, "fs_watch");
  lfw_ud *u = lua_newuserdatauv(L, sizeof(*u), 0);
  u->p = NULL;
  lkin_setmetatable(L, &fswatch_type);
  lfw *p = calloc(1, sizeof(*p));
  if (!p) return lkin_fail(L, KIN_ENOMEM, "fs_watch");
  p->id = lkin_callbacks_new_id();
  p->e = lkin_env_ref(e);
  sigset_t old; /* the watcher's thread must not take SIGINT/SIGTERM */
  lkin_signals_block_all(&old);
  int rc = kin_fs_watch_new(dirs, (size_t)n, (unsigned)(deb * 1000), on_change, p, &p->w);
  lkin_signals_restore(&old);
  if (rc < 0) {
    lkin_env_unref(p->e);
    free(p);
    return lkin_fail(L, rc, "fs_watch");
  }
  u->p = p;
  lkin_callbacks_push(L, CALLBACKS_KEY);
  lua_pushvalue(L, 3);
  lua_rawseti(L, -2, p->id);
  lua_pop(L, 1);
  return 1;
}

/* w:close() / __gc / __close: stops the watcher (joins its thread).
 * Idempotent. */
static int m_close(lua_State *L) {
  lfw_ud *u = luaL_checkudata(L, 1, FSWATCH_MT);
  lfw *p = u->p;
  u->p = NULL;
  if (!p) return 0;
  kin_fs_watch_free(p->w);
  lkin_callbacks_forget(L, CALLBACKS_KEY, p->id);
  lkin_env_unref(p->e);
  free(p);
  return 0;
}

static int m_tostring(lua_State *L) {
  lfw_ud *u = luaL_checkudata(L, 1, FSWATCH_MT);
  lua_pushstring(L, u->p ? "kinformer.fs_watch" : "kinformer.fs_watch (closed)");
  return 1;
}

static const luaL_Reg methods[] = {{"close", m_close}, {NULL, NULL}};

static const lkin_type fswatch_type = {FSWATCH_MT, methods, m_close, m_tostring};

void lkin_open_fswatch(lua_State *L) {
  lkin_new_type(L, &fswatch_type);
  lua_pushcfunction(L, l_fs_watch);
  lua_setfield(L, -2, "fs_watch");
}
