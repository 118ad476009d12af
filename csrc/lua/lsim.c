/* lsim.c -- luaopen_kinformer_simcore, the C module under
 * require "kinformer.sim": the embedded API server (csrc/sim) as a userdata
 * that stops on :stop(), on <close> and when collected.
 *
 * Its own module (build/<mode>/kinformer/simcore.so), so that the
 * production module kinformer.core links no libmicrohttpd, GnuTLS or
 * Jansson. It links libkinsim.a and the few parts of libkincore.a the sim
 * uses (buf, hmap, util, label selectors, the error table) and the
 * binding's laux.c (failures, metatables, option tables, signal masks),
 * each its own copy, hidden by csrc/lua/module.map. None of them logs: the
 * sim has no copy of the log sink and level (spec/modules_spec.lua
 * checks), so core.set_log_level and kin_log_set_sink keep applying to
 * every log line. */
#include <jansson.h>
#include <lauxlib.h>
#include <lua.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kin.h"
#include "laux.h"
#include "sim.h"

#define SIM_MT "kinformer.sim"

typedef struct {
  kin_sim *sim;     /* NULL once stopped */
  char kubeconfig[64]; /* temp file written at start, removed at stop */
} lsim;

static lsim *check(lua_State *L, int i) {
  lsim *u = luaL_checkudata(L, i, SIM_MT);
  luaL_argcheck(L, u->sim != NULL, i, "sim is stopped");
  return u;
}

/* start{port=, bind=, token=, tls_cert=, tls_key=, client_ca=, seed=,
 *           watch_history=, bookmark_interval_ms=, legacy_events=, pre_encode=,
 *           users=, request_log_limit=, authorization=}
 *   -> sim | nil, msg, code
 * authorization: "rbac" (kin_sim_config.authorization_mode "RBAC") or
 * "always-allow" (the default); anything else raises.
 * users: { [user name] = bearer token, ... } (kin_sim_add_token); a name
 * or token that is not a non-empty string, or a token given twice,
 * raises. */
/* Raises for the controllers option: the bad word and the names known. */
static int controllers_error(lua_State *L, const char *bad) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  int on;
  for (size_t i = 0; kin_sim_controller_name(i, &on); i++) {
    if (i) luaL_addstring(&b, ", ");
    luaL_addstring(&b, kin_sim_controller_name(i, &on));
  }
  luaL_pushresult(&b);
  return luaL_error(L, "kinformer.sim.start: option 'controllers': unknown controller '%s' "
                       "(the sim's: %s; \"*\" the default ones, \"-name\" without one, "
                       "\"none\" none)", bad, lua_tostring(L, -1));
}

/* The controllers option of the table at 1 as kin_sim_config.controllers
 * wants it (a string, or a list of names joined with commas), left on the
 * stack so it lives until the start; NULL when absent. Raises on a bad
 * type or an unknown name. */
/* feature_gates = { ShardedListAndWatch = true } (or kube-apiserver's
 * "Name=true,..." string): the string form, left on the stack. */
static const char *feature_gates_opt(lua_State *L) {
  int t = lua_getfield(L, 1, "feature_gates");
  if (t == LUA_TNIL) return NULL;
  luaL_argcheck(L, t == LUA_TSTRING || t == LUA_TTABLE, 1,
                "option 'feature_gates' must be a table {Name = true} or a string \"Name=true,...\"");
  if (t == LUA_TTABLE) {
    int tbl = lua_gettop(L);
    char buf[1024];
    size_t used = 0;
    buf[0] = 0;
    lua_pushnil(L);
    while (lua_next(L, tbl)) {
      luaL_argcheck(L, lua_type(L, -2) == LUA_TSTRING && lua_isboolean(L, -1), 1,
                    "option 'feature_gates' must map gate names to booleans");
      int n = snprintf(buf + used, sizeof(buf) - used, "%s%s=%s", used ? "," : "",
                       lua_tostring(L, -2), lua_toboolean(L, -1) ? "true" : "false");
      luaL_argcheck(L, n > 0 && (size_t)n < sizeof(buf) - used, 1, "option 'feature_gates' too long");
      used += (size_t)n;
      lua_pop(L, 1);
    }
    lua_pushstring(L, buf);
    lua_replace(L, tbl);
  }
  char why[256];
  if (kin_sim_feature_gates_check(lua_tostring(L, -1), why, sizeof(why)))
    luaL_argerror(L, 1, lua_pushfstring(L, "option 'feature_gates': %s", why));
  return lua_tostring(L, -1);
}

