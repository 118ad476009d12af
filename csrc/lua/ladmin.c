/* ladmin.c -- core.http_get(url [, timeout_s]) -> body, status | nil, msg,
 * code: one plain GET on the calling thread (kin_io_fetch), for `kinformer
 * inspect` reading a running operator's admin endpoint (admin.h). Not a
 * Kubernetes client: no auth, no TLS settings, no retries. */
#include "ladmin.h"

#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "io_engine.h"
#include "laux.h"

#define MAX_BODY (64u << 20)

static int l_http_get(lua_State *L) {
  const char *url = luaL_checkstring(L, 1);
  double timeout = luaL_optnumber(L, 2, 10);
  luaL_argcheck(L, timeout > 0, 2, "timeout must be > 0 seconds");
  kin_io_request req = {.url = url, .timeout_ms = (long)(timeout * 1000), .max_body = MAX_BODY};
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

void lkin_open_admin(lua_State *L) {
  lua_pushcfunction(L, l_http_get);
  lua_setfield(L, -2, "http_get");
}
