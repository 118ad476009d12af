/* webhook_set.c -- the webhooks a sim calls, parsed once per change:
 * the in-process registrations (kin_sim_webhook_register, sim.h) and the
 * stored MutatingWebhookConfigurations and ValidatingWebhookConfigurations.
 * The set is rebuilt when a registration comes or goes or when the
 * stored configurations changed (their count and newest resourceVersion),
 * and shared by reference with the calls using it. */
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "kin.h"
#include "webhook_set.h"

static const char *const ADM_GROUP = "admissionregistration.k8s.io";

/* Drops a reference to reg; frees it at 0. Caller holds a->mu. */
static void reg_unref(kin__sim_webhook_reg *reg) {
  if (--reg->refs > 0) return;
  json_decref(reg->config);
  free(reg);
}

/* Frees h's fields (not h); caller holds the admission's mu when h->reg. */
static void hook_clear(kin__sim_hook *h) {
  free(h->name);
  free(h->config);
  json_decref(h->rules);
  json_decref(h->ns_sel);
  json_decref(h->obj_sel);
  free(h->url);
  free(h->path);
  free(h->ca);
  if (h->reg) reg_unref(h->reg);
}

/* Drops a reference to set; frees it at 0. Caller holds a->mu. */
static void set_unref(kin__sim_hookset *set) {
  if (!set || --set->refs > 0) return;
  for (size_t i = 0; i < set->n; i++) hook_clear(&set->h[i]);
  free(set->h);
  free(set);
}

/* The path of an https URL ("/" when it has none); malloc'd or NULL. */
static char *url_path(const char *url) {
  const char *p = strstr(url, "://");
  p = p ? strchr(p + 3, '/') : strchr(url, '/');
  return strdup(p ? p : "/");
}

/* Parses webhook w of configuration config into h (zeroed by the caller):
 * 0, or -1 when it has no name or on ENOMEM (h is then cleared by the
 * caller). reg: the in-process registration it belongs to, or NULL. */
static int parse_hook(kin__sim_hook *h, const json_t *w, const char *config, int mutating,
                      kin__sim_webhook_reg *reg) {
  const char *name = kin__sim_jstr(w, "name", NULL);
  if (!name || !*name) return -1;
  h->name = strdup(name);
  h->config = strdup(config ? config : "");
  h->mutating = mutating;
  json_t *rules = json_object_get(w, "rules");
  h->rules = json_is_array(rules) ? json_incref(rules) : json_array();
  json_t *sel = json_object_get(w, "namespaceSelector");
  if (json_is_object(sel)) h->ns_sel = json_incref(sel);
  sel = json_object_get(w, "objectSelector");
  if (json_is_object(sel)) h->obj_sel = json_incref(sel);
  const char *fp = kin__sim_jstr(w, "failurePolicy", NULL);
  h->ignore = fp && !strcmp(fp, "Ignore");
  const char *mp = kin__sim_jstr(w, "matchPolicy", NULL);
  h->exact = mp && !strcmp(mp, "Exact");
  const char *rp = kin__sim_jstr(w, "reinvocationPolicy", NULL);
  h->reinvoke = mutating && rp && !strcmp(rp, "IfNeeded");
  const char *se = kin__sim_jstr(w, "sideEffects", NULL);
  h->no_side_effects = se && (!strcmp(se, "None") || !strcmp(se, "NoneOnDryRun"));
  json_t *to = json_object_get(w, "timeoutSeconds");
  h->timeout_s = json_is_integer(to) && json_integer_value(to) > 0 &&
                         json_integer_value(to) <= 30
                     ? (unsigned)json_integer_value(to)
                     : 10;
  json_t *cc = json_object_get(w, "clientConfig");
  const char *url = kin__sim_jstr(cc, "url", NULL);
  if (url) {
    h->url = strdup(url);
    h->path = url_path(url);
    if (!h->url || !h->path) return -1;
  } else {
    h->service = json_is_object(json_object_get(cc, "service"));
  }
  const char *ca = kin__sim_jstr(cc, "caBundle", NULL);
  if (ca && *ca) {
    unsigned char *pem = NULL;
    size_t n = 0;
    if (!kin__base64_decode(ca, strlen(ca), &pem, &n)) {
      h->ca = malloc(n + 1);
      if (h->ca) {
        memcpy(h->ca, pem, n);
        h->ca[n] = 0;
      }
      free(pem);
    }
  }
  if (reg) {
    /* in process: the path of the url, else the service's path */
    h->reg = reg;
    reg->refs++;
    const char *sp = kin__sim_jstr(json_object_get(cc, "service"), "path", NULL);
    if (!h->path) h->path = strdup(sp ? sp : "/");
  }
  return h->name && h->config && h->rules ? 0 : -1;
}

