/* ladmin.c -- core.http_get(url [, timeout_s [, opts]]) -> body, status |
 * nil, msg, code: one GET on the calling thread (kin_io_fetch), for
 * `kinformer inspect` reading a running operator's admin endpoint
 * (admin.h). Not a Kubernetes client: no retries. opts = {token=,
 * insecure=, ca=}: a bearer token (sent over https only: an http URL with
 * a token is refused), no TLS verification, or a CA file to verify the
 * server with. */
#include "ladmin.h"

#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "io_engine.h"
#include "laux.h"

#define MAX_BODY (64u << 20)

static int l_http_get(lua_State *L) {
  const char *url = luaL_checkstring(L, 1);
  double timeout = luaL_optnumber(L, 2, 10);
  luaL_argcheck(L, timeout > 0, 2, "timeout must be > 0 seconds");
  int t = lua_isnoneornil(L, 3) ? 0 : (luaL_checktype(L, 3, LUA_TTABLE), 3);
  const char *token = lkin_opt_string(L, t, "token");
  if (token && strncmp(url, "https://", 8) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "GET %s: a bearer token is sent over https only", url);
    lua_pushliteral(L, "EINVAL");
    return 3;
  }
  const char *headers[2] = {NULL, NULL};
  if (token) headers[0] = lua_pushfstring(L, "Authorization: Bearer %s", token);
  kin_io_request req = {.url = url, .timeout_ms = (long)(timeout * 1000), .max_body = MAX_BODY,
                        .headers = token ? headers : NULL,
                        .tls = {.ca_file = lkin_opt_string(L, t, "ca"),
                                .insecure = lkin_opt_bool(L, t, "insecure")}};
  kin_io_response res;
  int rc = kin_io_fetch(&req, &res);
  if (rc) {
    lua_pushnil(L);
    lua_pushfstring(L, "GET %s: %s", url, rc == KIN_ETOOBIG ? "answer too large" : res.error);
    lua_pushstring(L, rc == KIN_ETIMEDOUT ? "ETIMEDOUT" : "ECONNREFUSED");
    kin_io_response_free(&res);
    return 3;
  }
  lua_pushlstring(L, res.body ? res.body : "", res.body_len);
  lua_pushinteger(L, res.code);
  kin_io_response_free(&res);
  return 2;
}

/* core.admin_set_shards(json|nil): the document the admin endpoint serves
 * at /shards (kinformer.sharding publishes its state there). */
static int l_admin_set_shards(lua_State *L) {
  const char *json = luaL_optstring(L, 1, NULL);
  if (kin_admin_set_shards(json) < 0) return luaL_error(L, "admin_set_shards: out of memory");
  return 0;
}

void lkin_open_admin(lua_State *L) {
  lua_pushcfunction(L, l_http_get);
  lua_setfield(L, -2, "http_get");
  lua_pushcfunction(L, l_admin_set_shards);
  lua_setfield(L, -2, "admin_set_shards");
}
