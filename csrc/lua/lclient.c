/* lclient.c -- kinformer.client: the REST verbs of a manager's kin_client
 * (env->client) as Lua methods, usable from any Lua state (the main state,
 * listener states, controller worker states).
 *
 * Conventions (luv style):
 *   - misuse (wrong argument types, unknown option values) raises with
 *     luaL_argcheck / luaL_argerror;
 *   - a runtime failure returns nil, message, code, http_code: code is the
 *     Status reason of the server's answer ("NotFound", "Conflict",
 *     "AlreadyExists", "Invalid", ...; derived from the HTTP code when the
 *     Status has none), or "ENOENT" (unknown resource), "EIO",
 *     "ETIMEDOUT", "EINVAL"... (kin_errname's table); http_code is 0 when
 *     no answer arrived. A failed discovery lookup reports the same way
 *     (its request's status, reason and message);
 *   - results are fresh tables decoded with ljson.h (integers as Lua
 *     integers, arrays encode back as []), and tables are encoded with
 *     it, so user code reconfiguring require "cjson" changes nothing here.
 *
 * Every call blocks the calling thread until the answer arrived (never call
 * from the IO thread; Lua code never runs there). Each call carries a
 * kin_call_ctx (call_ctx.h) built from the state's current call
 * (lkin_set_call_ctx: in a controller worker during a reconcile, the
 * reconcile's deadline, canceler, write observer and leadership fence with
 * the epoch open when the reconcile started), else from the manager's
 * fence with the epoch open at the call (main state, handler states): with
 * leader election, a write made while not leading is refused before
 * anything is sent (nil, "write refused: leadership ended (epoch N)",
 * "EFENCED", 0). The userdata holds one
 * reference on the lkin_env, dropped by close/__gc; the env's pointers are
 * immutable and kin_client is thread-safe, so no lock is taken here. */
#include "lclient.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "kin.h"
#include "kobj.h"
#include "laux.h"
#include "ljson.h"
#include "rest_client.h"
#include "worker_state.h"

#define CLIENT_MT "kinformer.client"

static const lkin_type client_type; /* below, with the methods */

typedef struct {
  lkin_env *e;  /* one reference; NULL once closed */
  int unfenced; /* writes skip the manager's leadership fence (immutable) */
} lclient;

/* Raises (without leaking) when the userdata cannot be allocated. */
void lkin_push_client(lua_State *L, lkin_env *e) { lkin_push_client_fenced(L, e, 1); }

void lkin_push_client_fenced(lua_State *L, lkin_env *e, int fenced) {
  lclient *u = lua_newuserdatauv(L, sizeof(*u), 0);
  u->e = NULL;
  u->unfenced = !fenced;
  lkin_setmetatable(L, &client_type);
  u->e = lkin_env_ref(e);
}

void lkin_push_resource(lua_State *L, const kin_resource *r) {
  lua_createtable(L, 0, 5);
  lua_pushstring(L, r->group);
  lua_setfield(L, -2, "group");
  lua_pushstring(L, r->version);
  lua_setfield(L, -2, "version");
  lua_pushstring(L, r->resource);
  lua_setfield(L, -2, "resource");
  lua_pushstring(L, r->kind);
  lua_setfield(L, -2, "kind");
  lua_pushboolean(L, r->namespaced);
  lua_setfield(L, -2, "namespaced");
}

/* Returns the client of the userdata at 1 (raises when closed). */
static kin_client *check(lua_State *L) {
  lclient *u = luaL_checkudata(L, 1, CLIENT_MT);
  luaL_argcheck(L, u->e != NULL, 1, "client is closed");
  return u->e->client;
}

/* ---- the state's current call ----------------------------------------------- */

/* The registry key of a state's current call: a light userdata pointing
 * at the kin_call_ctx of the call running in it, absent otherwise. Per
 * Lua state (its coroutines share it), never a thread-local. */
static const char call_key = 'c';

