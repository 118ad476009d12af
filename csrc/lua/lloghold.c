/* lloghold.c -- core.log_hold / core.log_take: holding kin's log lines
 * (the REPL holds them while a line is being typed and shows them before
 * the next prompt). While held, a sink (kin_log_set_sink) keeps up to
 * HOLD_MAX formatted lines in a FIFO and counts the ones it had to drop;
 * core.log_hold(false) restores the stderr sink after writing what was
 * held. Thread-safe: any thread may log; hold_lock guards every field of
 * `held` (kin_log calls the sink under its own lock, so hold_lock is always
 * taken inside it, never the other way round: no lock-order cycle). */
#include <lauxlib.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lloghold.h"
#include "log.h"

#define HOLD_MAX 1000

static const char *const names[] = {"error", "warn", "info", "debug"};

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char *line[HOLD_MAX]; /* ring of malloc'd lines, oldest at head */
  int head, n;
  long dropped;         /* lines lost to the bound since the last take */
  int on;               /* whether the sink is installed */
} held;                 /* all guarded by hold_lock */

/* The sink: formats the line as the stderr sink does and queues it; when
 * full (or out of memory) the line is counted in held.dropped. */
static void hold_sink(void *ud, kin_log_level l, const char *component, const char *msg) {
  (void)ud;
  size_t len = strlen(component) + strlen(msg) + 32;
  char *s = malloc(len);
  if (s) snprintf(s, len, "kinformer %s [%s] %s", names[l], component, msg);
  pthread_mutex_lock(&hold_lock);
  if (!s || held.n == HOLD_MAX) {
    held.dropped++;
    free(s);
  } else {
    held.line[(held.head + held.n) % HOLD_MAX] = s;
    held.n++;
  }
  pthread_mutex_unlock(&hold_lock);
}

/* Pushes the held lines as an array (emptying the queue) and the number
 * dropped since the last take. The lines are moved out under the lock and
 * pushed after it is released (pushing may raise on a memory error). */
static void push_taken(lua_State *L) {
  char *lines[HOLD_MAX];
  pthread_mutex_lock(&hold_lock);
  int n = held.n;
  for (int i = 0; i < n; i++) lines[i] = held.line[(held.head + i) % HOLD_MAX];
  held.head = held.n = 0;
  long dropped = held.dropped;
  held.dropped = 0;
  pthread_mutex_unlock(&hold_lock);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, lines[i]);
    free(lines[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_pushinteger(L, dropped);
}

/* core.log_take() -> lines, dropped: the lines held since the last take
 * (an array of strings, "kinformer <level> [<component>] <msg>", no
 * newline) and how many were dropped because more than 1000 were held.
 * Works whether or not lines are held (then: {}, 0). */
static int l_log_take(lua_State *L) {
  push_taken(L);
  return 2;
}

/* core.log_hold(on) -> boolean (whether lines were held before).
 * true: kin's log lines from every thread are held (see core.log_take)
 * instead of being written to stderr. false: what is still held is written
 * to stderr and the stderr sink is restored. */
static int l_log_hold(lua_State *L) {
  luaL_checktype(L, 1, LUA_TBOOLEAN);
  int on = lua_toboolean(L, 1);
  pthread_mutex_lock(&hold_lock);
  int was = held.on;
  held.on = on;
  pthread_mutex_unlock(&hold_lock);
  if (on && !was) kin_log_set_sink(hold_sink, NULL);
  if (!on && was) {
    kin_log_set_sink(NULL, NULL);
    push_taken(L);
    lua_Integer n = (lua_Integer)luaL_len(L, -2);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -2, i);
      fprintf(stderr, "%s\n", lua_tostring(L, -1));
      lua_pop(L, 1);
    }
    lua_Integer dropped = lua_tointeger(L, -1);
    if (dropped > 0) fprintf(stderr, "kinformer warn [log] %lld log lines dropped while held\n", (long long)dropped);
    lua_pop(L, 2);
  }
  lua_pushboolean(L, was);
  return 1;
}

static const luaL_Reg funcs[] = {
    {"log_hold", l_log_hold},
    {"log_take", l_log_take},
    {NULL, NULL},
};

void lkin_open_loghold(lua_State *L) { luaL_setfuncs(L, funcs, 0); }
