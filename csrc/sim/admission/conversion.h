/* conversion.h -- a CRD's conversion webhook (conversion.c), as
 * apiextensions-apiserver pkg/apiserver/conversion/webhook_converter.go:
 * objects stored at the CRD's storage version are read or written at
 * another served version through a ConversionReview v1. Called by the
 * HTTP layer outside the store's lock. */
#ifndef KIN_SIM_CONVERSION_H
#define KIN_SIM_CONVERSION_H

#include <jansson.h>

#include "buf.h"
#include "store_int.h"

/* 1 when reading or writing r goes through a conversion webhook: a
 * custom resource's version other than the storage one, whose CRD has
 * strategy Webhook (stored, or registered in process). Takes the
 * store's lock: not under it. */
int kin__sim_conversion_applies(kin_sim *sim, const kin__sim_resource *r);

/* Converts every object of objs (a JSON array, changed in place; objects
 * at the storage version, whatever apiVersion they show) to r's version
 * in one ConversionReview. Returns 0, or -1 with kube-apiserver's 500 in
 * out ("conversion webhook for <group>/<version>, Kind=<kind> failed: ...",
 * no reason, as it answers an error that is no API status). */
int kin__sim_convert_out(kin_sim *sim, const kin__sim_resource *r, json_t *objs,
                         kin__sim_result *out);

/* Converts *obj, sent at r's version, to the storage version (*obj
 * replaced). Returns 0 or -1 with the 500 in out. */
int kin__sim_convert_in(kin_sim *sim, const kin__sim_resource *r, json_t **obj,
                        kin__sim_result *out);

/* The lines of a watch batch (JSON lines {"type":..,"object":..}) with
 * every object converted to r's version (one review for the batch); on
 * a failure the batch is replaced by an ERROR event with the 500.
 * Returns 1 when it replaced the batch by an error, else 0. */
int kin__sim_convert_watch_lines(kin_sim *sim, const kin__sim_resource *r, kin__buf *buf);

#endif