static const char *controllers_opt(lua_State *L) {
  int t = lua_getfield(L, 1, "controllers");
  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    lua_pushnil(L); /* keep the stack shape */
    return NULL;
  }
  luaL_argcheck(L, t == LUA_TSTRING || t == LUA_TTABLE, 1,
                "option 'controllers' must be a string or a list of controller names");
  if (t == LUA_TTABLE) {
    /* {"garbagecollector", "-kubelet"} -> "garbagecollector,-kubelet"; {} -> "none" */
    int tbl = lua_gettop(L);
    lua_Integer n = (lua_Integer)lua_rawlen(L, tbl);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (lua_Integer i = 1; i <= n; i++) {
      luaL_argcheck(L, lua_rawgeti(L, tbl, i) == LUA_TSTRING, 1,
                    "option 'controllers' must be a list of controller names");
      if (i > 1) luaL_addchar(&b, ',');
      luaL_addvalue(&b);
    }
    if (n == 0) luaL_addstring(&b, "none");
    luaL_pushresult(&b);
    lua_replace(L, tbl); /* the string takes the table's slot */
  }
  const char *spec = lua_tostring(L, -1);
  char bad[128];
  if (kin_sim_controllers_check(spec, bad, sizeof(bad))) controllers_error(L, bad);
  return spec;
}

