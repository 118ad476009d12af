/* lmetrics.c -- user metrics and the metrics server for Lua.
 *
 * core.metric{type=, name=, help=, labels={...}, buckets={...}} registers
 * (or finds, when registered before with the same shape) a family in
 * kin_metrics_default(), the registry every Lua state of the process
 * shares, and returns a kinformer.metric userdata holding its pointer
 * (families live as long as the process: nothing to free). Its methods
 * take the label values as a table keyed by label name ({code = "200"})
 * or as a list in label order; updates lock the family only and allocate
 * nothing once the label set exists, so any worker state may update.
 *
 * core.metrics_server{metrics_bind=, health_bind=, admin_bind=,
 * metrics_secure=, metrics_cert_path=, metrics_cert_name=,
 * metrics_cert_key=, env=, max_conns=, max_conns_per_ip=, idle_timeout=}
 * starts the HTTP endpoints (metrics_server.h) and returns a
 * kinformer.metrics_server userdata (closed by __gc/__close/:close()); env
 * (a kinformer.env) gives the REST client of the TokenReviews and
 * SubjectAccessReviews, and the server holds a reference on it until
 * closed. core.raise_nofile() raises RLIMIT_NOFILE's soft limit to the
 * hard one. */
#include "lmetrics.h"

#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "laux.h"
#include "lenv.h"
#include "metrics.h"
#include "metrics_server.h"

#define METRIC_MT "kinformer.metric"
#define SERVER_MT "kinformer.metrics_server"
static const lkin_type metric_type, server_type; /* at the end */

/* ---- metrics --------------------------------------------------------------- */

static const char *const type_names[] = {"counter", "gauge", "histogram", NULL};

static int l_metric(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  kin_metric_opts o = {0};
  lua_getfield(L, 1, "type");
  o.type = (kin_metric_type)luaL_checkoption(L, -1, NULL, type_names);
  lua_pop(L, 1);
  o.name = lkin_opt_string(L, 1, "name");
  luaL_argcheck(L, o.name != NULL, 1, "metric: name is required");
  o.help = lkin_opt_string(L, 1, "help");
  const char *labels[KIN_METRIC_MAX_LABELS];
  double buckets[KIN_METRIC_MAX_BUCKETS];
  if (lua_getfield(L, 1, "labels") != LUA_TNIL) {
    luaL_argcheck(L, lua_istable(L, -1), 1, "metric: labels must be a list of names");
    lua_Integer n = luaL_len(L, -1);
    luaL_argcheck(L, n <= KIN_METRIC_MAX_LABELS, 1, "metric: too many labels");
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, -1, i);
      luaL_argcheck(L, lua_type(L, -1) == LUA_TSTRING, 1, "metric: label names must be strings");
      labels[i - 1] = lua_tostring(L, -1);
      lua_pop(L, 1); /* the string stays alive in the labels table */
    }
    o.labels = labels;
    o.nlabels = (int)n;
  }
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "buckets") != LUA_TNIL) {
    luaL_argcheck(L, lua_istable(L, -1) && o.type == KIN_METRIC_HISTOGRAM, 1,
                  "metric: buckets must be a list of numbers, on a histogram");
    lua_Integer n = luaL_len(L, -1);
    luaL_argcheck(L, n >= 1 && n <= KIN_METRIC_MAX_BUCKETS, 1, "metric: 1 to 64 buckets");
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, -1, i);
      int isnum = 0;
      buckets[i - 1] = lua_tonumberx(L, -1, &isnum);
      luaL_argcheck(L, isnum, 1, "metric: buckets must be numbers");
      lua_pop(L, 1);
    }
    /* +Inf is implied: a trailing math.huge is dropped, as client_golang does */
    if (n > 1 && isinf(buckets[n - 1]) && buckets[n - 1] > 0) n--;
    o.buckets = buckets;
    o.nbuckets = (int)n;
  }
  lua_pop(L, 1);
  kin_metric *m = NULL;
  char msg[256];
  int rc = kin_metrics_register(kin_metrics_default(), &o, &m, msg, sizeof msg);
  if (rc == KIN_EINVAL) return luaL_argerror(L, 1, msg);
  if (rc) {
    lua_pushnil(L);
    lua_pushstring(L, msg[0] ? msg : kin_strerror(rc));
    lua_pushstring(L, lkin_errname(rc));
    return 3;
  }
  kin_metric **ud = lua_newuserdatauv(L, sizeof *ud, 0);
  *ud = m;
  lkin_setmetatable(L, &metric_type);
  return 1;
}

