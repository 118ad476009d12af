/* levent.c -- kinformer.event_recorder: rec:event(obj, type, reason,
 * message [, action]) queues a Kubernetes Event about obj in the
 * manager's one C recorder (lenv_core.h: lkin_env_events), shared by the
 * main state, handler states and controller worker states; the
 * recorder's writer thread writes it (event_recorder.h), so the call never
 * waits for the server.
 *
 * obj: an object table (apiVersion, kind, metadata.name/namespace/uid/
 * resourceVersion), a kinformer.object, or a reference table
 * {apiVersion=, kind=, name=, namespace=, uid=, resourceVersion=,
 * fieldPath=}. Misuse (a type other than "Normal"/"Warning", no kind or
 * name, an empty reason) raises; a full queue returns nil, msg, "EBUSY".
 *
 * The userdata holds one reference on the lkin_env and its component
 * string; the recorder is thread-safe, so no lock is taken here. */
#include "levent.h"

#include <stdlib.h>
#include <string.h>

#include "event_recorder.h"
#include "kin.h"
#include "kobj.h"
#include "laux.h"
#include "lobject.h"

#define EVREC_MT "kinformer.event_recorder"

static const lkin_type evrec_type; /* below, with the methods */

typedef struct {
  lkin_env *e;     /* one reference; NULL once closed */
  char *component; /* owned */
} levrec;

/* rec:close() / __gc / __close: drops the env reference. Idempotent. */
static int m_close(lua_State *L) {
  levrec *u = luaL_checkudata(L, 1, EVREC_MT);
  if (u->e) {
    lkin_env *e = u->e;
    u->e = NULL;
    lkin_env_unref(e);
  }
  free(u->component);
  u->component = NULL;
  return 0;
}

static levrec *check(lua_State *L) {
  levrec *u = luaL_checkudata(L, 1, EVREC_MT);
  luaL_argcheck(L, u->e != NULL, 1, "event recorder is closed");
  return u;
}

/* The string field k of the table at t, or NULL (non-strings too). */
static const char *sfield(lua_State *L, int t, const char *k) {
  lua_getfield(L, t, k);
  const char *v = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  lua_pop(L, 1); /* the string stays alive as the table's field */
  return v;
}

/* Fills ref from the object or reference at i (raises when it is neither). */
static void read_ref(lua_State *L, int i, kin_event_ref *ref) {
  memset(ref, 0, sizeof(*ref));
  kin_obj *o = NULL;
  if (lkin_test_object(L, i, &o)) {
    luaL_argcheck(L, o != NULL, i, "object is closed");
    ref->api_version = kin_obj_api_version(o);
    ref->kind = kin_obj_kind_name(o);
    ref->namespace_ = kin_obj_namespace(o);
    ref->name = kin_obj_name(o);
    ref->uid = kin_obj_uid(o);
    ref->resource_version = kin_obj_resource_version(o);
    return;
  }
  luaL_argcheck(L, lua_type(L, i) == LUA_TTABLE, i, "object or object reference expected");
  ref->api_version = sfield(L, i, "apiVersion");
  ref->kind = sfield(L, i, "kind");
  ref->field_path = sfield(L, i, "fieldPath");
  int md = 0;
  if (lua_getfield(L, i, "metadata") == LUA_TTABLE) md = lua_gettop(L);
  int t = md ? md : i; /* an object's metadata, or the reference itself */
  ref->namespace_ = sfield(L, t, "namespace");
  ref->name = sfield(L, t, "name");
  ref->uid = sfield(L, t, "uid");
  ref->resource_version = sfield(L, t, "resourceVersion");
  /* the metadata table stays on the stack (its strings with it) */
  if (!md) lua_pop(L, 1);
}

/* rec:event(obj, type, reason, message [, action]) -> true | nil, msg, code */
static int m_event(lua_State *L) {
  levrec *u = check(L);
  kin_event_ref ref;
  const char *type = luaL_checkstring(L, 3);
  const char *reason = luaL_checkstring(L, 4);
  const char *message = luaL_optstring(L, 5, "");
  const char *action = luaL_optstring(L, 6, NULL);
  luaL_argcheck(L, !strcmp(type, "Normal") || !strcmp(type, "Warning"), 3,
                "type must be \"Normal\" or \"Warning\"");
  luaL_argcheck(L, *reason, 4, "reason must not be empty");
  read_ref(L, 2, &ref);
  luaL_argcheck(L, ref.kind && *ref.kind, 2, "object has no kind");
  luaL_argcheck(L, ref.name && *ref.name, 2, "object has no metadata.name");
  int err = 0;
  sigset_t old;
  lkin_signals_block_all(&old);
  kin_event_recorder *r = lkin_env_events(u->e, &err);
  lkin_signals_restore(&old);
  if (!r) return lkin_fail(L, err, "event recorder");
  err = kin_event_record(r, u->component, &ref, type, reason, action, message);
  if (err == KIN_EBUSY) {
    lua_pushnil(L);
    lua_pushstring(L, "event dropped: the event queue is full");
    lua_pushstring(L, lkin_errname(err));
    return 3;
  }
  if (err) return lkin_fail(L, err, "event");
  lua_pushboolean(L, 1);
  return 1;
}

