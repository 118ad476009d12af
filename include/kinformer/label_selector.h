/* label_selector.h -- Kubernetes label selectors (k8s.io/apimachinery
 * pkg/labels): equality-based (a=b, a==b, a!=b), set-based (a in (x,y),
 * a notin (x), a, !a) and numeric (a>1, a<5) requirements joined by
 * commas, with the syntax and validation rules of the API server (label
 * key: optional DNS-subdomain prefix + '/' + name of at most 63
 * characters; values at most 63 characters of [A-Za-z0-9._-], starting
 * and ending alphanumeric).
 *
 * Used by kinformer.sim to serve ?labelSelector= and by the Lua layer for
 * predicates. Immutable after parse: any thread may match concurrently. */
#ifndef KIN_LABEL_SELECTOR_H
#define KIN_LABEL_SELECTOR_H

#include <stddef.h>

typedef struct kin_label_selector kin_label_selector;

/* Parses s (NULL or "" selects everything). Returns 0 and a new selector in
 * *out (free with kin_label_selector_free), KIN_EINVAL with a message in
 * err (the API server's wording where practical, e.g. "unable to parse
 * requirement: ...") or KIN_ENOMEM. */
int kin_label_selector_parse(const char *s, kin_label_selector **out, char *err, size_t errlen);
void kin_label_selector_free(kin_label_selector *sel);

/* Looks up label key of the object being matched: returns its value, or
 * NULL when the object has no such label. */
typedef const char *(*kin_label_getter)(void *ud, const char *key);

/* Returns 1 when every requirement holds for the labels get returns. */
int kin_label_selector_matches(const kin_label_selector *sel, kin_label_getter get, void *ud);

/* 1 when the selector has no requirement (selects everything). */
int kin_label_selector_empty(const kin_label_selector *sel);

/* Writes the canonical string form (requirements sorted by key, values of
 * in/notin sorted and de-duplicated, as the API server's String()) into
 * buf like snprintf: at most cap-1 bytes and a NUL when cap > 0. Returns
 * the length of the whole string. */
size_t kin_label_selector_string(const kin_label_selector *sel, char *buf, size_t cap);

#endif
