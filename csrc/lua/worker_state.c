/* worker_state.c -- the state half of worker_state.h: the factory, the
 * memory-limited allocator, protected calls with a traceback, rebuild after
 * running out of memory, the load of functions sent with copies of their
 * upvalues (each state its own copy), and objects pushed as lazy views
 * (lview.h). */
#include "worker_state.h"
#include "worker_int.h"

#include <lauxlib.h>
#include <lualib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "lcall_limit.h"
#include "lcall_proc.h"
#include "ljson.h"
#include "log.h"
#include "lview.h"

#define CJSON_KEY "kinformer.cjson"
/* Registry key of the loaded code: a function or a table of functions. */
/* The registry key of a state's code: light userdata of this address
 * (read on every event and reconcile: lua_rawgetp, no string compare). */
static const char code_key;
#define CODE_KEY (&code_key)

/* The opener of kinformer.core that new states preload (lkin_ws_set_core);
 * NULL until the binding was opened in some state of the process. */
static _Atomic(lua_CFunction) core_open;

void lkin_ws_set_core(lua_CFunction open) { atomic_store(&core_open, open); }

/* Owned by its owner thread; no lock: other threads read the counters only
 * while the owner is known to be idle (after a handoff under their lock). */
struct lkin_ws {
  size_t used;  /* bytes the allocator has handed out */
  size_t limit; /* and may hand out at most */
  /* the last growth it refused, to tell a retry after the emergency
   * collection (the state is really out of memory) from a first refusal */
  void *refused_ptr;
  size_t refused_osize, refused_nsize;
  int oom; /* ran out of memory since the last (re)build */
  lua_State *L; /* NULL after a failed rebuild */
  lkin_ws_template *t;
  char *name;
  unsigned rebuilds;
  char warn[512]; /* a warning being assembled from pieces */
  size_t warn_len;
  void *user;     /* lkin_ws_set_user */
  const atomic_int *abort; /* lkin_ws_set_abort */
  lkin_call_limit_slot slot; /* the limited call in progress (lcall_limit.h) */
  int last_cut;   /* LKIN_CL_*: what cut the last lkin_ws_protect */
};

static void *ws_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  lkin_ws *w = ud;
  if (!ptr) osize = 0; /* osize is then the kind of object being made */
  if (nsize == 0) {
    free(ptr);
    w->used -= osize;
    return NULL;
  }
  if (nsize > osize && (w->used > w->limit || nsize - osize > w->limit - w->used)) {
    if (ptr == w->refused_ptr && osize == w->refused_osize && nsize == w->refused_nsize)
      w->oom = 1; /* refused again after Lua's emergency full collection */
    w->refused_ptr = ptr;
    w->refused_osize = osize;
    w->refused_nsize = nsize;
    return NULL;
  }
  void *p = ptr ? realloc(ptr, nsize) : malloc(nsize); /* most calls make a new block */
  if (!p) {
    if (nsize > osize) return NULL;
    p = ptr; /* Lua assumes shrinking never fails: keep the larger block */
  }
  w->used = w->used - osize + nsize;
  if (nsize > osize) {
    w->refused_ptr = NULL;
    w->refused_nsize = 0;
  }
  return p;
}

static lkin_ws *ws_of(lua_State *L) {
  void *ud;
  return lua_getallocf(L, &ud) == ws_alloc ? ud : NULL;
}

lkin_call_limit_slot *lkin_ws_limit_slot(lua_State *L) {
  lkin_ws *w = ws_of(L);
  return w ? &w->slot : NULL;
}

/* lcall_limit.c's way to a worker state's slot (from its allocator's ud). */
static lkin_call_limit_slot *slot_of_ud(void *ud) { return &((lkin_ws *)ud)->slot; }

static void note_status(lua_State *L, int status) {
  lkin_ws *w;
  if (status == LUA_ERRMEM && (w = ws_of(L))) w->oom = 1;
}

static int panic(lua_State *L) {
  /* only reachable through a bug: all worker code runs under lua_pcall */
  lkin_ws *w = ws_of(L);
  kin_log(KIN_LOG_ERROR, "worker", "%s: unprotected Lua error: %s", w ? w->name : "?",
          lua_tostring(L, -1) ? lua_tostring(L, -1) : "(not a string)");
  return 0;
}

/* Warnings (warn() in Lua 5.4) go to the log, not to a terminal that a
 * worker thread does not own. */
