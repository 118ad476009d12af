/* lobject.c -- kinformer.core.object: a cached Kubernetes object (kin_obj)
 * as userdata. Reading metadata is cheap (no JSON decode); :decode() gives
 * a fresh Lua table (via ljson.h), so Lua code can never modify the cache. */
#include "lobject.h"

#include <string.h>

#include "kobj.h"
#include "laux.h"
#include "ljson.h"
#include "lview.h"

#define OBJ_MT "kinformer.object"

static const lkin_type object_type; /* below, with the methods */

typedef struct {
  kin_obj *o; /* NULL once closed */
} lobj;

/* Pushes a new userdata holding its own reference to o. */
void lkin_push_object(lua_State *L, kin_obj *o) {
  lobj *u = lua_newuserdatauv(L, sizeof(*u), 0);
  u->o = kin_obj_ref(o);
  lkin_setmetatable(L, &object_type);
}

int lkin_test_object(lua_State *L, int i, kin_obj **o) {
  lobj *u = luaL_testudata(L, i, OBJ_MT);
  *o = u ? u->o : NULL;
  return u != NULL;
}

static kin_obj *check(lua_State *L, int i) {
  lobj *u = luaL_checkudata(L, i, OBJ_MT);
  luaL_argcheck(L, u->o != NULL, i, "object is closed");
  return u->o;
}

/* object(json) -> object | nil, msg, code */
static int l_parse(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  kin_obj *o;
  int rc = kin_obj_parse(s, n, &o);
  if (rc < 0) return lkin_fail(L, rc, "parse object");
  lkin_push_object(L, o);
  kin_obj_unref(o);
  return 1;
}

/* tombstone(key [, last]) -> object */
static int l_tombstone(lua_State *L) {
  const char *key = luaL_checkstring(L, 1);
  kin_obj *last = lua_isnoneornil(L, 2) ? NULL : check(L, 2);
  kin_obj *t = kin_obj_tombstone(key, last);
  if (!t) return luaL_error(L, "out of memory");
  lkin_push_object(L, t);
  kin_obj_unref(t);
  return 1;
}

#define STR_METHOD(lname, cfn)                                                 \
  static int lname(lua_State *L) {                                             \
    lua_pushstring(L, cfn(check(L, 1)));                                       \
    return 1;                                                                  \
  }
STR_METHOD(m_key, kin_obj_key)
STR_METHOD(m_namespace, kin_obj_namespace)
STR_METHOD(m_name, kin_obj_name)
STR_METHOD(m_uid, kin_obj_uid)
STR_METHOD(m_rv, kin_obj_resource_version)
STR_METHOD(m_api_version, kin_obj_api_version)
STR_METHOD(m_kind, kin_obj_kind_name)

static int m_generation(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)kin_obj_generation(check(L, 1)));
  return 1;
}

static int m_is_tombstone(lua_State *L) {
  lua_pushboolean(L, kin_obj_is_tombstone(check(L, 1)));
  return 1;
}

static int m_being_deleted(lua_State *L) {
  lua_pushboolean(L, kin_obj_being_deleted(check(L, 1)));
  return 1;
}

static int m_last_state(lua_State *L) {
  kin_obj *last = kin_obj_last_state(check(L, 1));
  if (!last) return 0;
  lkin_push_object(L, last);
  return 1;
}

/* labels() -> fresh table {key = value} */
static int m_labels(lua_State *L) {
  kin_obj *o = check(L, 1);
  size_t n = kin_obj_label_count(o);
  lua_createtable(L, 0, (int)n);
  for (size_t i = 0; i < n; i++) {
    const char *k, *v;
    kin_obj_label_at(o, i, &k, &v);
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
  }
  return 1;
}

static int m_label(lua_State *L) {
  const char *v = kin_obj_label(check(L, 1), luaL_checkstring(L, 2));
  if (!v) return 0;
  lua_pushstring(L, v);
  return 1;
}

/* controller() -> {api_version=, kind=, name=, uid=} | nil */
static int m_controller(lua_State *L) {
  const kin_owner_ref *c = kin_obj_controller_ref(check(L, 1));
  if (!c) return 0;
  lua_createtable(L, 0, 4);
  lua_pushstring(L, c->api_version);
  lua_setfield(L, -2, "api_version");
  lua_pushstring(L, c->kind);
  lua_setfield(L, -2, "kind");
  lua_pushstring(L, c->name);
  lua_setfield(L, -2, "name");
  lua_pushstring(L, c->uid);
  lua_setfield(L, -2, "uid");
  return 1;
}

static int m_json(lua_State *L) {
  size_t n;
  const char *j = kin_obj_json(check(L, 1), &n);
  if (!j) return 0;
  lua_pushlstring(L, j, n);
  return 1;
}

/* decode() -> a fresh table decoded from the cached JSON (ljson.h:
 * integers as Lua integers) | nil, msg, "EINVAL" (nesting deeper than
 * LKIN_JSON_MAX_DEPTH) */
static int m_decode(lua_State *L) {
  size_t n;
  const char *j = kin_obj_json(check(L, 1), &n);
  if (!j) return 0;
  char msg[192];
  int rc = lkin_json_push_msg(L, j, n, msg, sizeof(msg));
  if (rc == 0) return 1;
  lua_pushnil(L);
  lua_pushstring(L, msg);
  lua_pushstring(L, lkin_errname(rc));
  return 3;
}

/* view() -> a lazy view of the object (lview.h), as handlers get it */
static int m_view(lua_State *L) {
  lkin_view_push(L, check(L, 1));
  return 1;
}

static int m_close(lua_State *L) {
  lobj *u = luaL_checkudata(L, 1, OBJ_MT);
  kin_obj_unref(u->o);
  u->o = NULL;
  return 0;
}

static int m_tostring(lua_State *L) {
  lobj *u = luaL_checkudata(L, 1, OBJ_MT);
  if (!u->o) lua_pushliteral(L, "kinformer.object (closed)");
  else
    lua_pushfstring(L, "kinformer.object%s %s rv=%s", kin_obj_is_tombstone(u->o) ? " tombstone" : "",
                    kin_obj_key(u->o), kin_obj_resource_version(u->o));
  return 1;
}

static const luaL_Reg methods[] = {
    {"key", m_key},
    {"namespace", m_namespace},
    {"name", m_name},
    {"uid", m_uid},
    {"resource_version", m_rv},
    {"api_version", m_api_version},
    {"kind", m_kind},
    {"generation", m_generation},
    {"is_tombstone", m_is_tombstone},
    {"being_deleted", m_being_deleted},
    {"last_state", m_last_state},
    {"labels", m_labels},
    {"label", m_label},
    {"controller", m_controller},
    {"json", m_json},
    {"decode", m_decode},
    {"view", m_view},
    {"close", m_close},
    {NULL, NULL}};

static const lkin_type object_type = {OBJ_MT, methods, m_close, m_tostring};

void lkin_open_object(lua_State *L) {
  lkin_new_type(L, &object_type);
  lua_pushcfunction(L, l_parse);
  lua_setfield(L, -2, "object");
  lua_pushcfunction(L, l_tombstone);
  lua_setfield(L, -2, "tombstone");
}