void lkin_set_call_ctx(lua_State *L, const kin_call_ctx *ctx) {
  if (ctx) lua_pushlightuserdata(L, (void *)ctx);
  else lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &call_key);
}

/* Fills *ctx for a verb of the client at 1 called in L: a copy of the
 * state's current call when one is set (a reconcile's deadline, canceler,
 * write observer and fence with the epoch of the reconcile's start), else
 * the manager's fence with the epoch open now (none without leader
 * election, or for a client made with fenced = false): a write made while
 * not leading is refused (KIN_EFENCED). */
static void call_ctx(lua_State *L, kin_call_ctx *ctx) {
  lclient *u = luaL_checkudata(L, 1, CLIENT_MT);
  memset(ctx, 0, sizeof(*ctx));
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &call_key) == LUA_TLIGHTUSERDATA) {
    *ctx = *(const kin_call_ctx *)lua_touserdata(L, -1);
  } else if (u->e && !u->unfenced) {
    ctx->fence = lkin_env_fence(u->e);
    if (ctx->fence) ctx->epoch = kin_fence_epoch(ctx->fence);
  }
  lua_pop(L, 1);
}

/* c:close() / __gc / __close: drops the env reference. Idempotent. */
static int m_close(lua_State *L) {
  lclient *u = luaL_checkudata(L, 1, CLIENT_MT);
  if (u->e) {
    lkin_env *e = u->e;
    u->e = NULL;
    lkin_env_unref(e);
  }
  return 0;
}

static int m_tostring(lua_State *L) {
  lclient *u = luaL_checkudata(L, 1, CLIENT_MT);
  if (u->e)
    lua_pushfstring(L, "kinformer.client (%s)", kin_client_host(u->e->client));
  else
    lua_pushliteral(L, "kinformer.client (closed)");
  return 1;
}

/* ---- results --------------------------------------------------------------- */


/* Pushes nil, "<verb> <res>: <message>", code, http_code for a failed call
 * and frees r. Returns 4. */
static int push_failure(lua_State *L, int rc, kin_result *r, const char *verb, const char *res) {
  lua_pushnil(L);
  const char *msg = r->message && *r->message ? r->message : NULL;
  if (rc == KIN_ESTATUS) {
    lua_pushfstring(L, "%s %s: %s", verb, res, msg ? msg : kin_status_reason_for_code(r->code));
    lua_pushstring(L, r->reason && *r->reason ? r->reason : kin_status_reason_for_code(r->code));
  } else {
    lua_pushfstring(L, "%s %s: %s", verb, res, msg ? msg : kin_strerror(rc));
    lua_pushstring(L, lkin_errname(rc));
  }
  lua_pushinteger(L, r->code);
  kin_result_free(r);
  return 4;
}

/* Pushes the outcome of a verb: the decoded body (a fresh table) on
 * success, or the failure (push_failure). Frees r in every case; a decode
 * error (the server sent something that is not JSON) raises after r is
 * freed. */
static int push_result(lua_State *L, int rc, kin_result *r, const char *verb, const char *res) {
  if (rc < 0) return push_failure(L, rc, r, verb, res);
  if (!r->body || r->body_len == 0) {
    kin_result_free(r);
    lua_pushboolean(L, 1);
    return 1;
  }
  char msg[192];
  int drc = lkin_json_push_msg(L, r->body, r->body_len, msg, sizeof(msg));
  kin_result_free(r);
  if (drc < 0) return luaL_error(L, "%s %s: answer: %s", verb, res, msg);
  return 1;
}

/* ---- arguments --------------------------------------------------------------- */

/* Pushes nil, message, code, http_code for a failed discovery lookup
 * (what names the lookup) and frees why. Returns 4. */
