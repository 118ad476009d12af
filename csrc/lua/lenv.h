/* lenv.h -- the C state a manager shares with every Lua state that works
 * for it: the IO engine, the REST client, the informer factory and the
 * informers registered by name. Refcounted, so a worker state's client or
 * lister userdata keeps it alive; reachable from any Lua state (the main
 * state, listener states, controller worker states).
 *
 * Types exposed to Lua (one metatable each, see the file named):
 *   kinformer.env       lenv.c       the manager's core (Lua wraps it in
 *                                    lua/kinformer/manager.lua)
 *   kinformer.informer  linformer.c  get/list/by_index/has_synced/...,
 *                                    add_handler/remove_handler (main state only)
 *   kinformer.handler   lhandler.c   a handler set registered on an informer
 *   kinformer.client    lclient.c    the REST verbs
 *   kinformer.controller lcontroller.c
 *
 * Thread-safety: lkin_env_ref/unref and the informer registry (guarded by
 * lkin_env.mu) are safe from any thread; the pointers io, client and
 * factory are immutable after creation and the objects they point to are
 * thread-safe themselves. */
#ifndef LKIN_ENV_H
#define LKIN_ENV_H

#include <lua.h>
#include <pthread.h>
#include <stdatomic.h>

#include "informer_factory.h"
#include "io_engine.h"
#include "rest_client.h"
#include "shared_informer.h"

typedef struct lkin_env lkin_env;

/* One informer of the manager, as listers find it. */
typedef struct {
  char *name;         /* the registry name: "v1/pods", or "v1/pods?ns=x&l=a%3Db"
                         when options set (lkin_env_informer_name) */
  char *resource;     /* "[group/]version/resource" as given */
  kin_informer *inf;  /* owned by env->factory */
} lkin_env_informer;

struct lkin_env {
  atomic_int refs;
  kin_io_engine *io;              /* owned; immutable pointer */
  kin_client *client;             /* owned; immutable pointer */
  kin_informer_factory *factory;  /* owned; immutable pointer */
  pthread_mutex_t mu;             /* guards informers, n, cap, stopped */
  lkin_env_informer *informers;
  size_t n, cap;
  int stopped;                    /* shutdown has begun */
  struct lkin_mainq *mainq;       /* events for main-state handlers (lhandler.c) */
};

lkin_env *lkin_env_ref(lkin_env *e);
/* Drops a reference; the last one shuts the factory down and frees
 * everything. Must not run on a thread the factory joins (a listener). */
void lkin_env_unref(lkin_env *e);

/* Finds a registered informer by registry name or by bare resource when
 * it is the only one of that resource. Returns it (borrowed, lives as long
 * as env) or NULL. Any thread. */
kin_informer *lkin_env_find_informer(lkin_env *e, const char *name);

/* Pushes a kinformer.env userdata holding a new reference on e. */
void lkin_push_env(lua_State *L, lkin_env *e);
/* Returns the env of the kinformer.env at i (raises when it is not one or
 * it was closed). */
lkin_env *lkin_check_env(lua_State *L, int i);

/* Pushes a kinformer.informer userdata over inf (which must belong to e;
 * it takes a reference on e). readonly: add_handler/remove_handler raise
 * (listers in worker states). */
void lkin_push_informer(lua_State *L, lkin_env *e, kin_informer *inf, const char *name,
                        int readonly);
/* Returns the informer at i and its env in *e (raises otherwise). */
kin_informer *lkin_check_informer(lua_State *L, int i, lkin_env **e);

/* Pushes r as {group=, version=, resource=, kind=, namespaced=}. */
void lkin_push_resource(lua_State *L, const kin_resource *r);

/* Pushes a kinformer.client userdata over e->client (a new reference on e). */
void lkin_push_client(lua_State *L, lkin_env *e);

/* env:step(timeout_s) -> n: runs queued main-state handler events (lhandler.c). */
int lkin_env_step(lua_State *L);
/* Frees the main-state event queue of e (lhandler.c); NULL is a no-op. */
void lkin__mainq_free(struct lkin_mainq *q);

/* Registers the metatables of these types in L and their constructors
 * into the module table at the top of the stack. */
void lkin_open_env(lua_State *L);
void lkin_open_informer(lua_State *L);
void lkin_open_client(lua_State *L);
void lkin_open_controller(lua_State *L);

#endif