static void warnf(void *ud, const char *msg, int tocont) {
  lkin_ws *w = ud;
  if (w->warn_len == 0 && !tocont && *msg == '@') return; /* control message */
  size_t n = strlen(msg), room = sizeof(w->warn) - 1 - w->warn_len;
  memcpy(w->warn + w->warn_len, msg, n < room ? n : room);
  w->warn_len += n < room ? n : room;
  if (tocont) return;
  w->warn[w->warn_len] = 0;
  kin_log(KIN_LOG_WARN, "worker", "%s: Lua warning: %s", w->name, w->warn);
  w->warn_len = 0;
}

static char *dup_message(lua_State *L, int i) {
  const char *m = lua_tostring(L, i);
  return strdup(m ? m : "(error object is not a string)");
}

/* ---- cjson -------------------------------------------------------------- */

/* lua-cjson's luaopen and new() rewrite a process-wide static (the locale
 * decimal point): serialise them across states. */
static pthread_mutex_t cjson_lock = PTHREAD_MUTEX_INITIALIZER;

static int open_cjson(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "cjson");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "new");
  lua_call(L, 0, 1);
  return 1;
}

void lkin_cjson(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, CJSON_KEY) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_pushcfunction(L, open_cjson);
  pthread_mutex_lock(&cjson_lock);
  int st = lua_pcall(L, 0, 1, 0);
  pthread_mutex_unlock(&cjson_lock);
  if (st != LUA_OK) {
    note_status(L, st);
    lua_error(L);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, CJSON_KEY);
}

/* ---- template lifetime (the states hold references) ---------------------- */

lkin_ws_template *lkin_ws_template_ref(lkin_ws_template *t) {
  atomic_fetch_add(&t->refs, 1);
  return t;
}

void lkin_ws_template_unref(lkin_ws_template *t) {
  if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
  free(t->code);
  free(t->what);
  free(t->module);
  free(t->path);
  free(t->cpath);
  free(t->call_option);
  free(t);
}

/* ---- the copy of functions and their upvalues (worker_int.h) ------------ */

typedef struct {
  lua_State *L;
  const unsigned char *p, *end;
  const char *what;
  int refs; /* stack index: number -> object */
  lua_Integer nobj;
  int globals;
} wload;

/* Raises: the buffer is not what the capture wrote (never, but a bug). */
static void corrupt(wload *r) __attribute__((noreturn));
static void corrupt(wload *r) {
  luaL_error(r->L, "%s: the code's copy is corrupt (a bug)", r->what);
  abort(); /* not reached */
}

static int get_byte(wload *r) {
  if (r->p >= r->end) corrupt(r);
  return *r->p++;
}

static uint64_t get_varint(wload *r) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    int b = get_byte(r);
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  corrupt(r);
}

static const void *get_bytes(wload *r, size_t n) {
  if ((size_t)(r->end - r->p) < n) corrupt(r);
  const void *p = r->p;
  r->p += n;
  return p;
}

static uint32_t get_u32(wload *r) {
  uint32_t u;
  memcpy(&u, get_bytes(r, sizeof(u)), sizeof(u));
  return u;
}

/* Pushes a string record (STR) and returns it. */
static const char *get_string(wload *r) {
  if (get_byte(r) != WC_STR) corrupt(r);
  size_t n = (size_t)get_varint(r);
  return lua_pushlstring(r->L, get_bytes(r, n), n);
}

/* Numbers the object at the top of the stack, as remember() did. */
static void number_it(wload *r) {
  lua_pushvalue(r->L, -1);
  lua_rawseti(r->L, r->refs, ++r->nobj);
}

static void get_value(wload *r);

/* MOD: pushes the module (or its field) of this worker state; raises
 * naming the upvalue when it cannot be had. */
static void get_module(wload *r) {
  lua_State *L = r->L;
  int base = lua_gettop(L);
  const char *name = get_string(r);
  const char *field = get_byte(r) ? get_string(r) : NULL;
  const char *where = get_string(r);
  if (strcmp(name, "_G") == 0) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  } else {
    lua_getglobal(L, "require");
    lua_pushstring(L, name);
    int st = lua_pcall(L, 1, 1, 0);
    if (st == LUA_ERRMEM) lua_error(L);
    if (st != LUA_OK)
      luaL_error(L, "%s: %s is module '%s' in the main state, but require '%s' failed in this "
                    "worker state: %s",
                 r->what, where, name, name, luaL_tolstring(L, -1, NULL));
  }
  if (field) {
    int ty = LUA_TNIL;
    if (lua_istable(L, -1)) {
      lua_pushstring(L, field);
      ty = lua_rawget(L, -2);
      lua_remove(L, -2);
    }
    if (ty == LUA_TNIL)
      luaL_error(L, "%s: %s is %s.%s in the main state, but module '%s' has no field '%s' in "
                    "this worker state (a value a script adds to a module at run time is not "
                    "there: make it a local of the script, or define it in the module's file)",
                 r->what, where, name, field, name, field);
  }
  lua_replace(L, base + 1);
  lua_settop(L, base + 1);
  number_it(r);
}

