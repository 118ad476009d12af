/* lenv.c -- kinformer.env (lenv.h): the Lua face of a manager's C state
 * (lenv_core.h: one IO engine, one REST client and one informer factory,
 * shared by reference with every Lua state that works for the manager).
 * core.env makes one; its methods make informers (with their Lua
 * transforms), clients, listers and controllers, and run main-state
 * handlers (env:step). */
#include "lenv.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kin.h"
#include "kobj.h"
#include "kubeconfig.h"
#include "laux.h"
#include "lcall_limit.h"
#include "lclient.h"
#include "lcontroller.h"
#include "levent.h"
#include "lhandler.h"
#include "linformer.h"
#include "ljson.h"
#include "log.h"
#include "ltransform.h"
#include "metrics_collectors.h"
#include "reflector.h"
#include "worker_state.h"

#define ENV_MT "kinformer.env"

typedef struct {
  lkin_env *e; /* NULL once closed */
  int owner;   /* made by core.env: closing it shuts the factory down */
} lenv_ud;

static const lkin_type env_type; /* below, with the methods */

void lkin_push_env(lua_State *L, lkin_env *e) {
  lenv_ud *u = lua_newuserdatauv(L, sizeof(*u), 0);
  u->e = lkin_env_ref(e);
  u->owner = 0;
  lkin_setmetatable(L, &env_type);
}

lkin_env *lkin_check_env(lua_State *L, int i) {
  lenv_ud *u = luaL_checkudata(L, i, ENV_MT);
  luaL_argcheck(L, u->e != NULL, i, "manager environment is closed");
  return u->e;
}

/* ---- options (laux.h) ---------------------------------------------------- */

/* Nanoseconds to the engine's milliseconds: 0 stays 0 (default),
 * KIN_FOREVER is -1 (never), anything else at least 1. */
static long ns_to_ms(uint64_t ns) {
  if (ns == 0) return 0;
  if (ns == KIN_FOREVER || ns / KIN_NSEC_PER_MSEC > (uint64_t)(LONG_MAX / 2)) return -1;
  long ms = (long)(ns / KIN_NSEC_PER_MSEC);
  return ms ? ms : 1;
}

/* Writes the main state's default time limit of worker code of kind what
 * (worker_state.h's LKIN_WS_CALL_TIMEOUTS) for the templates made from now
 * on: a state's last env sets it. */
static void set_call_timeout(lua_State *L, const char *what, uint64_t ns, const char *option) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LKIN_WS_CALL_TIMEOUTS);
  lua_createtable(L, 2, 0);
  lua_pushnumber(L, (lua_Number)ns / 1e9);
  lua_rawseti(L, -2, 1);
  lua_pushstring(L, option);
  lua_rawseti(L, -2, 2);
  lua_setfield(L, -2, what);
  lua_pop(L, 1);
}

/* core.env{kubeconfig=, context=, url=, token=, insecure=, ca=, qps=,
 *          burst=, resync=, timeout=, in_cluster=, read_idle_timeout=,
 *          ping_timeout=, watch_idle_timeout=, events=, user_agent=, clock=,
 *          handler_timeout=, transform_timeout=, main_memory_limit=}
 *   -> env | nil, msg, code (user_agent: the User-Agent header, default
 *   "kinformer/<version>"; clock: "real" (default) or "fake", the
 *   controllers' clock, see env:clock_advance)
 * (events = {instance=, queue_size=, api=}: the event recorder's options,
 * levent.c)
 * Loads the kubeconfig (opts.kubeconfig, else $KUBECONFIG, else
 * ~/.kube/config; or the in-cluster service account with in_cluster=true)
 * and creates the engine, client and factory. A broken kubeconfig gives
 * nil and the loader's message, which names the file and the field.
 * With url= (a server URL) no kubeconfig is read: the config is built
 * here from url, token (bearer token), insecure (skip TLS verification)
 * and ca (a CA file path), namespace "default".
 * handler_timeout (s, default 10): the time limit of each call of a
 * handler (worker or main state) and of a map function; transform_timeout
 * (s, default 10): the default of mgr:informer's; main_memory_limit
 * (bytes, default 512 MiB): the memory a main-state handler's call may
 * add; 0 or math.huge: none (lcall_limit.h). */
/* Option content_type of the table at idx: "auto" or nil (protobuf for
 * built-in types, JSON otherwise, as client-go), "json", "protobuf";
 * anything else raises, naming who takes it. */
