/* ctl_registry.h -- every controller the sim has, in the order the
 * manager runs them (ctl_registry.c). */
#ifndef KIN_SIM_CTL_REGISTRY_H
#define KIN_SIM_CTL_REGISTRY_H

#include "ctl.h"

/* NULL-terminated. */
extern const kin__simctl_def *const kin__simctl_all[];

extern const kin__simctl_def kin__simctl_garbagecollector;
extern const kin__simctl_def kin__simctl_namespace;
extern const kin__simctl_def kin__simctl_serviceaccount;
/* workloads (the KWOK-like scheduler and kubelet after the kube-controller-manager ones) */
extern const kin__simctl_def kin__simctl_deployment;
extern const kin__simctl_def kin__simctl_replicaset;
extern const kin__simctl_def kin__simctl_statefulset;
extern const kin__simctl_def kin__simctl_daemonset;
extern const kin__simctl_def kin__simctl_job;
extern const kin__simctl_def kin__simctl_cronjob;
extern const kin__simctl_def kin__simctl_scheduler;
extern const kin__simctl_def kin__simctl_kubelet;

#endif
