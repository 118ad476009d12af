/* webhook_set.h -- the webhooks a sim calls: in-process registrations
 * (kin_sim_webhook_register) and stored configurations, parsed into one
 * set in call order, re-read when either changes (webhook_set.c). */
#ifndef KIN_SIM_WEBHOOK_SET_H
#define KIN_SIM_WEBHOOK_SET_H

#include <pthread.h>
#include <stdint.h>

#include "store_int.h"

/* An in-process registration (kin_sim_webhook_register). Guarded by
 * kin__sim_admission.mu: refs (the registration list's and each parsed
 * webhook's), calls (its fn's calls under way), gone (unregistered). */
typedef struct kin__sim_webhook_reg {
  uint64_t id;
  kin_sim_review_fn fn;
  void *ud;
  json_t *config;   /* the configuration registered */
  int refs, calls, gone;
} kin__sim_webhook_reg;

/* One webhook of a configuration, parsed. Immutable once in a set. */
typedef struct {
  char *name;       /* webhooks[].name */
  char *config;     /* the configuration's metadata.name (the call order) */
  int mutating;
  json_t *rules;    /* rules (array, a reference) */
  json_t *ns_sel, *obj_sel; /* LabelSelectors or NULL */
  int ignore;       /* failurePolicy Ignore */
  int exact;        /* matchPolicy Exact */
  int no_side_effects; /* sideEffects None or NoneOnDryRun */
  int reinvoke;     /* reinvocationPolicy IfNeeded (mutating) */
  unsigned timeout_s;
  char *url;        /* clientConfig.url (HTTPS) or NULL */
  char *path;       /* in process: the url's path */
  char *ca;         /* caBundle, PEM, or NULL */
  int service;      /* clientConfig.service: the sim cannot resolve it */
  kin__sim_webhook_reg *reg; /* in process, or NULL */
} kin__sim_hook;

/* The webhooks in call order (mutating ones first, each kind sorted by
 * configuration name, then order in it), shared by the calls that use
 * it: refs guarded by kin__sim_admission.mu. */
typedef struct {
  int refs;
  kin__sim_hook *h;
  size_t n;
} kin__sim_hookset;

/* A sim's webhook state. mu (a leaf: never taken with the store's lock
 * held, nor the store's lock with it) guards every field; cond is
 * broadcast when a registration's calls drop. */
typedef struct kin__sim_admission {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  kin__sim_webhook_reg **regs;
  size_t nregs, capregs;
  uint64_t next_id;
  uint64_t reg_gen;        /* bumped by each (un)registration */
  kin__sim_hookset *set;   /* the current set or NULL */
  uint64_t set_reg_gen;    /* reg_gen the set was built at */
  uint64_t set_sig;        /* stored configurations' signature it was built from */
} kin__sim_admission;

/* The current webhook set of sim (a reference: kin__sim_hookset_put it),
 * re-read when the stored configurations or the registrations changed.
 * Takes the store's lock, then the admission's, one after the other.
 * NULL on ENOMEM. */
kin__sim_hookset *kin__sim_hookset_get(kin_sim *sim);
void kin__sim_hookset_put(kin_sim *sim, kin__sim_hookset *set);
/* 1 when sim has a webhook at all (registered or stored); lock-free
 * enough for the write paths' quick test (takes each lock briefly). */
int kin__sim_admission_any(kin_sim *sim);
/* Counts a call of reg's fn as under way: 0, or -1 when reg is gone. */
int kin__sim_reg_call_begin(kin_sim *sim, kin__sim_webhook_reg *reg);
void kin__sim_reg_call_end(kin_sim *sim, kin__sim_webhook_reg *reg);
/* Fills h for the conversion webhook of CRD crd (its name): an
 * in-process registration of it, else the stored CRD's spec.conversion
 * with strategy Webhook. Returns 1 (h filled: kin__sim_hook_release it),
 * 0 when the CRD has none, -1 on ENOMEM. Takes the admission's lock,
 * then the store's, one after the other. */
int kin__sim_conversion_hook(kin_sim *sim, const char *crd, kin__sim_hook *h);
void kin__sim_hook_release(kin_sim *sim, kin__sim_hook *h);
/* A new empty webhook state (NULL on ENOMEM); free frees it with every
 * registration left (no call may be under way). */
kin__sim_admission *kin__sim_webhook_state_new(void);
void kin__sim_webhook_state_free(kin__sim_admission *a);

#endif