static kin_metric *check_metric(lua_State *L) {
  return *(kin_metric **)luaL_checkudata(L, 1, METRIC_MT);
}

/* Reads the label values of m from the argument at arg (nil, a table by
 * name or a list) into v; they stay alive on the stack, which grows by at
 * most nlabels slots. Raises on a missing value or wrong type. */
static void label_values(lua_State *L, kin_metric *m, int arg, const char **v) {
  int n = kin_metric_nlabels(m);
  if (n == 0) {
    luaL_argcheck(L, lua_isnoneornil(L, arg) || lua_istable(L, arg), arg,
                  "labels must be a table or nil");
    return;
  }
  luaL_argcheck(L, lua_istable(L, arg), arg, "label values (a table) expected");
  luaL_checkstack(L, n, "too many labels");
  int list = lua_rawgeti(L, arg, 1) != LUA_TNIL;
  lua_pop(L, 1);
  for (int i = 0; i < n; i++) {
    if (list) {
      lua_rawgeti(L, arg, i + 1);
    } else {
      lua_getfield(L, arg, kin_metric_label(m, i));
    }
    int t = lua_type(L, -1);
    if (t != LUA_TSTRING && t != LUA_TNUMBER) {
      lua_pushfstring(L, "label '%s' must be a string or number",
                      kin_metric_label(m, i));
      luaL_argerror(L, arg, lua_tostring(L, -1));
    }
    v[i] = lua_tostring(L, -1); /* a number converts in this stack slot only */
  }
}

/* Applies op to the metric at 1 with value v and the labels at arg;
 * returns 0 values, or raises on misuse. */
static int apply(lua_State *L, int op, double v, int arg) {
  kin_metric *m = check_metric(L);
  const char *vals[KIN_METRIC_MAX_LABELS];
  label_values(L, m, arg, vals);
  int rc = op == 'a'   ? kin_metric_add(m, vals, v)
           : op == 's' ? kin_metric_set(m, vals, v)
                       : kin_metric_observe(m, vals, v);
  if (rc == KIN_EINVAL) {
    const char *what = op == 'a' ? (v < 0 ? "a counter cannot decrease" : "not a counter or gauge")
                       : op == 's' ? "not a gauge"
                                   : "not a histogram";
    return luaL_error(L, "metric %s: %s", kin_metric_name(m), isnan(v) ? "NaN value" : what);
  }
  if (rc) return luaL_error(L, "metric %s: %s", kin_metric_name(m), kin_strerror(rc));
  return 0;
}

/* m:inc([labels], [n]) / m:inc(n): adds n (default 1). */
static int m_inc_dec(lua_State *L, double sign) {
  if (lua_type(L, 2) == LUA_TNUMBER) return apply(L, 'a', sign * lua_tonumber(L, 2), 3);
  double n = luaL_optnumber(L, 3, 1);
  if (sign < 0) {
    kin_metric *m = check_metric(L);
    luaL_argcheck(L, kin_metric_get_type(m) == KIN_METRIC_GAUGE, 1, "dec: not a gauge");
  }
  return apply(L, 'a', sign * n, 2);
}
static int m_inc(lua_State *L) { return m_inc_dec(L, 1); }
static int m_dec(lua_State *L) { return m_inc_dec(L, -1); }
/* m:add(v, [labels]) */
static int m_add(lua_State *L) { return apply(L, 'a', luaL_checknumber(L, 2), 3); }
/* m:set(v, [labels]) */
static int m_set(lua_State *L) { return apply(L, 's', luaL_checknumber(L, 2), 3); }
/* m:observe(v, [labels]) */
static int m_observe(lua_State *L) { return apply(L, 'o', luaL_checknumber(L, 2), 3); }

/* m:get([labels]): the value (a histogram's count), or nil when that
 * label set was never updated. */
static int m_get(lua_State *L) {
  kin_metric *m = check_metric(L);
  const char *vals[KIN_METRIC_MAX_LABELS];
  label_values(L, m, 2, vals);
  double v;
  if (kin_metric_get(m, vals, &v) != 0) return 0;
  lua_pushnumber(L, v);
  return 1;
}

