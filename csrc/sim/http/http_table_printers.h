/* http_table_printers.h -- kube-apiserver's printers of the built-in
 * types for Table output (http_table_printers.c; their columns are
 * http_table_columns.c's). */
#ifndef KIN_SIM_HTTP_TABLE_PRINTERS_H
#define KIN_SIM_HTTP_TABLE_PRINTERS_H

#include <time.h>

#include "http_int.h"

typedef kin__sim_table_col table_col;
typedef void (*row_fn)(json_t *cells, json_t *row, const json_t *obj, time_t now);
/* The printer of a built-in resource: its columns and its row function. */
typedef struct {
  const char *group, *resource;
  const table_col *cols;
  row_fn row;
} printer;
/* The printer of r (borrowed, static), or NULL when r has none. */
const printer *kin__sim_table_printer_of(const kin__sim_resource *r);
/* The default TableConvertor's row: Name, Created At. */
void kin__sim_table_default_row(json_t *cells, json_t *row, const json_t *obj, time_t now);

#define D_NAME kin__sim_table_desc_name
#define D_AGE kin__sim_table_desc_age

#endif
