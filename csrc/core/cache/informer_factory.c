/* informer_factory.c -- one shared informer per (resource, namespace,
 * selectors, mode), each a reflector feeding a kin_informer. See
 * informer_factory.h. */
#include "informer_factory.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "log.h"
#include "projection.h"
#include "projection_warn.h"
#include "shard_selector.h"
#include "util.h"

/* The transform chain of one informer: managedFields first, then the
 * projection (fields), then the user's. Immutable after creation. */
typedef struct {
  int drop_managed_fields;
  kin__projection *proj; /* owned; NULL: keep every field */
  kin_transform_fn user;
  void *user_ud;
} chain;

typedef struct entry {
  char *id;   /* identity: every field of kin_informer_opts that selects data */
  char *name; /* for logs and errors: "v1/pods in namespace x" */
  char *ns, *label_selector, *field_selector, *shard_selector;
  kin_resource res; /* strings owned by the client's discovery cache */
  chain chain;
  kin_informer *inf;
  kin_reflector *refl;
  int started; /* guarded by the factory's mu */
  struct entry *next;
} entry;

struct kin_informer_factory {
  kin_informer_factory_config cfg; /* immutable */
  pthread_mutex_t mu;              /* guards entries, started, shut_down */
  entry *entries;
  int started, shut_down;
};

static int chain_transform(void *ud, kin_obj *in, kin_obj **out) {
  chain *c = ud;
  kin_obj *mid = NULL;
  int rc;
  if (c->drop_managed_fields) {
    if ((rc = kin_transform_drop_managed_fields(NULL, in, &mid))) return rc;
  } else {
    mid = kin_obj_ref(in);
  }
  if (c->proj) {
    kin_obj *pr = NULL;
    rc = kin__projection_apply(c->proj, mid, &pr);
    kin_obj_unref(mid);
    if (rc) return rc;
    mid = pr;
  }
  if (!c->user) {
    *out = mid;
    return 0;
  }
  rc = c->user(c->user_ud, mid, out);
  kin_obj_unref(mid);
  return rc;
}

int kin_informer_factory_new(const kin_informer_factory_config *cfg,
                             kin_informer_factory **out) {
  *out = NULL;
  if (!cfg || !cfg->client) return KIN_EINVAL;
  kin_informer_factory *f = calloc(1, sizeof(*f));
  if (!f) return KIN_ENOMEM;
  f->cfg = *cfg;
  if (!f->cfg.clock) f->cfg.clock = kin_clock_real();
  if (pthread_mutex_init(&f->mu, NULL)) {
    free(f);
    return KIN_ENOMEM;
  }
  *out = f;
  return 0;
}

static void entry_free(entry *e) {
  if (!e) return;
  kin_reflector_free(e->refl); /* first: it feeds the informer's FIFO */
  if (e->chain.proj && e->inf) kin__projection_warn_remove(e->inf);
  kin_informer_free(e->inf);
  kin__projection_free(e->chain.proj);
  free(e->id);
  free(e->name);
  free(e->ns);
  free(e->label_selector);
  free(e->field_selector);
  free(e->shard_selector);
  free(e);
}

static const char *nz(const char *s) { return s ? s : ""; }

/* The identity of opts as a new string (the caller frees it), or NULL.
 * fields_key: the projection's sorted paths, "" for none. */
static char *identity(const kin_informer_opts *o, const char *fields_key) {
  char *id = NULL;
  /* \x1f cannot appear in a resource name, namespace or selector. */
  if (asprintf(&id, "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%d%d%d%d\x1f%llu\x1f%p\x1f%p\x1f%s",
               nz(o->resource), nz(o->namespace), nz(o->label_selector), nz(o->field_selector),
               nz(o->shard_selector),
               !!o->metadata_only, !!o->watch_list, !!o->keep_managed_fields, o->content_type,
               (unsigned long long)o->resync_ns, (void *)o->transform, o->transform_ud,
               fields_key) < 0)
    return NULL;
  return id;
}

static char *display_name(const kin_informer_opts *o) {
  char *s = NULL;
  int n;
  if (o->namespace && *o->namespace)
    n = asprintf(&s, "%s in namespace %s%s%s", o->resource, o->namespace,
                 o->label_selector && *o->label_selector ? " with labels " : "",
                 nz(o->label_selector));
  else
    n = asprintf(&s, "%s%s%s", o->resource,
                 o->label_selector && *o->label_selector ? " with labels " : "",
                 nz(o->label_selector));
  return n < 0 ? NULL : s;
}

static char *dup_or_null(const char *s) { return s && *s ? strdup(s) : NULL; }

/* Starts e's informer then its reflector (so the FIFO has a consumer
 * before the first list arrives). mu held. */
static int start_entry(entry *e) {
  if (e->started) return 0;
  int rc = kin_informer_run(e->inf);
  if (rc == 0) rc = kin_reflector_run(e->refl);
  if (rc == 0) e->started = 1;
  return rc;
}