static int m_name(lua_State *L) {
  lua_pushstring(L, kin_metric_name(check_metric(L)));
  return 1;
}

static int m_metric_tostring(lua_State *L) {
  kin_metric *m = check_metric(L);
  lua_pushfstring(L, "kinformer.metric (%s %s)", type_names[kin_metric_get_type(m)],
                  kin_metric_name(m));
  return 1;
}

static int m_metric_close(lua_State *L) { return 0; } /* the family outlives every state */

/* core.metrics_render(): the default registry in the text format. */
static int l_render(lua_State *L) {
  char *t = NULL;
  size_t n = 0;
  int rc = kin_metrics_render(kin_metrics_default(), &t, &n);
  if (rc) return lkin_fail(L, rc, "metrics");
  lua_pushlstring(L, t, n);
  free(t);
  return 1;
}

/* ---- the server ---------------------------------------------------------------- */

typedef struct {
  kin_metrics_server *s;
  lkin_env *env; /* a reference, or NULL: its client serves the reviews */
} lserver;

static lserver *check_server(lua_State *L) {
  lserver *p = luaL_checkudata(L, 1, SERVER_MT);
  luaL_argcheck(L, p->s != NULL, 1, "metrics server is closed");
  return p;
}

static const char *const server_keys[] = {
    "metrics_bind", "health_bind", "admin_bind", "metrics_secure", "metrics_cert_path",
    "metrics_cert_name", "metrics_cert_key", "env", "max_conns", "max_conns_per_ip",
    "idle_timeout", NULL};

/* Reads a count option k of the table at t (0: the default). */
static unsigned opt_count(lua_State *L, int t, const char *k) {
  lua_Number v = lkin_opt_number(L, t, k, 0);
  luaL_argcheck(L, v >= 0 && v <= 1000000, t, "metrics_server: counts must be 0..1000000");
  return (unsigned)v;
}

/* core.metrics_server{...} (see the top of this file): the server (every
 * endpoint may be disabled), or nil, message, code. */
static int l_server(lua_State *L) {
  int t = lua_isnoneornil(L, 1) ? 0 : (luaL_checktype(L, 1, LUA_TTABLE), 1);
  if (t) lkin_opt_check_keys(L, t, server_keys, "metrics_server");
  kin_metrics_server_config cfg = {.metrics_bind = lkin_opt_string(L, t, "metrics_bind"),
                                   .health_bind = lkin_opt_string(L, t, "health_bind"),
                                   .admin_bind = lkin_opt_string(L, t, "admin_bind")};
  lkin_env *env = NULL;
  if (t) {
    cfg.metrics_secure = lkin_opt_bool(L, t, "metrics_secure");
    cfg.cert_dir = lkin_opt_string(L, t, "metrics_cert_path");
    cfg.cert_name = lkin_opt_string(L, t, "metrics_cert_name");
    cfg.cert_key = lkin_opt_string(L, t, "metrics_cert_key");
    cfg.max_conns = opt_count(L, t, "max_conns");
    cfg.max_conns_per_ip = opt_count(L, t, "max_conns_per_ip");
    cfg.idle_timeout_s = opt_count(L, t, "idle_timeout");
    if (lua_getfield(L, t, "env") != LUA_TNIL) env = lkin_check_env(L, lua_gettop(L));
    lua_pop(L, 1);
  }
  cfg.client = env ? env->client : NULL;
  lserver *p = lua_newuserdatauv(L, sizeof *p, 0);
  p->s = NULL;
  p->env = NULL;
  lkin_setmetatable(L, &server_type);
  char err[600];
  sigset_t old; /* the daemons' threads must not take SIGINT/SIGTERM */
  lkin_signals_block_all(&old);
  int rc = kin_metrics_server_start(&cfg, &p->s, err, sizeof err);
  lkin_signals_restore(&old);
  if (rc) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    lua_pushstring(L, lkin_errname(rc));
    return 3;
  }
  if (env) p->env = lkin_env_ref(env);
  return 1;
}

/* core.raise_nofile(): RLIMIT_NOFILE's soft limit raised to the hard one;
 * returns the soft limit before and after, or nil, message, code. */
static int l_raise_nofile(lua_State *L) {
  unsigned long before = 0, after = 0;
  int rc = kin_metrics_raise_nofile(&before, &after);
  if (rc) return lkin_fail(L, rc, "raise_nofile");
  lua_pushinteger(L, (lua_Integer)before);
  lua_pushinteger(L, (lua_Integer)after);
  return 2;
}

