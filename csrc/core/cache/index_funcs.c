/* index_funcs.c -- ready-made index functions for kin_indexer_add_index.
 * They read only the metadata kin_obj extracted at parse time, so they are
 * cheap and cannot fail except through emit (out of memory). */
#include "indexer.h"
#include "kin.h"

/* client-go's MetaNamespaceIndexFunc: cluster-scoped objects are indexed
 * under "" rather than left out, so ByIndex("namespace", "") finds them. */
int kin_index_by_namespace(void *ud, const kin_obj *obj, kin_index_emit_fn emit, void *ctx) {
  const char *ns = kin_obj_namespace(obj);
  return emit(ctx, ns ? ns : "");
}

int kin_index_by_label(void *ud, const kin_obj *obj, kin_index_emit_fn emit, void *ctx) {
  if (!ud) return KIN_EINVAL;
  const char *v = kin_obj_label(obj, ud);
  return v ? emit(ctx, v) : 0;
}

/* An ownerReference without a uid cannot match any owner, so it is not
 * indexed. */
int kin_index_by_controller_uid(void *ud, const kin_obj *obj, kin_index_emit_fn emit,
                                void *ctx) {
  const kin_owner_ref *ref = kin_obj_controller_ref(obj);
  if (!ref || !ref->uid || !ref->uid[0]) return 0;
  return emit(ctx, ref->uid);
}
