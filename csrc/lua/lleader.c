/* lleader.c -- kinformer.leader_elector: the Lua face of a leader elector
 * (leader_election.h) over a manager's client. The elector runs on its own
 * thread, so a busy main state never delays a renewal; its callbacks are
 * queued to the env's main-state queue (lkin_mainq_post) and run by
 * env:step, in the main state, in order.
 *
 * The elector opens, renews and closes the env's leadership fence
 * (lkin_env_fence, made here or by core.leader_fence: owned by the env),
 * under which the env's reconciles, Events and client write: a replica
 * that is not the leader right now writes nothing. The fence closes on the
 * elector's thread the moment leadership is lost, before the queued
 * on_stopped_leading reaches the main state.
 *
 * Ownership: the userdata owns one lle, which holds an env reference and
 * the elector; closing it stops the elector (joining its thread, so no
 * callback is queued afterwards) and drops the Lua callbacks. Events
 * already queued name the elector by a number, never by pointer: those of
 * a closed elector find no callbacks and are skipped. */
#include "lleader.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "call_ctx.h"
#include "kin.h"
#include "laux.h"
#include "leader_election.h"
#include "lenv.h"
#include "lenv_core.h"
#include "lhandler.h"
#include "metrics.h"
#include "metrics_collectors.h"

#define LEADER_MT "kinformer.leader_elector"
/* Registry table of the main state: elector number -> {callbacks}. */
#define CALLBACKS_KEY "kinformer.leader_elector_callbacks"

typedef struct {
  kin_leader_elector *le;
  lkin_env *e;       /* one reference */
  lua_Integer id;    /* key of its callbacks; immutable */
} lle;

typedef struct {
  lle *p; /* NULL once closed */
} lle_ud;

typedef enum { EV_STARTED, EV_STOPPED, EV_NEW_LEADER } le_kind;

/* One callback queued for the main state; owns identity. */
typedef struct {
  lua_Integer id;
  le_kind kind;
  int lost;
  char *identity;
} le_event;

static const lkin_type leader_type; /* below, with the methods */

static const char *const cb_names[] = {"on_started_leading", "on_stopped_leading",
                                       "on_new_leader"};

static void event_drop(void *arg) {
  le_event *ev = arg;
  free(ev->identity);
  free(ev);
}

/* Runs one queued callback in the main state (lkin_mainq_post's call:
 * the event at 1). Raises what the callback raises. */
static int run_event(lua_State *L) {
  le_event *ev = lua_touserdata(L, 1);
  lkin_callbacks_push(L, CALLBACKS_KEY);
  if (lua_rawgeti(L, -1, ev->id) != LUA_TTABLE) return 0; /* elector closed */
  if (lua_getfield(L, -1, cb_names[ev->kind]) == LUA_TNIL) return 0;
  int nargs = 0;
  if (ev->kind == EV_STOPPED) {
    lua_pushboolean(L, ev->lost);
    nargs = 1;
  } else if (ev->kind == EV_NEW_LEADER) {
    lua_pushstring(L, ev->identity ? ev->identity : "");
    nargs = 1;
  }
  lua_call(L, nargs, 0);
  return 0;
}

/* Queues a callback (the elector's thread). Out of memory: the callback
 * is lost (le:state() still tells the truth); the elector goes on. */
static void post(lle *p, le_kind kind, int lost, const char *identity) {
  le_event *ev = calloc(1, sizeof(*ev));
  if (!ev) return;
  ev->id = p->id;
  ev->kind = kind;
  ev->lost = lost;
  if (identity && !(ev->identity = strdup(identity))) {
    free(ev);
    return;
  }
  static const char *const what[] = {"leader election callback on_started_leading",
                                     "leader election callback on_stopped_leading",
                                     "leader election callback on_new_leader"};
  lkin_mainq_post(p->e, what[kind], run_event, event_drop, ev);
}

/* leader_election_master_status{name} follows the elector at once (its
 * thread), not when the main state steps: a scrape sees the truth. */
static void set_gauge(lle *p, int leading) {
  kin_metrics_leader_election_status(kin_metrics_default(), kin_leader_elector_name(p->le), leading);
}

static void cb_started(void *ud) {
  set_gauge(ud, 1);
  post(ud, EV_STARTED, 0, NULL);
}
static void cb_stopped(void *ud, int lost) {
  set_gauge(ud, 0);
  post(ud, EV_STOPPED, lost, NULL);
}
static void cb_new_leader(void *ud, const char *id) { post(ud, EV_NEW_LEADER, 0, id); }

kin_leader_elector *lkin_leader_elector_of(lua_State *L, int i) {
  lle_ud *u = luaL_testudata(L, i, LEADER_MT);
  return u && u->p ? u->p->le : NULL;
}

