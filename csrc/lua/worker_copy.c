/* worker_copy.c -- functions sent to worker states with copies of their
 * upvalues, as Lanes does (DESIGN.md section 2): the main state's side.
 * lkin_ws_copy_capture walks the code and everything its upvalues reach
 * and writes it into one flat buffer (worker_int.h has its format) that
 * the template keeps; worker_state.c rebuilds a copy of it in each worker
 * state, every time a state is built. Lua states never share a value: the
 * buffer is plain bytes, immutable once captured, read by any number of
 * threads.
 *
 * What is copied: nil, booleans, integers and floats (each as it is),
 * strings, tables (their metatables too; cycles and shared references are
 * kept within one copy; a lazy view, lview.h, is first decoded in place
 * into the plain table it reads as), Lua functions (bytecode with debug
 * info, and their upvalues again; two functions sharing an upvalue share
 * it in the copy). An upvalue _ENV (or, in stripped bytecode, an unnamed
 * upvalue holding the global table) is the worker's globals. What is sent
 * by name: a value of package.loaded (a module: require(name) in the
 * worker, _G its globals) or a field of one (that module's field in the
 * worker). Anything else (a userdata, a coroutine, a C function of no
 * module) cannot be sent: every upvalue leading to one is named in one
 * argument error. */
#include "worker_int.h"

#include <lauxlib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lview.h"

/* Strings this long or longer are written once and referred to after. */
#define LONG_STRING 32
/* Tables and functions nested deeper than this are refused (the walks
 * recurse on the C stack, also the load's on worker threads). */
#define MAX_DEPTH 1000

/* The standard libraries: a field of these is sent by name only when the
 * worker's own library has it for sure (see build_lookup). */
static const char *const std_libs[] = {"_G",     "package", "coroutine", "table", "io",
                                       "os",     "string",  "math",      "utf8",  "debug",
                                       NULL};

static int std_rank(const char *name) {
  for (int i = 0; std_libs[i]; i++)
    if (strcmp(std_libs[i], name) == 0) return i;
  return -1;
}

/* ---- the output buffer -------------------------------------------------- */

/* A userdata owning the buffer while it is written: when the capture
 * raises, the garbage collector frees it (__gc), so nothing leaks. */
typedef struct {
  unsigned char *p;
  size_t len, cap;
} obuf;

static int obuf_gc(lua_State *L) {
  obuf *b = lua_touserdata(L, 1);
  free(b->p);
  b->p = NULL;
  return 0;
}

/* ---- capture (main state) ----------------------------------------------- */

/* Where a value sits, from the top-level upvalue down: a chain on the C
 * stack, rendered only for messages. */
enum { S_ROOT, S_FIELD, S_KEY, S_META, S_UPVAL };
typedef struct seg {
  const struct seg *up;
  int kind;
  int key;          /* S_FIELD: stack index of the key */
  const char *name; /* S_ROOT, S_UPVAL: the upvalue's name */
  int depth;
} seg;

typedef struct {
  lua_State *L;
  obuf *out;
  const char *what;
  /* stack indexes of the scratch tables */
  int memo;      /* object -> its number */
  int upids;     /* lua_upvalueid -> function number * 256 + upvalue */
  int badups;    /* lua_upvalueid -> its path, when its value holds an offender */
  int bad;       /* finished object -> its path, when it holds an offender */
  int offenders; /* unit number -> its message */
  int mods;      /* value -> module name (filled on first need: lookup_built) */
  int fields;    /* value -> field name of the module in mods */
  int globals;
  int lookup_built;
  lua_Integer nobj;
  size_t nbad;      /* offending values met so far, reported or not */
  int unit;         /* the top-level upvalue walked (its number), 0: none */
  const char *unit_label; /* "upvalue 'mgr'", "on_add's upvalue 'mgr'" */
  int unit_depth;   /* depth of its reported offender, -1: none yet */
  int too_big;
  char big_unit[160]; /* the unit being written when the limit was crossed */
} wcap;

/* Appends n bytes to the buffer; past LKIN_WS_COPY_MAX sets too_big
 * instead and writes nothing more. Raises on memory errors (the box still owns the
 * buffer then). */
