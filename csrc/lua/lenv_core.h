/* lenv_core.h -- the C state a manager shares with every Lua state that
 * works for it: the IO engine, the REST client, the informer factory and
 * the informers registered by name. Refcounted, so a worker state's client
 * or lister userdata keeps it alive; reachable from any Lua state (the main
 * state, listener states, controller worker states). No Lua here: the
 * userdata types over it are in their own files:
 *
 *   kinformer.env        lenv.c        the manager's core (Lua wraps it in
 *                                      lua/kinformer/manager.lua)
 *   kinformer.informer   linformer.c   get/list/by_index/has_synced/...,
 *                                      add_handler/remove_handler (main state only)
 *   kinformer.handler    lhandler.c    a handler set registered on an informer
 *   kinformer.client     lclient.c     the REST verbs
 *   kinformer.controller lcontroller.c
 *   kinformer.event_recorder levent.c  rec:event(obj, type, reason, message)
 *
 * Thread-safety: lkin_env_ref/unref, lkin_env_on_free and the informer
 * registry (guarded by lkin_env.mu) are safe from any thread; the pointers
 * io, client and factory are immutable after creation and the objects they
 * point to are thread-safe themselves. */
#ifndef LKIN_ENV_CORE_H
#define LKIN_ENV_CORE_H

#include <pthread.h>
#include <stdatomic.h>

#include "clock.h"
#include "event_recorder.h"
#include "informer_factory.h"
#include "io_engine.h"
#include "rest_client.h"
#include "shared_informer.h"

typedef struct lkin_env lkin_env;

/* One informer of the manager, as listers find it. */
typedef struct {
  char *name;         /* the registry name: "v1/pods", or "v1/pods?namespace=x"
                         when options set (env:informer builds it) */
  char *resource;     /* "[group/]version/resource" as given */
  kin_informer *inf;  /* owned by env->factory */
  int metrics_id;     /* its collector in kin_metrics_default() (removed before
                         the factory is freed); <= 0: none */
  int admin_id;       /* its entry in the admin registry (admin.h); <= 0: none */
} lkin_env_informer;

struct lkin_env_cleanup; /* lenv_core.c */

struct lkin_env {
  atomic_int refs;
  kin_io_engine *io;              /* owned; immutable pointer once set */
  kin_client *client;             /* owned; immutable pointer once set */
  int metrics_id;                 /* client's collector in kin_metrics_default(); 0: none */
  kin_informer_factory *factory;  /* owned; immutable pointer once set */
  pthread_mutex_t mu;             /* guards informers, n, cap, stopped, cleanups, fence, shard_gate */
  lkin_env_informer *informers;
  size_t n, cap;
  int stopped;                    /* shutdown has begun */
  struct lkin_mainq *mainq;       /* events for main-state handlers (lhandler.c,
                                     which frees it with lkin_env_on_free) */
  struct lkin_env_cleanup *cleanups;
  /* Events: one recorder (queue + writer thread) for every Lua state of
   * the manager, made on first use by lkin_env_events under mu and freed
   * by the last unref (before the client). events_opts is set before the
   * env is shared (levent.c reads the manager's events = {...}); its
   * instance string is owned. */
  kin_event_recorder *events;
  kin_event_recorder_opts events_opts;
  /* The controllers' clock (their delaying queue and rate limiter): NULL
   * for the real one, or a fake clock owned here (the manager's option
   * clock = "fake", advanced by env:clock_advance). Set before the env is
   * shared; freed by the last unref, so after every Lua controller (each
   * holds a reference) and hence every queue subscribed to it. */
  kin_clock *clock;
  /* The leadership fence of the manager's writes (call_ctx.h): NULL
   * without leader election; set once, before any controller starts, by
   * lkin_env_set_fence (the leader elector opens and closes it); owned,
   * freed by the last unref. */
  kin_fence *fence;
  /* The sharding gate of the manager's controllers (shard_gate.h): NULL
   * unless kinformer.sharding made one (core.shard_gate, before the
   * controllers); set once under mu; owned, freed by the last unref. */
  struct kin_shard_gate *shard_gate;
  /* The time limits of user calls (lcall_limit.h), ns, 0: none; set by
   * core.env before the env is shared (issue 24): handlers and map
   * functions (handler_timeout; main-state handlers too), transforms
   * (transform_timeout, the default of mgr:informer's), and the memory
   * limit of a main-state handler's call (main_memory_limit, bytes of net
   * growth; 0: none). */
  uint64_t handler_timeout_ns, transform_timeout_ns;
  size_t main_memory_limit;
  /* Set once shutdown begins (env:shutdown, closing the env), before the
   * factory joins its threads: interrupts the Lua transforms and worker
   * handlers in progress (lkin_ws_set_abort), so the joins do not wait
   * for their time limits. */
  atomic_int user_abort;
};

/* Returns a new env holding one reference, with no engine, client or
 * factory yet (the caller sets them before sharing it), or NULL when out
 * of memory. */
lkin_env *lkin_env_new(void);

lkin_env *lkin_env_ref(lkin_env *e);
/* Drops a reference; the last one shuts the factory down, frees the
 * factory, client and engine, then runs the lkin_env_on_free functions
 * (the last registered first) and frees e. Must not run on a thread the
 * factory joins (a listener). NULL is a no-op. */
void lkin_env_unref(lkin_env *e);

/* Registers fn(arg) to run when e is freed, after its factory (hence every
 * informer and listener thread) is gone: for what those threads use (Lua
 * transforms, the main-state queue). Returns 0 or KIN_ENOMEM. Any thread. */
int lkin_env_on_free(lkin_env *e, void (*fn)(void *), void *arg);

/* Records inf under its registry name and resource unless it is there
 * already. Returns 0 or KIN_ENOMEM. Any thread. */
int lkin_env_add_informer(lkin_env *e, const char *name, const char *resource,
                          kin_informer *inf);

/* Returns the registry name of inf (borrowed, lives as long as e), or
 * NULL when it is not registered. Any thread. */
const char *lkin_env_informer_name(lkin_env *e, kin_informer *inf);

/* Finds a registered informer by registry name or by bare resource when
 * it is the only one of that resource. Returns it (borrowed, lives as long
 * as env) or NULL. Any thread. */
kin_informer *lkin_env_find_informer(lkin_env *e, const char *name);

/* Returns the manager's event recorder (borrowed, lives as long as e),
 * starting it on first use with e->events_opts; NULL with *err set
 * (KIN_ENOMEM, or the thread's error) when it cannot start. The caller
 * blocks signals first: the writer thread inherits the mask. Any thread. */
kin_event_recorder *lkin_env_events(lkin_env *e, int *err);
/* Gives e the fence f (owned by e from now on) that every write made for
 * the manager is checked against; the leader elector opens it while
 * leading. Call once, before controllers start. Returns 0, or KIN_EBUSY
 * when e has a fence already (f is then not taken). */
int lkin_env_set_fence(lkin_env *e, kin_fence *f);
/* Returns e's fence (borrowed, lives as long as e) or NULL when the
 * manager has no leader election. Any thread. */
kin_fence *lkin_env_fence(lkin_env *e);
/* Returns e's sharding gate, made (closed) on first use when make is 1;
 * NULL without one (make 0) or when out of memory. Borrowed: lives as
 * long as e. Any thread. */
struct kin_shard_gate *lkin_env_shard_gate(lkin_env *e, int make);

#endif