/* rec:flush([timeout_s = 10]) -> true | nil, "timed out", "ETIMEDOUT":
 * waits until every queued event was handled. */
static int m_flush(lua_State *L) {
  levrec *u = check(L);
  lua_Number t = luaL_optnumber(L, 2, 10);
  luaL_argcheck(L, t >= 0, 2, "timeout must be >= 0");
  pthread_mutex_lock(&u->e->mu);
  kin_event_recorder *r = u->e->events;
  pthread_mutex_unlock(&u->e->mu);
  if (r) {
    int err = kin_event_recorder_flush(r, (long)(t * 1000));
    if (err) return lkin_fail(L, err, "flush events");
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* rec:stats() -> {queued=, dropped=, created=, patched=, spam_filtered=,
 * failed=, api = "events.k8s.io/v1" | "v1" | nil}: the manager's recorder. */
static int m_stats(lua_State *L) {
  levrec *u = check(L);
  kin_event_recorder_stats st = {0};
  pthread_mutex_lock(&u->e->mu);
  kin_event_recorder *r = u->e->events;
  pthread_mutex_unlock(&u->e->mu);
  if (r) kin_event_recorder_get_stats(r, &st);
  lua_createtable(L, 0, 7);
  const struct { const char *k; uint64_t v; } f[] = {
      {"queued", st.queued},   {"dropped", st.dropped},         {"created", st.created},
      {"patched", st.patched}, {"spam_filtered", st.spam_filtered}, {"failed", st.failed}};
  for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
    lua_pushinteger(L, (lua_Integer)f[i].v);
    lua_setfield(L, -2, f[i].k);
  }
  if (st.api == KIN_EVENTS_API_EVENTS_V1) lua_pushstring(L, "events.k8s.io/v1");
  else if (st.api == KIN_EVENTS_API_CORE_V1) lua_pushstring(L, "v1");
  else lua_pushnil(L);
  lua_setfield(L, -2, "api");
  return 1;
}

static int m_tostring(lua_State *L) {
  levrec *u = luaL_checkudata(L, 1, EVREC_MT);
  lua_pushfstring(L, "kinformer.event_recorder (%s)", u->component ? u->component : "closed");
  return 1;
}

int lkin_push_event_recorder(lua_State *L, lkin_env *e, const char *component) {
  levrec *u = lua_newuserdatauv(L, sizeof(*u), 0);
  u->e = NULL;
  u->component = NULL;
  lkin_setmetatable(L, &evrec_type);
  u->component = strdup(component);
  if (!u->component) return lkin_fail(L, KIN_ENOMEM, "event recorder");
  u->e = lkin_env_ref(e);
  return 1;
}

void lkin_event_read_opts(lua_State *L, int t, kin_event_recorder_opts *out) {
  memset(out, 0, sizeof(*out));
  if (t == 0 || lua_getfield(L, t, "events") == LUA_TNIL) {
    if (t) lua_pop(L, 1);
    return;
  }
  int o = lua_gettop(L);
  luaL_argcheck(L, lua_type(L, o) == LUA_TTABLE, t, "option 'events' must be a table");
  /* the events table's keys (manager{events = {...}}); add new keys here */
  static const char *const known[] = {"instance", "queue_size", "api", NULL};
  lkin_opt_check_keys(L, o, known, "the manager's events");
  const char *api = lkin_opt_string(L, o, "api");
  lua_Integer q = lkin_opt_integer(L, o, "queue_size", 0);
  luaL_argcheck(L, q >= 0, t, "option 'events.queue_size' must be >= 0");
  int a = KIN_EVENTS_API_AUTO;
  if (api && !strcmp(api, "events.k8s.io/v1")) a = KIN_EVENTS_API_EVENTS_V1;
  else if (api && !strcmp(api, "v1")) a = KIN_EVENTS_API_CORE_V1;
  else luaL_argcheck(L, !api, t, "option 'events.api' must be \"events.k8s.io/v1\" or \"v1\"");
  out->queue_size = (size_t)q;
  out->api = a;
  out->instance = lkin_opt_string(L, o, "instance"); /* alive in the table at t */
  lua_pop(L, 1);
}

static const luaL_Reg methods[] = {
    {"event", m_event}, {"flush", m_flush}, {"stats", m_stats}, {"close", m_close}, {NULL, NULL}};

static const lkin_type evrec_type = {EVREC_MT, methods, m_close, m_tostring};

void lkin_open_event(lua_State *L) { lkin_new_type(L, &evrec_type); }