static int push_resolve_failure(lua_State *L, int rc, kin_result *why, const char *what) {
  lua_pushnil(L);
  if (rc == KIN_ENOENT)
    lua_pushfstring(L, "unknown %s: %s", what,
                    why->message ? why->message : "the server has no such resource");
  else if (why->code)
    lua_pushfstring(L, "resolve %s: %d %s: %s", what, (int)why->code,
                    why->reason ? why->reason : kin_status_reason_for_code(why->code),
                    why->message ? why->message : kin_strerror(rc));
  else
    lua_pushfstring(L, "resolve %s: %s", what, why->message ? why->message : kin_strerror(rc));
  /* A server's answer is reported as for the verbs: its Status reason. */
  lua_pushstring(L, rc == KIN_ESTATUS && why->reason ? why->reason : lkin_errname(rc));
  lua_pushinteger(L, why->code);
  kin_result_free(why);
  return 4;
}

/* Raises 'unknown resource "NAME" (did you mean "v1/configmaps"?)' for a
 * name that is a misuse: a singular (or otherwise not the plural
 * discovery lists) that resolved to r, or a name without a group-version
 * (r NULL) that v1 has. Resource lookups by Kind ("v1/Pod") stay allowed.
 * Returns when the name is fine. */
static void strict_name(lua_State *L, kin_client *c, const char *name, const kin_resource *r) {
  const char *last = strrchr(name, '/');
  if (r) {
    if (!last || isupper((unsigned char)last[1]) || !strcmp(last + 1, r->resource)) return;
    luaL_error(L, "unknown resource \"%s\" (did you mean \"%s%s%s/%s\"?)", name, r->group,
               *r->group ? "/" : "", r->version, r->resource);
  }
  if (last) return;
  char guess[300];
  snprintf(guess, sizeof guess, "v1/%s", name);
  kin_resource g;
  if (strlen(name) < 256 && kin_client_resource(c, guess, &g) == 0)
    luaL_error(L, "unknown resource \"%s\" (did you mean \"%s%s%s/%s\"?)", name, g.group,
               *g.group ? "/" : "", g.version, g.resource);
  luaL_error(L, "unknown resource \"%s\" (want [group/]version/resource, e.g. v1/pods or "
                "apps/v1/deployments)", name);
}

int lkin_resolve_strict(lua_State *L, kin_client *c, const char *name, const char *what,
                        kin_resource *out) {
  kin_result why;
  int rc = kin_client_resource_why(c, name, out, &why);
  if (rc == 0 || (rc == KIN_EINVAL && !strchr(name, '/'))) {
    kin_result_free(&why); /* before strict_name may raise */
    strict_name(L, c, name, rc == 0 ? out : NULL); /* raises when rc < 0 */
    return 0;
  }
  return push_resolve_failure(L, rc, &why, what);
}

static int resolve(lua_State *L, kin_client *c, const char *name, kin_resource *out) {
  char what[600];
  snprintf(what, sizeof what, "resource '%s'", name);
  return lkin_resolve_strict(L, c, name, what, out);
}

/* The same from an object's apiVersion and kind. */
static int resolve_kind(lua_State *L, kin_client *c, const char *api_version, const char *kind,
                        kin_resource *out) {
  kin_result why;
  int rc = kin_client_resource_for_kind_why(c, api_version, kind, out, &why);
  if (rc == 0) return 0;
  char what[600];
  snprintf(what, sizeof what, "resource for apiVersion '%s' kind '%s'", api_version, kind);
  return push_resolve_failure(L, rc, &why, what);
}

/* An optional string argument: nil/none or "" give NULL. */
static const char *opt_arg(lua_State *L, int i) {
  if (lua_isnoneornil(L, i)) return NULL;
  const char *s = luaL_checkstring(L, i);
  return *s ? s : NULL;
}

/* The options table at i (nil: none). Raises when it is something else. */
static int has_opts(lua_State *L, int i) {
  if (lua_isnoneornil(L, i)) return 0;
  luaL_checktype(L, i, LUA_TTABLE);
  return 1;
}