static void put(wcap *c, const void *p, size_t n) {
  obuf *b = c->out;
  if (c->too_big) return;
  if (b->len + n > LKIN_WS_COPY_MAX) {
    c->too_big = 1;
    snprintf(c->big_unit, sizeof(c->big_unit), "%s", c->unit_label ? c->unit_label : "the code itself");
    return;
  }
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    unsigned char *np = realloc(b->p, cap);
    if (!np) luaL_error(c->L, "not enough memory"); /* the box frees b->p */
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->len, p, n);
  b->len += n;
}

static void put_byte(wcap *c, int v) {
  unsigned char u = (unsigned char)v;
  put(c, &u, 1);
}

static void put_varint(wcap *c, uint64_t v) {
  unsigned char b[10];
  size_t n = 0;
  do {
    b[n] = (unsigned char)(v & 0x7f);
    v >>= 7;
    if (v) b[n] |= 0x80;
    n++;
  } while (v);
  put(c, b, n);
}

static void put_string(wcap *c, int tag, const char *s, size_t n) {
  put_byte(c, tag);
  put_varint(c, n);
  put(c, s, n);
}

/* Reserves a u32 to fill in later (patch32); returns its offset. */
static size_t reserve32(wcap *c) {
  size_t at = c->out->len;
  uint32_t z = 0;
  put(c, &z, sizeof(z));
  return at;
}

static void patch32(wcap *c, size_t at, size_t v) {
  if (c->too_big) return;
  uint32_t u = (uint32_t)v;
  memcpy(c->out->p + at, &u, sizeof(u));
}

/* lua_dump's writer: appends to the buffer; non-zero (lua_dump stops)
 * once over the limit. */
static int dump_writer(lua_State *L, const void *p, size_t sz, void *ud) {
  wcap *c = ud;
  put(c, p, sz);
  return c->too_big;
}

/* ---- messages ---- */