/* TABLE: pushes a new table with its pairs and metatable. */
static void get_table(wload *r) {
  lua_State *L = r->L;
  uint32_t narr = get_u32(r), nhash = get_u32(r);
  lua_createtable(L, narr > (1u << 24) ? 1 << 24 : (int)narr, nhash > (1u << 24) ? 1 << 24 : (int)nhash);
  number_it(r);
  while (r->p < r->end && *r->p != WC_END) {
    get_value(r); /* key */
    get_value(r);
    if (lua_isnil(L, -2)) corrupt(r);
    lua_rawset(L, -3);
  }
  get_byte(r); /* END */
  get_value(r);
  if (lua_istable(L, -1)) lua_setmetatable(L, -2);
  else if (lua_isnil(L, -1)) lua_pop(L, 1);
  else corrupt(r);
}

/* FUNC: pushes a new closure of the bytecode with its upvalues set. */
static void get_function(wload *r) {
  lua_State *L = r->L;
  size_t n = get_u32(r);
  const char *code = get_bytes(r, n);
  /* the chunk's own name (its source) comes from the dump */
  int st = luaL_loadbufferx(L, code, n, "=function", "b");
  if (st == LUA_ERRMEM) lua_error(L);
  if (st != LUA_OK) corrupt(r);
  int f = lua_gettop(L);
  number_it(r);
  int nups = get_byte(r);
  /* every upvalue explicitly: a binary chunk gets the globals in its
   * first upvalue only, and the first of a nested function need not be
   * _ENV */
  for (int i = 1; i <= nups; i++) {
    switch (get_byte(r)) {
    case WC_UP_ENV:
      lua_pushvalue(L, r->globals);
      if (!lua_setupvalue(L, f, i)) corrupt(r);
      break;
    case WC_UP_JOIN: {
      lua_Integer j = (lua_Integer)get_varint(r);
      int up = get_byte(r);
      if (lua_rawgeti(L, r->refs, j) != LUA_TFUNCTION || lua_iscfunction(L, -1)) corrupt(r);
      lua_upvaluejoin(L, f, i, -1, up);
      lua_pop(L, 1);
      break;
    }
    case WC_UP_VAL:
      get_value(r);
      if (!lua_setupvalue(L, f, i)) corrupt(r);
      break;
    default: corrupt(r);
    }
  }
}

/* Pushes the next value of the buffer. */
static void get_value(wload *r) {
  lua_State *L = r->L;
  luaL_checkstack(L, 8, NULL);
  int tag = get_byte(r);
  switch (tag) {
  case WC_NIL: lua_pushnil(L); break;
  case WC_FALSE: lua_pushboolean(L, 0); break;
  case WC_TRUE: lua_pushboolean(L, 1); break;
  case WC_INT: {
    lua_Integer i;
    memcpy(&i, get_bytes(r, sizeof(i)), sizeof(i));
    lua_pushinteger(L, i);
    break;
  }
  case WC_FLT: {
    lua_Number d;
    memcpy(&d, get_bytes(r, sizeof(d)), sizeof(d));
    lua_pushnumber(L, d);
    break;
  }
  case WC_STR:
  case WC_LSTR: {
    size_t n = (size_t)get_varint(r);
    lua_pushlstring(L, get_bytes(r, n), n);
    if (tag == WC_LSTR) number_it(r);
    break;
  }
  case WC_REF: {
    lua_Integer j = (lua_Integer)get_varint(r);
    if (j < 1 || j > r->nobj) corrupt(r);
    lua_rawgeti(L, r->refs, j);
    break;
  }
  case WC_TABLE: get_table(r); break;
  case WC_FUNC: get_function(r); break;
  case WC_MOD: get_module(r); break;
  default: corrupt(r);
  }
}

