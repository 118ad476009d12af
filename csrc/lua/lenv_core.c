/* lenv_core.c -- the refcounted C state of a manager (lenv_core.h): its
 * lifetime, its informer registry and its event recorder.
 *
 * Lifetime: each kinformer.env, kinformer.informer, kinformer.client and
 * kinformer.handler userdata and each Lua controller holds a reference;
 * the last unref shuts the factory down (joining every reflector, informer
 * and listener thread) and frees it all. */
#include "lenv_core.h"

#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "kin.h"
#include "metrics_collectors.h"
#include "shard_gate.h"

struct lkin_env_cleanup {
  void (*fn)(void *);
  void *arg;
  struct lkin_env_cleanup *next;
};

lkin_env *lkin_env_new(void) {
  lkin_env *e = calloc(1, sizeof(*e));
  if (!e) return NULL;
  atomic_init(&e->refs, 1);
  pthread_mutex_init(&e->mu, NULL);
  return e;
}

lkin_env *lkin_env_ref(lkin_env *e) {
  atomic_fetch_add(&e->refs, 1);
  return e;
}

void lkin_env_unref(lkin_env *e) {
  if (!e || atomic_fetch_sub(&e->refs, 1) != 1) return;
  for (size_t i = 0; i < e->n; i++) {
    kin_metrics_remove_collector(kin_metrics_default(), e->informers[i].metrics_id);
    kin_admin_remove(e->informers[i].admin_id);
  }
  atomic_store(&e->user_abort, 1); /* user calls in progress end at once */
  if (e->factory) {
    kin_informer_factory_shutdown(e->factory);
    kin_informer_factory_free(e->factory);
  }
  kin_metrics_remove_collector(kin_metrics_default(), e->metrics_id); /* before the free */
  /* queued events get 2 s to be written, then the writer stops */
  kin_event_recorder_free(e->events, 2000);
  free((char *)e->events_opts.instance);
  kin_client_free(e->client);
  kin_io_engine_free(e->io);
  for (size_t i = 0; i < e->n; i++) {
    free(e->informers[i].name);
    free(e->informers[i].resource);
  }
  free(e->informers);
  while (e->cleanups) {
    struct lkin_env_cleanup *c = e->cleanups;
    e->cleanups = c->next;
    c->fn(c->arg);
    free(c);
  }
  if (e->clock) kin_fake_clock_free(e->clock); /* every controller on it is gone */
  kin_fence_free(e->fence); /* every state that wrote under it is gone */
  kin_shard_gate_free(e->shard_gate); /* and every controller that read it */
  pthread_mutex_destroy(&e->mu);
  free(e);
}

int lkin_env_on_free(lkin_env *e, void (*fn)(void *), void *arg) {
  struct lkin_env_cleanup *c = malloc(sizeof(*c));
  if (!c) return KIN_ENOMEM;
  c->fn = fn;
  c->arg = arg;
  pthread_mutex_lock(&e->mu);
  c->next = e->cleanups;
  e->cleanups = c;
  pthread_mutex_unlock(&e->mu);
  return 0;
}

kin_event_recorder *lkin_env_events(lkin_env *e, int *err) {
  *err = 0;
  pthread_mutex_lock(&e->mu);
  if (!e->events) {
    /* the manager's events are fenced like its other writes (a recorder
     * made before lkin_env_set_fence is not: set the fence first) */
    kin_event_recorder_opts o = e->events_opts;
    o.fence = e->fence;
    *err = kin_event_recorder_new(e->client, &o, &e->events);
  }
  kin_event_recorder *r = e->events;
  pthread_mutex_unlock(&e->mu);
  return r;
}

int lkin_env_set_fence(lkin_env *e, kin_fence *f) {
  pthread_mutex_lock(&e->mu);
  int rc = e->fence ? KIN_EBUSY : 0;
  if (!rc) e->fence = f;
  pthread_mutex_unlock(&e->mu);
  return rc;
}

kin_shard_gate *lkin_env_shard_gate(lkin_env *e, int make) {
  pthread_mutex_lock(&e->mu);
  if (!e->shard_gate && make && kin_shard_gate_new(&e->shard_gate) < 0) e->shard_gate = NULL;
  kin_shard_gate *g = e->shard_gate;
  pthread_mutex_unlock(&e->mu);
  return g;
}

kin_fence *lkin_env_fence(lkin_env *e) {
  pthread_mutex_lock(&e->mu);
  kin_fence *f = e->fence;
  pthread_mutex_unlock(&e->mu);
  return f;
}

int lkin_env_add_informer(lkin_env *e, const char *name, const char *resource,
                          kin_informer *inf) {
  /* its metrics collector, made before e->mu (which stays a leaf) */
  int mid = kin_metrics_add_informer(kin_metrics_default(), e->factory, inf, name);
  int aid = kin_admin_add_informer(name, inf); /* its admin entry, likewise */
  int rc = 0;
  pthread_mutex_lock(&e->mu);
  for (size_t i = 0; i < e->n; i++)
    if (e->informers[i].inf == inf) goto out;
  if (e->n == e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 8;
    lkin_env_informer *v = realloc(e->informers, cap * sizeof(*v));
    if (!v) {
      rc = KIN_ENOMEM;
      goto out;
    }
    e->informers = v;
    e->cap = cap;
  }
  lkin_env_informer *ent = &e->informers[e->n];
  ent->name = strdup(name);
  ent->resource = strdup(resource);
  ent->inf = inf;
  if (!ent->name || !ent->resource) {
    free(ent->name);
    free(ent->resource);
    rc = KIN_ENOMEM;
    goto out;
  }
  ent->metrics_id = mid;
  mid = 0; /* kept */
  ent->admin_id = aid;
  aid = 0;
  e->n++;
out:
  pthread_mutex_unlock(&e->mu);
  kin_metrics_remove_collector(kin_metrics_default(), mid); /* known already, or failed */
  kin_admin_remove(aid);
  return rc;
}

const char *lkin_env_informer_name(lkin_env *e, kin_informer *inf) {
  const char *name = NULL;
  pthread_mutex_lock(&e->mu);
  for (size_t i = 0; i < e->n; i++)
    if (e->informers[i].inf == inf) name = e->informers[i].name;
  pthread_mutex_unlock(&e->mu);
  return name;
}

kin_informer *lkin_env_find_informer(lkin_env *e, const char *name) {
  kin_informer *found = NULL;
  int matches = 0;
  pthread_mutex_lock(&e->mu);
  for (size_t i = 0; i < e->n; i++) {
    if (!strcmp(e->informers[i].name, name)) {
      found = e->informers[i].inf;
      matches = 1;
      break;
    }
    if (!strcmp(e->informers[i].resource, name)) {
      found = e->informers[i].inf;
      matches++;
    }
  }
  pthread_mutex_unlock(&e->mu);
  return matches == 1 ? found : NULL;
}
