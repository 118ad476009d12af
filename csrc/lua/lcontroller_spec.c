/* lcontroller_spec.c -- a Lua controller's watches, predicates and rate
 * limiter from the spec env:controller got (lcontroller_int.h). Main state.
 *
 * The spec is the normalised one lua/kinformer/controller.lua builds:
 *   { name = "web", workers = 2, memory_limit = bytes,
 *     reconciler = "mymod" | function (sent with copies of its upvalues),
 *     rate_limiter = { base_delay = s, max_delay = s, qps = n, burst = n },
 *     watches = {
 *       { informer = <kinformer.informer>, kind = "object" | "owner" | "map",
 *         owner_group = "apps", owner_kind = "Deployment", cluster_scoped = bool,
 *         all_owners = bool, map = "mod" | function, resync = s,
 *         predicates = <tree> }, ... } }
 * A predicate tree is a name ("generation_changed", ...), {label_selector =
 * "a=b"}, {"and", p...}, {"or", p...}, {"not", p}, or a list of trees (And). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "shard_gate.h"
#include "laux.h"
#include "lcontroller_int.h"
#include "linformer.h"
#include "predicate.h"
#include "rate_limiter.h"

/* ---- building from the spec (main state) --------------------------------- */

/* Builds the predicate tree at index i into *out. Never raises (raw
 * accesses only). Returns 0, or KIN_EINVAL with a message in err, or
 * KIN_ENOMEM. *out is NULL on failure. */
static int build_predicate(lua_State *L, int i, kin_predicate **out, char *err, size_t errlen,
                           int depth) {
  *out = NULL;
  i = lua_absindex(L, i);
  if (depth > 32 || !lua_checkstack(L, 4)) {
    snprintf(err, errlen, "predicates nest too deeply");
    return KIN_EINVAL;
  }
  if (lua_type(L, i) == LUA_TSTRING) {
    int rc = kin_predicate_from_name(lua_tostring(L, i), out);
    if (rc == KIN_EINVAL)
      snprintf(err, errlen,
               "unknown predicate '%s' (generation_changed, resource_version_changed, "
               "label_changed, annotation_changed, {label_selector = ...}, {\"and\", ...}, "
               "{\"or\", ...}, {\"not\", p})",
               lua_tostring(L, i));
    return rc;
  }
  if (lua_type(L, i) != LUA_TTABLE) {
    snprintf(err, errlen, "a predicate is a name or a table, not a %s", luaL_typename(L, i));
    return KIN_EINVAL;
  }
  lua_pushliteral(L, "label_selector");
  lua_rawget(L, i);
  if (!lua_isnil(L, -1)) {
    int rc = KIN_EINVAL;
    if (lua_type(L, -1) != LUA_TSTRING) {
      snprintf(err, errlen, "label_selector must be a string");
    } else {
      char perr[200] = "";
      const char *sel = lua_tostring(L, -1);
      rc = kin_predicate_label_selector(sel, out, perr, sizeof(perr));
      if (rc == KIN_EINVAL) snprintf(err, errlen, "bad label_selector '%s': %s", sel, perr);
    }
    lua_pop(L, 1);
    return rc;
  }
  lua_pop(L, 1);
  size_t n = lua_rawlen(L, i), first = 1;
  kin_predicate_kind kind = KIN_PREDICATE_AND;
  lua_rawgeti(L, i, 1);
  if (lua_type(L, -1) == LUA_TSTRING) {
    const char *op = lua_tostring(L, -1);
    if (strcmp(op, "and") == 0) kind = KIN_PREDICATE_AND, first = 2;
    else if (strcmp(op, "or") == 0) kind = KIN_PREDICATE_OR, first = 2;
    else if (strcmp(op, "not") == 0) kind = KIN_PREDICATE_NOT, first = 2;
  }
  lua_pop(L, 1);
  if (kind == KIN_PREDICATE_NOT) {
    if (n != 2) {
      snprintf(err, errlen, "{\"not\", p} takes exactly one predicate");
      return KIN_EINVAL;
    }
    lua_rawgeti(L, i, 2);
    kin_predicate *child;
    int rc = build_predicate(L, -1, &child, err, errlen, depth + 1);
    lua_pop(L, 1);
    if (rc < 0) return rc;
    return kin_predicate_not(child, out);
  }
  size_t nc = n >= first ? n - first + 1 : 0;
  kin_predicate **kids = calloc(nc ? nc : 1, sizeof(*kids));
  if (!kids) return KIN_ENOMEM;
  int rc = 0;
  size_t k = 0;
  for (size_t j = first; j <= n; j++) {
    lua_rawgeti(L, i, (lua_Integer)j);
    rc = build_predicate(L, -1, &kids[k], err, errlen, depth + 1);
    lua_pop(L, 1);
    if (rc < 0) break;
    k++;
  }
  if (rc < 0) {
    for (size_t j = 0; j < k; j++) kin_predicate_free(kids[j]);
    free(kids);
    return rc;
  }
  rc = kin_predicate_combine(kind, kids, k, out);
  free(kids);
  return rc;
}

