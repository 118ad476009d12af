/* status.h -- Status errors of kinformer.sim, as k8s.io/apimachinery
 * pkg/api/errors builds them (status.c), and the answer type that carries
 * them. Pure functions, thread-safe. */
#ifndef KIN_SIM_STATUS_H
#define KIN_SIM_STATUS_H

#include <jansson.h>

/* An answer: HTTP code and a JSON body (object or Status), owned. */
typedef struct {
  int code;
  json_t *body;
} kin__sim_result;

json_t *kin__sim_status(int code, const char *reason, const char *message, json_t *details);
void kin__sim_err(kin__sim_result *r, int code, const char *reason, json_t *details,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void kin__sim_err_not_found(kin__sim_result *r, const char *group, const char *resource,
                            const char *name);
void kin__sim_err_already_exists(kin__sim_result *r, const char *group, const char *resource,
                                 const char *name);
void kin__sim_err_conflict(kin__sim_result *r, const char *group, const char *kind_or_res,
                           const char *name, const char *why);
void kin__sim_err_bad_request(kin__sim_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* 422 Invalid for one field: message "<Kind> "<name>" is invalid: <field>: <detail>". */
void kin__sim_err_invalid(kin__sim_result *r, const char *group, const char *kind,
                          const char *name, const char *field, const char *cause_reason,
                          const char *detail);
void kin__sim_err_expired(kin__sim_result *r, const char *message);

#endif
