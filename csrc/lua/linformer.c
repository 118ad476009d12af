/* linformer.c -- kinformer.informer: a Lua view of one shared informer of a
 * manager (lenv_core.h). Reads go straight to the informer's indexer, which is
 * thread-safe, so the same userdata type serves the main state and, as a
 * read-only lister, any worker state. Objects come out as fresh tables
 * decoded from the cached JSON (lkin_ws_push_object): mutating them cannot
 * change the cache.
 *
 * A userdata holds one reference on its env, which owns the informer
 * (through the factory), so the informer lives as long as the userdata.
 * The userdata itself belongs to one Lua state and is used on that state's
 * thread only: no lock guards its fields. */
#include "linformer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "indexer.h"
#include "informer_factory.h"
#include "kin.h"
#include "kobj.h"
#include "laux.h"
#include "lhandler.h"
#include "lobject.h"
#include "worker_state.h"

#define INFORMER_MT "kinformer.informer"

static const lkin_type informer_type; /* below, with the methods */

typedef struct {
  lkin_env *e;       /* one reference; NULL once closed */
  kin_informer *inf; /* owned by e->factory */
  char *name;        /* the registry name, malloc'd */
  int readonly;      /* a lister: no add_handler/remove_handler */
} linformer;

/* Raises on memory errors (nothing leaks). */
void lkin_push_informer(lua_State *L, lkin_env *e, kin_informer *inf, const char *name,
                        int readonly) {
  linformer *u = lua_newuserdatauv(L, sizeof(*u), 0);
  memset(u, 0, sizeof(*u));
  lkin_setmetatable(L, &informer_type);
  char *n = strdup(name ? name : "?");
  if (!n) luaL_error(L, "not enough memory");
  u->name = n;
  u->inf = inf;
  u->readonly = readonly;
  u->e = lkin_env_ref(e);
}

static linformer *check_ud(lua_State *L, int i) {
  linformer *u = luaL_checkudata(L, i, INFORMER_MT);
  luaL_argcheck(L, u->e != NULL, i, "informer is closed");
  return u;
}

kin_informer *lkin_check_informer(lua_State *L, int i, lkin_env **e) {
  linformer *u = check_ud(L, i);
  if (e) *e = u->e;
  return u->inf;
}

typedef struct {
  kin_obj **objs;
  size_t n;
} obj_list;

