/* worker_code.c -- the template half of worker_state.h: capturing code in
 * the main state, a module name or functions sent with copies of their
 * upvalues (worker_copy.c); worker_state.c loads it into the states it
 * builds and owns the templates' reference counts. */
#include "worker_state.h"
#include "worker_int.h"

#include <lauxlib.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* "handler" or "handler on_add", for messages. */
static const char *label(lua_State *L, const char *what, const char *key) {
  return key ? lua_pushfstring(L, "%s %s", what, key) : lua_pushstring(L, what);
}

/* Raises an argument error on arg unless the function at fi is a Lua
 * function: a C function has no bytecode to send (one reached through an
 * upvalue may still go by name, as a field of its module). */
static void check_function(lua_State *L, int arg, int fi, const char *what, const char *key) {
  if (lua_iscfunction(L, fi))
    luaL_argerror(L, arg,
                  lua_pushfstring(L, "%s: a C function cannot be sent to a worker thread; "
                                     "send a Lua function or a module name",
                                  label(L, what, key)));
}

/* Checks the shape of the code at idx without allocating C memory, so
 * raising here leaks nothing (the functions' upvalues are checked by
 * lkin_ws_copy_capture). Returns whether the code is function(s). */
static int validate(lua_State *L, int idx, const char *what) {
  switch (lua_type(L, idx)) {
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    luaL_argcheck(L, n > 0 && strlen(s) == n, idx, "module name must be a non-empty string");
    return 0;
  }
  case LUA_TFUNCTION:
    check_function(L, idx, idx, what, NULL);
    return 1;
  case LUA_TTABLE: {
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      if (lua_type(L, -2) != LUA_TSTRING)
        luaL_argerror(L, idx,
                      lua_pushfstring(L, "%s table: keys must be function names (strings), got a %s",
                                      what, luaL_typename(L, -2)));
      const char *key = lua_tostring(L, -2);
      if (lua_type(L, -1) != LUA_TFUNCTION)
        luaL_argerror(L, idx,
                      lua_pushfstring(L, "%s %s is a %s, not a function", what, key,
                                      luaL_typename(L, -1)));
      check_function(L, idx, -1, what, key);
      lua_pop(L, 1);
      n++;
    }
    luaL_argcheck(L, n > 0, idx, lua_pushfstring(L, "%s table has no functions", what));
    return 1;
  }
  default:
    luaL_typeerror(L, idx, "module name, function or table of functions");
    return 0;
  }
}

static char *dup_field(lua_State *L, int t, const char *k, int *oom) {
  lua_getfield(L, t, k);
  const char *s = lua_tostring(L, -1);
  char *d = s ? strdup(s) : NULL;
  if (s && !d) *oom = 1;
  lua_pop(L, 1);
  return d;
}

lkin_ws_template *lkin_ws_template_new(lua_State *L, int idx, const char *what,
                                       size_t memory_limit) {
  idx = lua_absindex(L, idx);
  int funcs = validate(L, idx, what);
  luaL_checkstack(L, 4, NULL);
  /* the package table of the loaded table, not the global that a script
   * may have shadowed; fetched before any malloc (it may allocate) */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, "package");
  lua_remove(L, -2);
  int pkg = lua_gettop(L);
  /* the main state's default time limit for this kind of code (core.env
   * writes them: "map function" -> handler_timeout) */
  double dflt_s = 0;
  if (lua_getfield(L, LUA_REGISTRYINDEX, LKIN_WS_CALL_TIMEOUTS) == LUA_TTABLE &&
      lua_getfield(L, -1, what) == LUA_TTABLE) {
    lua_rawgeti(L, -1, 1);
    dflt_s = lua_tonumber(L, -1);
    lua_rawgeti(L, -2, 2); /* the option's name, kept on the stack until copied */
  } else {
    lua_pushnil(L);
  }
  int dflt_opt = lua_gettop(L);
  /* raises naming every upvalue that cannot be sent; the one allocation
   * made before that is freed on the way */
  size_t code_len = 0;
  char *code = funcs ? lkin_ws_copy_capture(L, idx, idx, what, &code_len) : NULL;

  /* From here on nothing raises: C allocations are undone on failure. */
  int oom = 0;
  lkin_ws_template *t = calloc(1, sizeof(*t));
  if (!t) goto nomem;
  atomic_init(&t->refs, 1);
  t->memory_limit = memory_limit ? memory_limit : LKIN_WS_DEFAULT_MEMORY_LIMIT;
  t->code = code;
  t->code_len = code_len;
  code = NULL;
  if (!(t->what = strdup(what))) goto nomem;
  if (dflt_s > 0 && dflt_s < 1e9) {
    t->call_timeout_ns = (uint64_t)(dflt_s * 1e9);
    if (lua_type(L, dflt_opt) == LUA_TSTRING && !(t->call_option = strdup(lua_tostring(L, dflt_opt))))
      goto nomem;
  }
  if (lua_istable(L, pkg)) {
    t->path = dup_field(L, pkg, "path", &oom);
    t->cpath = dup_field(L, pkg, "cpath", &oom);
    if (oom) goto nomem;
  }
  if (!funcs && !(t->module = strdup(lua_tostring(L, idx)))) goto nomem;
  lua_settop(L, pkg - 1); /* package and the defaults */
  return t;
nomem:
  free(code);
  lkin_ws_template_unref(t);
  luaL_error(L, "not enough memory");
  return NULL;
}

size_t lkin_ws_template_memory_limit(const lkin_ws_template *t) { return t->memory_limit; }

const char *lkin_ws_template_module(const lkin_ws_template *t) { return t->module; }