static int l_start(lua_State *L) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  if (!lua_isnoneornil(L, 1)) {
    luaL_checktype(L, 1, LUA_TTABLE);
    /* kinformer.sim.start's options; add new keys here */
    static const char *const known[] = {
        "port", "bind", "token", "tls_cert", "tls_key", "client_ca", "seed", "watch_history",
        "bookmark_interval_ms", "legacy_events", "users", "request_log_limit", "controllers",
        "clock", "authorization", "nodes", "pod_ready_delay_ms", "job_run_ms", "pre_encode",
        "feature_gates", NULL};
    lkin_opt_check_keys(L, 1, known, "kinformer.sim.start");
    lua_Integer port = lkin_opt_integer(L, 1, "port", 0);
    luaL_argcheck(L, port >= 0 && port <= 65535, 1, "port out of range");
    cfg.port = (uint16_t)port;
    const char *bind = lkin_opt_string(L, 1, "bind");
    if (bind) cfg.bind_address = bind;
    cfg.token = lkin_opt_string(L, 1, "token");
    cfg.tls_cert_file = lkin_opt_string(L, 1, "tls_cert");
    cfg.tls_key_file = lkin_opt_string(L, 1, "tls_key");
    luaL_argcheck(L, !cfg.tls_cert_file == !cfg.tls_key_file, 1,
                  "tls_cert and tls_key go together");
    cfg.client_ca_file = lkin_opt_string(L, 1, "client_ca");
    luaL_argcheck(L, !cfg.client_ca_file || cfg.tls_cert_file, 1,
                  "client_ca needs tls_cert and tls_key");
    cfg.seed_file = lkin_opt_string(L, 1, "seed");
    lua_Integer wh = lkin_opt_integer(L, 1, "watch_history", 0);
    luaL_argcheck(L, wh >= 0, 1, "watch_history must be >= 0");
    cfg.watch_history = (size_t)wh;
    lua_Integer bi = lkin_opt_integer(L, 1, "bookmark_interval_ms", 0);
    luaL_argcheck(L, bi >= 0 && bi <= UINT32_MAX, 1, "bookmark_interval_ms out of range");
    cfg.bookmark_interval_ms = (uint32_t)bi;
    cfg.legacy_events_only = lkin_opt_bool(L, 1, "legacy_events");
    cfg.pre_encode = lkin_opt_bool(L, 1, "pre_encode");
    cfg.feature_gates = feature_gates_opt(L);
    lua_Integer rl = lkin_opt_integer(L, 1, "request_log_limit", 0);
    luaL_argcheck(L, rl >= 0, 1, "request_log_limit must be >= 0");
    cfg.request_log_limit = (size_t)rl;
    cfg.controllers = controllers_opt(L);
    lua_Integer nodes = lkin_opt_integer(L, 1, "nodes", 1);
    luaL_argcheck(L, nodes >= 0 && nodes <= 10000, 1, "nodes must be between 0 and 10000");
    cfg.nodes = (int)nodes;
    lua_Integer prd = lkin_opt_integer(L, 1, "pod_ready_delay_ms", 1000);
    luaL_argcheck(L, prd >= 0 && prd <= UINT32_MAX, 1, "pod_ready_delay_ms out of range");
    cfg.pod_ready_delay_ms = (uint32_t)prd;
    lua_Integer jr = lkin_opt_integer(L, 1, "job_run_ms", 1000);
    luaL_argcheck(L, jr >= 0 && jr <= UINT32_MAX, 1, "job_run_ms out of range");
    cfg.job_run_ms = (uint32_t)jr;
    static const char *const clocks[] = {"real", "fake", NULL};
    lua_getfield(L, 1, "clock");
    cfg.fake_clock = luaL_checkoption(L, -1, "real", clocks) == 1;
    lua_pop(L, 1);
    const char *authz = lkin_opt_string(L, 1, "authorization");
    luaL_argcheck(L, !authz || !strcmp(authz, "rbac") || !strcmp(authz, "always-allow"), 1,
                  "option 'authorization' must be \"rbac\" or \"always-allow\"");
    if (authz) cfg.authorization_mode = strcmp(authz, "rbac") ? "AlwaysAllow" : "RBAC";
    lua_getfield(L, 1, "users");
    int users_type = lua_type(L, -1);
    luaL_argcheck(L, users_type == LUA_TNIL || users_type == LUA_TTABLE, 1,
                  "option 'users' must be a table of user name = token");
    for (lua_pushnil(L); users_type == LUA_TTABLE && lua_next(L, -2); lua_pop(L, 1))
      luaL_argcheck(L, lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING &&
                           lua_rawlen(L, -2) && lua_rawlen(L, -1),
                    1, "option 'users' must map user names to tokens (non-empty strings)");
    lua_pop(L, 1);
  }
  lsim *u = lua_newuserdatauv(L, sizeof(*u), 0);
  memset(u, 0, sizeof(*u));
  luaL_setmetatable(L, SIM_MT);
  int rc;
  {
    sigset_t old_mask; /* new threads must not take SIGINT/SIGTERM */
    lkin_signals_block_all(&old_mask);
    rc = kin_sim_start(&cfg, &u->sim);
    lkin_signals_restore(&old_mask);
  }
  if (rc < 0) return lkin_fail(L, rc, "start sim");
  /* the users (checked above), with the userdata kept at the top after */
  if (!lua_isnoneornil(L, 1) && lua_getfield(L, 1, "users") == LUA_TTABLE) {
    for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1)) {
      rc = kin_sim_add_token(u->sim, lua_tostring(L, -2), lua_tostring(L, -1));
      if (rc == 0) continue;
      kin_sim_free(u->sim);
      u->sim = NULL;
      if (rc == KIN_EINVAL)
        return luaL_error(L, "kinformer.sim.start: option 'users': the token of %s is already "
                             "another user's", lua_tostring(L, -2));
      return lkin_fail(L, rc, "start sim");
    }
  }
  if (!lua_isnoneornil(L, 1)) lua_pop(L, 1);
  /* a kubeconfig pointing at this server, for clients and kubectl */
  strcpy(u->kubeconfig, "/tmp/kinformer-sim-XXXXXX");
  int fd = mkstemp(u->kubeconfig);
  if (fd < 0 || (close(fd), kin_sim_write_kubeconfig(u->sim, u->kubeconfig) < 0)) {
    if (fd >= 0) unlink(u->kubeconfig);
    u->kubeconfig[0] = 0;
    kin_sim_free(u->sim);
    u->sim = NULL;
    return lkin_fail(L, KIN_EINVAL, "write sim kubeconfig");
  }
  return 1;
}

