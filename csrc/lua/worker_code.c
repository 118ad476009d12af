/* worker_code.c -- the template half of worker_state.h: capturing code in
 * the main state (module name, or self-contained functions sent with
 * string.dump); worker_state.c loads it into the states it builds and
 * owns the templates' reference counts. */
#include "worker_state.h"
#include "worker_int.h"

#include <lauxlib.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SELF_CONTAINED                                                         \
  "functions sent to worker threads must be self-contained (use a module, "   \
  "or keep state in a module-level table)"

/* "handler" or "handler on_add", for messages. */
static const char *label(lua_State *L, const char *what, const char *key) {
  return key ? lua_pushfstring(L, "%s %s", what, key) : lua_pushstring(L, what);
}

/* Raises an argument error on arg unless the function at fi can be sent:
 * a Lua function whose only upvalue, if any, is _ENV. Whatever table _ENV
 * holds here (busted and sandboxes give chunks their own), in the worker it
 * is the worker's globals. Stripped bytecode has unnamed upvalues: one is
 * allowed when it holds the global table. */
static void check_function(lua_State *L, int arg, int fi, const char *what, const char *key) {
  fi = lua_absindex(L, fi);
  if (lua_iscfunction(L, fi))
    luaL_argerror(L, arg,
                  lua_pushfstring(L, "%s: a C function cannot be sent to a worker thread; "
                                     "send a Lua function or a module name",
                                  label(L, what, key)));
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  int globals = lua_gettop(L);
  for (int i = 1;; i++) {
    const char *up = lua_getupvalue(L, fi, i);
    if (!up) break;
    int global_env = lua_rawequal(L, -1, globals);
    lua_pop(L, 1);
    if (strcmp(up, "_ENV") == 0) continue;
    const char *l = label(L, what, key);
    if (strcmp(up, "(no name)") != 0)
      luaL_argerror(L, arg,
                    lua_pushfstring(L, "%s: upvalue '%s' is not allowed; %s", l, up, SELF_CONTAINED));
    if (!global_env)
      luaL_argerror(L, arg,
                    lua_pushfstring(L, "%s: upvalue #%d is not allowed; %s", l, i, SELF_CONTAINED));
  }
  lua_pop(L, 1);
}

/* Validates the code at idx without allocating C memory, so raising here
 * leaks nothing. Returns the number of functions to dump. */
static size_t validate(lua_State *L, int idx, const char *what) {
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
    return n;
  }
  default:
    luaL_typeerror(L, idx, "module name, function or table of functions");
    return 0;
  }
}

typedef struct {
  char *p;
  size_t len, cap;
} cbuf;

static int writer(lua_State *L, const void *p, size_t sz, void *ud) {
  cbuf *b = ud;
  if (b->len + sz > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 1024;
    while (cap < b->len + sz) cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np) return 1;
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->len, p, sz);
  b->len += sz;
  return 0;
}

/* Dumps the function at the top of the stack (debug info kept, for
 * tracebacks) into f. Returns 0 or KIN_ENOMEM. */
static int dump(lua_State *L, const char *name, lkin_ws_func *f) {
  cbuf b = {0};
  if (lua_dump(L, writer, &b, 0) != 0 || (name && !(f->name = strdup(name)))) {
    free(b.p);
    return -1;
  }
  f->chunk = b.p;
  f->len = b.len;
  return 0;
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
  size_t nfuncs = validate(L, idx, what);
  luaL_checkstack(L, 4, NULL);
  /* the package table of the loaded table, not the global that a script
   * may have shadowed; fetched before any malloc (it may allocate) */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, "package");
  lua_remove(L, -2);
  int pkg = lua_gettop(L);

  /* From here on nothing raises: C allocations are undone on failure. */
  int oom = 0;
  lkin_ws_template *t = calloc(1, sizeof(*t));
  if (!t) goto nomem;
  atomic_init(&t->refs, 1);
  t->memory_limit = memory_limit ? memory_limit : LKIN_WS_DEFAULT_MEMORY_LIMIT;
  if (lua_istable(L, pkg)) {
    t->path = dup_field(L, pkg, "path", &oom);
    t->cpath = dup_field(L, pkg, "cpath", &oom);
    if (oom) goto nomem;
  }
  if (nfuncs == 0) {
    if (!(t->module = strdup(lua_tostring(L, idx)))) goto nomem;
  } else {
    if (!(t->funcs = calloc(nfuncs, sizeof(*t->funcs)))) goto nomem;
    if (lua_isfunction(L, idx)) {
      lua_pushvalue(L, idx);
      int rc = dump(L, NULL, &t->funcs[0]);
      lua_pop(L, 1);
      if (rc < 0) goto nomem;
      t->nfuncs = 1;
    } else {
      lua_pushnil(L);
      while (t->nfuncs < nfuncs && lua_next(L, idx)) {
        if (dump(L, lua_tostring(L, -2), &t->funcs[t->nfuncs]) < 0) {
          lua_pop(L, 2);
          goto nomem;
        }
        t->nfuncs++;
        lua_pop(L, 1);
      }
      if (t->nfuncs == nfuncs) lua_pop(L, 1); /* the key: lua_next did not finish */
    }
  }
  lua_pop(L, 1); /* package */
  return t;
nomem:
  lkin_ws_template_unref(t);
  luaL_error(L, "not enough memory");
  return NULL;
}

size_t lkin_ws_template_memory_limit(const lkin_ws_template *t) { return t->memory_limit; }

const char *lkin_ws_template_module(const lkin_ws_template *t) { return t->module; }