static int content_type_opt(lua_State *L, int idx, const char *who) {
  const char *ct = lkin_opt_string(L, idx, "content_type");
  if (!ct || !strcmp(ct, "auto")) return KIN_CONTENT_AUTO;
  if (!strcmp(ct, "json")) return KIN_CONTENT_JSON;
  if (!strcmp(ct, "protobuf")) return KIN_CONTENT_PROTOBUF;
  return luaL_error(L, "%s: option 'content_type' must be \"auto\", \"json\" or \"protobuf\" (got \"%s\")",
                    who, ct);
}

static int l_env(lua_State *L) {
  if (lua_isnoneornil(L, 1)) lua_newtable(L), lua_replace(L, 1);
  luaL_checktype(L, 1, LUA_TTABLE);
  /* core.env's options (kinformer.manager passes its own through; add new
   * keys here and in manager.lua's MANAGER_OPTS) */
  static const char *const known[] = {
      "kubeconfig", "context", "qps", "burst", "timeout", "resync", "in_cluster",
      "read_idle_timeout", "ping_timeout", "watch_idle_timeout", "url", "token", "ca",
      "insecure", "events", "user_agent", "clock", "handler_timeout", "transform_timeout",
      "main_memory_limit", "max_response_bytes", "content_type", "disable_compression", NULL};
  lkin_opt_check_keys(L, 1, known, "kinformer.manager");
  int content_type = content_type_opt(L, 1, "kinformer.manager");
  const char *clock = lkin_opt_string(L, 1, "clock");
  luaL_argcheck(L, !clock || !strcmp(clock, "real") || !strcmp(clock, "fake"), 1,
                "option 'clock' must be \"real\" or \"fake\"");
  kin_kubeconfig_opts ko = {lkin_opt_string(L, 1, "kubeconfig"),
                            lkin_opt_string(L, 1, "context")};
  kin_client_opts co = {0};
  co.qps = lkin_opt_number(L, 1, "qps", 0);
  co.burst = (int)lkin_opt_number(L, 1, "burst", 0);
  co.timeout_ms = (long)(lkin_opt_number(L, 1, "timeout", 0) * 1000);
  co.user_agent = lkin_opt_string(L, 1, "user_agent");
  /* bytes; 0/absent: the 256 MiB default, math.huge: no cap */
  double mrb = lkin_opt_number(L, 1, "max_response_bytes", 0);
  luaL_argcheck(L, mrb >= 0, 1, "option 'max_response_bytes' must not be negative");
  co.max_response_bytes = mrb >= 9.2e18 ? -1 : (int64_t)mrb;
  co.disable_compression = lkin_opt_bool(L, 1, "disable_compression"); /* client-go's DisableCompression */
  uint64_t resync = lkin_opt_ns(L, 1, "resync", 0);
  int in_cluster = lkin_opt_bool(L, 1, "in_cluster");
  /* Connection health (io_engine.h) and the reflectors' watch idle timeout;
   * 0: the defaults, math.huge: never. */
  kin_io_engine_opts io_opts = {
      .read_idle_ms = ns_to_ms(lkin_opt_ns(L, 1, "read_idle_timeout", 0)),
      .ping_timeout_ms = ns_to_ms(lkin_opt_ns(L, 1, "ping_timeout", 0))};
  if (io_opts.ping_timeout_ms < 0) io_opts.ping_timeout_ms = LONG_MAX / 2;
  uint64_t watch_idle = lkin_opt_ns(L, 1, "watch_idle_timeout", 0);

  const char *url = lkin_opt_string(L, 1, "url");
  const char *token = lkin_opt_string(L, 1, "token");
  const char *ca = lkin_opt_string(L, 1, "ca");
  int insecure = lkin_opt_bool(L, 1, "insecure");
  luaL_argcheck(L, !url || *url, 1, "option 'url' must not be empty");
  luaL_argcheck(L, url || (!token && !ca && !insecure), 1,
                "options 'token', 'insecure' and 'ca' need 'url'");
  luaL_argcheck(L, !url || (!in_cluster && !ko.path && !ko.context), 1,
                "option 'url' excludes 'kubeconfig', 'context' and 'in_cluster'");

  /* Time limits of user calls (issue 24, lcall_limit.h): 0 or math.huge,
   * none; absent, the defaults. */
  uint64_t handler_to = lkin_opt_ns(L, 1, "handler_timeout", LKIN_DEFAULT_HANDLER_TIMEOUT_S);
  uint64_t transform_to = lkin_opt_ns(L, 1, "transform_timeout", LKIN_DEFAULT_TRANSFORM_TIMEOUT_S);
  if (handler_to == KIN_FOREVER) handler_to = 0;
  if (transform_to == KIN_FOREVER) transform_to = 0;
  lua_Number main_mem = lkin_opt_number(L, 1, "main_memory_limit",
                                        (lua_Number)LKIN_WS_DEFAULT_MEMORY_LIMIT);
  luaL_argcheck(L, main_mem == 0 || main_mem >= (lua_Number)LKIN_WS_MIN_MEMORY_LIMIT, 1,
                "option 'main_memory_limit' must be 0 (none) or at least 262144 bytes");
  set_call_timeout(L, "map function", handler_to, "handler_timeout");

  kin_event_recorder_opts evo;
  lkin_event_read_opts(L, 1, &evo);
  char err[512] = "";
  kin_rest_config *rc = NULL;
  /* url=: a config built by hand; kin_client_new copies what it keeps, so
   * it borrows the option strings (alive in the table at 1) */
  kin_rest_config direct = {.host = (char *)url,
                            .bearer_token = (char *)token,
                            .ca_file = (char *)ca,
                            .insecure = insecure,
                            /* url= and token= given together are explicit */
                            .credentials_over_http = token != NULL,
                            .cluster_origin = (char *)"option url",
                            .user_origin = (char *)"option token"};
  int r = url          ? 0
          : in_cluster ? kin_in_cluster_config(NULL, &rc, err, sizeof(err))
                       : kin_kubeconfig_load(&ko, &rc, err, sizeof(err));
  if (r < 0) {
    lua_pushnil(L);
    lua_pushstring(L, err[0] ? err : kin_strerror(r));
    lua_pushstring(L, lkin_errname(r));
    return 3;
  }
  lkin_env *e = lkin_env_new();
  if (!e) {
    kin_rest_config_free(rc);
    return lkin_fail(L, KIN_ENOMEM, "create manager");
  }
  e->events_opts = evo;
  e->handler_timeout_ns = handler_to;
  e->transform_timeout_ns = transform_to;
  e->main_memory_limit = main_mem >= 9e18 ? 0 : (size_t)main_mem;
  e->events_opts.instance = evo.instance ? strdup(evo.instance) : NULL;
  if (clock && !strcmp(clock, "fake") && !(e->clock = kin_fake_clock_new(0))) {
    lkin_env_unref(e);
    return lkin_fail(L, KIN_ENOMEM, "create manager");
  }
  /* The engine's IO thread must not take the script's SIGINT/SIGTERM. */
  sigset_t old;
  lkin_signals_block_all(&old);
  r = kin_io_engine_new_opts(&io_opts, &e->io);
  lkin_signals_restore(&old);
  if (r == 0) r = kin_client_new(url ? &direct : rc, e->io, &co, &e->client, err, sizeof(err));
  if (r == 0) e->metrics_id = kin_metrics_add_rest_client(kin_metrics_default(), e->client);
  kin_rest_config_free(rc);
  if (r == 0) {
    kin_informer_factory_config fc = {
        .client = e->client, .default_resync_ns = resync, .idle_timeout_ns = watch_idle,
        .content_type = content_type};
    r = kin_informer_factory_new(&fc, &e->factory);
  }
  if (r < 0) {
    lkin_env_unref(e);
    lua_pushnil(L);
    lua_pushfstring(L, "create manager: %s", err[0] ? err : kin_strerror(r));
    lua_pushstring(L, lkin_errname(r));
    return 3;
  }
  lkin_push_env(L, e);
  lkin_env_unref(e); /* the userdata holds the one reference */
  ((lenv_ud *)lua_touserdata(L, -1))->owner = 1;
  return 1;
}