static const char *const probe_names[] = {"healthz", "readyz", NULL};
static const char *const which_names[] = {"metrics", "health", "admin", NULL};

/* srv:port("metrics"|"health"|"admin"): the bound port, nil when disabled. */
static int s_port(lua_State *L) {
  lserver *p = check_server(L);
  int port = kin_metrics_server_port(p->s, luaL_checkoption(L, 2, NULL, which_names));
  if (port == 0) return 0;
  lua_pushinteger(L, port);
  return 1;
}

/* srv:set_check("healthz"|"readyz", name, ok, [msg], [ttl seconds]) */
static int s_set_check(lua_State *L) {
  lserver *p = check_server(L);
  kin_probe probe = (kin_probe)luaL_checkoption(L, 2, NULL, probe_names);
  const char *name = luaL_checkstring(L, 3);
  int ok = lua_toboolean(L, 4);
  const char *msg = luaL_optstring(L, 5, NULL);
  uint64_t ttl = lua_isnoneornil(L, 6) ? 0 : lkin_secs_to_ns(L, 6, luaL_checknumber(L, 6), "ttl");
  int rc = kin_metrics_server_set_check(p->s, probe, name, ok, msg, ttl);
  luaL_argcheck(L, rc != KIN_EINVAL, 3, "check name must be non-empty, without '/', not 'ping'");
  if (rc) return lkin_fail(L, rc, "set_check");
  lua_pushboolean(L, 1);
  return 1;
}

/* srv:remove_check("healthz"|"readyz", name) */
static int s_remove_check(lua_State *L) {
  lserver *p = check_server(L);
  kin_metrics_server_remove_check(p->s, (kin_probe)luaL_checkoption(L, 2, NULL, probe_names),
                                  luaL_checkstring(L, 3));
  return 0;
}

static int s_close(lua_State *L) {
  lserver *p = luaL_checkudata(L, 1, SERVER_MT);
  kin_metrics_server_free(p->s);
  p->s = NULL;
  lkin_env_unref(p->env); /* after the daemons stopped: no review is under way */
  p->env = NULL;
  return 0;
}

/* srv:cert_generation(): key pairs loaded by the HTTPS endpoints (1 at
 * start, +1 per rotation picked up; 0 without HTTPS). */
static int s_cert_generation(lua_State *L) {
  lserver *p = check_server(L);
  lua_pushinteger(L, (lua_Integer)kin_metrics_server_cert_generation(p->s));
  return 1;
}

static int s_tostring(lua_State *L) {
  lserver *p = luaL_checkudata(L, 1, SERVER_MT);
  if (!p->s) lua_pushliteral(L, "kinformer.metrics_server (closed)");
  else
    lua_pushfstring(L, "kinformer.metrics_server (metrics port %d, health port %d)",
                    kin_metrics_server_port(p->s, 0), kin_metrics_server_port(p->s, 1));
  return 1;
}

static const luaL_Reg metric_methods[] = {
    {"inc", m_inc}, {"dec", m_dec}, {"add", m_add},   {"set", m_set},
    {"observe", m_observe}, {"get", m_get}, {"name", m_name}, {NULL, NULL},
};
static const lkin_type metric_type = {METRIC_MT, metric_methods, m_metric_close,
                                      m_metric_tostring};

static const luaL_Reg server_methods[] = {
    {"port", s_port},
    {"set_check", s_set_check},
    {"remove_check", s_remove_check},
    {"cert_generation", s_cert_generation},
    {"close", s_close},
    {NULL, NULL},
};
static const lkin_type server_type = {SERVER_MT, server_methods, s_close, s_tostring};

void lkin_open_metrics(lua_State *L) {
  lkin_new_type(L, &metric_type);
  lkin_new_type(L, &server_type);
  lua_pushcfunction(L, l_metric);
  lua_setfield(L, -2, "metric");
  lua_pushcfunction(L, l_render);
  lua_setfield(L, -2, "metrics_render");
  lua_pushcfunction(L, l_server);
  lua_setfield(L, -2, "metrics_server");
  lua_pushcfunction(L, l_raise_nofile);
  lua_setfield(L, -2, "raise_nofile");
}
