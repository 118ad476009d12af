/* sim_patch_strategic_schema.h -- the patch tags of the built-in types
 * (patchStrategy, patchMergeKey; sim_patch_strategic_schema.c), as the
 * strategic merge patch (sim_patch_strategic.c) looks them up. */
#ifndef KIN_SIM_PATCH_STRATEGIC_SCHEMA_H
#define KIN_SIM_PATCH_STRATEGIC_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

typedef struct smp_type smp_type;

typedef struct {
  const char *name;
  int merge;               /* patchStrategy includes "merge" */
  const char *merge_key;   /* patchMergeKey, for lists of objects */
  const smp_type *type;    /* struct type of the field or of the list's elements */
} smp_field;

struct smp_type {
  const char *kind;        /* Go Kind of the type, for "... for %s" messages */
  const smp_field *fields; /* terminated by a NULL name */
};

const smp_type *kin__smp_schema_for(const json_t *target, const json_t *patch);

const smp_field *kin__smp_lookup(const smp_type *t, const char *key);

#endif
