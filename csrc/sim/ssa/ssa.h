/* ssa.h -- server-side apply for kinformer.sim, as kube-apiserver's
 * field manager (k8s.io/apimachinery pkg/util/managedfields) over
 * sigs.k8s.io/structured-merge-diff does it: field sets, the walks over an
 * object that the schema guides (to a field set, compare, merge, remove),
 * and the managedFields bookkeeping of Apply and Update operations.
 *
 * Pure functions over jansson values: no lock, no server state. Inputs
 * are borrowed and never modified unless a function says so.
 *
 * A field set is held in its FieldsV1 form, the JSON object stored in
 * metadata.managedFields[].fieldsV1: keys "f:<field>", "k:<key JSON>",
 * "v:<value JSON>", "i:<index>" lead to children, "." marks a node that is
 * itself a member, and {} is a member without children. Every node is
 * either {} or has at least one child; a node that is not a member has no
 * ".". */
#ifndef KIN_SIM_SSA_H
#define KIN_SIM_SSA_H

#include <jansson.h>
#include <stddef.h>

/* ---- ssa_fieldset.c ---- */

/* 1 when node (a field set or one of its nodes) is itself a member. */
int kin__ssa_set_is_member(const json_t *node);
/* Marks the path elems[0..n) a member of set (modified); 0 or -1 (ENOMEM). */
int kin__ssa_set_insert(json_t *set, const char *const *elems, size_t n);
/* Adds every member of b to a (modified); 0 or -1 (ENOMEM). */
int kin__ssa_set_union(json_t *a, const json_t *b);
/* Removes from a (modified) every member of b. */
void kin__ssa_set_difference(json_t *a, const json_t *b);
/* Removes from a (modified) every member of b and everything below one. */
void kin__ssa_set_recursive_difference(json_t *a, const json_t *b);
/* Returns a new set of the members of both a and b (NULL: ENOMEM). */
json_t *kin__ssa_set_intersection(const json_t *a, const json_t *b);
/* 1 when set has no member. */
int kin__ssa_set_empty(const json_t *set);
/* Calls fn with each member's path as structured-merge-diff prints it
 * (".spec.replicas", ".spec.containers[name=\"c\"].image", "[=\"x\"]"),
 * in fieldpath.Set.Iterate's order (at each level the members, then the
 * children's paths, each sorted); stops when fn returns nonzero. */
typedef int (*kin__ssa_path_fn)(void *ud, const char *path);
int kin__ssa_set_paths(const json_t *set, kin__ssa_path_fn fn, void *ud);

/* ---- ssa_schema.c ---- */

/* How a schema node (OpenAPI v3 as kube-apiserver publishes it, or a
 * CRD's openAPIV3Schema) shapes a value, as kube-openapi's schemaconv
 * turns it into structured-merge-diff's schema. */
typedef enum {
  KIN__SSA_DEDUCED, /* no schema: maps granular (every key a member), lists atomic */
  KIN__SSA_SCALAR,
  KIN__SSA_STRUCT,  /* properties: declared fields */
  KIN__SSA_MAP,     /* additionalProperties: every key a member */
  KIN__SSA_ATOMIC,  /* x-kubernetes-map-type / list-type atomic, lists by default */
  KIN__SSA_SET,     /* x-kubernetes-list-type set, patch strategy merge without key */
  KIN__SSA_LIST_MAP /* x-kubernetes-list-type map, or a patch merge key */
} kin__ssa_kind;

/* The schema of one object type: root is its schema node and defs the
 * components.schemas that "$ref"s point into (may be NULL). Borrowed. */
typedef struct {
  const json_t *defs;
  const json_t *root;
} kin__ssa_schema;

/* The node itself, "$ref" and a one-element allOf followed (NULL stays NULL). */
const json_t *kin__ssa_resolve(const kin__ssa_schema *s, const json_t *node);
kin__ssa_kind kin__ssa_kind_of(const kin__ssa_schema *s, const json_t *node);
/* The schema of field key of node and, in *declared, whether node declares
 * it (a struct's property); NULL is the deduced schema. */