/* Pushes onto L a new copy of the value serialized in buf (worker_copy.c):
 * its tables, functions and strings made in L, _ENV upvalues bound to L's
 * globals, modules required in L. Raises (within build's protected call)
 * when a module fails to load or lacks a field, with a message naming what
 * ("reconciler"), the upvalue and the module; and on memory errors. buf is
 * only read: any number of states load it at once. */
static void load_copy(lua_State *L, const char *buf, size_t len, const char *what) {
  luaL_checkstack(L, 8, NULL);
  wload r = {L, (const unsigned char *)buf, (const unsigned char *)buf + len, what, 0, 0, 0};
  lua_newtable(L);
  r.refs = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  r.globals = lua_gettop(L);
  get_value(&r);
  if (r.p != r.end) corrupt(&r);
  lua_replace(L, r.refs);
  lua_settop(L, r.refs);
}

/* ---- building ----------------------------------------------------------- */

/* Loads t's code into L (a protected call) and stores it under CODE_KEY;
 * raises when it fails to load. Functions arrive with this state's own
 * copy of their upvalues, made anew at every (re)build. */
static void load_code(lua_State *L, const lkin_ws_template *t) {
  if (t->module) {
    lua_getglobal(L, "require");
    lua_pushstring(L, t->module);
    if (lkin_ws_call(L, 1, 1) != LUA_OK) lua_error(L); /* the message has the traceback */
    int ty = lua_type(L, -1);
    if (ty != LUA_TFUNCTION && ty != LUA_TTABLE)
      luaL_error(L, "module '%s' returned a %s; a worker module returns a function or a table of functions",
                 t->module, lua_typename(L, ty));
  } else {
    load_copy(L, t->code, t->code_len, t->what);
  }
  lua_rawsetp(L, LUA_REGISTRYINDEX, CODE_KEY);
}


static int build_main(lua_State *L) {
  lkin_ws *w = lua_touserdata(L, 1);
  const lkin_ws_template *t = w->t;
  luaL_openlibs(L);
  lkin_proc_install(L); /* os.execute, io.popen, os.exit (lcall_proc.h) */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, "package");
  if (t->path) {
    lua_pushstring(L, t->path);
    lua_setfield(L, -2, "path");
  }
  if (t->cpath) {
    lua_pushstring(L, t->cpath);
    lua_setfield(L, -2, "cpath");
  }
  /* the binding is already in this process: no second dlopen, and the
   * worker gets this very build of it whatever its cpath says */
  lua_CFunction open = atomic_load(&core_open);
  if (open) {
    lua_getfield(L, -1, "preload");
    lua_pushcfunction(L, open);
    lua_setfield(L, -2, "kinformer.core");
  }
  lua_settop(L, 1);
  lkin_cjson(L); /* so that user code's require "cjson" finds it loaded */
  lua_pop(L, 1);
  load_code(L, t);
  return 0;
}

/* Builds w->L from the template. Returns 0, or KIN_ENOMEM / KIN_EINVAL
 * with a message in *err (caller frees). */
static int build(lkin_ws *w, char **err) {
  w->used = 0;
  w->oom = 0;
  w->refused_ptr = NULL;
  w->refused_nsize = 0;
  w->warn_len = 0;
  lkin_call_limit_register(ws_alloc, slot_of_ud);
  lua_State *L = lua_newstate(ws_alloc, w);
  if (!L) {
    *err = strdup("not enough memory");
    return KIN_ENOMEM;
  }
  lua_atpanic(L, panic);
  lua_setwarnf(L, warnf, w);
  lua_pushcfunction(L, build_main);
  lua_pushlightuserdata(L, w);
  int st = lua_pcall(L, 1, 0, 0);
  if (st != LUA_OK) {
    int rc = st == LUA_ERRMEM || w->oom ? KIN_ENOMEM : KIN_EINVAL;
    *err = dup_message(L, -1);
    lua_close(L);
    return rc;
  }
  lua_settop(L, 0);
  w->L = L;
  return 0;
}

static int rebuild(lkin_ws *w, const char *why) {
  if (w->L) {
    lua_close(w->L);
    w->L = NULL;
  }
  char *err = NULL;
  int rc = build(w, &err);
  if (rc < 0) {
    kin_log(KIN_LOG_ERROR, "worker", "%s: %s; rebuilding the Lua state failed: %s", w->name, why,
            err ? err : "not enough memory");
  } else {
    w->rebuilds++;
    kin_log(KIN_LOG_WARN, "worker",
            "%s: %s; closed the Lua state and built a new one (module-level state starts over)",
            w->name, why);
  }
  free(err);
  return rc;
}