static int m_url(lua_State *L) {
  lua_pushstring(L, kin_sim_url(check(L, 1)->sim));
  return 1;
}

static int m_port(lua_State *L) {
  lua_pushinteger(L, kin_sim_port(check(L, 1)->sim));
  return 1;
}

static int m_kubeconfig(lua_State *L) {
  lua_pushstring(L, check(L, 1)->kubeconfig);
  return 1;
}

static int m_resource_version(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)kin_sim_resource_version(check(L, 1)->sim));
  return 1;
}

static int m_compact(lua_State *L) {
  kin_sim_compact(check(L, 1)->sim);
  return 0;
}

/* sim:write_log_start(): from now on every API write is logged (sim.h). */
static int m_write_log_start(lua_State *L) {
  kin_sim_write_log_start(check(L, 1)->sim);
  return 0;
}

/* sim:write_log_take() -> the writes logged since the last take, as a JSON
 * array text of {method, uri, userAgent, body}; nil, msg, code when the log
 * was not started (EINVAL) or memory ran out (ENOMEM). */
static int m_write_log_take(lua_State *L) {
  lsim *u = check(L, 1);
  char *s = kin_sim_write_log_take(u->sim);
  if (!s) {
    lua_pushnil(L);
    lua_pushliteral(L, "write log not started (sim:write_log_start) or out of memory");
    lua_pushliteral(L, "EINVAL");
    return 3;
  }
  lua_pushstring(L, s);
  free(s);
  return 1;
}

/* sim:put(json [, deleted]) -> resourceVersion | nil, msg, code: json (an
 * object's JSON text) stored as restored state, identity and
 * resourceVersion as given (kin_sim_put, sim.h); deleted = true removes it.
 * The resourceVersion is the one written (0: nothing changed).
 * lua/kinformer/sim.lua's sim:put takes a table too. */
static int m_put(lua_State *L) {
  lsim *u = check(L, 1);
  size_t n;
  const char *json = luaL_checklstring(L, 2, &n);
  int deleted = lua_toboolean(L, 3);
  uint64_t rv = 0;
  char msg[512] = "";
  int rc = kin_sim_put(u->sim, json, n, deleted, &rv, msg, sizeof(msg));
  if (rc) {
    char what[600];
    snprintf(what, sizeof(what), "sim:put: %s", msg[0] ? msg : "failed");
    return lkin_fail(L, rc, what);
  }
  lua_pushinteger(L, (lua_Integer)rv);
  return 1;
}

/* sim:get(api_version, kind, namespace|nil, name) -> the stored object's
 * JSON text, or nil when there is none (kin_sim_get). */
static int m_get(lua_State *L) {
  lsim *u = check(L, 1);
  const char *av = luaL_checkstring(L, 2), *kind = luaL_checkstring(L, 3);
  const char *ns = luaL_optstring(L, 4, NULL), *name = luaL_checkstring(L, 5);
  char *s = kin_sim_get(u->sim, av, kind, ns, name);
  if (!s) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushstring(L, s);
  free(s);
  return 1;
}

/* sim:request_log_start(): from now on every request is logged (sim.h). */
static int m_request_log_start(lua_State *L) {
  kin_sim_request_log_start(check(L, 1)->sim);
  return 0;
}

/* Pushes v (a request log's JSON: objects, arrays, strings, integers,
 * booleans) as Lua values: objects and arrays as tables, null as nil. */
