/* convert.h -- the interface of csrc/sim/convert/: conversion between a
 * served version and its storage's form when they differ in more than
 * apiVersion, as kube-apiserver's scheme converts through the internal
 * type. The only such pair is Event: one storage in core v1 form served as
 * v1 and as events.k8s.io/v1 (k8s.io/kubernetes pkg/apis/events/v1
 * conversion.go). Every other resource has NULL hooks and its stored bytes
 * are served as they are. */
#ifndef KIN_SIM_CONVERT_H
#define KIN_SIM_CONVERT_H

#include <jansson.h>

#include "store_int.h"

/* Sets the hooks of r (the core v1 or the events.k8s.io/v1 events
 * resource; any other r is left alone): convert_out, convert_in and
 * validate. server.c calls it for every resource once the registry is
 * set up. */
void kin__sim_event_hooks(kin__sim_resource *r);

/* The stored (core v1) Event as events.k8s.io/v1 serializes it: a new tree
 * (metadata deep-copied), NULL on ENOMEM. Borrows core. */
json_t *kin__sim_event_to_events_v1(const json_t *core);
/* An events.k8s.io/v1 Event in the stored form (core v1 as Go serializes
 * it): a new tree, or NULL with the decoder's 400 in err (a time that
 * metav1.Time / MicroTime does not parse) or err untouched (ENOMEM).
 * Fields without a place in the type are dropped, as the server's
 * decoder drops them. Borrows ev. */
json_t *kin__sim_event_from_events_v1(const json_t *ev, kin__sim_result *err);
/* A core v1 Event as the server stores it (decoded into the type and
 * encoded again): the same fields, times normalized, the never-omitted
 * ones present. New tree, or NULL as kin__sim_event_from_events_v1.
 * Borrows core. */
json_t *kin__sim_event_core_canonical(const json_t *core, kin__sim_result *err);

/* The registry strategy's Validate (old NULL) and ValidateUpdate
 * (k8s.io/kubernetes pkg/apis/core/validation/events.go) of obj in stored
 * form, written through r's group-version: 0, or -1 with the server's 422
 * in out (events_validate.c). Borrows both. */
int kin__sim_event_validate(const kin__sim_resource *r, const json_t *obj, const json_t *old,
                            kin__sim_result *out);

#endif
