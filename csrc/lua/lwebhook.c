/* lwebhook.c -- kinformer.webhook_server (lwebhook.h): a manager's webhook
 * server (webhook.h) from Lua; lua/kinformer/webhook.lua drives it.
 *
 * core.webhook_server{env=, bind_address=, tls=, cert_path=, cert_name=,
 * cert_key=, hosts={...}, max_connections=, max_request_bytes=} makes the
 * server (not listening yet) over env (a kinformer.env: the handlers' ctx
 * reach its client and informers; the server holds a reference until
 * closed). With tls (default true) it gets a key pair: the files of
 * cert_path (kin_tls_keypair_open: reloaded when they rotate), or, without
 * cert_path, a CA made now and a serving certificate it signs for hosts
 * (plus localhost and 127.0.0.1); srv:ca() returns that CA's PEM (the
 * caBundle of the webhook configurations). tls = false makes a server that
 * only answers reviews given in memory (srv:serve, a sim's in-process
 * calls). Returns the userdata, or nil, message, code.
 *
 * Methods: srv:add{name=, path=, type=, handler=, workers=, memory_limit=,
 * timeout=} (a hook whose handler runs in a pool of `workers` worker
 * states, lwebhook_call.c; raises on misuse, nil, msg, code when the path
 * is taken), srv:remove(path) (waits for its calls to end, closes its
 * states), srv:start() -> port, srv:port(), srv:ca(), srv:serve(path,
 * body [, timeout_ms]) -> HTTP status, answer (the review answered in
 * memory, on this thread), srv:inprocess() -> fn, server (light userdata:
 * kin_webhook_server_serve and the server, the kin_sim_review_fn pair a
 * sim's admission chain calls), srv:close() (also __gc/__close: sets the
 * abort flag that cuts the handlers under way, stops the server, frees
 * the hooks, drops the env).
 *
 * Threads: the userdata and the hook list belong to the main state's
 * thread; the hooks' fns run on the server's threads (lwebhook_int.h). */
#include "lwebhook.h"

#include <lauxlib.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "laux.h"
#include "lenv.h"
#include "lwebhook_int.h"
#include "metrics.h"
#include "tls_cert.h"

#define SERVER_MT "kinformer.webhook_server"
static const lkin_type server_type; /* at the end */

#define MAX_HOSTS 16
#define MAX_WORKERS 256

typedef struct {
  kin_webhook_server *s; /* NULL once closed */
  kin_tls_keypair *keys; /* NULL without TLS */
  lkin_env *env;         /* a reference */
  char *ca_pem;          /* the self-made CA, or NULL */
  lwh_hook *hooks;
  atomic_int abort;      /* set by close: cuts the handlers under way */
} lwh;

/* The open server at argument 1 (raises when it is none or closed). */
static lwh *check_server(lua_State *L) {
  lwh *p = luaL_checkudata(L, 1, SERVER_MT);
  luaL_argcheck(L, p->s != NULL, 1, "webhook server is closed");
  return p;
}

static const char *const server_keys[] = {"env",   "bind_address", "tls",
                                          "cert_path", "cert_name", "cert_key",
                                          "hosts", "max_connections", "max_request_bytes",
                                          NULL};

/* Makes a CA and a serving certificate it signs for hosts into *cert,
 * *key and *ca (malloc'd PEM). Returns 0 or the error of
 * kin_tls_make_cert (err says why). */
static int self_made(const char *const *hosts, int nhosts, char **cert, char **key, char **ca,
                     char *err, size_t errlen) {
  char *ca_key = NULL;
  kin_tls_cert_req creq = {.common_name = "kinformer-webhook-ca", .is_ca = 1, .days = 3650};
  int rc = kin_tls_make_cert(&creq, ca, &ca_key, err, errlen);
  if (rc) return rc;
  kin_tls_cert_req sreq = {.common_name = hosts[0], .hosts = hosts, .nhosts = nhosts,
                           .days = 365, .signer_cert_pem = *ca, .signer_key_pem = ca_key};
  rc = kin_tls_make_cert(&sreq, cert, key, err, errlen);
  free(ca_key);
  if (rc) {
    free(*ca);
    *ca = NULL;
  }
  return rc;
}