static int push_list_main(lua_State *L) {
  obj_list *ol = lua_touserdata(L, 1);
  lua_createtable(L, ol->n > INT32_MAX ? INT32_MAX : (int)ol->n, 0);
  for (size_t i = 0; i < ol->n; i++) {
    lkin_ws_push_object(L, ol->objs[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* Pushes the objects as an array of fresh tables and frees the list (also
 * when decoding raises, which is then re-raised). */
static int push_list(lua_State *L, kin_obj **objs, size_t n) {
  obj_list ol = {objs, n};
  lua_pushcfunction(L, push_list_main);
  lua_pushlightuserdata(L, &ol);
  int st = lua_pcall(L, 1, 1, 0);
  kin_obj_list_free(objs, n);
  if (st != LUA_OK) lua_error(L);
  return 1;
}

/* inf:get(key) -> fresh table | nil */
static int m_get(lua_State *L) {
  linformer *u = check_ud(L, 1);
  const char *key = luaL_checkstring(L, 2);
  kin_obj *o = kin_indexer_get(kin_informer_indexer(u->inf), key);
  if (!o) {
    lua_pushnil(L);
    return 1;
  }
  /* keep the reference in a kinformer.object box so that a decode error
   * (memory) does not leak it: the box's __gc drops it */
  lkin_push_object(L, o);
  kin_obj_unref(o);
  lkin_ws_push_object(L, o);
  return 1;
}

/* inf:set_shard_selector(sel) -> true | nil, msg, code: the informer's
 * ranges (KEP-5866; nil or "": none) from now on; a running informer
 * lists again at once (objects that left are deleted, handlers see it). */
static int m_set_shard_selector(lua_State *L) {
  linformer *u = check_ud(L, 1);
  const char *sel = luaL_optstring(L, 2, NULL);
  kin_reflector *r = kin_informer_factory_reflector(u->e->factory, u->inf);
  if (!r) return lkin_fail(L, KIN_ENOENT, "set_shard_selector");
  char err[256] = "";
  int rc = kin_reflector_set_shard_selector(r, sel, err, sizeof(err));
  if (rc < 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "shard_selector: %s", err[0] ? err : kin_strerror(rc));
    lua_pushstring(L, kin_errname(rc));
    return 3;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* inf:shard_status() -> {selector = string|nil, server_sharded =
 * true|false|nil (nil: no selector, or no list with it yet),
 * client_dropped =, relists =} */
static int m_shard_status(lua_State *L) {
  linformer *u = check_ud(L, 1);
  kin_reflector *r = kin_informer_factory_reflector(u->e->factory, u->inf);
  if (!r) return lkin_fail(L, KIN_ENOENT, "shard_status");
  kin_reflector_stats st;
  kin_reflector_get_stats(r, &st);
  char buf[64];
  size_t n = kin_reflector_shard_selector(r, buf, sizeof(buf));
  lua_createtable(L, 0, 4);
  if (n) {
    luaL_Buffer b;
    char *p = luaL_buffinitsize(L, &b, n + 1);
    kin_reflector_shard_selector(r, p, n + 1);
    luaL_pushresultsize(&b, n);
    lua_setfield(L, -2, "selector");
  }
  if (st.shard_server_filtered >= 0) {
    lua_pushboolean(L, st.shard_server_filtered);
    lua_setfield(L, -2, "server_sharded");
  }
  lua_pushinteger(L, (lua_Integer)st.shard_client_dropped);
  lua_setfield(L, -2, "client_dropped");
  lua_pushinteger(L, (lua_Integer)st.shard_relists);
  lua_setfield(L, -2, "relists");
  return 1;
}

/* inf:list() -> array of fresh tables (unspecified order) */
static int m_list(lua_State *L) {
  linformer *u = check_ud(L, 1);
  kin_obj **objs;
  size_t n;
  int rc = kin_indexer_list(kin_informer_indexer(u->inf), &objs, &n);
  if (rc < 0) return lkin_fail(L, rc, "list");
  return push_list(L, objs, n);
}

/* inf:keys() -> sorted array of keys */
static int m_keys(lua_State *L) {
  linformer *u = check_ud(L, 1);
  char **keys;
  size_t n;
  int rc = kin_indexer_list_keys(kin_informer_indexer(u->inf), &keys, &n);
  if (rc < 0) return lkin_fail(L, rc, "keys");
  if (!lua_checkstack(L, 4)) {
    kin_str_list_free(keys, n);
    return luaL_error(L, "stack overflow");
  }
  lua_createtable(L, n > INT32_MAX ? INT32_MAX : (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, keys[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  kin_str_list_free(keys, n);
  /* sort for a stable answer */
  lua_getglobal(L, "table");
  if (lua_istable(L, -1) && lua_getfield(L, -1, "sort") == LUA_TFUNCTION) {
    lua_pushvalue(L, -3);
    lua_call(L, 1, 0);
    lua_pop(L, 1);
  } else {
    lua_pop(L, 2);
  }
  return 1;
}

/* inf:len() -> number of cached objects */
static int m_len(lua_State *L) {
  linformer *u = check_ud(L, 1);
  lua_pushinteger(L, (lua_Integer)kin_indexer_len(kin_informer_indexer(u->inf)));
  return 1;
}

/* inf:projected_size(fields) -> { objects =, bytes_per_object =,
 * projected_bytes_per_object = }: the cache's JSON bytes per object now
 * and if each object were projected onto fields (a list of dotted paths,
 * the informer option's), computed from the cached objects without
 * changing them. Raises on a bad list. */
static int m_projected_size(lua_State *L) {
  linformer *u = check_ud(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  const char *f[65];
  int n = (int)luaL_len(L, 2);
  luaL_argcheck(L, n > 0 && n < 65, 2, "1 to 64 dotted paths expected");
  for (int i = 1; i <= n; i++) {
    if (lua_geti(L, 2, i) != LUA_TSTRING) luaL_argerror(L, 2, "dotted paths (strings) expected");
    f[i - 1] = lua_tostring(L, -1); /* held by the table at 2 */
    lua_pop(L, 1);
  }
  f[n] = NULL;
  kin_projection_size ps;
  char err[256] = "";
  int rc = kin_informer_projection_size(u->inf, f, &ps, err, sizeof(err));
  if (rc == KIN_EINVAL) return luaL_error(L, "inf:projected_size: %s", err);
  if (rc) return luaL_error(L, "inf:projected_size: %s", kin_strerror(rc));
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, (lua_Integer)ps.objects);
  lua_setfield(L, -2, "objects");
  lua_pushnumber(L, ps.objects ? (double)ps.bytes / (double)ps.objects : 0);
  lua_setfield(L, -2, "bytes_per_object");
  lua_pushnumber(L, ps.objects ? (double)ps.projected_bytes / (double)ps.objects : 0);
  lua_setfield(L, -2, "projected_bytes_per_object");
  return 1;
}

/* inf:advise() -> { api_version =, kind =, objects =, bytes_per_object =,
 * advised_bytes_per_object =, fields = {paths...} | nil, reads_all = bool }:
 * the projection that keeps what handlers and reconcilers have read of
 * this informer's objects so far (read_paths.h; fields nil when nothing
 * was read, or, with reads_all, when whole objects were), and the cache's
 * JSON bytes per object now and with it. nil, msg, code when out of
 * memory. */
static int m_advise(lua_State *L) {
  linformer *u = check_ud(L, 1);
  kin_informer_advice a;
  int rc = kin_informer_advise(u->inf, &a);
  if (rc) {
    kin_informer_advice_free(&a);
    lua_pushnil(L);
    lua_pushstring(L, kin_strerror(rc));
    lua_pushstring(L, lkin_errname(rc));
    return 3;
  }
  lua_createtable(L, 0, 7);
  lua_pushstring(L, a.api_version);
  lua_setfield(L, -2, "api_version");
  lua_pushstring(L, a.kind);
  lua_setfield(L, -2, "kind");
  size_t n = a.size.objects;
  lua_pushinteger(L, (lua_Integer)n);
  lua_setfield(L, -2, "objects");
  lua_pushnumber(L, n ? (double)a.size.bytes / (double)n : 0);
  lua_setfield(L, -2, "bytes_per_object");
  lua_pushnumber(L, n ? (double)a.size.projected_bytes / (double)n : 0);
  lua_setfield(L, -2, "advised_bytes_per_object");
  lua_pushboolean(L, a.reads_all);
  lua_setfield(L, -2, "reads_all");
  if (a.fields) {
    lua_newtable(L);
    for (int i = 0; a.fields[i]; i++) {
      lua_pushstring(L, a.fields[i]);
      lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "fields");
  }
  kin_informer_advice_free(&a);
  return 1;
}

/* inf:by_index(name, value) -> array of fresh tables; raises for an
 * unknown index (a programming error). */
static int m_by_index(lua_State *L) {
  linformer *u = check_ud(L, 1);
  const char *name = luaL_checkstring(L, 2);
  const char *value = luaL_checkstring(L, 3);
  kin_obj **objs;
  size_t n;
  int rc = kin_indexer_by_index(kin_informer_indexer(u->inf), name, value, &objs, &n);
  if (rc == KIN_ENOENT)
    return luaL_argerror(L, 2, lua_pushfstring(L, "no index '%s' (add it with add_index)", name));
  if (rc < 0) return lkin_fail(L, rc, "by_index");
  return push_list(L, objs, n);
}

/* inf:add_index(name, "label:<key>" | "controller") -> true | nil, msg,
 * code. Adds an index by a label's value, or by the controller owner's uid;
 * objects already cached are indexed at once (the indexer takes its write
 * lock). */
static int m_add_index(lua_State *L) {
  linformer *u = check_ud(L, 1);
  const char *name = luaL_checkstring(L, 2);
  const char *spec = luaL_checkstring(L, 3);
  int by_controller = strcmp(spec, "controller") == 0;
  luaL_argcheck(L, by_controller || (!strncmp(spec, "label:", 6) && spec[6]), 3,
                "index function must be \"label:<key>\" or \"controller\"");
  char *key = by_controller ? NULL : strdup(spec + 6);
  if (!by_controller && !key) return lkin_fail(L, KIN_ENOMEM, "add_index");
  int rc = kin_indexer_add_index(kin_informer_indexer(u->inf), name,
                                 by_controller ? kin_index_by_controller_uid : kin_index_by_label, key,
                                 by_controller ? NULL : free);
  if (rc < 0) {
    free(key);
    if (rc == KIN_EEXIST) {
      lua_pushnil(L);
      lua_pushfstring(L, "add_index: index '%s' already exists", name);
      lua_pushstring(L, "EEXIST");
      return 3;
    }
    return lkin_fail(L, rc, "add_index");
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* inf:has_synced() -> boolean */
static int m_has_synced(lua_State *L) {
  linformer *u = check_ud(L, 1);
  lua_pushboolean(L, kin_informer_has_synced(u->inf));
  return 1;
}

/* inf:name() -> the registry name */
static int m_name(lua_State *L) {
  linformer *u = check_ud(L, 1);
  lua_pushstring(L, u->name);
  return 1;
}

/* inf:resource() -> "[group/]version/resource" as the informer was asked */
static int m_resource(lua_State *L) {
  linformer *u = check_ud(L, 1);
  char *res = NULL;
  pthread_mutex_lock(&u->e->mu);
  for (size_t i = 0; i < u->e->n; i++) {
    if (u->e->informers[i].inf == u->inf) {
      res = strdup(u->e->informers[i].resource);
      break;
    }
  }
  pthread_mutex_unlock(&u->e->mu);
  lua_pushstring(L, res); /* nil when not registered (or out of memory) */
  free(res);
  return 1;
}

/* inf:add_handler(h [, opts]) -> handler (see lhandler.c) */
static int m_add_handler(lua_State *L) {
  linformer *u = check_ud(L, 1);
  luaL_argcheck(L, !u->readonly, 1, "add_handler: this informer is a read-only lister");
  return lkin_handler_add(L, u->e, u->inf, u->name);
}

/* inf:remove_handler(h) -> true | nil, msg, code */
static int m_remove_handler(lua_State *L) {
  linformer *u = check_ud(L, 1);
  luaL_argcheck(L, !u->readonly, 1, "remove_handler: this informer is a read-only lister");
  return lkin_handler_remove(L, u->e, u->inf);
}

/* Drops the env reference; idempotent. */
static int m_close(lua_State *L) {
  linformer *u = luaL_checkudata(L, 1, INFORMER_MT);
  if (u->e) {
    lkin_env *e = u->e;
    u->e = NULL;
    lkin_env_unref(e);
  }
  free(u->name);
  u->name = NULL;
  return 0;
}

static int m_tostring(lua_State *L) {
  linformer *u = luaL_checkudata(L, 1, INFORMER_MT);
  if (!u->e) lua_pushliteral(L, "kinformer.informer (closed)");
  else lua_pushfstring(L, "kinformer.informer %s%s", u->name, u->readonly ? " (lister)" : "");
  return 1;
}

static const luaL_Reg methods[] = {
    {"get", m_get},
    {"list", m_list},
    {"keys", m_keys},
    {"len", m_len},
    {"projected_size", m_projected_size},
    {"advise", m_advise},
    {"by_index", m_by_index},
    {"add_index", m_add_index},
    {"has_synced", m_has_synced},
    {"set_shard_selector", m_set_shard_selector},
    {"shard_status", m_shard_status},
    {"name", m_name},
    {"resource", m_resource},
    {"add_handler", m_add_handler},
    {"remove_handler", m_remove_handler},
    {NULL, NULL}};

static const lkin_type informer_type = {INFORMER_MT, methods, m_close, m_tostring};

void lkin_open_informer(lua_State *L) { lkin_new_type(L, &informer_type); }