/* Builds the informer and reflector of opts into a new entry. */
static int entry_new(kin_informer_factory *f, const kin_informer_opts *o, char *id,
                     kin__projection *proj, entry **out, char *err, size_t errlen) {
  *out = NULL;
  if (o->shard_selector && *o->shard_selector) {
    kin_shard_selector *sel;
    char perr[256];
    int prc = kin_shard_selector_parse(o->shard_selector, &sel, perr, sizeof(perr));
    if (prc < 0) {
      kin__errf(err, errlen, "shard_selector: %s", prc == KIN_EINVAL ? perr : kin_strerror(prc));
      free(id);
      kin__projection_free(proj);
      return prc;
    }
    kin_shard_selector_free(sel);
  }
  entry *e = calloc(1, sizeof(*e));
  if (!e) {
    free(id);
    kin__projection_free(proj);
    return KIN_ENOMEM;
  }
  e->id = id;
  e->chain.proj = proj;
  e->name = display_name(o);
  e->ns = dup_or_null(o->namespace);
  e->label_selector = dup_or_null(o->label_selector);
  e->field_selector = dup_or_null(o->field_selector);
  e->shard_selector = dup_or_null(o->shard_selector);
  if (!e->name || (o->namespace && *o->namespace && !e->ns) ||
      (o->shard_selector && *o->shard_selector && !e->shard_selector) ||
      (o->label_selector && *o->label_selector && !e->label_selector) ||
      (o->field_selector && *o->field_selector && !e->field_selector)) {
    entry_free(e);
    return KIN_ENOMEM;
  }
  kin_result why;
  int rc = kin_client_resource_why(f->cfg.client, o->resource, &e->res, &why);
  if (rc) {
    if (rc == KIN_ENOENT)
      kin__errf(err, errlen, "the server has no resource \"%s\"", o->resource);
    else if (why.code && why.message) /* the server's answer: code, reason, message */
      kin__errf(err, errlen, "discovery of \"%s\" failed: %ld %s: %s", o->resource, why.code,
                why.reason ? why.reason : kin_status_reason_for_code(why.code), why.message);
    else
      kin__errf(err, errlen, "discovery of \"%s\" failed: %s", o->resource,
                why.message ? why.message : kin_strerror(rc));
    kin_result_free(&why);
    entry_free(e);
    return rc;
  }
  kin_result_free(&why);
  if (e->ns && !e->res.namespaced) {
    kin__errf(err, errlen, "%s is cluster-scoped: it has no namespace %s", o->resource, e->ns);
    entry_free(e);
    return KIN_EINVAL;
  }
  e->chain.drop_managed_fields = !o->keep_managed_fields;
  e->chain.user = o->transform;
  e->chain.user_ud = o->transform_ud;
  int need_chain = e->chain.drop_managed_fields || e->chain.user || e->chain.proj;
  kin_informer_config ic = {
      .clock = f->cfg.clock,
      .default_resync_ns = o->resync_ns ? o->resync_ns : f->cfg.default_resync_ns,
      .transform = need_chain ? chain_transform : NULL,
      .transform_ud = need_chain ? &e->chain : NULL,
      .name = e->name,
  };
  if ((rc = kin_informer_new(&ic, &e->inf))) {
    entry_free(e);
    return rc;
  }
  /* reads of what the projection dropped are reported (best effort: past
   * KIN__PROJ_WARN_SLOTS projected informers, not) */
  if (e->chain.proj && kin__projection_warn_add(e->inf, e->chain.proj, e->name))
    kin_log(KIN_LOG_DEBUG, "informer_factory",
            "informer %s: reads of paths its fields dropped will not be reported", e->name);
  kin_reflector_config rc_cfg = {
      .client = f->cfg.client,
      .resource = e->res,
      .namespace = e->ns,
      .label_selector = e->label_selector,
      .field_selector = e->field_selector,
      .shard_selector = e->shard_selector,
      .metadata_only = o->metadata_only,
      .watch_list = o->watch_list,
      .content_type = o->content_type ? o->content_type : f->cfg.content_type,
      .page_size = f->cfg.page_size,
      .idle_timeout_ns = o->idle_timeout_ns ? o->idle_timeout_ns : f->cfg.idle_timeout_ns,
      .read_idle_ms = o->read_idle_ms,
      .ping_timeout_ms = o->ping_timeout_ms,
      .backoff_initial_ns = f->cfg.backoff_initial_ns,
      .backoff_max_ns = f->cfg.backoff_max_ns,
      .fifo = kin_informer_fifo(e->inf),
      .clock = f->cfg.clock,
      .name = e->name,
  };
  if ((rc = kin_reflector_new(&rc_cfg, &e->refl))) {
    entry_free(e);
    return rc;
  }
  *out = e;
  return 0;
}