/* Appends the webhooks of configuration cfg (mutating or not) to *v
 * (*n of *cap). Returns 0 or KIN_ENOMEM; a webhook without a name is
 * skipped. Caller holds a->mu when reg. */
static int add_config(kin__sim_hook **v, size_t *n, size_t *cap, const json_t *cfg, int mutating,
                      kin__sim_webhook_reg *reg) {
  const char *config = kin__sim_jstr(cfg, "metadata", "name");
  size_t i;
  json_t *w;
  json_array_foreach(json_object_get(cfg, "webhooks"), i, w) {
    if (*n == *cap) {
      size_t nc = *cap ? *cap * 2 : 8;
      kin__sim_hook *nv = realloc(*v, nc * sizeof(*nv));
      if (!nv) return KIN_ENOMEM;
      *v = nv;
      *cap = nc;
    }
    kin__sim_hook *h = &(*v)[*n];
    memset(h, 0, sizeof(*h));
    if (parse_hook(h, w, config, mutating, reg)) {
      hook_clear(h);
      continue;
    }
    (*n)++;
  }
  return 0;
}

/* Call order: mutating before validating, then by configuration name,
 * then by place (kept by the stable merge below). */
static int hook_before(const kin__sim_hook *x, const kin__sim_hook *y) {
  if (x->mutating != y->mutating) return x->mutating;
  return strcmp(x->config, y->config) < 0;
}

/* Sorts v stably by hook_before (insertion sort: a handful of webhooks). */
static void sort_hooks(kin__sim_hook *v, size_t n) {
  for (size_t i = 1; i < n; i++) {
    kin__sim_hook t = v[i];
    size_t j = i;
    while (j > 0 && hook_before(&t, &v[j - 1])) {
      v[j] = v[j - 1];
      j--;
    }
    v[j] = t;
  }
}

/* 1 when cfg is a MutatingWebhookConfiguration. */
static int is_mutating(const json_t *cfg) {
  const char *k = kin__sim_jstr(cfg, "kind", NULL);
  return k && !strcmp(k, "MutatingWebhookConfiguration");
}

/* The stored configurations' signature (count and newest
 * resourceVersion), and, when want, a copy of them (an array the caller
 * drops). Takes the store's lock. */
static uint64_t stored_configs(kin_sim *sim, json_t **want) {
  kin__sim_store *s = &sim->store;
  static const char *const res[] = {"mutatingwebhookconfigurations",
                                    "validatingwebhookconfigurations"};
  uint64_t maxrv = 0, count = 0;
  if (want) *want = json_array();
  pthread_mutex_lock(&s->mu);
  for (int k = 0; k < 2; k++) {
    kin__sim_storage *st = kin__sim_registry_storage(s, ADM_GROUP, res[k]);
    if (!st) continue;
    size_t n = 0;
    int too_old;
    kin__sim_obj **arr = kin__sim_store_snapshot(s, st, 0, &n, &too_old);
    for (size_t i = 0; i < n; i++) {
      if (arr[i]->rv > maxrv) maxrv = arr[i]->rv;
      count++;
      if (want && *want) json_array_append_new(*want, kin__sim_obj_json(arr[i]));
    }
    free(arr);
  }
  pthread_mutex_unlock(&s->mu);
  return maxrv ^ (count << 48);
}

kin__sim_hookset *kin__sim_hookset_get(kin_sim *sim) {
  kin__sim_admission *a = sim->admission;
  uint64_t sig = stored_configs(sim, NULL);
  pthread_mutex_lock(&a->mu);
  if (a->set && a->set_sig == sig && a->set_reg_gen == a->reg_gen) {
    a->set->refs++;
    kin__sim_hookset *set = a->set;
    pthread_mutex_unlock(&a->mu);
    return set;
  }
  pthread_mutex_unlock(&a->mu);
  json_t *cfgs = NULL;
  sig = stored_configs(sim, &cfgs);
  kin__sim_hookset *set = calloc(1, sizeof(*set));
  size_t cap = 0;
  int rc = set && cfgs ? 0 : KIN_ENOMEM;
  size_t i;
  json_t *cfg;
  json_array_foreach(cfgs, i, cfg) {
    if (!rc && json_is_object(cfg))
      rc = add_config(&set->h, &set->n, &cap, cfg, is_mutating(cfg), NULL);
  }
  json_decref(cfgs);
  pthread_mutex_lock(&a->mu);
  uint64_t gen = a->reg_gen;
  for (size_t k = 0; !rc && k < a->nregs; k++)
    rc = add_config(&set->h, &set->n, &cap, a->regs[k]->config, is_mutating(a->regs[k]->config),
                    a->regs[k]);
  if (rc) {
    if (set) set->refs = 1;
    set_unref(set);
    pthread_mutex_unlock(&a->mu);
    return NULL;
  }
  sort_hooks(set->h, set->n);
  set->refs = 2; /* the caller's and the cache's */
  set_unref(a->set);
  a->set = set;
  a->set_sig = sig;
  a->set_reg_gen = gen;
  pthread_mutex_unlock(&a->mu);
  return set;
}

