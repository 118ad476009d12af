/* lclient.h -- kinformer.client (lclient.c): the REST verbs of a manager's
 * client, usable from any Lua state. */
#ifndef LKIN_CLIENT_H
#define LKIN_CLIENT_H

#include <lua.h>

#include "lenv_core.h"

/* Pushes a kinformer.client userdata over e->client (a new reference on e). */
void lkin_push_client(lua_State *L, lkin_env *e);
/* The same; with fenced 0 the client's writes outside a reconcile skip the
 * manager's leadership fence: for what every replica writes whether or not
 * it leads (a webhook server's configurations, at start). */
void lkin_push_client_fenced(lua_State *L, lkin_env *e, int fenced);

/* Pushes r as {group=, version=, resource=, kind=, namespaced=}. */
void lkin_push_resource(lua_State *L, const kin_resource *r);

/* Resolves the resource name (discovery, cached) into *out, strictly:
 * a misuse raises at the caller 'unknown resource "v1/configmap" (did you
 * mean "v1/configmaps"?)' (a singular, or a name without group-version
 * that v1 has, as kubectl would accept but an informer's lister would not
 * be found under). Returns 0, or on a runtime failure (unknown resource,
 * discovery failed) pushes nil, message ("unknown WHAT: ..." or "resolve
 * WHAT: ...", what naming the lookup), code (the Status reason when the
 * server answered, else ENOENT, EIO...), http_code and returns 4. */
int lkin_resolve_strict(lua_State *L, kin_client *c, const char *name, const char *what,
                        kin_resource *out);

/* Sets L's current call (per Lua state, in its registry; never a
 * thread-local): the kinformer.client verbs called in L (any coroutine of
 * it) carry ctx until it is cleared with NULL. ctx must stay valid until
 * then. A controller worker sets it around each reconcile
 * (lcontroller.c). */
void lkin_set_call_ctx(lua_State *L, const kin_call_ctx *ctx);

/* Registers the kinformer.client metatable in L. */
void lkin_open_client(lua_State *L);

#endif