static void push_json(lua_State *L, const json_t *v) {
  luaL_checkstack(L, 3, "request log");
  switch (json_typeof(v)) {
  case JSON_OBJECT: {
    lua_createtable(L, 0, (int)json_object_size(v));
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
      push_json(L, x);
      lua_setfield(L, -2, k);
    }
    break;
  }
  case JSON_ARRAY: {
    lua_createtable(L, (int)json_array_size(v), 0);
    for (size_t i = 0; i < json_array_size(v); i++) {
      push_json(L, json_array_get(v, i));
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    break;
  }
  case JSON_STRING: lua_pushlstring(L, json_string_value(v), json_string_length(v)); break;
  case JSON_INTEGER: lua_pushinteger(L, (lua_Integer)json_integer_value(v)); break;
  case JSON_REAL: lua_pushnumber(L, json_real_value(v)); break;
  case JSON_TRUE: lua_pushboolean(L, 1); break;
  case JSON_FALSE: lua_pushboolean(L, 0); break;
  default: lua_pushnil(L); break;
  }
}

/* push_json of the json_t * given as light userdata (lua_pcall'd). */
static int push_json_protected(lua_State *L) {
  push_json(L, lua_touserdata(L, 1));
  return 1;
}

/* sim:request_log_take() -> the requests logged since the last take, an
 * array of tables {verb, apiGroup, apiVersion, resource, subresource,
 * namespace, name, nonResourceURL, user, userAgent, dryRun, code} (sim.h),
 * the last one {truncated = true, dropped = N} when the limit was reached;
 * nil, msg, code when the log was not started (EINVAL) or memory ran out
 * (ENOMEM). */
static int m_request_log_take(lua_State *L) {
  lsim *u = check(L, 1);
  char *s = kin_sim_request_log_take(u->sim);
  if (!s) {
    lua_pushnil(L);
    lua_pushliteral(L, "request log not started (sim:request_log_start) or out of memory");
    lua_pushliteral(L, "EINVAL");
    return 3;
  }
  json_error_t e;
  json_t *log = json_loads(s, 0, &e);
  free(s);
  if (!log) return lkin_fail(L, KIN_ENOMEM, "request log");
  /* protected, so that a memory error of Lua still frees log */
  lua_pushcfunction(L, push_json_protected);
  lua_pushlightuserdata(L, log);
  int st = lua_pcall(L, 1, 1, 0);
  json_decref(log);
  if (st != LUA_OK) return lua_error(L);
  return 1;
}

/* sim:token(user) -> a bearer token that authenticates as user: the one
 * given in start{users=} or made by an earlier call (the start token for
 * "kinformer-sim"), else a new random one (kin_sim_token). */
static int m_token(lua_State *L) {
  lsim *u = check(L, 1);
  size_t n;
  const char *user = luaL_checklstring(L, 2, &n);
  luaL_argcheck(L, n > 0, 2, "user name expected");
  char *t = kin_sim_token(u->sim, user);
  if (!t) return lkin_fail(L, KIN_ENOMEM, "sim:token");
  lua_pushstring(L, t);
  free(t);
  return 1;
}

/* Fault injection (sim.h): sim:fault{kind=..., ...} with kind one of
 *   "drop"       close every open watch abruptly
 *   "cut"        cut each open watch inside its next event
 *   "malformed"  send each open watch a line that is not JSON
 *   "stall"      ms=N: watches send nothing for N ms
 *   "fail"       code=429|500|503, count=N (default 1): the next N requests fail
 *   "latency"    ms=N: every later request waits N ms (0: none)
 *   "compact"    drop the watch history (older watches and continue tokens: 410)
 *   "restart"    ms=N (default 0): stop serving (every connection closed), wait
 *                N ms, serve again on the same port with the same store
 * Misuse (unknown kind, missing or out-of-range field) raises. */