kin_rate_limiter *lctl_make_rate_limiter(lua_State *L, int spec, kin_clock *clock) {
  if (lua_getfield(L, spec, "rate_limiter") == LUA_TNIL) {
    lua_pop(L, 1);
    return NULL; /* the default */
  }
  luaL_argcheck(L, lua_istable(L, -1), 2, "rate_limiter must be a table");
  int t = lua_gettop(L);
  /* mgr:controller{rate_limiter = {...}}'s keys; add new ones here */
  static const char *const known[] = {"base_delay", "max_delay", "qps", "burst", NULL};
  lkin_opt_check_keys(L, t, known, "the controller's rate_limiter");
  lua_Number base = lkin_opt_number(L, t, "base_delay", 0.005);
  lua_Number max = lkin_opt_number(L, t, "max_delay", 1000);
  lua_Number qps = lkin_opt_number(L, t, "qps", 10);
  lua_Number burst = lkin_opt_number(L, t, "burst", 100);
  lua_pop(L, 1);
  luaL_argcheck(L, base > 0 && max >= base && max < 1e9, 2,
                "rate_limiter: want 0 < base_delay <= max_delay (seconds)");
  luaL_argcheck(L, qps > 0 && burst >= 1 && burst < 1e9, 2,
                "rate_limiter: want qps > 0 and burst >= 1");
  kin_rate_limiter *rl[2] = {
      kin_exponential_rate_limiter_new((uint64_t)(base * 1e9), (uint64_t)(max * 1e9)),
      kin_bucket_rate_limiter_new((double)qps, (int)burst, clock),
  };
  if (!rl[0] || !rl[1]) {
    kin_rate_limiter_free(rl[0]);
    kin_rate_limiter_free(rl[1]);
    luaL_error(L, "not enough memory");
  }
  kin_rate_limiter *r = kin_max_of_rate_limiter_new(rl, 2);
  if (!r) luaL_error(L, "not enough memory");
  return r;
}

/* Adds watch number wi (the table at w) to p. Raises on misuse; p owns
 * whatever was built so far, so nothing leaks. */