int lkin_ws_open(lkin_ws_template *t, const char *name, lkin_ws **out, char **err) {
  *out = NULL;
  *err = NULL;
  lkin_ws *w = calloc(1, sizeof(*w));
  if (!w || !(w->name = strdup(name ? name : "worker"))) {
    free(w);
    *err = strdup("not enough memory");
    return KIN_ENOMEM;
  }
  w->t = lkin_ws_template_ref(t);
  w->limit = t->memory_limit;
  int rc = build(w, err);
  if (rc < 0) {
    lkin_ws_close(w);
    return rc;
  }
  *out = w;
  return 0;
}

void lkin_ws_close(lkin_ws *w) {
  if (!w) return;
  if (w->L) lua_close(w->L);
  lkin_ws_template_unref(w->t);
  free(w->name);
  free(w);
}

void lkin_ws_set_user(lkin_ws *w, void *user) { w->user = user; }

void lkin_ws_set_abort(lkin_ws *w, const atomic_int *abort) { w->abort = abort; }

int lkin_ws_last_cut(const lkin_ws *w) { return w->last_cut; }

void lkin_ws_template_set_call_limit(lkin_ws_template *t, uint64_t timeout_ns, const char *option) {
  t->call_timeout_ns = timeout_ns;
  char *o = option ? strdup(option) : NULL;
  free(t->call_option);
  t->call_option = o;
}

void *lkin_ws_user(lua_State *L) {
  lkin_ws *w = ws_of(L);
  return w ? w->user : NULL;
}

unsigned lkin_ws_rebuilds(const lkin_ws *w) { return w->rebuilds; }
size_t lkin_ws_memory(const lkin_ws *w) { return w->used; }
const char *lkin_ws_name(const lkin_ws *w) { return w->name; }

/* ---- calling ------------------------------------------------------------ */

int lkin_ws_protect(lkin_ws *w, lua_CFunction fn, void *ud, char **err) {
  *err = NULL;
  if (!w->L) {
    /* an earlier rebuild failed: try again, the cause may have gone */
    int rc = build(w, err);
    if (rc < 0) return rc;
    w->rebuilds++;
    kin_log(KIN_LOG_WARN, "worker", "%s: rebuilt the Lua state", w->name);
  }
  lua_State *L = w->L;
  lua_settop(L, 0);
  lua_pushcfunction(L, fn);
  lua_pushlightuserdata(L, ud);
  lkin_call_limit cl = {0};
  int limited = w->t->call_timeout_ns || w->abort;
  if (limited) {
    cl.what = w->t->what;
    cl.name = w->name;
    cl.option = w->t->call_option;
    cl.timeout_ns = w->t->call_timeout_ns;
    cl.abort = w->abort;
    lkin_call_limit_begin(L, &cl);
  }
  int st = lua_pcall(L, 1, 0, 0);
  if (limited) lkin_call_limit_end(L, &cl);
  w->last_cut = cl.why;
  w->slot.fixed.deadline_ns = 0; /* lkin_call_limit_set's hold for this call only */
  w->slot.fixed.abort = NULL;
  int rc = 0;
  if (st != LUA_OK) {
    rc = st == LUA_ERRMEM ? KIN_ENOMEM : KIN_EINVAL;
    *err = dup_message(L, -1);
  }
  lua_settop(L, 0);
  if (st == LUA_ERRMEM || w->oom) {
    char why[96];
    snprintf(why, sizeof(why), "the Lua state ran out of memory (limit %zu bytes)", w->limit);
    rebuild(w, why);
  }
  return rc;
}

static int msgh(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) msg = lua_tostring(L, -1);
    else msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

int lkin_ws_call(lua_State *L, int nargs, int nresults) {
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, msgh);
  lua_insert(L, base);
  int st = lua_pcall(L, nargs, nresults, base);
  lua_remove(L, base);
  note_status(L, st);
  return st;
}