/* dry_run = true | "All" -> "All". */
static const char *opt_dry_run(lua_State *L, int t) {
  if (!t) return NULL;
  lua_getfield(L, t, "dry_run");
  int ty = lua_type(L, -1);
  lua_pop(L, 1);
  if (ty == LUA_TBOOLEAN) return lkin_opt_bool(L, t, "dry_run") ? "All" : NULL;
  return lkin_opt_string(L, t, "dry_run");
}

/* Replaces the object at i (a table, or a JSON string) by its JSON text
 * and returns it (length in *len). Encoding uses ljson.h; a table it
 * cannot encode raises (an argument error naming the place). */
static const char *to_json(lua_State *L, int i, size_t *len) {
  int ty = lua_type(L, i);
  luaL_argexpected(L, ty == LUA_TTABLE || ty == LUA_TSTRING, i, "object (table or JSON string)");
  if (ty == LUA_TTABLE) {
    if (lkin_json_encode(L, i) < 0) luaL_argerror(L, i, lua_tostring(L, -1));
    lua_replace(L, i);
  }
  return lua_tolstring(L, i, len);
}

/* The object's metadata and type, read from its JSON. */
typedef struct {
  char ns[256];
  char name[256];
  char api_version[256];
  char kind[128];
  char resource_version[128];
  int whole; /* name and resource_version fit (were not truncated) */
} obj_meta;

/* Reads the metadata of json into *m: the one parse of an object this
 * client writes (kin_client_create / update get name and resourceVersion
 * from here through kin_write_opts). Returns 0, or KIN_EINVAL when the
 * text is not a JSON object. */
static int read_meta(const char *json, size_t len, obj_meta *m) {
  kin_obj *o;
  int rc = kin_obj_parse_any(json, len, &o);
  if (rc < 0) return rc;
  snprintf(m->ns, sizeof m->ns, "%s", kin_obj_namespace(o));
  int nl = snprintf(m->name, sizeof m->name, "%s", kin_obj_name(o));
  snprintf(m->api_version, sizeof m->api_version, "%s", kin_obj_api_version(o));
  snprintf(m->kind, sizeof m->kind, "%s", kin_obj_kind_name(o));
  const char *rv = kin_obj_resource_version(o);
  int rl = snprintf(m->resource_version, sizeof m->resource_version, "%s", rv ? rv : "");
  m->whole = nl >= 0 && (size_t)nl < sizeof m->name && rl >= 0 &&
             (size_t)rl < sizeof m->resource_version;
  kin_obj_unref(o);
  return 0;
}

/* Hands the name and resourceVersion read_meta found to the core, so that
 * it does not parse the body again (not when they were truncated). */
static void known_meta(const obj_meta *m, kin_write_opts *wo) {
  if (!m->whole || !m->name[0]) return;
  wo->name = m->name;
  wo->resource_version = m->resource_version;
}

/* Shared front of the verbs that take an object: c:verb([res,] obj [, opts]).
 * Resolves the resource (from res, else from obj's apiVersion/kind), encodes
 * obj to JSON and reads its metadata. On success returns 0 and sets *objidx
 * to the object's index (now its JSON), *optidx to the options index or 0,
 * *label to the resource name for messages (a string kept on the stack).
 * On a runtime failure pushes nil, msg, code, http and returns 4. */
typedef struct {
  kin_client *c;
  kin_resource r;
  obj_meta m;
  const char *json;
  size_t len;
  int objidx;
  int optidx;
  const char *label;
  const char *ns; /* the namespace to write into (NULL: cluster scope) */
} obj_call;

/* Whether the string at i is JSON text rather than a resource name. */
static int is_json_text(lua_State *L, int i) {
  const char *s = lua_tostring(L, i);
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  return *s == '{';
}

