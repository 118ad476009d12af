/* admit_ctx.h -- the request a write belongs to, as the admission chain
 * reads it (set by the HTTP layer, admission.h). */
#ifndef KIN_SIM_ADMIT_CTX_H
#define KIN_SIM_ADMIT_CTX_H

#include <jansson.h>

#include "store_int.h"

/* The request a write belongs to, set by the HTTP layer on the thread
 * that runs the write (kin__sim_admit_enter) and read by the store's
 * hooks on that thread. A write without one (the controllers, the seed,
 * kin_sim_put) runs no webhook. Strings and delete_options are borrowed
 * for the time the context is entered; warnings is owned (a JSON array
 * of strings the webhooks answered, the caller's to send and free). */
typedef struct kin__sim_admit_ctx {
  kin_sim *sim;
  const char *user;             /* userInfo.username */
  const char *const *groups;    /* userInfo.groups */
  size_t ngroups;
  const char *subresource;      /* "" for none */
  const char *field_manager;    /* ?fieldManager or NULL */
  const char *field_validation; /* ?fieldValidation or NULL */
  const json_t *delete_options; /* the DELETE's options or NULL */
  int dry_run;
  int paused;                   /* a dry run of the sim's own (RBAC escalation check) */
  json_t *warnings;
} kin__sim_admit_ctx;

#endif
