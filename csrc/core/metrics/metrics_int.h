/* metrics_int.h -- internal to the metrics layer: the sink collectors emit
 * into (exposition.c) and the number and label formatting shared by the
 * renderer and its tests. */
#ifndef KIN_METRICS_INT_H
#define KIN_METRICS_INT_H

#include "buf.h"
#include "metrics.h"

/* One rendered child of a family: its sort key (the label block) and its
 * sample lines. All strings malloc'd. */
typedef struct {
  char *family, *help;
  kin_metric_type type;
  char *key;
  char *text;
  size_t seq; /* emission order: the first help of a family wins */
} kin__metrics_entry;

struct kin_metrics_sink {
  kin__metrics_entry *e;
  size_t n, cap;
};

/* Frees every entry of s (s itself is the caller's). */
void kin__metrics_sink_free(kin_metrics_sink *s);

/* Appends the sorted exposition of s to b (sorts s in place). Returns 0 or
 * KIN_ENOMEM. */
int kin__metrics_sink_write(kin_metrics_sink *s, kin__buf *b);

/* Writes v as Go's strconv.FormatFloat(v, 'g', -1, 64) does, as
 * client_golang does: the shortest digits that read back as v, in exponent
 * form when the exponent is < -4 or >= 6 ("1e-08", "1e+06", "0.005",
 * "100000"); "+Inf", "-Inf", "NaN". buf needs 32 bytes. Returns buf. */
const char *kin__metrics_fmt_double(char buf[32], double v);

/* Appends {n1="v1",...} (nothing when nlabels is 0 and no extra pair),
 * values escaped (\\, \", \n); extra_name/extra_value, when not NULL, is
 * appended last (the histogram's le). */
void kin__metrics_put_labels(kin__buf *b, const char *const *lnames, const char *const *lvalues,
                             int nlabels, const char *extra_name, const char *extra_value);

#endif