/* ---- informers ----------------------------------------------------------- */

/* Appends "&k=v" (or "?k=v" first) to the registry name in b. */
static void name_param(luaL_Buffer *b, int *first, const char *k, const char *v) {
  if (!v || !*v) return;
  luaL_addchar(b, *first ? '?' : '&');
  *first = 0;
  luaL_addstring(b, k);
  luaL_addchar(b, '=');
  luaL_addstring(b, v);
}

/* Reads opts.fields (the table at index 3) into v (n slots, NULL-
 * terminated; the strings stay owned by the table, which opts keeps).
 * Returns the count, 0 without fields. Raises when it is not a non-empty
 * list of strings or holds more than n - 1. Leaves the stack as it was. */
static int informer_fields(lua_State *L, const char **v, int n) {
  lua_getfield(L, 3, "fields");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  luaL_argcheck(L, lua_istable(L, -1), 3, "option 'fields' must be a list of dotted paths");
  int len = (int)luaL_len(L, -1);
  luaL_argcheck(L, len > 0 && len < n, 3, "option 'fields' must list 1 to 64 dotted paths");
  for (int i = 1; i <= len; i++) {
    if (lua_geti(L, -1, i) != LUA_TSTRING)
      luaL_error(L, "bad argument #3 to mgr:informer (fields[%d] must be a string such as "
                    "\"spec.replicas\")", i);
    v[i - 1] = lua_tostring(L, -1);
    const char *p = v[i - 1];
    if (!*p || *p == '.' || p[strlen(p) - 1] == '.' || strstr(p, ".."))
      luaL_error(L, "bad argument #3 to mgr:informer (fields[%d] = \"%s\" is not a dotted "
                    "path such as \"spec.replicas\")", i, p);
    lua_pop(L, 1);
  }
  v[len] = NULL;
  lua_pop(L, 1);
  return len;
}

