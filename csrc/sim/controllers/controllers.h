/* controllers.h -- the sim's control plane: the controllers that
 * kube-controller-manager (and, for nodes and pods, a kubelet as KWOK
 * simulates it) run against kube-apiserver, here in the sim's process, on
 * the sim's clock. This is the interface server.c uses; a controller's
 * interface is ctl.h.
 *
 * One thread per sim (the controller manager) receives every committed
 * change through the store's commit hook, hands it to each enabled
 * controller, and lets them write through the store's own write paths
 * (validation, resourceVersion, watch events) as clients would. */
#ifndef KIN_SIM_CONTROLLERS_H
#define KIN_SIM_CONTROLLERS_H

#include <stdint.h>

#include "store_int.h"

typedef struct kin__simctl kin__simctl;
typedef struct kin__simctl_def kin__simctl_def; /* a controller (ctl.h) */

/* Checks a --controllers value (kube-controller-manager's syntax: "*" all
 * default controllers, "name" one, "-name" not that one, "none" no
 * controller, comma-separated) against defs (NULL-terminated: the
 * controllers there are, ctl_registry.h). Returns 0, or KIN_EINVAL with
 * the offending word copied to bad (NUL-terminated, cap bytes). NULL is
 * "*". */
int kin__simctl_parse(const kin__simctl_def *const *defs, const char *spec, char *bad,
                      size_t cap);

/* Starts the controller manager of sim for the controllers of defs that
 * spec enables (spec checked by kin__simctl_parse), on the real clock or, with
 * fake_clock, on a clock that only kin__simctl_advance moves. Every object
 * already stored is observed as added first. Returns 0 and the manager in
 * *out (NULL when spec enables nothing: no thread runs), KIN_EINVAL for a
 * bad spec, or KIN_ENOMEM. Call without the store lock. */
int kin__simctl_start(kin_sim *sim, const kin__simctl_def *const *defs, const char *spec,
                      int fake_clock, kin__simctl **out);

/* Stops the thread, drops the queued changes and frees m (NULL: no-op).
 * Call without the store lock, before the store is freed. */
void kin__simctl_free(kin__simctl *m);

/* The sim's clock in milliseconds since start. */
uint64_t kin__simctl_now_ms(kin__simctl *m);

/* Moves a fake clock forward by ms and runs what fell due. Returns 0 or
 * KIN_EINVAL on the real clock. Thread-safe. */
int kin__simctl_advance(kin__simctl *m, uint64_t ms);

/* Waits until the controllers have observed every change committed so far
 * and none has work due now (on a fake clock: nothing due before the
 * current time). Returns 0, or KIN_ETIMEDOUT after timeout_ms.
 * Thread-safe; never call from a controller. */
int kin__simctl_wait_idle(kin__simctl *m, uint32_t timeout_ms);

/* 1 when the controller named name runs. */
int kin__simctl_enabled(const kin__simctl *m, const char *name);

#endif
