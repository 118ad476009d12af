/* predicate.h -- controller-runtime's pkg/predicate: filters applied to
 * informer events before a controller's event handler enqueues anything.
 *
 * A predicate is a small immutable tree: leaves are the built-in
 * predicates (GenerationChangedPredicate, ResourceVersionChangedPredicate,
 * LabelChangedPredicate, AnnotationChangedPredicate, LabelSelectorPredicate)
 * and inner nodes the combinators And, Or and Not, so the Lua binding can
 * build one from strings and tables without calling back into Lua.
 *
 * Semantics are controller-runtime's: the "...Changed" predicates filter
 * update events only (create and delete pass) and fail an update with a
 * missing old or new object; a label selector applies to the object of a
 * create or delete and to the new object of an update. A resync is an
 * update whose old and new objects are the same, so the "...Changed"
 * predicates drop it and predicates that do not compare old with new let
 * it through, exactly as in controller-runtime.
 *
 * Labels and annotations are compared as maps, not as bytes: the same map
 * can be serialised with another key order (kinformer.sim keeps insertion
 * order, so a patch can move a key) or another escaping ("\u003c" from Go,
 * "<" from other encoders). An absent map equals an empty one.
 *
 * Immutable after construction: any thread may evaluate one concurrently. */
#ifndef KIN_PREDICATE_H
#define KIN_PREDICATE_H

#include <stddef.h>

#include "kobj.h"

typedef enum {
  KIN_PREDICATE_GENERATION_CHANGED = 0,   /* metadata.generation differs */
  KIN_PREDICATE_RESOURCE_VERSION_CHANGED, /* metadata.resourceVersion differs */
  KIN_PREDICATE_LABEL_CHANGED,            /* metadata.labels differ */
  KIN_PREDICATE_ANNOTATION_CHANGED,       /* metadata.annotations differ */
  KIN_PREDICATE_LABEL_SELECTOR,           /* the object's labels match */
  KIN_PREDICATE_AND,                      /* every child passes (none: true) */
  KIN_PREDICATE_OR,                       /* some child passes (none: false) */
  KIN_PREDICATE_NOT                       /* the one child fails */
} kin_predicate_kind;

typedef struct kin_predicate kin_predicate;

/* Constructors return a new predicate in *out, which the caller frees with
 * kin_predicate_free unless it hands it on (to a combinator or a handler
 * config, which take ownership); *out is NULL on failure. */

/* A leaf of kind (one of the four "...Changed" kinds); KIN_EINVAL for
 * other kinds, KIN_ENOMEM. */
int kin_predicate_new(kin_predicate_kind kind, kin_predicate **out);

/* Like kin_predicate_new, by the name the Lua API uses:
 * "generation_changed", "resource_version_changed", "label_changed" (or
 * "labels_changed"), "annotation_changed" (or "annotations_changed").
 * KIN_EINVAL for an unknown name. */
int kin_predicate_from_name(const char *name, kin_predicate **out);

/* Returns a new LabelSelectorPredicate for selector (label selector
 * syntax, "" selects everything) in *out; KIN_EINVAL with the parser's
 * message in err (may be NULL) when it does not parse, KIN_ENOMEM. */
int kin_predicate_label_selector(const char *selector, kin_predicate **out, char *err,
                                 size_t errlen);

/* Returns a new And or Or node (kind KIN_PREDICATE_AND/OR) over the n
 * children in *out. Takes ownership of every child, also on failure, when
 * they are freed (KIN_EINVAL for another kind, KIN_ENOMEM). */
int kin_predicate_combine(kin_predicate_kind kind, kin_predicate **children, size_t n,
                          kin_predicate **out);

/* Returns a new Not node over child in *out. Takes ownership of child, also
 * on failure (KIN_EINVAL when child is NULL, KIN_ENOMEM), when it is freed. */
int kin_predicate_not(kin_predicate *child, kin_predicate **out);

/* Frees p and its children; NULL is a no-op. */
void kin_predicate_free(kin_predicate *p);

kin_predicate_kind kin_predicate_kind_of(const kin_predicate *p);

/* Evaluation: 1 when the event passes, 0 when it is filtered out. A NULL
 * predicate passes everything. Objects are borrowed; NULL stands for a
 * missing object (controller-runtime's nil). Callers unwrap tombstones
 * first (the handler passes a tombstone's last known state). */
int kin_predicate_create(const kin_predicate *p, const kin_obj *obj);
int kin_predicate_update(const kin_predicate *p, const kin_obj *old_obj, const kin_obj *new_obj);
int kin_predicate_delete(const kin_predicate *p, const kin_obj *obj);

/* For the per-key history (controller_history.h): evaluates p for event ev
 * (old_obj only for updates) like the three functions above and returns
 * the verdict, writing to buf (cap > 0; truncated, NUL-terminated) the
 * name of the predicate that decided it: the first child of an And that
 * dropped the event, the first child of an Or that passed it, otherwise
 * p's own name ("generation_changed", "resource_version_changed",
 * "labels_changed", "annotations_changed", "label_selector", "not X",
 * "and", "or"); "" for a NULL p. Never fails. */
typedef enum { KIN_PREDICATE_EV_CREATE, KIN_PREDICATE_EV_UPDATE, KIN_PREDICATE_EV_DELETE } kin_predicate_event;
int kin_predicate_explain(const kin_predicate *p, kin_predicate_event ev, const kin_obj *old_obj,
                          const kin_obj *obj, char *buf, size_t cap);

/* 1 when a and b have the same labels / annotations, compared as maps
 * (absent equals empty). When the annotations cannot be compared as maps
 * (a value that is not a string, or out of memory) the raw bytes are
 * compared, which can only report a difference that is not one. */
int kin_obj_labels_equal(const kin_obj *a, const kin_obj *b);
int kin_obj_annotations_equal(const kin_obj *a, const kin_obj *b);

#endif