/* env:informer(resource [, opts]) -> informer | nil, msg, code
 * opts: namespace, label_selector, field_selector, shard_selector
 * (KEP-5866; inf:set_shard_selector changes it), resync (s),
 * watch_idle_timeout (s), read_idle_timeout (s), ping_timeout (s), metadata_only,
 * watch_list, content_type ("auto", "json", "protobuf"), keep_managed_fields, transform (a function, sent with
 * copies of its upvalues, or a module name: table in, table out),
 * transform_memory_limit, transform_timeout (s; default the manager's, 10;
 * 0 or math.huge: none), transform_on_timeout ("keep", the default, or
 * "drop": ltransform.h). The same resource and options give the same
 * shared informer (an informer with a transform is never shared). Unknown
 * resources give nil, msg, "ENOENT". Main state only. */
static int m_informer(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  const char *res = luaL_checkstring(L, 2);
  if (lua_isnoneornil(L, 3)) {
    lua_settop(L, 2);
    lua_newtable(L);
  }
  luaL_checktype(L, 3, LUA_TTABLE);
  /* mgr:informer's options; add new keys here */
  static const char *const known[] = {
      "namespace", "label_selector", "field_selector", "metadata_only", "watch_list",
      "keep_managed_fields", "resync", "watch_idle_timeout", "transform",
      "transform_memory_limit", "read_idle_timeout", "ping_timeout", "transform_timeout",
      "transform_on_timeout", "content_type", "fields", "shard_selector", NULL};
  lkin_opt_check_keys(L, 3, known, "mgr:informer");
  {
    /* A misspelt or singular resource raises here (its lister would be
     * under another name); a runtime failure returns nil, msg, code. */
    kin_resource rr;
    int n = lkin_resolve_strict(L, e->client, res, res, &rr);
    if (n) return n;
  }
  kin_informer_opts o = {0};
  o.resource = res;
  o.namespace = lkin_opt_string(L, 3, "namespace");
  o.label_selector = lkin_opt_string(L, 3, "label_selector");
  o.field_selector = lkin_opt_string(L, 3, "field_selector");
  o.shard_selector = lkin_opt_string(L, 3, "shard_selector");
  o.metadata_only = lkin_opt_bool(L, 3, "metadata_only");
  o.watch_list = lkin_opt_bool(L, 3, "watch_list");
  o.content_type = content_type_opt(L, 3, "mgr:informer");
  o.keep_managed_fields = lkin_opt_bool(L, 3, "keep_managed_fields");
  o.resync_ns = lkin_opt_ns(L, 3, "resync", 0);
  if (o.resync_ns == KIN_FOREVER) o.resync_ns = 0;
  o.idle_timeout_ns = lkin_opt_ns(L, 3, "watch_idle_timeout", 0);
  /* The health check of the watch's connection (kin_informer_opts): the
   * connection gets the smallest settings of the requests on it. 0 or
   * absent: the manager's; math.huge: read-idle, no probe for this
   * informer's sake; ping, none tighter than the others'. */
  o.read_idle_ms = ns_to_ms(lkin_opt_ns(L, 3, "read_idle_timeout", 0));
  o.ping_timeout_ms = ns_to_ms(lkin_opt_ns(L, 3, "ping_timeout", 0));
  if (o.ping_timeout_ms < 0) o.ping_timeout_ms = LONG_MAX / 2;
  /* fields = { "spec.replicas", ... }: the projection (kin_informer_opts);
   * the strings stay in opts (index 3) until the factory has copied them. */
  const char *fields_buf[65];
  int nfields = informer_fields(L, fields_buf, 65);
  if (nfields) o.fields = fields_buf;

  /* The transform code goes to index 4 before the name is built: a
   * luaL_Buffer owns the top of the stack while in use. */
  lua_settop(L, 3);
  lua_getfield(L, 3, "transform");
  int has_transform = !lua_isnil(L, 4);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, res);
  int first = 1;
  name_param(&b, &first, "namespace", o.namespace);
  name_param(&b, &first, "label_selector", o.label_selector);
  name_param(&b, &first, "field_selector", o.field_selector);
  /* not shard_selector: a sharded informer keeps its resource's lister
   * name (its ranges change; ctx.listers["v1/pods"] is still it) */
  name_param(&b, &first, "metadata_only", o.metadata_only ? "true" : NULL);
  name_param(&b, &first, "content_type", o.content_type == KIN_CONTENT_JSON       ? "json"
                                         : o.content_type == KIN_CONTENT_PROTOBUF ? "protobuf"
                                                                                  : NULL);
  name_param(&b, &first, "fields", nfields ? fields_buf[0] : NULL);
  for (int i = 1; i < nfields; i++) {
    luaL_addchar(&b, ',');
    luaL_addstring(&b, fields_buf[i]);
  }
  lkin_transform *t = NULL;
  if (has_transform) {
    static atomic_uint seq;
    char num[16];
    snprintf(num, sizeof(num), "%u", atomic_fetch_add(&seq, 1) + 1);
    name_param(&b, &first, "transform", num);
  }
  luaL_pushresult(&b); /* the name, at 5 */
  const char *name = lua_tostring(L, -1);
  if (has_transform) {
    size_t limit = (size_t)lkin_opt_number(L, 3, "transform_memory_limit", 0);
    uint64_t to = lkin_opt_isset(L, 3, "transform_timeout")
                      ? lkin_opt_ns(L, 3, "transform_timeout", 0)
                      : e->transform_timeout_ns;
    if (to == KIN_FOREVER) to = 0;
    const char *on_to = lkin_opt_string(L, 3, "transform_on_timeout");
    luaL_argcheck(L, !on_to || !strcmp(on_to, "keep") || !strcmp(on_to, "drop"), 3,
                  "option 'transform_on_timeout' must be \"keep\" or \"drop\"");
    t = lkin_transform_new(L, 4, name, limit, to, on_to && !strcmp(on_to, "drop"),
                           &e->user_abort);
    if (lkin_env_on_free(e, lkin_transform_free, t) < 0) { /* freed after the factory */
      lkin_transform_free(t);
      return lkin_fail(L, KIN_ENOMEM, "informer");
    }
    o.transform = lkin_transform_run;
    o.transform_ud = t;
  }
  char err[512] = "";
  kin_informer *inf = NULL;
  int rc;
  {
    sigset_t old_mask; /* new threads must not take SIGINT/SIGTERM */
    lkin_signals_block_all(&old_mask);
    rc = kin_informer_factory_informer(e->factory, &o, &inf, err, sizeof(err));
    lkin_signals_restore(&old_mask);
  }
  if (rc == 0) rc = lkin_env_add_informer(e, name, res, inf);
  if (rc < 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "informer %s: %s", res, err[0] ? err : kin_strerror(rc));
    lua_pushstring(L, lkin_errname(rc));
    return 3;
  }
  const char *reg = lkin_env_informer_name(e, inf);
  lkin_push_informer(L, e, inf, reg ? reg : name, 0);
  return 1;
}