static lle *check_lle(lua_State *L) {
  lle_ud *u = luaL_checkudata(L, 1, LEADER_MT);
  luaL_argcheck(L, u->p != NULL, 1, "leader elector is closed");
  return u->p;
}

/* Returns e's leadership fence, made (closed) and given to e on first use;
 * NULL when out of memory. */
static kin_fence *env_fence(lkin_env *e) {
  kin_fence *f = lkin_env_fence(e);
  if (f) return f;
  if (!(f = kin_fence_new())) return NULL;
  if (lkin_env_set_fence(e, f) < 0) { /* another thread gave it one meanwhile */
    kin_fence_free(f);
    return lkin_env_fence(e);
  }
  return f;
}

/* core.leader_fence(env) -> epoch, holds: makes env's leadership fence if
 * it has none (kinformer.manager with leader_election does so at once, so
 * every write of that manager is fenced from the start: none is allowed
 * before this replica leads), and returns its open epoch (0: closed) and
 * whether it holds now. Raises on ENOMEM. */
static int l_leader_fence(lua_State *L) {
  kin_fence *f = env_fence(lkin_check_env(L, 1));
  if (!f) return luaL_error(L, "leader_fence: out of memory");
  uint64_t epoch = kin_fence_epoch(f);
  lua_pushinteger(L, (lua_Integer)epoch);
  lua_pushboolean(L, epoch && kin_fence_holds(f, epoch));
  return 2;
}

/* core.leader_elector(env, opts) -> elector (not started)
 * opts: name (required), namespace (default: the env's), identity
 * (default "<hostname>_<uuid>"), lease_duration, renew_deadline,
 * retry_period (seconds; defaults 15, 10, 2), release_on_cancel (default
 * true), rejoin_after_loss (default false), on_started_leading(),
 * on_stopped_leading(lost), on_new_leader(identity): functions run by
 * env:step in this (the main) state. The elector drives env's leadership
 * fence (made now if env has none). Bad options raise. Main state only. */