/* Whether s is a Lua name (written t.s in a path, not t["s"]). */
static int is_name(const char *s, size_t n) {
  if (n == 0 || !(s[0] == '_' || ((s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z'))) return 0;
  for (size_t i = 1; i < n; i++)
    if (!(s[i] == '_' || (s[i] >= '0' && s[i] <= '9') ||
          ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z')))
      return 0;
  return 1;
}

/* Pushes "cfg.clients[2]", "getmetatable(t).__index", "log, whose upvalue
 * mgr.env", "(a key of t)": where s is, as a user would write it. */
static const char *render(lua_State *L, const seg *s) {
  luaL_checkstack(L, 4, NULL);
  if (!s) return lua_pushliteral(L, "?");
  if (s->kind == S_ROOT) return lua_pushstring(L, s->name);
  const char *up = render(L, s->up);
  switch (s->kind) {
  case S_FIELD: {
    size_t n;
    switch (lua_type(L, s->key)) {
    case LUA_TSTRING: {
      const char *k = lua_tolstring(L, s->key, &n);
      if (is_name(k, n)) lua_pushfstring(L, "%s.%s", up, k);
      else if (n <= 40 && strlen(k) == n) lua_pushfstring(L, "%s[\"%s\"]", up, k);
      else lua_pushfstring(L, "%s[<a string>]", up);
      break;
    }
    case LUA_TNUMBER:
      if (lua_isinteger(L, s->key)) lua_pushfstring(L, "%s[%I]", up, lua_tointeger(L, s->key));
      else lua_pushfstring(L, "%s[%f]", up, lua_tonumber(L, s->key));
      break;
    case LUA_TBOOLEAN:
      lua_pushfstring(L, "%s[%s]", up, lua_toboolean(L, s->key) ? "true" : "false");
      break;
    default:
      lua_pushfstring(L, "%s[<a %s key>]", up, luaL_typename(L, s->key));
    }
    break;
  }
  case S_KEY: lua_pushfstring(L, "(a key of %s)", up); break;
  case S_META: lua_pushfstring(L, "getmetatable(%s)", up); break;
  default: lua_pushfstring(L, "%s, whose upvalue %s", up, s->name); break;
  }
  lua_remove(L, -2);
  return lua_tostring(L, -1);
}

/* Notes an offending value at path, described by desc ("a coroutine").
 * Each top-level upvalue is named once, with its offender nearest to it
 * (ties: the first path in byte order, so that messages do not depend on
 * the order tables are walked in). */
static void offend(wcap *c, const seg *path, const char *desc) {
  lua_State *L = c->L;
  c->nbad++;
  int depth = path ? path->depth : 0;
  if (c->unit_depth >= 0 && depth > c->unit_depth) return;
  luaL_checkstack(L, 4, NULL);
  const char *label = c->unit_label ? c->unit_label : c->what;
  if (depth == 0) {
    lua_pushfstring(L, "%s (%s)", label, desc);
  } else {
    size_t n;
    const char *p = render(L, path);
    n = strlen(p);
    if (n > 160) { /* a long chain: its ends say enough */
      lua_pushfstring(L, "%s (%s...%s is %s)", label, lua_pushlstring(L, p, 60), p + n - 80, desc);
      lua_remove(L, -2);
    } else {
      lua_pushfstring(L, "%s (%s is %s)", label, p, desc);
    }
    lua_remove(L, -2);
  }
  if (c->unit_depth == depth) {
    lua_rawgeti(L, c->offenders, c->unit);
    int keep = strcmp(lua_tostring(L, -1), lua_tostring(L, -2)) <= 0;
    lua_pop(L, 1);
    if (keep) {
      lua_pop(L, 1);
      return;
    }
  }
  lua_rawseti(L, c->offenders, c->unit);
  c->unit_depth = depth;
}

/* ---- the module lookup ---- */

static int cmp_strings(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_names(const void *a, const void *b) {
  const char *x = *(const char *const *)a, *y = *(const char *const *)b;
  int rx = std_rank(x), ry = std_rank(y);
  if (rx >= 0 || ry >= 0) {
    if (rx < 0) return 1;
    if (ry < 0) return -1;
    return rx - ry;
  }
  return strcmp(x, y);
}

/* The values that may be a module or a module's field by identity. */
static int is_ref_type(int ty) {
  return ty == LUA_TTABLE || ty == LUA_TFUNCTION || ty == LUA_TUSERDATA || ty == LUA_TLIGHTUSERDATA;
}

/* Builds the values sent by name from package.loaded as it is now: each
 * module (a table, function or userdata of package.loaded), then each
 * field of a module table. A value reachable under several names takes
 * the first: modules before fields, the standard libraries first, then
 * names in byte order. Of a standard library only C functions and, but in
 * _G, userdata (io.stdout) and tables (package.loaded) are taken: the
 * worker's libraries have those, not the Lua functions, tables or
 * userdata a script put there (its global tables and functions are copied
 * instead, its global userdata refused). */
static void build_lookup(wcap *c) {
  lua_State *L = c->L;
  c->lookup_built = 1;
  luaL_checkstack(L, 8, NULL);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  int loaded = lua_gettop(L);
  /* the names, anchored in a table of ours while their pointers are sorted */
  lua_newtable(L);
  int names = lua_gettop(L);
  lua_Integer n = 0;
  lua_pushnil(L);
  while (lua_next(L, loaded)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING) {
      lua_pushvalue(L, -1);
      lua_rawseti(L, names, ++n);
    }
  }
  const char **sorted = lua_newuserdatauv(L, (size_t)n * sizeof(*sorted) + 1, 0);
  for (lua_Integer i = 0; i < n; i++) {
    lua_rawgeti(L, names, i + 1);
    sorted[i] = lua_tostring(L, -1);
    lua_pop(L, 1); /* anchored by names */
  }
  qsort(sorted, (size_t)n, sizeof(*sorted), cmp_names);
  /* the modules */
  for (lua_Integer i = 0; i < n; i++) {
    lua_pushstring(L, sorted[i]);
    if (is_ref_type(lua_rawget(L, loaded))) {
      lua_pushvalue(L, -1);
      if (lua_rawget(L, c->mods) == LUA_TNIL) {
        lua_pop(L, 1);
        lua_pushstring(L, sorted[i]);
        lua_rawset(L, c->mods);
        continue;
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_pushvalue(L, c->globals);
  if (lua_rawget(L, c->mods) == LUA_TNIL) {
    lua_pushvalue(L, c->globals);
    lua_pushliteral(L, "_G");
    lua_rawset(L, c->mods);
  }
  lua_pop(L, 1);
  /* their fields */
  for (lua_Integer i = 0; i < n; i++) {
    lua_pushstring(L, sorted[i]);
    if (lua_rawget(L, loaded) != LUA_TTABLE) {
      lua_pop(L, 1);
      continue;
    }
    int mod = lua_gettop(L), rank = std_rank(sorted[i]);
    lua_pushnil(L);
    while (lua_next(L, mod)) {
      int ty = lua_type(L, -1);
      int take = lua_type(L, -2) == LUA_TSTRING && is_ref_type(ty);
      if (take && rank >= 0)
        take = lua_iscfunction(L, -1) || (rank != 0 && (ty == LUA_TUSERDATA || ty == LUA_TTABLE));
      if (take) { /* the first name wins */
        lua_pushvalue(L, -1);
        take = lua_rawget(L, c->mods) == LUA_TNIL;
        lua_pop(L, 1);
      }
      if (take) {
        lua_pushvalue(L, -1);
        lua_pushvalue(L, -3);
        lua_rawset(L, c->fields); /* value -> field name */
        lua_pushvalue(L, -1);
        lua_pushstring(L, sorted[i]);
        lua_rawset(L, c->mods); /* value -> module name */
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 3); /* loaded, names, sorted */
}

/* ---- the walk ---- */

static void put_value(wcap *c, int idx, const seg *path);

/* Numbers the object at idx: the next object the worker makes. */
static void remember(wcap *c, int idx) {
  lua_pushvalue(c->L, idx);
  lua_pushinteger(c->L, ++c->nobj);
  lua_rawset(c->L, c->memo);
}

/* Writes a back-reference when the object at idx was written before. An
 * object found to hold an offender names this path too. Returns 1 if so. */
static int put_backref(wcap *c, int idx, const seg *path) {
  lua_State *L = c->L;
  idx = lua_absindex(L, idx);
  lua_pushvalue(L, idx);
  if (lua_rawget(L, c->memo) != LUA_TNUMBER) {
    lua_pop(L, 1);
    return 0;
  }
  put_byte(c, WC_REF);
  put_varint(c, (uint64_t)lua_tointeger(L, -1));
  lua_pop(L, 1);
  lua_pushvalue(L, idx);
  if (lua_rawget(L, c->bad) == LUA_TSTRING) {
    lua_pushfstring(L, "the same %s as %s", luaL_typename(L, idx), lua_tostring(L, -1));
    offend(c, path, lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return 1;
}

/* Marks the object at idx as holding an offender when one was met since
 * nbad0, so that later references to it are named as well. */
static void mark_bad(wcap *c, int idx, const seg *path, size_t nbad0) {
  if (c->nbad == nbad0) return;
  lua_pushvalue(c->L, idx);
  render(c->L, path);
  lua_rawset(c->L, c->bad);
}

/* Writes the module reference of the value at idx when it is one. */
static int put_module(wcap *c, int idx, const seg *path) {
  lua_State *L = c->L;
  if (!c->lookup_built) build_lookup(c);
  lua_pushvalue(L, idx);
  if (lua_rawget(L, c->mods) != LUA_TSTRING) {
    lua_pop(L, 1);
    return 0;
  }
  size_t n;
  const char *name = lua_tolstring(L, -1, &n);
  remember(c, idx);
  put_byte(c, WC_MOD);
  put_string(c, WC_STR, name, n);
  lua_pushvalue(L, idx);
  if (lua_rawget(L, c->fields) == LUA_TSTRING) {
    const char *f = lua_tolstring(L, -1, &n);
    put_byte(c, 1);
    put_string(c, WC_STR, f, n);
  } else {
    put_byte(c, 0);
  }
  /* where, for the worker's message when the module does not load there */
  const char *label = c->unit_label ? c->unit_label : c->what;
  if (!path || path->depth == 0) lua_pushstring(L, label);
  else lua_pushfstring(L, "%s (%s)", label, render(L, path)), lua_remove(L, -2);
  const char *w = lua_tolstring(L, -1, &n);
  put_string(c, WC_STR, w, n);
  lua_pop(L, 3);
  return 1;
}

/* Writes the table at idx: its pairs, raw (keys may be any value that
 * can be sent), then its metatable. */
static void put_table(wcap *c, int idx, const seg *path) {
  lua_State *L = c->L;
  idx = lua_absindex(L, idx);
  size_t nbad0 = c->nbad;
  luaL_checkstack(L, 8, NULL);
  /* a lazy view of a cached object (a kept inf:get result): decoded in
   * place into the plain table it stands for, which is what is sent */
  if (lkin_view_is(L, idx)) lkin_view_materialize(L, idx);
  remember(c, idx);
  put_byte(c, WC_TABLE);
  size_t at_arr = reserve32(c), at_hash = reserve32(c);
  size_t narr = 0, nhash = 0;
  int depth = path ? path->depth + 1 : 1;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (c->too_big) {
      lua_pop(L, 2);
      return;
    }
    int k = lua_gettop(L) - 1;
    if (lua_isinteger(L, k) && lua_tointeger(L, k) >= 1 && lua_tointeger(L, k) <= INT32_MAX) narr++;
    else nhash++;
    seg ks = {path, S_KEY, k, NULL, depth};
    put_value(c, k, &ks);
    seg vs = {path, S_FIELD, k, NULL, depth};
    put_value(c, k + 1, &vs);
    lua_pop(L, 1);
  }
  if (c->too_big) return;
  put_byte(c, WC_END);
  patch32(c, at_arr, narr);
  patch32(c, at_hash, nhash);
  if (lua_getmetatable(L, idx)) {
    seg ms = {path, S_META, 0, NULL, depth};
    put_value(c, lua_gettop(L), &ms);
    lua_pop(L, 1);
  } else {
    put_byte(c, WC_NIL);
  }
  mark_bad(c, idx, path, nbad0);
}

/* Starts a unit of the messages: an upvalue of a function of the code
 * itself, named "upvalue 'x'" or, in a table of functions, "on_add's
 * upvalue 'x'". Pushes the label. */
static void start_unit(wcap *c, const char *key, const char *name, int unnamed) {
  lua_State *L = c->L;
  c->unit++;
  c->unit_depth = -1;
  if (key && unnamed) c->unit_label = lua_pushfstring(L, "%s's upvalue %s", key, name);
  else if (key) c->unit_label = lua_pushfstring(L, "%s's upvalue '%s'", key, name);
  else if (unnamed) c->unit_label = lua_pushfstring(L, "upvalue %s", name);
  else c->unit_label = lua_pushfstring(L, "upvalue '%s'", name);
}

/* Writes the Lua function at idx and its upvalues. For a function of the
 * code itself (top), each upvalue starts a unit of the messages, labelled
 * with key (the function's name in a table of functions) when not NULL. */
static void put_function(wcap *c, int idx, const seg *path, int top, const char *key) {
  lua_State *L = c->L;
  idx = lua_absindex(L, idx);
  size_t nbad0 = c->nbad;
  luaL_checkstack(L, 8, NULL);
  remember(c, idx);
  lua_Integer fno = c->nobj;
  put_byte(c, WC_FUNC);
  size_t at = reserve32(c), start = c->out->len;
  lua_pushvalue(L, idx);
  lua_dump(L, dump_writer, c, 0); /* debug info kept: tracebacks name the lines */
  lua_pop(L, 1);
  if (c->too_big) return;
  patch32(c, at, c->out->len - start);
  lua_Debug ar;
  lua_pushvalue(L, idx);
  lua_getinfo(L, ">u", &ar);
  put_byte(c, ar.nups);
  int depth = path ? path->depth + 1 : 1;
  for (int i = 1; i <= ar.nups && !c->too_big; i++) {
    const char *name = lua_getupvalue(L, idx, i);
    int v = lua_gettop(L);
    int unnamed = strcmp(name, "(no name)") == 0 || *name == 0;
    if (strcmp(name, "_ENV") == 0 || (unnamed && lua_rawequal(L, v, c->globals))) {
      put_byte(c, WC_UP_ENV);
      lua_pop(L, 1);
      continue;
    }
    if (unnamed) name = lua_pushfstring(L, "#%d", i);
    else lua_pushnil(L); /* keep the stack shape */
    void *id = lua_upvalueid(L, idx, i);
    if (lua_rawgetp(L, c->upids, id) == LUA_TNUMBER) {
      /* a variable another function closes over too: shared in the copy */
      lua_Integer j = lua_tointeger(L, -1);
      put_byte(c, WC_UP_JOIN);
      put_varint(c, (uint64_t)(j >> 8));
      put_byte(c, (int)(j & 0xff));
      if (lua_rawgetp(L, c->badups, id) == LUA_TSTRING) {
        seg s = {top ? NULL : path, top ? S_ROOT : S_UPVAL, 0, name, top ? 0 : depth};
        if (top) start_unit(c, key, name, unnamed);
        lua_pushfstring(L, "the same variable as %s", lua_tostring(L, -1));
        offend(c, &s, lua_tostring(L, -1));
        lua_pop(L, top ? 2 : 1);
        if (top) c->unit_label = NULL;
      }
      lua_pop(L, 4);
      continue;
    }
    lua_pop(L, 1);
    lua_pushinteger(L, fno * 256 + i);
    lua_rawsetp(L, c->upids, id);
    put_byte(c, WC_UP_VAL);
    size_t nbad_up = c->nbad;
    seg s = {top ? NULL : path, top ? S_ROOT : S_UPVAL, 0, name, top ? 0 : depth};
    if (top) start_unit(c, key, name, unnamed);
    put_value(c, v, &s);
    if (c->nbad != nbad_up) { /* named again where another function shares it */
      render(L, &s);
      lua_rawsetp(L, c->badups, id);
    }
    if (top) {
      c->unit_label = NULL;
      lua_pop(L, 1);
    }
    lua_pop(L, 2); /* the value, the name or nil */
  }
  mark_bad(c, idx, path, nbad0);
}

/* Writes the value at idx, reached by path: as itself, as a back-reference,
 * by name (a module or a module's field), or, when it cannot be sent, as
 * nil with the offender noted. */
static void put_value(wcap *c, int idx, const seg *path) {
  lua_State *L = c->L;
  if (c->too_big) return;
  idx = lua_absindex(L, idx);
  int ty = lua_type(L, idx);
  switch (ty) {
  case LUA_TNIL: put_byte(c, WC_NIL); return;
  case LUA_TBOOLEAN: put_byte(c, lua_toboolean(L, idx) ? WC_TRUE : WC_FALSE); return;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) {
      lua_Integer i = lua_tointeger(L, idx);
      put_byte(c, WC_INT);
      put(c, &i, sizeof(i));
    } else {
      lua_Number d = lua_tonumber(L, idx);
      put_byte(c, WC_FLT);
      put(c, &d, sizeof(d));
    }
    return;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    if (n < LONG_STRING) {
      put_string(c, WC_STR, s, n);
    } else if (!put_backref(c, idx, path)) {
      remember(c, idx);
      put_string(c, WC_LSTR, s, n);
    }
    return;
  }
  default: break;
  }
  if (put_backref(c, idx, path) || put_module(c, idx, path)) return;
  int depth = path ? path->depth : 0;
  if ((ty == LUA_TTABLE || ty == LUA_TFUNCTION) && depth >= MAX_DEPTH) {
    offend(c, path, "nested deeper than 1000 tables and functions");
    put_byte(c, WC_NIL);
    return;
  }
  switch (ty) {
  case LUA_TTABLE: put_table(c, idx, path); break;
  case LUA_TFUNCTION:
    if (!lua_iscfunction(L, idx)) {
      put_function(c, idx, path, 0, NULL);
    } else {
      offend(c, path, "a C function that is no field of a loaded module");
      put_byte(c, WC_NIL);
    }
    break;
  case LUA_TUSERDATA: {
    int mt = luaL_getmetafield(L, idx, "__name"); /* raw: runs no code */
    if (mt == LUA_TSTRING) {
      lua_pushfstring(L, "a %s userdata", lua_tostring(L, -1));
      offend(c, path, lua_tostring(L, -1));
      lua_pop(L, 2);
    } else {
      if (mt != LUA_TNIL) lua_pop(L, 1);
      offend(c, path, "a userdata");
    }
    put_byte(c, WC_NIL);
    break;
  }
  case LUA_TLIGHTUSERDATA:
    offend(c, path, "a light userdata");
    put_byte(c, WC_NIL);
    break;
  default:
    offend(c, path, ty == LUA_TTHREAD ? "a coroutine" : luaL_typename(L, idx));
    put_byte(c, WC_NIL);
  }
}

/* What to do instead, by the kind of code. */
static const char *advice(const char *what) {
  if (strcmp(what, "reconciler") == 0 || strcmp(what, "map function") == 0)
    return "use ctx.client / ctx.listers instead of the manager, its informers and "
           "clients, or require a module inside the function";
  return "send plain values (strings, numbers, tables of them) or modules, and make "
         "clients, informers and the like inside the function (require \"kinformer.core\")";
}

char *lkin_ws_copy_capture(lua_State *L, int idx, int arg, const char *what, size_t *len) {
  idx = lua_absindex(L, idx);
  luaL_checkstack(L, 16, NULL);
  int base = lua_gettop(L);
  obuf *out = lua_newuserdatauv(L, sizeof(*out), 0);
  memset(out, 0, sizeof(*out));
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, obuf_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  wcap c = {.L = L, .out = out, .what = what, .unit_depth = -1};
  lua_newtable(L);
  c.memo = lua_gettop(L);
  lua_newtable(L);
  c.upids = lua_gettop(L);
  lua_newtable(L);
  c.bad = lua_gettop(L);
  lua_newtable(L);
  c.badups = lua_gettop(L);
  lua_newtable(L);
  c.offenders = lua_gettop(L);
  lua_newtable(L);
  c.mods = lua_gettop(L);
  lua_newtable(L);
  c.fields = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  c.globals = lua_gettop(L);

  if (lua_isfunction(L, idx)) {
    put_function(&c, idx, NULL, 1, NULL);
  } else {
    /* a table of functions (checked by the caller): a plain table of
     * them in the worker, its metatable left behind */
    seg root = {NULL, S_ROOT, 0, "table", 0};
    remember(&c, idx);
    put_byte(&c, WC_TABLE);
    reserve32(&c); /* no array part */
    size_t at_hash = reserve32(&c), n = 0;
    /* in the order of the names, so that messages list them so */
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      lua_pop(L, 1);
      n++;
    }
    const char **keys = lua_newuserdatauv(L, n * sizeof(*keys) + 1, 0);
    n = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      lua_pop(L, 1);
      keys[n++] = lua_tostring(L, -1); /* anchored by the table */
    }
    qsort(keys, n, sizeof(*keys), cmp_strings);
    for (size_t i = 0; i < n && !c.too_big; i++) {
      put_string(&c, WC_STR, keys[i], strlen(keys[i]));
      lua_pushstring(L, keys[i]);
      lua_rawget(L, idx);
      if (!put_backref(&c, -1, &root)) put_function(&c, lua_gettop(L), &root, 1, keys[i]);
      lua_pop(L, 1);
    }
    lua_pop(L, 1); /* keys */
    put_byte(&c, WC_END);
    patch32(&c, at_hash, n);
    put_byte(&c, WC_NIL);
  }

  if (c.too_big) {
    free(out->p);
    out->p = NULL;
    luaL_argerror(L, arg,
                  lua_pushfstring(L, "%s: cannot send to worker threads: the code and its upvalues "
                                     "come to more than %d MiB (%s went over); load large data "
                                     "inside the function (from a module or a file) instead",
                                  what, (int)(LKIN_WS_COPY_MAX >> 20),
                                  c.big_unit));
  }
  if (c.nbad > 0) {
    free(out->p);
    out->p = NULL;
    int parts = 1;
    lua_pushfstring(L, "%s: cannot send to worker threads: ", what);
    /* the units in order (1..; 0 holds what is outside any), each named once */
    for (lua_Integer i = 1; i <= c.unit + 1; i++) {
      luaL_checkstack(L, 3, NULL);
      if (lua_rawgeti(L, c.offenders, i % (c.unit + 1)) != LUA_TSTRING) {
        lua_pop(L, 1);
        continue;
      }
      if (parts > 1) {
        lua_pushliteral(L, ", ");
        lua_insert(L, -2);
        parts++;
      }
      parts++;
    }
    lua_pushfstring(L, "; a %s runs in its own Lua state: %s", what, advice(what));
    lua_concat(L, parts + 1);
    luaL_argerror(L, arg, lua_tostring(L, -1));
  }
  unsigned char *p = out->p;
  *len = out->len;
  out->p = NULL; /* the caller's now */
  lua_settop(L, base);
  if (!p) p = malloc(1); /* never empty, but keep the promise */
  return (char *)p;
}