void kin__sim_hookset_put(kin_sim *sim, kin__sim_hookset *set) {
  kin__sim_admission *a = sim->admission;
  pthread_mutex_lock(&a->mu);
  set_unref(set);
  pthread_mutex_unlock(&a->mu);
}

int kin__sim_admission_any(kin_sim *sim) {
  kin__sim_admission *a = sim->admission;
  if (!a) return 0;
  pthread_mutex_lock(&a->mu);
  int any = a->nregs > 0;
  pthread_mutex_unlock(&a->mu);
  if (any) return 1;
  /* any stored configuration: counted, not copied (every write asks) */
  kin__sim_store *s = &sim->store;
  static const char *const res[] = {"mutatingwebhookconfigurations",
                                    "validatingwebhookconfigurations"};
  pthread_mutex_lock(&s->mu);
  for (int k = 0; k < 2 && !any; k++) {
    kin__sim_storage *st = kin__sim_registry_storage(s, ADM_GROUP, res[k]);
    any = st && kin__hmap_len(&st->objects) > 0;
  }
  pthread_mutex_unlock(&s->mu);
  return any;
}

int kin__sim_reg_call_begin(kin_sim *sim, kin__sim_webhook_reg *reg) {
  kin__sim_admission *a = sim->admission;
  pthread_mutex_lock(&a->mu);
  int gone = reg->gone;
  if (!gone) reg->calls++;
  pthread_mutex_unlock(&a->mu);
  return gone ? -1 : 0;
}

void kin__sim_reg_call_end(kin_sim *sim, kin__sim_webhook_reg *reg) {
  kin__sim_admission *a = sim->admission;
  pthread_mutex_lock(&a->mu);
  reg->calls--;
  pthread_cond_broadcast(&a->cond);
  pthread_mutex_unlock(&a->mu);
}

kin__sim_admission *kin__sim_webhook_state_new(void) {
  kin__sim_admission *a = calloc(1, sizeof(*a));
  if (!a) return NULL;
  pthread_mutex_init(&a->mu, NULL);
  pthread_cond_init(&a->cond, NULL);
  a->next_id = 1;
  return a;
}

void kin__sim_webhook_state_free(kin__sim_admission *a) {
  if (!a) return;
  pthread_mutex_lock(&a->mu);
  set_unref(a->set);
  for (size_t i = 0; i < a->nregs; i++) reg_unref(a->regs[i]);
  free(a->regs);
  pthread_mutex_unlock(&a->mu);
  pthread_mutex_destroy(&a->mu);
  pthread_cond_destroy(&a->cond);
  free(a);
}

/* The conversion stanza (spec.conversion) of a CRD's JSON when its
 * strategy is Webhook (borrowed), else NULL. */
static const json_t *webhook_conversion(const json_t *crd) {
  const json_t *conv = json_object_get(json_object_get(crd, "spec"), "conversion");
  const char *strategy = kin__sim_jstr(conv, "strategy", NULL);
  return strategy && !strcmp(strategy, "Webhook") ? conv : NULL;
}

/* Fills h (zeroed here) from conversion stanza conv of CRD crd; 0 or -1. */
static int conversion_hook(kin__sim_hook *h, const char *crd, const json_t *conv,
                           kin__sim_webhook_reg *reg) {
  memset(h, 0, sizeof(*h));
  json_t *cc = json_object_get(json_object_get(conv, "webhook"), "clientConfig");
  json_t *w = json_pack("{s:s, s:O, s:i}", "name", crd, "clientConfig",
                        cc ? cc : json_object_get(conv, "webhookClientConfig"), "timeoutSeconds",
                        30);
  if (!w) return -1;
  int rc = parse_hook(h, w, crd, 0, reg);
  json_decref(w);
  if (rc) hook_clear(h);
  return rc;
}

