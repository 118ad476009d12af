/* sim_patch_strategic_util.h -- the strategic merge patch's errors in
 * upstream's words, its directives ($patch, $retainKeys, $setElementOrder)
 * and its list helpers (sim_patch_strategic_util.c). */
#ifndef KIN_SIM_PATCH_STRATEGIC_UTIL_H
#define KIN_SIM_PATCH_STRATEGIC_UTIL_H

#include <jansson.h>
#include <stddef.h>

/* Each function is documented at its definition. */

#define E_BAD_PATCH_TYPE_PRIMITIVE "invalid patch format of primitive list"
#define E_BAD_RETAIN_KEYS "invalid patch format of retainKeys"
#define E_BAD_SET_ORDER "invalid patch format of setElementOrder list"
#define E_BAD_JSON_DOC "invalid JSON document"
#define E_NO_LIST_OF_LISTS "lists of lists are not supported"
#define E_RETAIN_KEYS_MISMATCH "patch content doesn't match retainKeys list"
#define E_UNSUPPORTED "strategic merge patch format is not supported"

#define DIRECTIVE "$patch"
#define RETAIN_KEYS "$retainKeys"
#define DELETE_PREFIX "$deleteFromPrimitiveList"
#define ORDER_PREFIX "$setElementOrder"

typedef struct {
  int rc; /* 0, KIN_EINVAL or KIN_ENOMEM */
  char msg[2048];
} cx;

/* A growable list of borrowed or owned json_t references: every element
 * holds one reference (json_incref when borrowed). */
typedef struct {
  json_t **v;
  size_t n, cap;
} vec;

/* reflect kinds that matter here */
enum { K_MAP = 1, K_OTHER = 2 };

const char *kin__smp_go_type(const json_t *v);

int kin__smp_same_type(const json_t *a, const json_t *b);

json_t *kin__smp_fail(cx *c, const char *fmt, ...);

json_t *kin__smp_oom(cx *c);

int kin__smp_has_prefix(const char *s, const char *prefix);

int kin__smp_is_directive(const json_t *v, const char *which);

json_t *kin__smp_remove_directives(const json_t *v, int *drop);

void kin__smp_discard_nulls(json_t *v);

int kin__smp_set_without_directives(json_t *o, const char *key, const json_t *v, cx *c);

void kin__smp_drop_as_decode(json_t *v);

int kin__smp_vec_push(vec *a, json_t *x);

void kin__smp_vec_free(vec *a);

int kin__smp_vec_from_array(vec *a, const json_t *arr);

json_t *kin__smp_vec_to_array(vec *a, cx *c);

json_t *kin__smp_vec_json(const vec *a);

int kin__smp_go_eq(const json_t *a, const json_t *b);

int kin__smp_slice_elem_kind(cx *c, const vec *a, const vec *b);

void kin__smp_bad_patch_type(cx *c, const json_t *d, const json_t *m);

int kin__smp_no_merge_key(cx *c, const json_t *m, const char *key);

long kin__smp_find_map(cx *c, const vec *l, const char *key, const json_t *value);

json_t *kin__smp_normalize_element_order(cx *c, vec *patch_items, vec *server_only, const vec *patch_order,
                                         const vec *server_order, const char *mk, int kind);

int kin__smp_partition(cx *c, const vec *merged, const vec *by, const char *mk, vec *in, vec *out);

#endif