static int obj_front(lua_State *L, const char *verb, obj_call *oc) {
  oc->c = check(L);
  int objidx = 2;
  const char *res = NULL;
  if (lua_type(L, 2) == LUA_TSTRING && !is_json_text(L, 2)) {
    res = lua_tostring(L, 2);
    objidx = 3;
  }
  oc->objidx = objidx;
  oc->optidx = has_opts(L, objidx + 1) ? objidx + 1 : 0;
  oc->json = to_json(L, objidx, &oc->len);
  if (read_meta(oc->json, oc->len, &oc->m) < 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: the object is not a JSON object", verb);
    lua_pushliteral(L, "EINVAL");
    lua_pushinteger(L, 0);
    return 4;
  }
  int n;
  if (res) {
    if ((n = resolve(L, oc->c, res, &oc->r))) return n;
    oc->label = res;
  } else {
    luaL_argcheck(L, oc->m.api_version[0] && oc->m.kind[0], objidx,
                  "no resource given and the object has no apiVersion and kind");
    if ((n = resolve_kind(L, oc->c, oc->m.api_version, oc->m.kind, &oc->r))) return n;
    lua_pushfstring(L, "%s/%s", oc->m.api_version, oc->m.kind);
    oc->label = lua_tostring(L, -1); /* stays on the stack */
  }
  /* A namespaced object without metadata.namespace goes to the
   * kubeconfig context's namespace, as kubectl does. */
  oc->ns = NULL;
  if (oc->r.namespaced) oc->ns = oc->m.ns[0] ? oc->m.ns : kin_client_namespace(oc->c);
  return 0;
}

/* ---- verbs ------------------------------------------------------------------- */

/* c:get(res, ns, name) -> table | nil, msg, code, http_code */
static int m_get(lua_State *L) {
  kin_client *c = check(L);
  const char *res = luaL_checkstring(L, 2);
  const char *ns = opt_arg(L, 3);
  const char *name = luaL_checkstring(L, 4);
  luaL_argcheck(L, *name, 4, "a name is required");
  kin_resource r;
  int n = resolve(L, c, res, &r);
  if (n) return n;
  kin_result out;
  kin_call_ctx cx;
  call_ctx(L, &cx);
  int rc = kin_client_get(c, &cx, &r, ns, name, &out);
  return push_result(L, rc, &out, "get", res);
}

/* c:server_version() -> the server's /version document ({major=, minor=,
 * gitVersion=, ...}) | nil, msg, code, http_code */
static int m_server_version(lua_State *L) {
  kin_client *c = check(L);
  kin_call_ctx cx;
  call_ctx(L, &cx);
  kin_client_request req = {.path = "/version", .idempotent = 1, .ctx = &cx};
  kin_result out;
  int rc = kin_client_do(c, &req, &out);
  return push_result(L, rc, &out, "get", "/version");
}

/* c:get_raw(path) -> body, content_type | nil, msg, code, http_code: a GET of
 * any absolute path of the server ("/openapi/v3", "/apis"), with the
 * client's credentials, rate limit and retries; the body as text (what
 * `kinformer types` reads the OpenAPI documents with). */
static int m_get_raw(lua_State *L) {
  kin_client *c = check(L);
  const char *path = luaL_checkstring(L, 2);
  luaL_argcheck(L, path[0] == '/', 2, "an absolute path expected (\"/openapi/v3\")");
  kin_call_ctx cx;
  call_ctx(L, &cx);
  kin_client_request req = {.path = path, .idempotent = 1, .ctx = &cx};
  kin_result out;
  int rc = kin_client_do(c, &req, &out);
  if (rc < 0) return push_failure(L, rc, &out, "get", path);
  lua_pushlstring(L, out.body ? out.body : "", out.body ? out.body_len : 0);
  if (out.content_type) lua_pushstring(L, out.content_type);
  else lua_pushnil(L);
  kin_result_free(&out);
  return 2;
}

/* c:list(res [, ns [, {label_selector=, field_selector=, limit=, continue=,
 *        resource_version=}]]) -> list table | nil, msg, code, http_code */