/* env:connection_health() -> {probes=, probes_inconclusive=,
 * dead_connections=, failed_over=, read_idle_timeout=, ping_timeout=,
 * check_interval=}: the engine's health counters (kin_io_health_stats)
 * and, as of its last check, the smallest read-idle and ping timeout in
 * effect (the manager's and every request's in flight, e.g. an informer's
 * watch; seconds, read_idle_timeout math.huge when nothing is probed) and
 * the check's period (seconds). Reads the engine under its lock; any
 * state. */
static int m_connection_health(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  kin_io_health_stats st;
  kin_io_engine_health_stats(e->io, &st);
  lua_createtable(L, 0, 7);
  lua_pushinteger(L, (lua_Integer)st.probes);
  lua_setfield(L, -2, "probes");
  lua_pushinteger(L, (lua_Integer)st.probes_inconclusive);
  lua_setfield(L, -2, "probes_inconclusive");
  lua_pushinteger(L, (lua_Integer)st.dead_connections);
  lua_setfield(L, -2, "dead_connections");
  lua_pushinteger(L, (lua_Integer)st.failed_over);
  lua_setfield(L, -2, "failed_over");
  lua_pushnumber(L, st.read_idle_ms > 0 ? st.read_idle_ms / 1000.0 : HUGE_VAL);
  lua_setfield(L, -2, "read_idle_timeout");
  lua_pushnumber(L, st.ping_timeout_ms / 1000.0);
  lua_setfield(L, -2, "ping_timeout");
  lua_pushnumber(L, st.interval_ms / 1000.0);
  lua_setfield(L, -2, "check_interval");
  return 1;
}

