/* kobj.h -- the object model: one Kubernetes object as an immutable,
 * reference-counted block holding its raw JSON bytes and the metadata the
 * informer stack needs, extracted once with jsmn.
 *
 * Every kin_obj is a single allocation: the header, the label table, a
 * NUL-terminated copy of the JSON and the unescaped metadata strings. The
 * accessors return pointers into that block, valid while the caller holds a
 * reference. Objects are never modified after parse, so any thread may read
 * them; kin_obj_ref/kin_obj_unref are atomic.
 *
 * A tombstone (client-go's DeletedFinalStateUnknown) is a kin_obj of kind
 * KIN_OBJ_TOMBSTONE: it has a key and, optionally, the last known state of
 * the object, itself a kin_obj. Its metadata accessors return the last
 * state's values (or "" when there is none); its key is its own. */
#ifndef KIN_KOBJ_H
#define KIN_KOBJ_H

#include <stddef.h>
#include <stdint.h>

typedef struct kin_obj kin_obj;

typedef enum { KIN_OBJ_OBJECT = 0, KIN_OBJ_TOMBSTONE = 1 } kin_obj_kind;

/* The controller ownerReference (the one with "controller": true). */
typedef struct {
  const char *api_version;
  const char *kind;
  const char *name;
  const char *uid;
} kin_owner_ref;

/* A span of the raw JSON (for values compared byte-wise, e.g. annotations
 * by predicates). len is 0 when the field is absent. */
typedef struct {
  uint32_t off, len;
} kin_span;

/* Parses one JSON object of len bytes (need not be NUL-terminated) and
 * returns a new object with one reference in *out. Returns KIN_EINVAL when
 * the text is not one well-formed JSON object, when metadata is not an
 * object, or when metadata.name is missing and allow_no_name is 0;
 * KIN_ENOMEM on allocation failure. Nothing is allocated on failure. */
int kin_obj_parse(const char *json, size_t len, kin_obj **out);

/* Same, but accepts objects without metadata.name (list envelopes, Status
 * objects, watch events): their key is "". */
int kin_obj_parse_any(const char *json, size_t len, kin_obj **out);

/* Returns a new tombstone for key holding a reference to last (which may be
 * NULL), or NULL when out of memory. */
kin_obj *kin_obj_tombstone(const char *key, kin_obj *last);

/* Reference counting; unref of NULL is a no-op. ref returns its argument. */
kin_obj *kin_obj_ref(kin_obj *o);
void kin_obj_unref(kin_obj *o);

kin_obj_kind kin_obj_kind_of(const kin_obj *o);
static inline int kin_obj_is_tombstone(const kin_obj *o);
/* Returns the tombstone's last state (borrowed, may be NULL); NULL for an
 * ordinary object. */
kin_obj *kin_obj_last_state(const kin_obj *o);

/* "namespace/name", or "name" when cluster-scoped; the tombstone's key. */
const char *kin_obj_key(const kin_obj *o);
const char *kin_obj_namespace(const kin_obj *o);
const char *kin_obj_name(const kin_obj *o);
const char *kin_obj_uid(const kin_obj *o);
const char *kin_obj_resource_version(const kin_obj *o);
const char *kin_obj_api_version(const kin_obj *o);
const char *kin_obj_kind_name(const kin_obj *o);     /* top-level "kind" */
/* metadata.generation, or 0 when absent. */
int64_t kin_obj_generation(const kin_obj *o);
/* 1 when metadata.deletionTimestamp is set. */
int kin_obj_being_deleted(const kin_obj *o);

size_t kin_obj_label_count(const kin_obj *o);
/* Returns 0 and the i-th label's key and value, or KIN_ENOENT past the
 * end. */
int kin_obj_label_at(const kin_obj *o, size_t i, const char **k, const char **v);
/* Returns the value of label k, or NULL when not set. */
const char *kin_obj_label(const kin_obj *o, const char *k);

/* Returns the controller ownerReference, or NULL when there is none. */
const kin_owner_ref *kin_obj_controller_ref(const kin_obj *o);

/* The raw JSON of the object (NUL-terminated; len in *len if not NULL).
 * For a tombstone: the last state's JSON, or NULL. */
const char *kin_obj_json(const kin_obj *o, size_t *len);

/* Raw spans (into kin_obj_json) of metadata.labels, metadata.annotations,
 * metadata.finalizers, spec and status; len 0 when absent. */
kin_span kin_obj_labels_span(const kin_obj *o);
kin_span kin_obj_annotations_span(const kin_obj *o);
kin_span kin_obj_finalizers_span(const kin_obj *o);
kin_span kin_obj_spec_span(const kin_obj *o);
kin_span kin_obj_status_span(const kin_obj *o);

static inline int kin_obj_is_tombstone(const kin_obj *o) {
  return kin_obj_kind_of(o) == KIN_OBJ_TOMBSTONE;
}

#endif
