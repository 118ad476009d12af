/* lshard.c -- kinformer.core's sharding primitives (lshard.h):
 *
 *   core.shard_gate(env, sel)  sets the ranges this replica's controllers
 *                              take (shard_gate.h): a selector string, "*"
 *                              (everything) or nil (nothing); makes the
 *                              env's gate on first use, so call it before
 *                              the controllers are made. true | nil, msg, code
 *   core.shard_gate_stats(env) {generation=, open=, dropped_enqueues=,
 *                              skipped_reconciles=, requeued=, changed_at=
 *                              (core.monotime seconds)} or nil without a gate
 *   core.shard_hash(s)         FNV-1a 64 of s, as the API server hashes
 *                              (an integer; compare with math.ult)
 *   core.shard_selector(s)     {ranges = {{first, last}, ...}, key =
 *                              "uid"|"namespace", string = canonical} |
 *                              nil, msg, "EINVAL" */
#include "lshard.h"

#include <lauxlib.h>

#include "kin.h"
#include "lenv.h"
#include "lenv_core.h"
#include "shard_gate.h"
#include "shard_selector.h"

static int l_shard_gate(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  const char *sel = luaL_optstring(L, 2, NULL);
  kin_shard_gate *g = lkin_env_shard_gate(e, 1);
  if (!g) return luaL_error(L, "shard_gate: out of memory");
  /* with leader election (the member Lease), ranges hold for one term */
  kin_shard_gate_bind_fence(g, lkin_env_fence(e));
  char err[256];
  int rc = kin_shard_gate_set(g, sel, err, sizeof err);
  if (rc < 0) {
    lua_pushnil(L);
    lua_pushstring(L, rc == KIN_EINVAL ? err : kin_strerror(rc));
    lua_pushstring(L, kin_errname(rc));
    return 3;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int l_shard_gate_stats(lua_State *L) {
  kin_shard_gate *g = lkin_env_shard_gate(lkin_check_env(L, 1), 0);
  if (!g) {
    lua_pushnil(L);
    return 1;
  }
  kin_shard_gate_stats st;
  kin_shard_gate_get_stats(g, &st);
  uint64_t changed;
  kin_shard_gate_generation(g, &changed);
  lua_createtable(L, 0, 6);
  lua_pushinteger(L, (lua_Integer)st.generation);
  lua_setfield(L, -2, "generation");
  lua_pushboolean(L, st.open);
  lua_setfield(L, -2, "open");
  lua_pushinteger(L, (lua_Integer)st.dropped_enqueues);
  lua_setfield(L, -2, "dropped_enqueues");
  lua_pushinteger(L, (lua_Integer)st.skipped_reconciles);
  lua_setfield(L, -2, "skipped_reconciles");
  lua_pushinteger(L, (lua_Integer)st.requeued);
  lua_setfield(L, -2, "requeued");
  lua_pushnumber(L, (lua_Number)changed / 1e9);
  lua_setfield(L, -2, "changed_at");
  return 1;
}

static int l_shard_hash(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  lua_pushinteger(L, (lua_Integer)kin_shard_hash(s, n));
  return 1;
}

static int l_shard_selector(lua_State *L) {
  const char *s = luaL_checkstring(L, 1);
  kin_shard_selector *sel;
  char err[256];
  int rc = kin_shard_selector_parse(s, &sel, err, sizeof err);
  if (rc < 0) {
    lua_pushnil(L);
    lua_pushstring(L, rc == KIN_EINVAL ? err : kin_strerror(rc));
    lua_pushstring(L, kin_errname(rc));
    return 3;
  }
  size_t n = kin_shard_selector_nranges(sel);
  lua_createtable(L, 0, 3);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    uint64_t f, l;
    kin_shard_selector_range(sel, i, &f, &l);
    lua_createtable(L, 2, 0);
    lua_pushinteger(L, (lua_Integer)f);
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, (lua_Integer)l);
    lua_rawseti(L, -2, 2);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "ranges");
  lua_pushstring(L, kin_shard_selector_key(sel) == KIN_SHARD_KEY_UID ? "uid" : "namespace");
  lua_setfield(L, -2, "key");
  char buf[64];
  size_t len = kin_shard_selector_string(sel, buf, sizeof buf);
  luaL_Buffer b;
  char *out = luaL_buffinitsize(L, &b, len + 1);
  kin_shard_selector_string(sel, out, len + 1);
  luaL_pushresultsize(&b, len);
  lua_setfield(L, -2, "string");
  kin_shard_selector_free(sel);
  return 1;
}

void lkin_open_shard(lua_State *L) {
  static const luaL_Reg fns[] = {{"shard_gate", l_shard_gate},
                                 {"shard_gate_stats", l_shard_gate_stats},
                                 {"shard_hash", l_shard_hash},
                                 {"shard_selector", l_shard_selector},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
