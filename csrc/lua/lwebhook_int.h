/* lwebhook_int.h -- internal to the webhook binding: one hook's pool of
 * worker states (lwebhook_call.c) as the server userdata (lwebhook.c)
 * makes and frees it. */
#ifndef LKIN_WEBHOOK_INT_H
#define LKIN_WEBHOOK_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "lenv_core.h"
#include "webhook.h"
#include "worker_state.h"

/* One registered hook. Made and freed on the main state's thread; its fn
 * (lwh_hook_call) runs on the server's connection threads (or the caller
 * of kin_webhook_server_serve), which take a state from the pool, run the
 * handler in it and put it back. name, path, type, env, tmpl, abort and
 * workers are immutable once the hook is added to the server. */
typedef struct lwh_hook {
  struct lwh_hook *next;      /* the server userdata's list (main state only) */
  char *name, *path;
  kin_webhook_type type;
  lkin_env *env;              /* a reference: the ctx's client and listers */
  lkin_ws_template *tmpl;     /* a reference: the handler and its upvalues */
  const atomic_int *abort;    /* the server's: set when it closes */
  int workers;                /* the pool's size: states serving at once */
  pthread_mutex_t mu;         /* guards pool, nfree, nopen */
  pthread_cond_t cv;          /* CLOCK_MONOTONIC; signalled when a state is put back */
  lkin_ws **pool;             /* the free states (nfree of them; room for workers) */
  int nfree, nopen;           /* nopen: states made (free or in use) */
} lwh_hook;

/* Makes a hook over tmpl (a new reference taken) and env (a new
 * reference); name and path are copied. Returns NULL when out of memory. */
lwh_hook *lwh_hook_new(const char *name, const char *path, kin_webhook_type type, lkin_env *env,
                       lkin_ws_template *tmpl, const atomic_int *abort, int workers);

/* kin_webhook_fn of a hook (ud: the lwh_hook): see lwebhook_call.c. */
int lwh_hook_call(void *ud, const kin_webhook_request *req, kin_webhook_response *resp);

/* Closes h's states and frees h; NULL is a no-op. Only once no call of
 * lwh_hook_call is under way (kin_webhook_server_remove returned). */
void lwh_hook_free(lwh_hook *h);

#endif