static int m_fault(lua_State *L) {
  kin_sim *sim = check(L, 1)->sim;
  luaL_checktype(L, 2, LUA_TTABLE);
  /* sim:fault's options; add new keys here */
  static const char *const known[] = {"kind", "ms", "code", "count", NULL};
  lkin_opt_check_keys(L, 2, known, "sim:fault");
  static const char *const kinds[] = {"drop",    "cut",     "malformed", "stall",
                                      "fail",    "latency", "compact",   "restart", NULL};
  lua_getfield(L, 2, "kind");
  int kind = luaL_checkoption(L, -1, NULL, kinds);
  lua_pop(L, 1);
  switch (kind) {
  case 0: kin_sim_drop_watches(sim); break;
  case 1: kin_sim_cut_watches(sim); break;
  case 2: kin_sim_send_malformed_line(sim); break;
  case 3:
  case 5: {
    lua_Integer ms = lkin_opt_integer(L, 2, "ms", -1);
    luaL_argcheck(L, ms >= 0 && ms <= UINT32_MAX, 2, "ms (0..2^32-1) required");
    if (kind == 3) kin_sim_stall_watches(sim, (uint32_t)ms);
    else kin_sim_set_latency(sim, (uint32_t)ms);
    break;
  }
  case 4: {
    lua_Integer code = lkin_opt_integer(L, 2, "code", 0);
    lua_Integer count = lkin_opt_integer(L, 2, "count", 1);
    luaL_argcheck(L, code == 429 || code == 500 || code == 503, 2, "code must be 429, 500 or 503");
    luaL_argcheck(L, count >= 0 && count <= UINT32_MAX, 2, "count out of range");
    kin_sim_fail_next(sim, (int)code, (unsigned)count);
    break;
  }
  case 6: kin_sim_compact(sim); break;
  default: {
    lua_Integer ms = lkin_opt_integer(L, 2, "ms", 0);
    luaL_argcheck(L, ms >= 0 && ms <= 60000, 2, "ms (0..60000) expected");
    int rc = kin_sim_restart(sim, (uint32_t)ms);
    if (rc) return luaL_error(L, "sim:fault{kind = \"restart\"}: %s", rc == KIN_EBUSY ? "the port could not be bound again" : "the server is stopped");
    break;
  }
  }
  return 0;
}

/* sim:settle([timeout_s = 10]) -> true | nil, msg, code: waits until the
 * controllers have seen every change so far and have nothing due now
 * (kin_sim_settle). */
static int m_settle(lua_State *L) {
  kin_sim *sim = check(L, 1)->sim;
  lua_Number t = luaL_optnumber(L, 2, 10);
  luaL_argcheck(L, t >= 0 && t <= 3600, 2, "timeout (0..3600 s) expected");
  int rc;
  {
    sigset_t old_mask;
    lkin_signals_block_all(&old_mask);
    rc = kin_sim_settle(sim, (uint32_t)(t * 1000));
    lkin_signals_restore(&old_mask);
  }
  if (rc) return lkin_fail(L, rc, "sim:settle: the controllers were still busy");
  lua_pushboolean(L, 1);
  return 1;
}

/* sim:clock_now() -> seconds on the controllers' clock. */
static int m_clock_now(lua_State *L) {
  lua_pushnumber(L, (lua_Number)kin_sim_clock_now_ms(check(L, 1)->sim) / 1000.0);
  return 1;
}

/* sim:clock_advance(seconds) -> the new clock_now: moves a fake clock
 * (start{clock = "fake"}); raises on the real clock. */
static int m_clock_advance(lua_State *L) {
  kin_sim *sim = check(L, 1)->sim;
  lua_Number sec = luaL_checknumber(L, 2);
  luaL_argcheck(L, sec >= 0 && sec <= 1e9, 2, "seconds (>= 0) expected");
  if (kin_sim_clock_advance(sim, (uint64_t)(sec * 1000 + 0.5)))
    return luaL_error(L, "sim:clock_advance: the sim runs on the real clock (start it with "
                         "clock = \"fake\" and at least one controller)");
  lua_pushnumber(L, (lua_Number)kin_sim_clock_now_ms(sim) / 1000.0);
  return 1;
}

/* sim:_webhook_register(config_json, fn, ud) -> id: registers in-process
 * webhooks (kin_sim_webhook_register): config_json a
 * Validating/MutatingWebhookConfiguration or a CRD with a Webhook
 * conversion (JSON text), fn a kin_sim_review_fn and ud its argument,
 * both light userdata (the manager's webhook server, csrc/lua/lwebhook.c).
 * Returns nil, message, "EINVAL" for a configuration the sim does not
 * understand (nil, message, "ENOMEM" out of memory). */