int kin_informer_factory_informer(kin_informer_factory *f, const kin_informer_opts *opts,
                                  kin_informer **out, char *err, size_t errlen) {
  *out = NULL;
  if (!opts || !opts->resource || !*opts->resource) {
    kin__errf(err, errlen, "an informer needs a resource such as \"v1/pods\"");
    return KIN_EINVAL;
  }
  kin__projection *proj = NULL;
  char fk[4096] = "";
  if (opts->fields) {
    int prc = kin__projection_new(opts->fields, &proj, err, errlen);
    if (prc) return prc;
    if (kin__projection_key(proj, fk, sizeof(fk)) >= sizeof(fk)) {
      kin__errf(err, errlen, "fields: the paths are longer than %zu bytes together", sizeof(fk));
      kin__projection_free(proj);
      return KIN_EINVAL;
    }
  }
  char *id = identity(opts, fk);
  if (!id) {
    kin__projection_free(proj);
    return KIN_ENOMEM;
  }
  pthread_mutex_lock(&f->mu);
  int rc = 0;
  if (f->shut_down) {
    rc = KIN_ECLOSED;
    kin__errf(err, errlen, "the informer factory was shut down");
    goto out;
  }
  for (entry *e = f->entries; e; e = e->next)
    if (!strcmp(e->id, id)) {
      *out = e->inf;
      goto out;
    }
  /* Discovery runs with mu held: creating informers is rare and this keeps
   * two callers from building the same informer twice. */
  entry *e = NULL;
  rc = entry_new(f, opts, id, proj, &e, err, errlen);
  id = NULL; /* owned by the entry (or freed) now, as is proj */
  proj = NULL;
  if (rc) goto out;
  if (f->started && (rc = start_entry(e))) {
    kin__errf(err, errlen, "cannot start informer %s: %s", e->name, kin_strerror(rc));
    entry_free(e);
    goto out;
  }
  e->next = f->entries;
  f->entries = e;
  *out = e->inf;
out:
  pthread_mutex_unlock(&f->mu);
  free(id);
  kin__projection_free(proj);
  return rc;
}

int kin_informer_factory_start(kin_informer_factory *f) {
  pthread_mutex_lock(&f->mu);
  int rc = 0;
  if (f->shut_down) rc = KIN_ECLOSED;
  else {
    f->started = 1;
    for (entry *e = f->entries; e && rc == 0; e = e->next) {
      rc = start_entry(e);
      if (rc) kin_log(KIN_LOG_ERROR, "informer_factory", "cannot start informer %s: %s", e->name,
                      kin_strerror(rc));
    }
  }
  pthread_mutex_unlock(&f->mu);
  return rc;
}

int kin_informer_factory_wait_for_cache_sync(kin_informer_factory *f, uint64_t timeout_ns,
                                             char *unsynced, size_t n) {
  uint64_t now = kin_clock_now(f->cfg.clock);
  uint64_t deadline = timeout_ns == KIN_FOREVER || now + timeout_ns < now ? KIN_FOREVER
                                                                           : now + timeout_ns;
  /* Snapshot the started informers; entries are freed only by
   * kin_informer_factory_free, which must not race with this call. */
  pthread_mutex_lock(&f->mu);
  if (f->shut_down) {
    pthread_mutex_unlock(&f->mu);
    return KIN_ECLOSED;
  }
  size_t cnt = 0;
  for (entry *e = f->entries; e; e = e->next) cnt += e->started;
  entry **v = calloc(cnt ? cnt : 1, sizeof(*v));
  if (v) {
    size_t i = 0;
    for (entry *e = f->entries; e; e = e->next)
      if (e->started) v[i++] = e;
  }
  pthread_mutex_unlock(&f->mu);
  if (!v) return KIN_ENOMEM;
  int rc = 0;
  /* Oldest first: the list is newest-first. */
  for (size_t i = cnt; i-- > 0 && rc == 0;) {
    now = kin_clock_now(f->cfg.clock);
    uint64_t left = deadline == KIN_FOREVER ? KIN_FOREVER : deadline > now ? deadline - now : 0;
    rc = kin_informer_wait_for_cache_sync(v[i]->inf, left);
    if (rc) kin__errf(unsynced, n, "%s", v[i]->name);
  }
  free(v);
  return rc;
}

void kin_informer_factory_shutdown(kin_informer_factory *f) {
  pthread_mutex_lock(&f->mu);
  f->shut_down = 1;
  entry *head = f->entries;
  pthread_mutex_unlock(&f->mu);
  /* Entries are immutable in the list once shut_down is set, and joining
   * happens without mu so a handler calling into the factory cannot
   * deadlock against us. Reflectors first: nothing feeds a FIFO after. */
  for (entry *e = head; e; e = e->next) kin_reflector_stop(e->refl);
  for (entry *e = head; e; e = e->next) kin_informer_stop(e->inf);
}

void kin_informer_factory_free(kin_informer_factory *f) {
  if (!f) return;
  kin_informer_factory_shutdown(f);
  entry *e = f->entries;
  while (e) {
    entry *next = e->next;
    entry_free(e);
    e = next;
  }
  pthread_mutex_destroy(&f->mu);
  free(f);
}

kin_reflector *kin_informer_factory_reflector(kin_informer_factory *f, kin_informer *inf) {
  pthread_mutex_lock(&f->mu);
  kin_reflector *r = NULL;
  for (entry *e = f->entries; e; e = e->next)
    if (e->inf == inf) r = e->refl;
  pthread_mutex_unlock(&f->mu);
  return r;
}
