/* admission.h -- kinformer.sim's admission webhooks, as the rest of the
 * sim sees them: what the HTTP layer says about the request being
 * written (its subject, options, dry run), the store's hooks
 * (kin__sim_store.admit_active / admit) and the webhook set's life.
 *
 * As kube-apiserver's MutatingAdmissionWebhook and ValidatingAdmissionWebhook
 * plugins (k8s.io/apiserver pkg/admission/plugin/webhook): the webhooks of
 * the stored MutatingWebhookConfigurations and
 * ValidatingWebhookConfigurations, called over HTTPS, and the in-process
 * registrations of kin_sim_webhook_register (sim.h), called through
 * their function. Behaviour and gaps: docs/sim.md, "Admission webhooks". */
#ifndef KIN_SIM_ADMISSION_H
#define KIN_SIM_ADMISSION_H

#include <jansson.h>

#include "admit_ctx.h"

/* Makes c the current thread's context (c stays the caller's); leave
 * clears it. Enter sets c->warnings to a new empty array. */
void kin__sim_admit_enter(kin__sim_admit_ctx *c);
void kin__sim_admit_leave(void);
/* Sets the current context's delete_options (borrowed; no-op without
 * a context). */
void kin__sim_admit_set_delete_options(const json_t *opts);
/* Pauses (on 1) or resumes (on 0) the current thread's context: writes
 * in between run no webhook. Returns the previous state. */
int kin__sim_admit_pause(int on);

/* Sets up sim's webhook state and the store's hooks; 0 or KIN_ENOMEM.
 * kin__sim_admission_free frees it (every registration included). */
int kin__sim_admission_init(kin_sim *sim);
void kin__sim_admission_free(kin_sim *sim);

#endif
