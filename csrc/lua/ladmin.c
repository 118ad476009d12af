/* ladmin.c -- core.http_get(url [, timeout_s [, opts]]) -> body, status |
 * nil, msg, code: one GET with libcurl on the calling thread, for `kinformer
 * inspect` reading a running operator's admin endpoint (admin.h). Not a
 * Kubernetes client: no retries. opts = {token=, insecure=, ca=}: a bearer
 * token (sent over https only: an http URL with a token is refused), no
 * TLS verification, or a CA file to verify the server with. */
#include "ladmin.h"

#include <curl/curl.h>
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "laux.h"

typedef struct {
  char *p;
  size_t len, cap;
  int oom;
} body;

#define MAX_BODY (64u << 20)

static size_t on_data(char *data, size_t size, size_t n, void *ud) {
  body *b = ud;
  size_t add = size * n;
  if (b->len + add + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + add + 1) cap *= 2;
    char *p = cap <= MAX_BODY ? realloc(b->p, cap) : NULL;
    if (!p) {
      b->oom = 1;
      return 0; /* aborts the transfer */
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, data, add);
  b->len += add;
  return add;
}

static int l_http_get(lua_State *L) {
  const char *url = luaL_checkstring(L, 1);
  double timeout = luaL_optnumber(L, 2, 10);
  luaL_argcheck(L, timeout > 0, 2, "timeout must be > 0 seconds");
  int t = lua_isnoneornil(L, 3) ? 0 : (luaL_checktype(L, 3, LUA_TTABLE), 3);
  const char *token = lkin_opt_string(L, t, "token");
  const char *ca = lkin_opt_string(L, t, "ca");
  int insecure = lkin_opt_bool(L, t, "insecure");
  if (token && strncmp(url, "https://", 8) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "GET %s: a bearer token is sent over https only", url);
    lua_pushliteral(L, "EINVAL");
    return 3;
  }
  struct curl_slist *hdrs = NULL;
  if (token) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "Authorization: Bearer ");
    luaL_addstring(&b, token);
    luaL_pushresult(&b);
    hdrs = curl_slist_append(NULL, lua_tostring(L, -1));
    lua_pop(L, 1);
    if (!hdrs) return luaL_error(L, "out of memory");
  }
  CURL *c = curl_easy_init();
  if (!c) {
    curl_slist_free_all(hdrs);
    lua_pushnil(L);
    lua_pushliteral(L, "cannot make a libcurl handle");
    lua_pushliteral(L, "ENOMEM");
    return 3;
  }
  body b = {0};
  char err[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000));
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  if (hdrs) curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  if (insecure) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (ca) curl_easy_setopt(c, CURLOPT_CAINFO, ca);
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(hdrs);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) {
    free(b.p);
    lua_pushnil(L);
    lua_pushfstring(L, "GET %s: %s", url, b.oom ? "answer too large" : err[0] ? err : curl_easy_strerror(rc));
    lua_pushstring(L, rc == CURLE_OPERATION_TIMEDOUT ? "ETIMEDOUT" : "ECONNREFUSED");
    return 3;
  }
  lua_pushlstring(L, b.p ? b.p : "", b.len);
  free(b.p);
  lua_pushinteger(L, status);
  return 2;
}

void lkin_open_admin(lua_State *L) {
  lua_pushcfunction(L, l_http_get);
  lua_setfield(L, -2, "http_get");
}
