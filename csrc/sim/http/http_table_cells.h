/* http_table_cells.h -- the cells kube-apiserver's printers share
 * (http_table_cells.c). Every returned json_t is a new reference; every
 * function is pure and thread-safe. */
#ifndef KIN_SIM_HTTP_TABLE_CELLS_H
#define KIN_SIM_HTTP_TABLE_CELLS_H

#include <jansson.h>
#include <time.h>

/* The value at path (dot-separated keys) in o, or NULL. */
const json_t *kin__sim_tc_at(const json_t *o, const char *path);
/* The string at path in o, or NULL when absent or not a string. */
const char *kin__sim_tc_str_at(const json_t *o, const char *path);
long long kin__sim_tc_int_at(const json_t *o, const char *path);
/* s, or d when s is NULL or empty. */
const char *kin__sim_tc_or_default(const char *s, const char *d);
/* Parses an RFC 3339 time (Z or an offset, optional fraction); 0 when
 * absent or malformed. */
int kin__sim_tc_parse_time(const char *s, time_t *out);
/* translateTimestampSince: "<unknown>" for a zero time. */
json_t *kin__sim_tc_since(const char *ts, time_t now);
json_t *kin__sim_tc_age(const json_t *obj, time_t now);
json_t *kin__sim_tc_name_of(const json_t *obj);
/* qsort's comparison of two const char * (by strcmp). */
int kin__sim_tc_cmp_str(const void *a, const void *b);
json_t *kin__sim_tc_format_labels(const json_t *m);
/* layoutContainerCells: names and images joined by commas. */
void kin__sim_tc_container_cells(json_t *cells, const json_t *containers);
/* selector.String() of metav1.LabelSelectorAsSelector; FormatLabelSelector
 * puts "<none>" for an empty one when none_if_empty. */
json_t *kin__sim_tc_selector_cell(const json_t *sel, int none_if_empty);

#endif