static int m_list(lua_State *L) {
  kin_client *c = check(L);
  const char *res = luaL_checkstring(L, 2);
  const char *ns = opt_arg(L, 3);
  int t = has_opts(L, 4) ? 4 : 0;
  /* client:list's options; add new keys here */
  static const char *const known[] = {"label_selector", "field_selector", "continue",
                                      "resource_version", "limit", NULL};
  lkin_opt_check_keys(L, t, known, "client:list");
  kin_list_opts lo = {0};
  lo.label_selector = lkin_opt_string(L, t, "label_selector");
  lo.field_selector = lkin_opt_string(L, t, "field_selector");
  lo.continue_token = lkin_opt_string(L, t, "continue");
  lo.resource_version = lkin_opt_string(L, t, "resource_version");
  lua_Number v = lkin_opt_number(L, t, "limit", 0);
  luaL_argcheck(L, v >= 0, t, "option 'limit' must be >= 0");
  lo.limit = (long)v;
  kin_resource r;
  int n = resolve(L, c, res, &r);
  if (n) return n;
  kin_result out;
  kin_call_ctx cx;
  call_ctx(L, &cx);
  int rc = kin_client_list(c, &cx, &r, ns, &lo, &out);
  return push_result(L, rc, &out, "list", res);
}

static void write_opts(lua_State *L, int t, kin_write_opts *wo) {
  memset(wo, 0, sizeof *wo);
  wo->field_manager = lkin_opt_string(L, t, "field_manager");
  wo->dry_run = opt_dry_run(L, t);
}

/* c:create([res,] obj [, {field_manager=, dry_run=}]) -> created object |
 * nil, msg, code, http_code. obj: a table or a JSON string; without res the
 * resource comes from obj.apiVersion and obj.kind. */
static int m_create(lua_State *L) {
  obj_call oc;
  /* client:create's options; add new keys here */
  static const char *const known[] = {"field_manager", "dry_run", "subresource", NULL};
  int n = obj_front(L, "create", &oc);
  if (n) return n;
  lkin_opt_check_keys(L, oc.optidx, known, "client:create");
  kin_write_opts wo;
  write_opts(L, oc.optidx, &wo);
  wo.subresource = lkin_opt_string(L, oc.optidx, "subresource");
  known_meta(&oc.m, &wo);
  kin_result out;
  kin_call_ctx cx;
  call_ctx(L, &cx);
  int rc = kin_client_create(oc.c, &cx, &oc.r, oc.ns, oc.json, oc.len, &wo, &out);
  return push_result(L, rc, &out, "create", oc.label);
}

/* PUT of obj (or of its status subresource). */
static int do_update(lua_State *L, const char *verb, const char *sub) {
  obj_call oc;
  /* client:update's and update_status's options; add new keys here */
  static const char *const known[] = {"field_manager", "dry_run", NULL};
  int n = obj_front(L, verb, &oc);
  if (n) return n;
  char fname[32];
  snprintf(fname, sizeof fname, "client:%s", verb);
  lkin_opt_check_keys(L, oc.optidx, known, fname);
  luaL_argcheck(L, oc.m.name[0], oc.objidx, "the object has no metadata.name");
  kin_write_opts wo;
  write_opts(L, oc.optidx, &wo);
  wo.subresource = sub;
  known_meta(&oc.m, &wo);
  kin_result out;
  kin_call_ctx cx;
  call_ctx(L, &cx);
  int rc = kin_client_update(oc.c, &cx, &oc.r, oc.ns, oc.json, oc.len, &wo, &out);
  return push_result(L, rc, &out, verb, oc.label);
}

/* c:update([res,] obj [, {field_manager=, dry_run=}]) -> updated object |
 * nil, msg, code, http_code ("Conflict" when metadata.resourceVersion is
 * stale). */
static int m_update(lua_State *L) { return do_update(L, "update", NULL); }

/* c:update_status([res,] obj [, opts]): the same on the status subresource. */
static int m_update_status(lua_State *L) { return do_update(L, "update_status", "status"); }