int kin__sim_conversion_hook(kin_sim *sim, const char *crd, kin__sim_hook *h) {
  kin__sim_admission *a = sim->admission;
  int found = 0;
  pthread_mutex_lock(&a->mu);
  for (size_t i = 0; i < a->nregs && !found; i++) {
    kin__sim_webhook_reg *reg = a->regs[i];
    const char *name = kin__sim_jstr(reg->config, "metadata", "name");
    const char *kind = kin__sim_jstr(reg->config, "kind", NULL);
    if (!kind || strcmp(kind, "CustomResourceDefinition") || !name || strcmp(name, crd)) continue;
    found = conversion_hook(h, crd, webhook_conversion(reg->config), reg) ? -1 : 1;
  }
  pthread_mutex_unlock(&a->mu);
  if (found) return found;
  kin__sim_store *s = &sim->store;
  pthread_mutex_lock(&s->mu);
  kin__sim_storage *st =
      kin__sim_registry_storage(s, "apiextensions.k8s.io", "customresourcedefinitions");
  kin__sim_obj *o = st ? kin__sim_lookup(st, NULL, crd) : NULL;
  json_t *spec = o ? kin__sim_obj_member(o, "spec") : NULL;
  pthread_mutex_unlock(&s->mu);
  json_t *wrap = spec ? json_pack("{s:o}", "spec", spec) : NULL;
  const json_t *conv = webhook_conversion(wrap);
  if (conv) found = conversion_hook(h, crd, conv, NULL) ? -1 : 1;
  json_decref(wrap);
  return found;
}

void kin__sim_hook_release(kin_sim *sim, kin__sim_hook *h) {
  kin__sim_admission *a = sim->admission;
  pthread_mutex_lock(&a->mu);
  hook_clear(h);
  pthread_mutex_unlock(&a->mu);
  memset(h, 0, sizeof(*h));
}

int kin_sim_webhook_register(kin_sim *sim, const char *config_json, size_t len,
                             kin_sim_review_fn fn, void *ud, uint64_t *id) {
  if (!sim || !sim->admission || !config_json || !fn) return KIN_EINVAL;
  json_error_t jerr;
  json_t *cfg = json_loadb(config_json, len, 0, &jerr);
  const char *kind = kin__sim_jstr(cfg, "kind", NULL);
  int ok = kind && (((!strcmp(kind, "MutatingWebhookConfiguration") ||
                      !strcmp(kind, "ValidatingWebhookConfiguration")) &&
                     json_is_array(json_object_get(cfg, "webhooks"))) ||
                    (!strcmp(kind, "CustomResourceDefinition") && webhook_conversion(cfg)));
  if (ok && !kin__sim_jstr(cfg, "metadata", "name")) ok = 0;
  if (!ok) {
    json_decref(cfg);
    return KIN_EINVAL;
  }
  kin__sim_webhook_reg *reg = calloc(1, sizeof(*reg));
  if (!reg) {
    json_decref(cfg);
    return KIN_ENOMEM;
  }
  reg->fn = fn;
  reg->ud = ud;
  reg->config = cfg;
  reg->refs = 1;
  kin__sim_admission *a = sim->admission;
  pthread_mutex_lock(&a->mu);
  if (a->nregs == a->capregs) {
    size_t nc = a->capregs ? a->capregs * 2 : 4;
    kin__sim_webhook_reg **nv = realloc(a->regs, nc * sizeof(*nv));
    if (!nv) {
      pthread_mutex_unlock(&a->mu);
      json_decref(cfg);
      free(reg);
      return KIN_ENOMEM;
    }
    a->regs = nv;
    a->capregs = nc;
  }
  reg->id = a->next_id++;
  a->regs[a->nregs++] = reg;
  a->reg_gen++;
  if (id) *id = reg->id;
  pthread_mutex_unlock(&a->mu);
  return 0;
}

int kin_sim_webhook_unregister(kin_sim *sim, uint64_t id) {
  if (!sim || !sim->admission) return KIN_ENOENT;
  kin__sim_admission *a = sim->admission;
  pthread_mutex_lock(&a->mu);
  kin__sim_webhook_reg *reg = NULL;
  for (size_t i = 0; i < a->nregs; i++) {
    if (a->regs[i]->id != id) continue;
    reg = a->regs[i];
    memmove(&a->regs[i], &a->regs[i + 1], (a->nregs - i - 1) * sizeof(*a->regs));
    a->nregs--;
    break;
  }
  if (!reg) {
    pthread_mutex_unlock(&a->mu);
    return KIN_ENOENT;
  }
  reg->gone = 1;
  a->reg_gen++;
  while (reg->calls > 0) pthread_cond_wait(&a->cond, &a->mu);
  reg_unref(reg);
  pthread_mutex_unlock(&a->mu);
  return 0;
}