/* Opens p's key pair as the options at t say. Returns 0 or an error with
 * err set. */
static int open_keys(lua_State *L, int t, lwh *p, char *err, size_t errlen) {
  const char *hosts[MAX_HOSTS + 2] = {"localhost", "127.0.0.1"};
  int nhosts = 2;
  if (lua_getfield(L, t, "hosts") == LUA_TTABLE) {
    lua_Integer n = luaL_len(L, -1);
    luaL_argcheck(L, n <= MAX_HOSTS, t, "webhook_server: at most 16 hosts");
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, -1, i);
      luaL_argcheck(L, lua_type(L, -1) == LUA_TSTRING, t, "webhook_server: hosts must be strings");
      const char *s = lua_tostring(L, -1);
      lua_pop(L, 1); /* the string stays referenced by the table */
      int dup = 0;
      for (int j = 0; j < nhosts; j++) dup |= strcmp(hosts[j], s) == 0;
      if (!dup && *s) hosts[nhosts++] = s;
    }
  }
  kin_tls_keypair_opts o = {.dir = lkin_opt_string(L, t, "cert_path"),
                            .cert_name = lkin_opt_string(L, t, "cert_name"),
                            .key_name = lkin_opt_string(L, t, "cert_key"),
                            .hosts = hosts, .nhosts = nhosts, .what = "webhook"};
  char *cert = NULL, *key = NULL;
  if (!o.dir || !*o.dir) {
    int rc = self_made(hosts, nhosts, &cert, &key, &p->ca_pem, err, errlen);
    if (rc) {
      lua_pop(L, 1);
      return rc;
    }
    o.cert_pem = cert;
    o.key_pem = key;
  }
  int rc = kin_tls_keypair_open(&o, &p->keys, err, errlen);
  free(cert);
  free(key);
  lua_pop(L, 1); /* hosts */
  return rc;
}

/* core.webhook_server{...} (see the top of this file): the userdata, or
 * nil, message, code (the key pair or the server could not be made;
 * nothing is left allocated then). Misuse raises. */
static int l_server(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lkin_opt_check_keys(L, 1, server_keys, "webhook_server");
  lua_getfield(L, 1, "env");
  lkin_env *env = lkin_check_env(L, lua_gettop(L));
  lua_pop(L, 1);
  int tls = lkin_opt_isset(L, 1, "tls") ? lkin_opt_bool(L, 1, "tls") : 1;
  lua_Integer maxc = lkin_opt_integer(L, 1, "max_connections", 0);
  lua_Integer maxb = lkin_opt_integer(L, 1, "max_request_bytes", 0);
  luaL_argcheck(L, maxc >= 0 && maxc <= 100000 && maxb >= 0, 1,
                "webhook_server: max_connections 0..100000, max_request_bytes >= 0");
  lwh *p = lua_newuserdatauv(L, sizeof(*p), 0);
  memset(p, 0, sizeof(*p));
  atomic_init(&p->abort, 0);
  lkin_setmetatable(L, &server_type);
  char err[600] = "";
  int rc = tls ? open_keys(L, 1, p, err, sizeof(err)) : 0;
  if (rc == 0) {
    kin_webhook_server_config cfg = {.bind_address = lkin_opt_string(L, 1, "bind_address"),
                                     .keys = p->keys,
                                     .max_connections = (unsigned)maxc,
                                     .max_request_bytes = (size_t)maxb,
                                     .metrics = kin_metrics_default()};
    rc = kin_webhook_server_new(&cfg, &p->s, err, sizeof(err));
  }
  if (rc) {
    kin_tls_keypair_free(p->keys);
    p->keys = NULL;
    free(p->ca_pem);
    p->ca_pem = NULL;
    lua_pushnil(L);
    lua_pushstring(L, *err ? err : "webhook server: cannot make it");
    lua_pushstring(L, lkin_errname(rc));
    return 3;
  }
  p->env = lkin_env_ref(env);
  return 1;
}