void lctl_add_watch(lua_State *L, lctl *p, int w, int wi) {
  luaL_checkstack(L, 8, NULL);
  if (lua_getfield(L, w, "informer") == LUA_TNIL)
    luaL_error(L, "controller spec: watch #%d has no informer", wi);
  lkin_env *ie;
  kin_informer *inf = lkin_check_informer(L, -1, &ie);
  lua_pop(L, 1);
  if (ie != p->env) luaL_error(L, "controller spec: watch #%d: informer of another manager", wi);
  kin_handler_config cfg = {0};
  const char *kind = lkin_opt_string(L, w, "kind");
  char group[256];
  if (!kind || strcmp(kind, "object") == 0) {
    cfg.kind = KIN_ENQUEUE_REQUEST_FOR_OBJECT;
  } else if (strcmp(kind, "owner") == 0) {
    cfg.kind = KIN_ENQUEUE_REQUEST_FOR_OWNER;
    const char *g = lkin_opt_string(L, w, "owner_group");
    cfg.owner_kind = lkin_opt_string(L, w, "owner_kind");
    if (!cfg.owner_kind) luaL_error(L, "controller spec: watch #%d: owner_kind missing", wi);
    snprintf(group, sizeof(group), "%s", g ? g : "");
    cfg.owner_group = group;
    lua_getfield(L, w, "cluster_scoped");
    cfg.owner_cluster_scoped = lua_toboolean(L, -1);
    lua_getfield(L, w, "all_owners");
    cfg.all_owners = lua_toboolean(L, -1);
    lua_pop(L, 2);
  } else if (strcmp(kind, "map") == 0) {
    cfg.kind = KIN_ENQUEUE_REQUESTS_FROM_MAP_FUNC;
  } else {
    luaL_error(L, "controller spec: watch #%d: kind must be object, owner or map", wi);
  }
  lua_Number resync = lkin_opt_number(L, w, "resync", 0);
  if (resync < 0 || resync > 1e9) luaL_error(L, "controller spec: watch #%d: bad resync", wi);

  if (cfg.kind == KIN_ENQUEUE_REQUESTS_FROM_MAP_FUNC) {
    lmap **nm = realloc(p->maps, (p->nmaps + 1) * sizeof(*nm));
    if (!nm) luaL_error(L, "not enough memory");
    p->maps = nm;
    lmap *m = calloc(1, sizeof(*m));
    if (!m) luaL_error(L, "not enough memory");
    p->maps[p->nmaps++] = m;
    m->ctl = p;
    lua_getfield(L, w, "map");
    if (lua_isnil(L, -1)) luaL_error(L, "controller spec: watch #%d: map missing", wi);
    m->tmpl = lkin_ws_template_new(L, lua_gettop(L), "map function",
                                   lkin_ws_template_memory_limit(p->tmpl));
    lua_pop(L, 1);
    char label[300];
    const char *iname = lkin_opt_string(L, w, "name");
    snprintf(label, sizeof(label), "map %s", iname ? iname : "");
    if (!(m->label = strdup(label))) luaL_error(L, "not enough memory");
    cfg.map = lctl_map_fn;
    cfg.on_start = lctl_map_start;
    cfg.on_stop = lctl_map_stop;
    cfg.ud = m;
  }

  if (lua_getfield(L, w, "predicates") != LUA_TNIL) {
    char err[512] = "";
    int rc = build_predicate(L, -1, &cfg.predicate, err, sizeof(err), 0);
    if (rc == KIN_ENOMEM) luaL_error(L, "not enough memory");
    if (rc < 0) luaL_error(L, "controller spec: watch #%d: %s", wi, err);
  }
  lua_pop(L, 1);
  sigset_t old_mask; /* a listener thread may start here: no SIGINT/SIGTERM for it */
  lkin_signals_block_all(&old_mask);
  int rc = kin_controller_watch(p->c, inf, &cfg, (uint64_t)(resync * 1e9), NULL);
  lkin_signals_restore(&old_mask);
  if (rc < 0) luaL_error(L, "controller %s: watch #%d: %s", p->name, wi, kin_strerror(rc));
}

void lctl_set_shard(lua_State *L, lctl *p, int spec) {
  int sharded = lua_getfield(L, spec, "sharded") != LUA_TNIL && lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!sharded) return;
  kin_indexer *store = NULL;
  if (lua_getfield(L, spec, "watches") == LUA_TTABLE && lua_geti(L, -1, 1) == LUA_TTABLE) {
    const char *kind = lkin_opt_string(L, -1, "kind");
    if (kind && !strcmp(kind, "object") && lua_getfield(L, -1, "informer") != LUA_TNIL) {
      lkin_env *ie;
      store = kin_informer_indexer(lkin_check_informer(L, -1, &ie));
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
  luaL_argcheck(L, store != NULL, spec,
                "controller spec: sharded needs a For informer (watches[1] of kind \"object\")");
  kin_shard_gate *g = lkin_env_shard_gate(p->env, 1);
  if (!g) luaL_error(L, "controller %s: not enough memory", p->name);
  if (kin_controller_set_shard_gate(p->c, g, store) < 0)
    luaL_error(L, "controller %s: sharded must be set before the controller has watches", p->name);
}
