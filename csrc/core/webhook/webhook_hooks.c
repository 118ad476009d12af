/* webhook_hooks.c -- a webhook server's hooks table (webhook.h's
 * kin_webhook_server_add and _remove): hooks by path under the server's
 * mu, each with a count of the calls under way so that remove can wait
 * for them before its caller frees the hook's ud. */
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "webhook_int.h"

/* Under s->mu: the index of path in s->hooks, or -1. */
static long find(const kin_webhook_server *s, const char *path) {
  for (size_t i = 0; i < s->nhooks; i++)
    if (strcmp(s->hooks[i]->path, path) == 0) return (long)i;
  return -1;
}

/* Frees h and its path. */
static void hook_free(kin__wh_hook *h) {
  if (!h) return;
  free(h->path);
  free(h);
}

/* See webhook.h: 0, KIN_EEXIST, KIN_EINVAL or KIN_ENOMEM (nothing added
 * on failure); the path is copied. */
int kin_webhook_server_add(kin_webhook_server *s, const kin_webhook_hook *h) {
  if (!s || !h || !h->path || h->path[0] != '/' || !h->fn) return KIN_EINVAL;
  if (h->type != KIN_WEBHOOK_VALIDATING && h->type != KIN_WEBHOOK_MUTATING &&
      h->type != KIN_WEBHOOK_CONVERSION)
    return KIN_EINVAL;
  kin__wh_hook *n = calloc(1, sizeof *n);
  if (!n || !(n->path = strdup(h->path))) {
    hook_free(n);
    return KIN_ENOMEM;
  }
  n->type = h->type;
  n->timeout_ns = h->timeout_ns ? h->timeout_ns : 10ull * 1000000000ull;
  n->fn = h->fn;
  n->ud = h->ud;
  pthread_mutex_lock(&s->mu);
  int rc = 0;
  if (find(s, h->path) >= 0) {
    rc = KIN_EEXIST;
  } else if (s->nhooks == s->caphooks) {
    size_t cap = s->caphooks ? s->caphooks * 2 : 8;
    kin__wh_hook **p = realloc(s->hooks, cap * sizeof *p);
    if (p) {
      s->hooks = p;
      s->caphooks = cap;
    } else {
      rc = KIN_ENOMEM;
    }
  }
  if (!rc) s->hooks[s->nhooks++] = n;
  pthread_mutex_unlock(&s->mu);
  if (rc) hook_free(n);
  else kin__wh_metrics_hook(&s->metrics, h->path);
  return rc;
}

/* Removes the hook at path from the table at once (new requests get 404)
 * and waits for the calls under way. Returns 0 or KIN_ENOENT. Must not be
 * called from the hook's own fn (it would wait for itself). */
int kin_webhook_server_remove(kin_webhook_server *s, const char *path) {
  if (!s || !path) return KIN_ENOENT;
  pthread_mutex_lock(&s->mu);
  long i = find(s, path);
  if (i < 0) {
    pthread_mutex_unlock(&s->mu);
    return KIN_ENOENT;
  }
  kin__wh_hook *h = s->hooks[i];
  memmove(&s->hooks[i], &s->hooks[i + 1], (s->nhooks - (size_t)i - 1) * sizeof *s->hooks);
  s->nhooks--;
  h->removed = 1;
  while (h->inuse) pthread_cond_wait(&s->idle, &s->mu);
  pthread_mutex_unlock(&s->mu);
  hook_free(h);
  return 0;
}

/* The hook at path with one more call counted (NULL: none); the caller
 * releases it. */
kin__wh_hook *kin__wh_hooks_acquire(kin_webhook_server *s, const char *path) {
  pthread_mutex_lock(&s->mu);
  long i = find(s, path);
  kin__wh_hook *h = i >= 0 ? s->hooks[i] : NULL;
  if (h) h->inuse++;
  pthread_mutex_unlock(&s->mu);
  return h;
}

/* Ends a call of h; wakes a remover when it was the last one. */
void kin__wh_hooks_release(kin_webhook_server *s, kin__wh_hook *h) {
  pthread_mutex_lock(&s->mu);
  if (--h->inuse == 0 && h->removed) pthread_cond_broadcast(&s->idle);
  pthread_mutex_unlock(&s->mu);
}

/* 1 when a hook is registered at path, else 0. */
int kin__wh_hooks_has(kin_webhook_server *s, const char *path) {
  pthread_mutex_lock(&s->mu);
  int yes = find(s, path) >= 0;
  pthread_mutex_unlock(&s->mu);
  return yes;
}

/* Frees every hook and the table (no call may be under way). */
void kin__wh_hooks_clear(kin_webhook_server *s) {
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->nhooks; i++) hook_free(s->hooks[i]);
  free(s->hooks);
  s->hooks = NULL;
  s->nhooks = s->caphooks = 0;
  pthread_mutex_unlock(&s->mu);
}
