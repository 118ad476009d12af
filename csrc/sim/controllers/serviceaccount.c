/* serviceaccount.c -- kube-controller-manager's "serviceaccount"
 * controller (pkg/controller/serviceaccount/serviceaccounts_controller.go):
 * every active namespace has a ServiceAccount named "default"; it is
 * created when a namespace appears and again when it is deleted. A
 * namespace that is terminating gets none. */
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "kin.h"

typedef struct {
  char **pending; /* namespaces to look at */
  size_t n, cap;
} sa_ctl;

static void *sa_create(kin__simctl *m) {
  (void)m;
  return calloc(1, sizeof(sa_ctl));
}

static void sa_destroy(void *self) {
  sa_ctl *c = self;
  for (size_t i = 0; i < c->n; i++) free(c->pending[i]);
  free(c->pending);
  free(c);
}

/* Queues namespace ns once; on ENOMEM the namespace is skipped. */
static void enqueue(sa_ctl *c, const char *ns) {
  for (size_t i = 0; i < c->n; i++)
    if (!strcmp(c->pending[i], ns)) return;
  if (c->n == c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 16;
    char **p = realloc(c->pending, nc * sizeof(*p));
    if (!p) return;
    c->pending = p;
    c->cap = nc;
  }
  char *dup = strdup(ns);
  if (dup) c->pending[c->n++] = dup;
}

static void sa_observe(void *self, kin__simctl *m, int type, const kin__sim_storage *st,
                       const kin__sim_obj *obj, const kin__sim_obj *prev) {
  (void)m;
  (void)prev;
  if (*st->group) return;
  if (!strcmp(st->resource, "namespaces") && type != KIN__SIM_DELETED) {
    enqueue(self, obj->key);
  } else if (!strcmp(st->resource, "serviceaccounts") && type == KIN__SIM_DELETED) {
    const char *slash = strchr(obj->key, '/');
    if (slash && !strcmp(slash + 1, "default")) {
      char ns[256];
      size_t n = (size_t)(slash - obj->key);
      if (n < sizeof(ns)) {
        memcpy(ns, obj->key, n);
        ns[n] = 0;
        enqueue(self, ns);
      }
    }
  }
}

/* 1 when the namespace exists and is not terminating. */
static int active(kin__simctl *m, const char *ns) {
  json_t *nsobj = kin__simctl_get(m, "", "namespaces", NULL, ns);
  if (!nsobj) return 0;
  const json_t *md = json_object_get(nsobj, "metadata");
  const char *phase = kin__sim_jstr(nsobj, "status", "phase");
  int ok = !json_object_get(md, "deletionTimestamp") && !(phase && !strcmp(phase, "Terminating"));
  json_decref(nsobj);
  return ok;
}

static uint64_t sa_run(void *self, kin__simctl *m, uint64_t now_ms) {
  (void)now_ms;
  sa_ctl *c = self;
  for (size_t i = 0; i < c->n; i++) {
    const char *ns = c->pending[i];
    json_t *sa = kin__simctl_get(m, "", "serviceaccounts", ns, "default");
    if (!sa && active(m, ns)) {
      json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind",
                              "ServiceAccount", "metadata", "name", "default", "namespace", ns);
      /* 409 AlreadyExists or 403 (the namespace began terminating): the
       * next change of the namespace brings it back. */
      if (obj) kin__simctl_create(m, "", "serviceaccounts", ns, obj, NULL);
      json_decref(obj);
    }
    json_decref(sa);
    free(c->pending[i]);
  }
  c->n = 0;
  return KIN__SIMCTL_NEVER;
}

const kin__simctl_def kin__simctl_serviceaccount = {
    .name = "serviceaccount",
    .create = sa_create,
    .observe = sa_observe,
    .run = sa_run,
    .destroy = sa_destroy,
};
