/* laux.c -- the binding's shared helpers (laux.h). Depends on Lua and the
 * core's kin.h and clock.h only. */
#include "laux.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "clock.h"
#include "kin.h"

/* ---- failures ------------------------------------------------------------ */

const char *lkin_errname(int err) { return kin_errname(err); }

int lkin_fail(lua_State *L, int err, const char *what) {
  lua_pushnil(L);
  lua_pushfstring(L, "%s: %s", what, kin_strerror(err));
  lua_pushstring(L, lkin_errname(err));
  return 3;
}

/* ---- userdata types ------------------------------------------------------ */

void lkin_new_type(lua_State *L, const lkin_type *type) {
  luaL_newmetatable(L, type->name);
  lua_newtable(L); /* luaL_newlib needs an array, not a pointer */
  luaL_setfuncs(L, type->methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, type->close);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, type->close);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, type->tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}

void lkin_setmetatable(lua_State *L, const lkin_type *type) {
  if (luaL_getmetatable(L, type->name) == LUA_TNIL) {
    lua_pop(L, 1);
    lkin_new_type(L, type);
    luaL_getmetatable(L, type->name);
  }
  lua_setmetatable(L, -2);
}

/* ---- option tables ------------------------------------------------------- */

/* Pushes field k of the table at t (nil when t is 0) and returns its type. */
static int opt_field(lua_State *L, int t, const char *k) {
  if (!t) {
    lua_pushnil(L);
    return LUA_TNIL;
  }
  return lua_getfield(L, t, k);
}

static void opt_error(lua_State *L, int t, const char *k, const char *want) {
  luaL_argerror(L, t, lua_pushfstring(L, "option '%s' must be %s", k, want));
}

int lkin_opt_isset(lua_State *L, int t, const char *k) {
  int set = opt_field(L, t, k) != LUA_TNIL;
  lua_pop(L, 1);
  return set;
}

const char *lkin_opt_string(lua_State *L, int t, const char *k) {
  const char *s = NULL;
  int ty = opt_field(L, t, k);
  if (ty != LUA_TNIL) {
    if (ty != LUA_TSTRING) opt_error(L, t, k, "a string");
    s = lua_tostring(L, -1);
  }
  lua_pop(L, 1); /* the string stays alive as a field of the table */
  return s;
}

/* Numbers convert as luaL_checknumber/checkinteger do: a numeric string
 * ("10") counts as a number. */
lua_Number lkin_opt_number(lua_State *L, int t, const char *k, lua_Number def) {
  lua_Number v = def;
  if (opt_field(L, t, k) != LUA_TNIL) {
    int ok;
    v = lua_tonumberx(L, -1, &ok);
    if (!ok) opt_error(L, t, k, "a number");
  }
  lua_pop(L, 1);
  return v;
}

lua_Integer lkin_opt_integer(lua_State *L, int t, const char *k, lua_Integer def) {
  lua_Integer v = def;
  if (opt_field(L, t, k) != LUA_TNIL) {
    int ok;
    v = lua_tointegerx(L, -1, &ok);
    if (!ok) opt_error(L, t, k, "an integer");
  }
  lua_pop(L, 1);
  return v;
}

int lkin_opt_bool(lua_State *L, int t, const char *k) {
  opt_field(L, t, k);
  int v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

uint64_t lkin_secs_to_ns(lua_State *L, int arg, lua_Number s, const char *k) {
  if (!(s >= 0)) /* also NaN */
    luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be >= 0", k));
  if (isinf(s) || s >= 1.8e10) return KIN_FOREVER;
  return (uint64_t)(s * 1e9);
}

uint64_t lkin_opt_ns(lua_State *L, int t, const char *k, lua_Number def_s) {
  return lkin_secs_to_ns(L, t, lkin_opt_number(L, t, k, def_s), k);
}

/* Edit distance of a and b (inserts, deletes, substitutions and swaps of
 * two neighbours count one each), both shorter than 64 bytes (longer ones
 * give a large number: never "close"). */
static size_t distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la >= 64 || lb >= 64) return 1000;
  size_t prev2[64] = {0}, prev[64], cur[64];
  for (size_t j = 0; j <= lb; j++) prev[j] = j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t best = prev[j] + 1;
      if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
      size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
      cur[j] = sub < best ? sub : best;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          prev2[j - 2] + 1 < cur[j])
        cur[j] = prev2[j - 2] + 1; /* two letters swapped */
    }
    memcpy(prev2, prev, (lb + 1) * sizeof(size_t));
    memcpy(prev, cur, (lb + 1) * sizeof(size_t));
  }
  return prev[lb];
}

const char *lkin_closest(const char *word, const char *const list[]) {
  const char *best = NULL;
  size_t bestd = (size_t)-1, lw = strlen(word);
  for (size_t i = 0; list[i]; i++) {
    size_t lc = strlen(list[i]), d = distance(word, list[i]);
    size_t longer = lw > lc ? lw : lc, limit = longer / 3 > 1 ? longer / 3 : 1;
    int prefix = lw >= 3 && (!strncmp(word, list[i], lw < lc ? lw : lc));
    if ((d <= limit || prefix) && d < bestd) best = list[i], bestd = d;
  }
  return best;
}

void lkin_opt_check_near(lua_State *L, int t, const char *const known[], const char *fname) {
  t = lua_absindex(L, t);
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) continue;
    const char *k = lua_tostring(L, -1);
    int found = 0;
    for (size_t i = 0; known[i] && !found; i++) found = !strcmp(known[i], k);
    const char *near = found ? NULL : lkin_closest(k, known);
    if (near) luaL_error(L, "unknown field \"%s\" in %s (did you mean \"%s\"?)", k, fname, near);
  }
}

void lkin_opt_check_keys(lua_State *L, int t, const char *const known[], const char *fname) {
  if (!t) return;
  t = lua_absindex(L, t);
  const char *bad = NULL; /* the smallest unknown key: messages do not depend on hashing */
  int bad_nonstring = 0;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1); /* the value */
    if (lua_type(L, -1) != LUA_TSTRING) {
      bad_nonstring = 1;
      continue;
    }
    const char *k = lua_tostring(L, -1); /* alive: a key of the table */
    int found = 0;
    for (size_t i = 0; known[i] && !found; i++) found = !strcmp(known[i], k);
    if (!found && (!bad || strcmp(k, bad) < 0)) bad = k;
  }
  if (bad) {
    const char *near = lkin_closest(bad, known);
    if (near)
      luaL_error(L, "unknown option \"%s\" to %s (did you mean \"%s\"?)", bad, fname, near);
    luaL_error(L, "unknown option \"%s\" to %s", bad, fname);
  }
  if (bad_nonstring) luaL_error(L, "options of %s must be named (a table with string keys)", fname);
}

/* ---- signals ------------------------------------------------------------- */

void lkin_signals_block_all(sigset_t *old) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, old);
}

void lkin_signals_restore(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

void lkin_signals_block_term(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* ---- callback tables (laux.h) -------------------------------------------- */

void lkin_callbacks_push(lua_State *L, const char *key) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, key);
}

void lkin_callbacks_forget(lua_State *L, const char *key, lua_Integer id) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE) {
    lua_pushnil(L);
    lua_rawseti(L, -2, id);
  }
  lua_pop(L, 1);
}

lua_Integer lkin_callbacks_new_id(void) {
  static atomic_long next_id;
  return (lua_Integer)atomic_fetch_add(&next_id, 1) + 1;
}