static const char *const type_names[] = {"validating", "mutating", "conversion", NULL};

/* srv:add{name=, path=, type=, handler=, workers=, memory_limit=, timeout=}
 * -> true, or nil, msg, code (a path taken: EEXIST). */
static int s_add(lua_State *L) {
  static const char *const keys[] = {"name",    "path",         "type",    "handler",
                                     "workers", "memory_limit", "timeout", NULL};
  lwh *p = check_server(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  lkin_opt_check_keys(L, 2, keys, "webhook_server:add");
  const char *name = lkin_opt_string(L, 2, "name");
  const char *path = lkin_opt_string(L, 2, "path");
  luaL_argcheck(L, name && path && *path == '/', 2, "add: name and path (\"/...\") are required");
  lua_getfield(L, 2, "type");
  kin_webhook_type type = (kin_webhook_type)(luaL_checkoption(L, -1, NULL, type_names) + 1);
  lua_pop(L, 1);
  lua_Integer workers = lkin_opt_integer(L, 2, "workers", 2);
  luaL_argcheck(L, workers >= 1 && workers <= MAX_WORKERS, 2, "add: workers must be 1..256");
  lua_Integer mem = lkin_opt_integer(L, 2, "memory_limit", 0);
  luaL_argcheck(L, mem >= 0, 2, "add: memory_limit must be >= 0");
  uint64_t timeout_ns = lkin_opt_ns(L, 2, "timeout", 10);
  lua_getfield(L, 2, "handler");
  luaL_argcheck(L, lua_isfunction(L, -1), 2, "add: handler must be a function");
  lkin_ws_template *t = lkin_ws_template_new(L, lua_gettop(L), "webhook", (size_t)mem);
  lua_pop(L, 1);
  lkin_ws_template_set_call_limit(t, 0, NULL); /* each call sets the review's deadline */
  lwh_hook *h = lwh_hook_new(name, path, type, p->env, t, &p->abort, (int)workers);
  lkin_ws_template_unref(t);
  if (!h) return lkin_fail(L, KIN_ENOMEM, "webhook_server:add");
  kin_webhook_hook hk = {.path = h->path, .type = type, .timeout_ns = timeout_ns,
                         .fn = lwh_hook_call, .ud = h};
  int rc = kin_webhook_server_add(p->s, &hk);
  if (rc) {
    lwh_hook_free(h);
    if (rc == KIN_EEXIST) {
      lua_pushnil(L);
      lua_pushfstring(L, "webhook path %s is taken by another hook", path);
      lua_pushstring(L, lkin_errname(rc));
      return 3;
    }
    return lkin_fail(L, rc, "webhook_server:add");
  }
  h->next = p->hooks;
  p->hooks = h;
  lua_pushboolean(L, 1);
  return 1;
}

/* srv:remove(path) -> true, or false when no hook has that path. */
static int s_remove(lua_State *L) {
  lwh *p = check_server(L);
  const char *path = luaL_checkstring(L, 2);
  for (lwh_hook **pp = &p->hooks; *pp; pp = &(*pp)->next) {
    lwh_hook *h = *pp;
    if (strcmp(h->path, path) != 0) continue;
    kin_webhook_server_remove(p->s, path); /* waits for the calls under way */
    *pp = h->next;
    lwh_hook_free(h);
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushboolean(L, 0);
  return 1;
}

/* srv:start() -> the port, or nil, msg, code. */
static int s_start(lua_State *L) {
  lwh *p = check_server(L);
  char err[600] = "";
  sigset_t old; /* the server's threads must not take SIGINT/SIGTERM */
  lkin_signals_block_all(&old);
  int rc = kin_webhook_server_start(p->s, err, sizeof(err));
  lkin_signals_restore(&old);
  if (rc) {
    lua_pushnil(L);
    lua_pushstring(L, *err ? err : lkin_errname(rc));
    lua_pushstring(L, lkin_errname(rc));
    return 3;
  }
  lua_pushinteger(L, kin_webhook_server_port(p->s));
  return 1;
}

/* srv:port() -> the port listened on, or nil. */
static int s_port(lua_State *L) {
  lwh *p = check_server(L);
  int port = kin_webhook_server_port(p->s);
  if (!port) return 0;
  lua_pushinteger(L, port);
  return 1;
}

/* srv:ca() -> the self-made CA's PEM, or nil (files, or no TLS). */
static int s_ca(lua_State *L) {
  lwh *p = check_server(L);
  if (!p->ca_pem) return 0;
  lua_pushstring(L, p->ca_pem);
  return 1;
}

/* srv:serve(path, body [, timeout_ms]) -> status, answer; or nil, msg, code. */
static int s_serve(lua_State *L) {
  lwh *p = check_server(L);
  const char *path = luaL_checkstring(L, 2);
  size_t len;
  const char *body = luaL_checklstring(L, 3, &len);
  lua_Integer ms = luaL_optinteger(L, 4, 0);
  luaL_argcheck(L, ms >= 0 && ms <= 600000, 4, "timeout_ms must be 0..600000");
  char *out = NULL;
  size_t outlen = 0;
  int st = kin_webhook_server_serve(p->s, path, body, len, (uint32_t)ms, &out, &outlen);
  if (st < 0) return lkin_fail(L, st, "webhook_server:serve");
  lua_pushinteger(L, st);
  lua_pushlstring(L, out ? out : "", out ? outlen : 0);
  free(out);
  return 2;
}

/* srv:inprocess() -> fn, server: light userdata of kin_webhook_server_serve
 * (a kin_sim_review_fn) and of the server (its ud), for a sim's
 * in-process admission chain. Valid until srv:close(). */
static int s_inprocess(lua_State *L) {
  lwh *p = check_server(L);
  int (*fn)(kin_webhook_server *, const char *, const char *, size_t, uint32_t, char **,
            size_t *) = kin_webhook_server_serve;
  void *fp;
  _Static_assert(sizeof(fn) == sizeof(fp), "function pointers fit a void *");
  memcpy(&fp, &fn, sizeof(fp));
  lua_pushlightuserdata(L, fp);
  lua_pushlightuserdata(L, p->s);
  return 2;
}

/* srv:close() (also __gc, __close; idempotent): sets the abort flag, stops
 * the server (a call under way is cut at once), removes and frees every
 * hook, frees the server, the key pair and the CA, drops the env. */
static int s_close(lua_State *L) {
  lwh *p = luaL_checkudata(L, 1, SERVER_MT);
  if (!p->s) return 0;
  atomic_store(&p->abort, 1);
  kin_webhook_server_stop(p->s);
  while (p->hooks) {
    lwh_hook *h = p->hooks;
    p->hooks = h->next;
    kin_webhook_server_remove(p->s, h->path);
    lwh_hook_free(h);
  }
  kin_webhook_server_free(p->s);
  p->s = NULL;
  kin_tls_keypair_free(p->keys);
  p->keys = NULL;
  free(p->ca_pem);
  p->ca_pem = NULL;
  lkin_env_unref(p->env);
  p->env = NULL;
  return 0;
}

/* tostring(srv): "kinformer.webhook_server (port N)" or "(closed)". */
static int s_tostring(lua_State *L) {
  lwh *p = luaL_checkudata(L, 1, SERVER_MT);
  if (!p->s) lua_pushliteral(L, "kinformer.webhook_server (closed)");
  else lua_pushfstring(L, "kinformer.webhook_server (port %d)", kin_webhook_server_port(p->s));
  return 1;
}

static const luaL_Reg server_methods[] = {
    {"add", s_add},     {"remove", s_remove}, {"start", s_start},
    {"port", s_port},   {"ca", s_ca},         {"serve", s_serve},
    {"inprocess", s_inprocess}, {"close", s_close}, {NULL, NULL},
};
static const lkin_type server_type = {SERVER_MT, server_methods, s_close, s_tostring};

void lkin_open_webhook(lua_State *L) {
  lkin_new_type(L, &server_type);
  lua_pushcfunction(L, l_server);
  lua_setfield(L, -2, "webhook_server");
}
