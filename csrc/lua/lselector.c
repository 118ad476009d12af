/* lselector.c -- kinformer.label_selector: a Kubernetes label selector
 * parsed once (label_selector.h) and matched against label tables in Lua,
 * for code that decides in Lua what a predicate decides in C (the
 * controller lifecycle's `selector`, kinformer.lifecycle). */
#include "lselector.h"

#include <lauxlib.h>
#include <string.h>

#include "kin.h"
#include "label_selector.h"
#include "laux.h"

#define SELECTOR_MT "kinformer.label_selector"
static const lkin_type selector_type;

typedef struct {
  kin_label_selector *sel; /* NULL once closed */
} lsel;

static lsel *check(lua_State *L) {
  lsel *u = luaL_checkudata(L, 1, SELECTOR_MT);
  luaL_argcheck(L, u->sel != NULL, 1, "label selector is closed");
  return u;
}

/* core.label_selector(s) -> selector | nil, msg, "EINVAL": s parsed with
 * the API server's rules ("" and nil select everything). */
static int l_label_selector(lua_State *L) {
  const char *s = luaL_optstring(L, 1, "");
  lsel *u = lua_newuserdatauv(L, sizeof(*u), 0);
  u->sel = NULL;
  lkin_setmetatable(L, &selector_type);
  char err[256] = "";
  int rc = kin_label_selector_parse(s, &u->sel, err, sizeof(err));
  if (rc == KIN_EINVAL) {
    lua_pushnil(L);
    lua_pushfstring(L, "bad label selector '%s': %s", s, err);
    lua_pushliteral(L, "EINVAL");
    return 3;
  }
  if (rc < 0) return lkin_fail(L, rc, "label_selector");
  return 1;
}

/* The getter over the labels table at stack index 2 (ud: the lua_State):
 * a string value, else NULL. The value stays alive in the table. */
static const char *table_label(void *ud, const char *key) {
  lua_State *L = ud;
  lua_getfield(L, 2, key);
  const char *v = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  lua_pop(L, 1);
  return v;
}

/* sel:matches(labels) -> boolean: labels a table of name -> value (nil:
 * no labels; a lazy view reads as a table). */
static int m_matches(lua_State *L) {
  lsel *u = check(L);
  if (lua_isnoneornil(L, 2)) {
    lua_settop(L, 1);
    lua_newtable(L);
  }
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lua_pushboolean(L, kin_label_selector_matches(u->sel, table_label, L));
  return 1;
}

static int m_close(lua_State *L) {
  lsel *u = luaL_checkudata(L, 1, SELECTOR_MT);
  kin_label_selector_free(u->sel);
  u->sel = NULL;
  return 0;
}

/* tostring: the canonical form, as the API server prints it. */
static int m_tostring(lua_State *L) {
  lsel *u = luaL_checkudata(L, 1, SELECTOR_MT);
  if (!u->sel) {
    lua_pushliteral(L, "kinformer.label_selector (closed)");
    return 1;
  }
  char buf[512];
  size_t n = kin_label_selector_string(u->sel, buf, sizeof(buf));
  if (n < sizeof(buf)) {
    lua_pushlstring(L, buf, n);
    return 1;
  }
  luaL_Buffer b;
  char *p = luaL_buffinitsize(L, &b, n + 1);
  kin_label_selector_string(u->sel, p, n + 1);
  luaL_pushresultsize(&b, n);
  return 1;
}

static const luaL_Reg methods[] = {{"matches", m_matches}, {"close", m_close}, {NULL, NULL}};

static const lkin_type selector_type = {SELECTOR_MT, methods, m_close, m_tostring};

void lkin_open_selector(lua_State *L) {
  lkin_new_type(L, &selector_type);
  lua_pushcfunction(L, l_label_selector);
  lua_setfield(L, -2, "label_selector");
}