/* c:patch(res, ns, name, patch [, {type="merge"|"json"|"strategic"|"apply",
 *         field_manager=, force=, subresource=, dry_run=}]) -> patched object |
 * nil, msg, code, http_code. patch: a table (JSON-encoded) or a string. */
static int m_patch(lua_State *L) {
  static const char *const types[] = {"merge", "json", "strategic", "apply", NULL};
  static const kin_patch_type tvals[] = {KIN_PATCH_MERGE, KIN_PATCH_JSON, KIN_PATCH_STRATEGIC,
                                         KIN_PATCH_APPLY};
  kin_client *c = check(L);
  const char *res = luaL_checkstring(L, 2);
  const char *ns = opt_arg(L, 3);
  const char *name = luaL_checkstring(L, 4);
  luaL_argcheck(L, *name, 4, "a name is required");
  int t = has_opts(L, 6) ? 6 : 0;
  size_t len;
  const char *patch = to_json(L, 5, &len);
  /* client:patch's options; add new keys here */
  static const char *const known[] = {"type", "field_manager", "force", "subresource", "dry_run",
                                      NULL};
  lkin_opt_check_keys(L, t, known, "client:patch");
  kin_patch_type type = KIN_PATCH_MERGE;
  if (t) {
    lua_getfield(L, t, "type");
    if (!lua_isnil(L, -1)) type = tvals[luaL_checkoption(L, -1, NULL, types)];
    lua_pop(L, 1);
  }
  kin_write_opts wo;
  write_opts(L, t, &wo);
  wo.subresource = lkin_opt_string(L, t, "subresource");
  wo.force = lkin_opt_bool(L, t, "force");
  if (type == KIN_PATCH_APPLY && !wo.field_manager) wo.field_manager = "kinformer";
  kin_resource r;
  int n = resolve(L, c, res, &r);
  if (n) return n;
  kin_result out;
  kin_call_ctx cx;
  call_ctx(L, &cx);
  int rc = kin_client_patch(c, &cx, &r, ns, name, type, patch, len, &wo, &out);
  return push_result(L, rc, &out, "patch", res);
}

/* c:apply([res,] obj [, {field_manager=, force=, dry_run=, subresource=}])
 * -> the object as applied | nil, msg, code, http_code. Server-side apply
 * of obj (a table or YAML/JSON string: JSON is YAML) under field_manager
 * ("kinformer" when not given); the name and namespace come from obj. */
static int m_apply(lua_State *L) {
  obj_call oc;
  /* client:apply's options; add new keys here */
  static const char *const known[] = {"field_manager", "force", "dry_run", "subresource", NULL};
  int n = obj_front(L, "apply", &oc);
  if (n) return n;
  lkin_opt_check_keys(L, oc.optidx, known, "client:apply");
  luaL_argcheck(L, oc.m.name[0], oc.objidx, "the object has no metadata.name");
  kin_write_opts wo;
  write_opts(L, oc.optidx, &wo);
  if (!wo.field_manager) wo.field_manager = "kinformer";
  wo.force = lkin_opt_bool(L, oc.optidx, "force");
  wo.subresource = lkin_opt_string(L, oc.optidx, "subresource");
  kin_result out;
  kin_call_ctx cx;
  call_ctx(L, &cx);
  int rc = kin_client_patch(oc.c, &cx, &oc.r, oc.ns, oc.m.name, KIN_PATCH_APPLY, oc.json, oc.len,
                            &wo, &out);
  return push_result(L, rc, &out, "apply", oc.label);
}

/* c:delete(res, ns, name [, {propagation_policy=, grace_period=, uid=,
 *          resource_version=, dry_run=}]) -> true | nil, msg, code, http_code
 * c:delete(obj [, opts]) deletes the object named by obj (resource from its
 * apiVersion/kind). uid/resource_version are preconditions ("Conflict" when
 * they do not hold). */