static int m_webhook_register(lua_State *L) {
  kin_sim *sim = check(L, 1)->sim;
  size_t len;
  const char *cfg = luaL_checklstring(L, 2, &len);
  luaL_checktype(L, 3, LUA_TLIGHTUSERDATA);
  void *fn = lua_touserdata(L, 3);
  void *ud = lua_islightuserdata(L, 4) ? lua_touserdata(L, 4) : NULL;
  luaL_argcheck(L, fn != NULL, 3, "a kin_sim_review_fn expected");
  uint64_t id = 0;
  /* fn is a function pointer carried as a light userdata (C's object
   * pointer to function pointer conversion, as dlsym's) */
  kin_sim_review_fn f;
  memcpy(&f, &fn, sizeof(f));
  int rc = kin_sim_webhook_register(sim, cfg, len, f, ud, &id);
  if (rc) return lkin_fail(L, rc, "sim:_webhook_register");
  lua_pushinteger(L, (lua_Integer)id);
  return 1;
}

/* sim:_webhook_unregister(id) -> true, or false when id is not
 * registered (or the sim is stopped); waits for its calls under way. */
static int m_webhook_unregister(lua_State *L) {
  lsim *u = luaL_checkudata(L, 1, SIM_MT);
  lua_Integer id = luaL_checkinteger(L, 2);
  int ok = u->sim && id > 0 && kin_sim_webhook_unregister(u->sim, (uint64_t)id) == 0;
  lua_pushboolean(L, ok);
  return 1;
}

/* Stops the server and removes its kubeconfig; idempotent. */
static int m_stop(lua_State *L) {
  lsim *u = luaL_checkudata(L, 1, SIM_MT);
  if (u->sim) {
    kin_sim_free(u->sim);
    u->sim = NULL;
  }
  if (u->kubeconfig[0]) {
    unlink(u->kubeconfig);
    u->kubeconfig[0] = 0;
  }
  return 0;
}

static int m_running(lua_State *L) {
  lsim *u = luaL_checkudata(L, 1, SIM_MT);
  lua_pushboolean(L, u->sim != NULL);
  return 1;
}

static int m_tostring(lua_State *L) {
  lsim *u = luaL_checkudata(L, 1, SIM_MT);
  if (u->sim) lua_pushfstring(L, "kinformer.sim %s", kin_sim_url(u->sim));
  else lua_pushliteral(L, "kinformer.sim (stopped)");
  return 1;
}

/* simcore.controllers() -> { {name =, default = bool}, ... }: the sim's
 * controllers, in the order they run. */
static int l_controllers(lua_State *L) {
  lua_newtable(L);
  int on;
  const char *name;
  for (size_t i = 0; (name = kin_sim_controller_name(i, &on)); i++) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, name);
    lua_setfield(L, -2, "name");
    lua_pushboolean(L, on);
    lua_setfield(L, -2, "default");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static const luaL_Reg methods[] = {
    {"url", m_url},
    {"port", m_port},
    {"kubeconfig", m_kubeconfig},
    {"resource_version", m_resource_version},
    {"compact", m_compact},
    {"fault", m_fault},
    {"write_log_start", m_write_log_start},
    {"write_log_take", m_write_log_take},
    {"request_log_start", m_request_log_start},
    {"request_log_take", m_request_log_take},
    {"token", m_token},
    {"settle", m_settle},
    {"clock_now", m_clock_now},
    {"clock_advance", m_clock_advance},
    {"put", m_put},
    {"get", m_get},
    {"stop", m_stop},
    {"running", m_running},
    {"_webhook_register", m_webhook_register},
    {"_webhook_unregister", m_webhook_unregister},
    {NULL, NULL}};

static const lkin_type sim_type = {SIM_MT, methods, m_stop, m_tostring};

/* require "kinformer.simcore" -> { start = function(opts) } (start is the
 * former kinformer.core.sim_start; lua/kinformer/sim.lua wraps it). */
int luaopen_kinformer_simcore(lua_State *L) {
  lkin_new_type(L, &sim_type);
  lua_newtable(L);
  lua_pushliteral(L, KIN_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushcfunction(L, l_start);
  lua_setfield(L, -2, "start");
  lua_pushcfunction(L, l_controllers);
  lua_setfield(L, -2, "controllers");
  return 1;
}