const json_t *kin__ssa_field(const kin__ssa_schema *s, const json_t *node, const char *key,
                             int *declared);
/* The schema of node's list items (NULL: deduced). */
const json_t *kin__ssa_items(const kin__ssa_schema *s, const json_t *node);
/* The list-map keys of a list node into keys (borrowed strings, at most
 * max); returns how many. */
size_t kin__ssa_map_keys(const kin__ssa_schema *s, const json_t *node, const char **keys,
                         size_t max);
/* The path element of one item of a set or list-map node ("v:..." or
 * "k:{...}"): a new string (caller frees), or NULL with a message in err
 * when an item lacks a key field. */
char *kin__ssa_item_element(const kin__ssa_schema *s, const json_t *node, const json_t *item,
                            char *err, size_t errlen);

/* ---- ssa_walk.c ---- */

/* The field set of obj (configObject.ToFieldSet): a new set, or NULL with
 * the reason in err (a list-map item without its key). */
json_t *kin__ssa_to_set(const kin__ssa_schema *s, const json_t *obj, char *err, size_t errlen);
/* What changed from old to new (either may be NULL): three new sets in
 * *added, *modified, *removed. 0, or -1 with the reason in err. */
int kin__ssa_compare(const kin__ssa_schema *s, const json_t *old, const json_t *new_,
                     json_t **added, json_t **modified, json_t **removed, char *err,
                     size_t errlen);

/* ---- ssa_merge.c ---- */

/* live merged with config (live.Merge(config)): a new value; lists and
 * maps merge by the schema, everything else config wins. NULL: ENOMEM. */
json_t *kin__ssa_merge(const kin__ssa_schema *s, const json_t *live, const json_t *config);
/* Removes from obj (modified) what the applier owned last time (last) and
 * nobody owns now (owned: every manager's set, the applier's new one
 * included), each path with everything below it, as the updater's prune. */
void kin__ssa_prune(const kin__ssa_schema *s, json_t *obj, const json_t *last,
                    const json_t *owned);

/* ---- ssa_manager.c ---- */

/* One write, as the field manager sees it. */
typedef struct {
  const kin__ssa_schema *schema;
  const char *manager;     /* fieldManager, or the User-Agent's prefix */
  const char *api_version; /* of the request: "v1", "apps/v1" */
  const char *subresource; /* "" or "status" */
  const char *now;         /* RFC 3339 time of the write */
  const json_t *ignore;    /* set of fields reset by the strategy (status...) or NULL */
  int force;
  int untimed;             /* the entry gets no time (the scale handler's) */
} kin__ssa_op;

/* Update operation (create, PUT, non-apply PATCH): sets new_'s
 * metadata.managedFields (new_ modified) from live's (NULL on create) and
 * what changed. A managedFields list sent in new_ replaces live's when it
 * decodes and is not empty; an empty list resets it. Beyond 10 Update
 * entries the oldest merge into "ancient-changes". On an internal error
 * the field is removed, as UpdateNoErrors does. */
void kin__ssa_update(const kin__ssa_op *op, const json_t *live, json_t *new_);

/* Apply operation: returns the new object (live merged with config, the
 * fields the manager dropped removed, managedFields set), or NULL with
 * *code and a message in err: 409 with the conflicts in *causes (a new
 * array of {reason, message, field}), 400, or 500. live NULL: create. */
json_t *kin__ssa_apply(const kin__ssa_op *op, const json_t *live, const json_t *config,
                       int *code, json_t **causes, char *err, size_t errlen);

/* ---- ssa_yaml.c ---- */

/* Parses one YAML (or JSON) document as sigs.k8s.io/yaml reads an apply
 * body: a new value, or NULL with the parser's message in err. An empty
 * document is null. */
json_t *kin__ssa_yaml_parse(const char *p, size_t n, char *err, size_t errlen);

#endif
