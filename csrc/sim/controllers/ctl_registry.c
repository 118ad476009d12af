/* ctl_registry.c -- the list of the sim's controllers. A new controller
 * adds its kin__simctl_def here and in ctl_registry.h; its name is the
 * one kube-controller-manager's --controllers flag knows. */
#include "ctl_registry.h"

const kin__simctl_def *const kin__simctl_all[] = {
    &kin__simctl_garbagecollector,
    &kin__simctl_namespace,
    &kin__simctl_serviceaccount,
    /* workloads */
    &kin__simctl_deployment,
    &kin__simctl_replicaset,
    &kin__simctl_statefulset,
    &kin__simctl_daemonset,
    &kin__simctl_job,
    &kin__simctl_cronjob,
    &kin__simctl_scheduler,
    &kin__simctl_kubelet,
    NULL,
};