/* env:start() -> true | nil, msg, code. Starts every informer (later ones
 * start as they are created). */
static int m_start(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  int rc;
  {
    sigset_t old_mask; /* new threads must not take SIGINT/SIGTERM */
    lkin_signals_block_all(&old_mask);
    rc = kin_informer_factory_start(e->factory);
    lkin_signals_restore(&old_mask);
  }
  if (rc < 0) return lkin_fail(L, rc, "start");
  lua_pushboolean(L, 1);
  return 1;
}

/* env:wait_for_cache_sync(timeout_s) -> true | nil, msg, code
 * Blocks the calling state up to timeout_s (nil: forever). The message
 * names the first informer not yet synced. */
static int m_wait_for_cache_sync(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  uint64_t ns =
      lua_isnoneornil(L, 2) ? KIN_FOREVER : lkin_secs_to_ns(L, 2, luaL_checknumber(L, 2), "timeout");
  char unsynced[256] = "";
  int rc = kin_informer_factory_wait_for_cache_sync(e->factory, ns, unsynced, sizeof(unsynced));
  if (rc == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushnil(L);
  if (rc == KIN_ETIMEDOUT)
    lua_pushfstring(L, "timed out waiting for caches to sync: %s", unsynced);
  else
    lua_pushfstring(L, "wait for caches to sync: %s", kin_strerror(rc));
  lua_pushstring(L, lkin_errname(rc));
  return 3;
}

/* env:sync_progress() -> {{name=, resource=, synced=, listed=, expected=,
 * cached=, watch_events=, content_type=}...} (expected: the list's size as
 * the server announced it, 0 while unknown; content_type: "protobuf" or
 * "json", what the last LIST or watch answer was, nil before one came)
 * in registration order: what the CLI's progress line shows. */
static int m_sync_progress(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  lua_newtable(L);
  pthread_mutex_lock(&e->mu);
  size_t n = e->n;
  pthread_mutex_unlock(&e->mu);
  for (size_t i = 0; i < n; i++) {
    pthread_mutex_lock(&e->mu);
    lkin_env_informer ent = e->informers[i]; /* entries are never removed */
    pthread_mutex_unlock(&e->mu);
    kin_reflector_stats st = {0};
    kin_reflector *r = kin_informer_factory_reflector(e->factory, ent.inf);
    if (r) kin_reflector_get_stats(r, &st);
    lua_createtable(L, 0, 6);
    lua_pushstring(L, ent.name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, ent.resource);
    lua_setfield(L, -2, "resource");
    lua_pushboolean(L, kin_informer_has_synced(ent.inf));
    lua_setfield(L, -2, "synced");
    lua_pushinteger(L, (lua_Integer)st.listed_items);
    lua_setfield(L, -2, "listed");
    lua_pushinteger(L, (lua_Integer)kin_indexer_len(kin_informer_indexer(ent.inf)));
    lua_setfield(L, -2, "cached");
    lua_pushinteger(L, (lua_Integer)st.expected_items);
    lua_setfield(L, -2, "expected");
    lua_pushinteger(L, (lua_Integer)st.watch_events);
    lua_setfield(L, -2, "watch_events");
    if (st.content_type_used) {
      lua_pushstring(L, st.content_type_used == KIN_CONTENT_PROTOBUF ? "protobuf" : "json");
      lua_setfield(L, -2, "content_type");
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* env:shutdown(): stops every reflector and informer and joins their
 * threads (listeners included). Idempotent. Main state only. */
static int m_shutdown(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  pthread_mutex_lock(&e->mu);
  e->stopped = 1;
  pthread_mutex_unlock(&e->mu);
  atomic_store(&e->user_abort, 1); /* transforms, handlers: the joins wait for none */
  kin_informer_factory_shutdown(e->factory);
  return 0;
}

/* env:client([{fenced = false}]) -> a kinformer.client; fenced = false:
 * its writes skip the leadership fence (lclient.h). */
static int m_client(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  int fenced = 1;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    static const char *const keys[] = {"fenced", NULL};
    lkin_opt_check_keys(L, 2, keys, "env:client");
    if (lua_getfield(L, 2, "fenced") != LUA_TNIL) {
      luaL_argcheck(L, lua_isboolean(L, -1), 2, "fenced must be a boolean");
      fenced = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);
  }
  lkin_push_client_fenced(L, e, fenced);
  return 1;
}

/* env:controller(spec) and core.controller(env, spec) -> controller
 * (lcontroller.h). */
static int m_controller(lua_State *L) {
  return lkin_controller_new(L, lkin_check_env(L, 1), lkin_push_env);
}

/* env:step([timeout_s]) -> n: runs the main-state handler events queued
 * (lhandler.h: lkin_mainq_run) after waiting up to timeout_s (default 0:
 * no wait) for one. Main state only. */
static int m_step(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  double timeout = luaL_optnumber(L, 2, 0);
  luaL_argcheck(L, timeout >= 0, 2, "timeout must be a non-negative number of seconds");
  return lkin_mainq_run(L, e, timeout);
}

/* ---- the controllers' clock -------------------------------------------- */

/* With clock = "fake" the env owns one fake clock (lenv_core.h) that every
 * controller made on it afterwards runs its delaying queue and rate
 * limiter on: requeue_after, error backoff and the token bucket only move
 * when env:clock_advance steps it. What stays on the real clock: the
 * informers (resync, relist backoff, timeouts), the controllers' per-key
 * history (wall-clock times), reconcile_timeout and busy_warning_after
 * deadlines, ctl:busy()'s seconds and the cache sync wait. The reconcile
 * time histogram is measured on the controller's clock, so on a fake one
 * it counts reconciles but sums to 0 unless the clock moves during one. */

static kin_clock *env_clock(lkin_env *e) { return e->clock ? e->clock : kin_clock_real(); }

/* env:clock_now() -> seconds, "fake"|"real": the controllers' clock; a
 * fake one starts at 0. Any state. */
static int m_clock_now(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  lua_pushnumber(L, (lua_Number)kin_clock_now(env_clock(e)) / 1e9);
  lua_pushstring(L, e->clock ? "fake" : "real");
  return 2;
}

/* env:clock_advance(seconds) -> seconds: moves the fake clock forward and
 * wakes whatever waits on it (a delaying queue hands its items that became
 * due to the workers); returns the new time. Raises on a real clock. Any
 * state. */
static int m_clock_advance(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  lua_Number s = luaL_checknumber(L, 2);
  luaL_argcheck(L, s >= 0 && s < 1e9, 2, "seconds must be a number >= 0");
  if (!e->clock)
    return luaL_error(L, "clock_advance: the manager's clock is the real one "
                         "(kinformer.manager{clock = \"fake\"} makes a fake one)");
  kin_fake_clock_step(e->clock, (uint64_t)llround(s * 1e9));
  lua_pushnumber(L, (lua_Number)kin_clock_now(e->clock) / 1e9);
  return 1;
}

/* env:lister(name) -> read-only informer | nil, msg, "ENOENT". name is a
 * registry name ("v1/pods?namespace=x") or a bare resource that has one
 * informer. Any state. */
static int m_lister(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  const char *name = luaL_checkstring(L, 2);
  kin_informer *inf = lkin_env_find_informer(e, name);
  if (!inf) {
    lua_pushnil(L);
    lua_pushfstring(L, "no informer for %s in this manager (or more than one: name it with "
                       "its options, see mgr:informer(...):name())", name);
    lua_pushliteral(L, "ENOENT");
    return 3;
  }
  const char *reg = lkin_env_informer_name(e, inf);
  lkin_push_informer(L, e, inf, reg ? reg : name, 1);
  return 1;
}

/* env:resource(name) -> {group, version, resource, kind, namespaced} |
 * nil, msg, code, http_code. Discovery (cached), strict as
 * lkin_resolve_strict (a singular raises). Any state. */
static int m_resource(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  const char *name = luaL_checkstring(L, 2);
  kin_resource r;
  int n = lkin_resolve_strict(L, e->client, name, name, &r); /* as kinformer.client's */
  if (n) return n;
  lkin_push_resource(L, &r);
  return 1;
}

/* env:namespace() -> the kubeconfig context's namespace ("default"). */
static int m_namespace(lua_State *L) {
  lua_pushstring(L, kin_client_namespace(lkin_check_env(L, 1)->client));
  return 1;
}

static int m_host(lua_State *L) {
  lua_pushstring(L, kin_client_host(lkin_check_env(L, 1)->client));
  return 1;
}

/* env:wait_signal(timeout_s) -> "SIGINT" | "SIGTERM" | nil
 * The first call blocks SIGINT and SIGTERM in the calling thread (threads
 * created later inherit that), so that they are taken here with
 * sigtimedwait instead of killing the process; nil after timeout_s. */
static int m_wait_signal(lua_State *L) {
  (void)lkin_check_env(L, 1);
  double s = luaL_optnumber(L, 2, 0);
  luaL_argcheck(L, s >= 0, 2, "timeout must be >= 0");
  lkin_signals_block_term();
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  int sig = sigtimedwait(&set, NULL, &ts);
  if (sig == SIGINT) lua_pushliteral(L, "SIGINT");
  else if (sig == SIGTERM) lua_pushliteral(L, "SIGTERM");
  else lua_pushnil(L);
  return 1;
}

/* Closing the owner (the env made by core.env) shuts the factory down
 * first: every listener thread is joined, so the last reference can never
 * be dropped on a thread the factory would join. Controllers hold their
 * own references and must be stopped before (the manager does). */
static int m_close(lua_State *L) {
  lenv_ud *u = luaL_checkudata(L, 1, ENV_MT);
  lkin_env *e = u->e;
  u->e = NULL;
  if (e && u->owner) {
    pthread_mutex_lock(&e->mu);
    e->stopped = 1;
    pthread_mutex_unlock(&e->mu);
    atomic_store(&e->user_abort, 1);
    kin_informer_factory_shutdown(e->factory);
  }
  lkin_env_unref(e);
  return 0;
}

static int m_tostring(lua_State *L) {
  lenv_ud *u = luaL_checkudata(L, 1, ENV_MT);
  if (u->e) lua_pushfstring(L, "kinformer.env (%s)", kin_client_host(u->e->client));
  else lua_pushliteral(L, "kinformer.env (closed)");
  return 1;
}

/* env:event_recorder(component) -> kinformer.event_recorder (levent.c):
 * Events from any Lua state, reportingController = component. */
static int m_event_recorder(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  size_t n;
  const char *component = luaL_checklstring(L, 2, &n);
  luaL_argcheck(L, n > 0, 2, "component must not be empty");
  return lkin_push_event_recorder(L, e, component);
}

static const luaL_Reg methods[] = {
    {"informer", m_informer},
    {"start", m_start},
    {"wait_for_cache_sync", m_wait_for_cache_sync},
    {"sync_progress", m_sync_progress},
    {"connection_health", m_connection_health},
    {"shutdown", m_shutdown},
    {"client", m_client},
    {"event_recorder", m_event_recorder},
    {"controller", m_controller},
    {"lister", m_lister},
    {"resource", m_resource},
    {"namespace", m_namespace},
    {"host", m_host},
    {"step", m_step},
    {"clock_now", m_clock_now},
    {"clock_advance", m_clock_advance},
    {"wait_signal", m_wait_signal},
    {"close", m_close},
    {NULL, NULL},
};

static const lkin_type env_type = {ENV_MT, methods, m_close, m_tostring};

void lkin_open_env(lua_State *L) {
  lkin_new_type(L, &env_type);
  lua_pushcfunction(L, l_env);
  lua_setfield(L, -2, "env");
  lua_pushcfunction(L, m_controller);
  lua_setfield(L, -2, "controller");
}