static int m_delete(lua_State *L) {
  kin_client *c = check(L);
  kin_resource r;
  const char *ns, *name, *label;
  int t, n;
  obj_meta m;
  if (lua_type(L, 2) == LUA_TTABLE) {
    size_t len;
    t = has_opts(L, 3) ? 3 : 0;
    const char *json = to_json(L, 2, &len);
    luaL_argcheck(L, read_meta(json, len, &m) == 0 && m.name[0], 2,
                  "the object has no metadata.name");
    luaL_argcheck(L, m.api_version[0] && m.kind[0], 2, "the object has no apiVersion and kind");
    if ((n = resolve_kind(L, c, m.api_version, m.kind, &r))) return n;
    ns = m.ns[0] ? m.ns : NULL;
    name = m.name;
    lua_pushfstring(L, "%s/%s", m.api_version, m.kind);
    label = lua_tostring(L, -1);
  } else {
    label = luaL_checkstring(L, 2);
    ns = opt_arg(L, 3);
    name = luaL_checkstring(L, 4);
    luaL_argcheck(L, *name, 4, "a name is required");
    t = has_opts(L, 5) ? 5 : 0;
    if ((n = resolve(L, c, label, &r))) return n;
  }
  /* client:delete's options; add new keys here */
  static const char *const known[] = {"propagation_policy", "grace_period", "uid",
                                      "resource_version", "dry_run", NULL};
  lkin_opt_check_keys(L, t, known, "client:delete");
  kin_delete_opts d = {0};
  d.propagation_policy = lkin_opt_string(L, t, "propagation_policy");
  if (d.propagation_policy) {
    static const char *const pol[] = {"Foreground", "Background", "Orphan", NULL};
    lua_pushstring(L, d.propagation_policy);
    luaL_checkoption(L, -1, NULL, pol);
    lua_pop(L, 1);
  }
  if (lkin_opt_isset(L, t, "grace_period")) {
    lua_Number g = lkin_opt_number(L, t, "grace_period", 0);
    luaL_argcheck(L, g >= 0, t, "option 'grace_period' must be >= 0");
    d.has_grace_period = 1;
    d.grace_period_seconds = (long)g;
  }
  d.precondition_uid = lkin_opt_string(L, t, "uid");
  d.precondition_rv = lkin_opt_string(L, t, "resource_version");
  d.dry_run = opt_dry_run(L, t);
  kin_result out;
  kin_call_ctx cx;
  call_ctx(L, &cx);
  int rc = kin_client_delete(c, &cx, &r, ns, name, &d, &out);
  if (rc < 0) return push_failure(L, rc, &out, "delete", label);
  kin_result_free(&out);
  lua_pushboolean(L, 1);
  return 1;
}

/* c:resource(name) -> {group=, version=, resource=, kind=, namespaced=} |
 * nil, msg, code */
static int m_resource(lua_State *L) {
  kin_client *c = check(L);
  const char *name = luaL_checkstring(L, 2);
  kin_resource r;
  int n = resolve(L, c, name, &r);
  if (n) return n;
  lkin_push_resource(L, &r);
  return 1;
}

/* c:namespace() -> the kubeconfig context's namespace ("default"). */
static int m_namespace(lua_State *L) {
  lua_pushstring(L, kin_client_namespace(check(L)));
  return 1;
}

static const luaL_Reg methods[] = {
    {"get", m_get},
    {"list", m_list},
    {"create", m_create},
    {"update", m_update},
    {"update_status", m_update_status},
    {"patch", m_patch},
    {"apply", m_apply},
    {"delete", m_delete},
    {"resource", m_resource},
    {"namespace", m_namespace},
    {"server_version", m_server_version},
    {"get_raw", m_get_raw},
    {"close", m_close},
    {NULL, NULL},
};

static const lkin_type client_type = {CLIENT_MT, methods, m_close, m_tostring};

void lkin_open_client(lua_State *L) { lkin_new_type(L, &client_type); }
