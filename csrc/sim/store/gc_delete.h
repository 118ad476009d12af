/* gc_delete.h -- the API server's half of garbage collection and
 * namespace lifecycle (k8s.io/apiserver registry/generic/registry
 * store.go: deletionFinalizersForGarbageCollection, markAsDeleting;
 * pkg/registry/core/namespace/storage: the namespace's Delete; the
 * NamespaceLifecycle admission plugin). Every function here runs with
 * kin__sim_store.mu held by its caller. */
#ifndef KIN_SIM_GC_DELETE_H
#define KIN_SIM_GC_DELETE_H

#include <jansson.h>

#include "store_int.h"

/* DeleteOptions as the delete paths read them. */
typedef struct {
  const json_t *preconditions; /* borrowed, or NULL */
  const char *propagation;     /* "Foreground", "Background", "Orphan" or NULL */
  int orphan_dependents;       /* -1 unset, else the deprecated orphanDependents */
} kin__sim_delete_opts;

/* Reads and validates DeleteOptions opts (borrowed, NULL: none) into *o
 * (which borrows from opts) as ValidateDeleteOptions does. Returns 0, or
 * -1 with the 422 of the real server in out. */
int kin__sim_delete_opts_read(const json_t *opts, kin__sim_delete_opts *o, kin__sim_result *out);

/* The finalizers the delete of an object of r whose current finalizers
 * are cur (borrowed array or NULL) leaves: cur without "orphan" and
 * "foregroundDeletion", then those the options (or, without any, the
 * ones already there, else the resource's default policy) ask for.
 * Returns a new array; *changed is 1 when it differs from cur as a set.
 * NULL on ENOMEM. */
json_t *kin__sim_gc_finalizers(const kin__sim_resource *r, const json_t *cur,
                               const kin__sim_delete_opts *o, int *changed);

/* The namespace's own Delete (core namespaces): the first delete sets
 * deletionTimestamp and status.phase "Terminating" (and the GC
 * finalizers the options ask for) and answers the namespace; later ones
 * answer it unchanged while spec.finalizers is not empty. Returns 1 when
 * out holds the answer, 0 when the generic delete goes on (a namespace
 * whose spec.finalizers are empty). curj is cur's tree (borrowed). */
int kin__sim_namespace_delete(kin__sim_store *s, kin__sim_resource *r, kin__sim_obj *cur,
                              const json_t *curj, const kin__sim_delete_opts *o, int dry_run,
                              kin__sim_result *out);

/* NamespaceLifecycle for a create of an object of r named name (may be
 * empty) in ns: 404 when the namespace does not exist, 403 when it is
 * terminating. Returns 0 (admitted) or -1 with out filled. */
int kin__sim_namespace_admit_create(kin__sim_store *s, const kin__sim_resource *r,
                                    const char *ns, const char *name, kin__sim_result *out);

/* NamespaceLifecycle for the delete of namespace name: 403 for default,
 * kube-system and kube-public. Returns 0 or -1 with out filled. */
int kin__sim_namespace_admit_delete(const char *name, kin__sim_result *out);

/* 1 when obj (a namespace) still has spec.finalizers. */
int kin__sim_namespace_has_spec_finalizers(const json_t *obj);

#endif