int lkin_ws_push_function(lua_State *L, const char *name) {
  int ty = lua_rawgetp(L, LUA_REGISTRYINDEX, CODE_KEY);
  /* the fast path first: this runs once per event and per reconcile */
  if (!name && ty == LUA_TFUNCTION) return 0;
  if (name && ty == LUA_TTABLE) {
    if (lua_getfield(L, -1, name) == LUA_TFUNCTION) {
      lua_remove(L, -2);
      return 0;
    }
    ty = lua_type(L, -1);
    lua_pop(L, 1);
    lua_pushinteger(L, ty); /* keep the stack shape of the slow path */
    lua_replace(L, -2);
    ty = -(ty + 1);
  }
  /* Failure: explain it, replacing what was pushed. */
  lkin_ws *w = ws_of(L);
  const char *mod = w ? w->t->module : NULL;
  const char *code = mod ? lua_pushfstring(L, "module '%s'", mod) : lua_pushliteral(L, "the code");
  if (ty < 0) {
    int fty = -ty - 1;
    if (fty == LUA_TNIL) lua_pushfstring(L, "%s has no function '%s'", code, name);
    else lua_pushfstring(L, "%s: '%s' is a %s, not a function", code, name, lua_typename(L, fty));
  } else if (!name) {
    lua_pushfstring(L, "%s is a %s of functions: name the one to call", code, lua_typename(L, ty));
  } else {
    lua_pushfstring(L, "%s is a single function: it has no function '%s' (call it without a name)",
                    code, name);
  }
  lua_replace(L, -3);
  lua_pop(L, 1);
  return KIN_ENOENT;
}

void lkin_ws_push_object(lua_State *L, const kin_obj *o) {
  /* views: a handler reading one field must not pay for decoding all */
  if (!kin_obj_is_tombstone(o)) {
    lkin_view_push(L, (kin_obj *)o);
    return;
  }
  const kin_obj *last = kin_obj_last_state(o);
  lua_createtable(L, 0, 3);
  lua_pushstring(L, kin_obj_key(o));
  lua_setfield(L, -2, "key");
  if (last) {
    lkin_view_push(L, (kin_obj *)last);
    lua_setfield(L, -2, "object");
  }
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "final_state_unknown");
}

typedef struct {
  const char *handler;
  kin_obj *const *objs;
  int nobjs;
  int flag; /* -1: none; else pushed as a boolean after the objects */
  int missing;
  int status;
  char *err;
} handler_call;

static int run_handler(lua_State *L) {
  handler_call *h = lua_touserdata(L, 1);
  if (lkin_ws_push_function(L, h->handler) < 0) {
    h->missing = 1;
    h->err = dup_message(L, -1);
    return 0;
  }
  luaL_checkstack(L, h->nobjs + 4, "too many objects");
  for (int i = 0; i < h->nobjs; i++) {
    if (h->objs[i]) lkin_ws_push_object(L, h->objs[i]);
    else lua_pushnil(L);
  }
  if (h->flag >= 0) lua_pushboolean(L, h->flag);
  h->status = lkin_ws_call(L, h->nobjs + (h->flag >= 0), 0);
  if (h->status != LUA_OK) h->err = dup_message(L, -1);
  return 0;
}

int lkin_ws_call_handler(lkin_ws *w, const char *handler, const char *key,
                         kin_obj *const *objs, int nobjs, char **err) {
  return lkin_ws_call_handler_flag(w, handler, key, objs, nobjs, -1, err);
}

int lkin_ws_call_handler_flag(lkin_ws *w, const char *handler, const char *key,
                              kin_obj *const *objs, int nobjs, int flag, char **err) {
  handler_call h = {handler, objs, nobjs, flag < 0 ? -1 : !!flag, 0, LUA_OK, NULL};
  char *perr = NULL;
  unsigned rebuilds = w->rebuilds;
  int rc = lkin_ws_protect(w, run_handler, &h, &perr);
  if (rc == 0 && h.missing) rc = KIN_ENOENT;
  else if (rc == 0 && h.status != LUA_OK) rc = h.status == LUA_ERRMEM ? KIN_ENOMEM : KIN_EINVAL;
  if (rc == KIN_ENOENT) {
    if (err) *err = h.err ? strdup(h.err) : NULL;
  } else if (rc < 0) {
    const char *msg = h.err ? h.err : perr ? perr : "not enough memory";
    kin_log(KIN_LOG_ERROR, "worker", "%s: handler %s for %s failed%s: %s", w->name, handler,
            key ? key : "?", w->rebuilds != rebuilds ? " (state rebuilt)" : "", msg);
    if (err) *err = strdup(msg);
  }
  free(h.err);
  free(perr);
  return rc;
}