static int l_leader_elector(lua_State *L) {
  lkin_env *e = lkin_check_env(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  kin_leader_election_opts o = {0};
  o.name = lkin_opt_string(L, 2, "name");
  luaL_argcheck(L, o.name && *o.name, 2, "option 'name' (the Lease's name) is required");
  o.namespace = lkin_opt_string(L, 2, "namespace");
  o.identity = lkin_opt_string(L, 2, "identity");
  o.lease_duration_ns = lkin_opt_ns(L, 2, "lease_duration", 15);
  o.renew_deadline_ns = lkin_opt_ns(L, 2, "renew_deadline", 10);
  o.retry_period_ns = lkin_opt_ns(L, 2, "retry_period", 2);
  o.release_on_cancel = lkin_opt_isset(L, 2, "release_on_cancel")
                            ? lkin_opt_bool(L, 2, "release_on_cancel") : 1;
  o.rejoin_after_loss = lkin_opt_bool(L, 2, "rejoin_after_loss");
  for (int i = 0; i < 3; i++) {
    int t = lua_getfield(L, 2, cb_names[i]);
    luaL_argcheck(L, t == LUA_TNIL || t == LUA_TFUNCTION, 2,
                  lua_pushfstring(L, "option '%s' must be a function", cb_names[i]));
    lua_pop(L, 1);
  }
  if (lkin_mainq_prepare(e) < 0) return lkin_fail(L, KIN_ENOMEM, "leader_elector");
  if (!(o.fence = env_fence(e))) return lkin_fail(L, KIN_ENOMEM, "leader_elector");
  lle_ud *u = lua_newuserdatauv(L, sizeof(*u), 0);
  u->p = NULL;
  lkin_setmetatable(L, &leader_type);
  lle *p = calloc(1, sizeof(*p));
  if (!p) return lkin_fail(L, KIN_ENOMEM, "leader_elector");
  p->id = lkin_callbacks_new_id();
  p->e = lkin_env_ref(e);
  o.on_started_leading = cb_started;
  o.on_stopped_leading = cb_stopped;
  o.on_new_leader = cb_new_leader;
  o.ud = p;
  char err[256] = "";
  int rc = kin_leader_elector_new(e->client, &o, &p->le, err, sizeof(err));
  if (rc < 0) {
    lkin_env_unref(p->e);
    free(p);
    if (rc == KIN_EINVAL) return luaL_argerror(L, 2, err);
    return lkin_fail(L, rc, "leader_elector");
  }
  u->p = p;
  set_gauge(p, 0); /* a backup until it leads */
  /* the callbacks, by number */
  lkin_callbacks_push(L, CALLBACKS_KEY);
  lua_createtable(L, 0, 3);
  for (int i = 0; i < 3; i++) {
    lua_getfield(L, 2, cb_names[i]);
    lua_setfield(L, -2, cb_names[i]);
  }
  lua_rawseti(L, -2, p->id);
  lua_pop(L, 1);
  return 1;
}

/* le:start() -> true | nil, msg, code ("EBUSY" when started before). */
static int m_start(lua_State *L) {
  lle *p = check_lle(L);
  sigset_t old; /* the elector's thread must not take SIGINT/SIGTERM */
  lkin_signals_block_all(&old);
  int rc = kin_leader_elector_start(p->le);
  lkin_signals_restore(&old);
  if (rc < 0) return lkin_fail(L, rc, "leader election start");
  lua_pushboolean(L, 1);
  return 1;
}

/* le:stop(): ends the elector (a leader releases the Lease when
 * release_on_cancel) and joins its thread. The on_stopped_leading it
 * queues runs on a later env:step. Idempotent. */
static int m_stop(lua_State *L) {
  kin_leader_elector_stop(check_lle(L)->le);
  return 0;
}

/* le:state() -> {identity=, name=, namespace=, leader=, is_leader=,
 * transitions=, lease_duration=, acquire_time=, renew_time=,
 * acquisitions=, losses=, running=, fence_epoch=, fence_holds=} (leader
 * "" when nobody holds it; fence_epoch 0 while the fence is closed,
 * fence_holds whether writes may be sent now). */
static int m_state(lua_State *L) {
  lle *p = check_lle(L);
  kin_leader_election_state st;
  if (kin_leader_elector_get_state(p->le, &st) < 0) return lkin_fail(L, KIN_ENOMEM, "state");
  lua_createtable(L, 0, 14);
#define S(k, v) (lua_pushstring(L, v), lua_setfield(L, -2, k))
#define I(k, v) (lua_pushinteger(L, (lua_Integer)(v)), lua_setfield(L, -2, k))
#define B(k, v) (lua_pushboolean(L, v), lua_setfield(L, -2, k))
  S("identity", st.identity);
  S("name", st.name);
  S("namespace", st.namespace);
  S("leader", st.leader);
  B("is_leader", st.is_leader);
  I("transitions", st.transitions);
  I("lease_duration", st.lease_duration_seconds);
  S("acquire_time", st.acquire_time);
  S("renew_time", st.renew_time);
  I("acquisitions", st.acquisitions);
  I("losses", st.losses);
  B("running", st.running);
  kin_fence *f = lkin_env_fence(p->e);
  uint64_t epoch = f ? kin_fence_epoch(f) : 0;
  I("fence_epoch", epoch);
  B("fence_holds", epoch && kin_fence_holds(f, epoch));
#undef S
#undef I
#undef B
  kin_leader_election_state_free(&st);
  return 1;
}

/* le:is_leader() -> boolean, now (the elector's own view: it may be ahead
 * of the callbacks queued for the main state). */
static int m_is_leader(lua_State *L) {
  lua_pushboolean(L, kin_leader_elector_is_leader(check_lle(L)->le));
  return 1;
}

/* __gc / __close / le:close(): stops (as le:stop), frees, forgets the
 * callbacks. Idempotent. */
static int m_close(lua_State *L) {
  lle_ud *u = luaL_checkudata(L, 1, LEADER_MT);
  lle *p = u->p;
  u->p = NULL;
  if (!p) return 0;
  kin_leader_elector_free(p->le);
  lkin_callbacks_forget(L, CALLBACKS_KEY, p->id);
  lkin_env_unref(p->e);
  free(p);
  return 0;
}

static int m_tostring(lua_State *L) {
  lle_ud *u = luaL_checkudata(L, 1, LEADER_MT);
  if (u->p) lua_pushfstring(L, "kinformer.leader_elector (%s)", kin_leader_elector_name(u->p->le));
  else lua_pushliteral(L, "kinformer.leader_elector (closed)");
  return 1;
}

static const luaL_Reg methods[] = {{"start", m_start},         {"stop", m_stop},
                                   {"state", m_state},         {"is_leader", m_is_leader},
                                   {"close", m_close},         {NULL, NULL}};

static const lkin_type leader_type = {LEADER_MT, methods, m_close, m_tostring};

/* core.leader_identity() -> "<hostname>_<uuid>": a fresh default identity,
 * for callers that add to it (kinformer.leader_election prefixes the
 * operator's name). */
static int l_leader_identity(lua_State *L) {
  char id[320];
  if (kin_leader_election_default_identity(id, sizeof(id)) < 0) return lkin_fail(L, KIN_ENOMEM, "leader_identity");
  lua_pushstring(L, id);
  return 1;
}

void lkin_open_leader(lua_State *L) {
  lkin_new_type(L, &leader_type);
  lua_pushcfunction(L, l_leader_elector);
  lua_setfield(L, -2, "leader_elector");
  lua_pushcfunction(L, l_leader_identity);
  lua_setfield(L, -2, "leader_identity");
  lua_pushcfunction(L, l_leader_fence);
  lua_setfield(L, -2, "leader_fence");
}
