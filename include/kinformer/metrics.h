/* metrics.h -- a Prometheus registry: metric families registered by name
 * (counters, gauges, histograms with labels; the user metrics of the Lua
 * binding), collectors that snapshot other objects' statistics at scrape
 * time (controllers, workqueues, REST clients: see metrics_collectors.h),
 * and the text exposition format 0.0.4.
 *
 * Threads: every function is thread-safe. The registry's mutex guards its
 * family list and its collectors (a collector never runs after
 * kin_metrics_remove_collector returned); each family has its own mutex
 * guarding its children (one per label-value set) and their values, so an
 * update locks one family only and allocates nothing once its label set
 * exists. Families live as long as their registry (the default registry:
 * the process), so a kin_metric pointer may be kept and used from any
 * thread. */
#ifndef KIN_METRICS_H
#define KIN_METRICS_H

#include <stddef.h>
#include <stdint.h>

typedef struct kin_metrics_registry kin_metrics_registry;
typedef struct kin_metric kin_metric;
typedef struct kin_metrics_sink kin_metrics_sink;

typedef enum { KIN_METRIC_COUNTER, KIN_METRIC_GAUGE, KIN_METRIC_HISTOGRAM } kin_metric_type;

#define KIN_METRIC_MAX_LABELS 16
#define KIN_METRIC_MAX_BUCKETS 64

/* Prometheus' default histogram buckets (DefBuckets), 11 bounds. */
extern const double kin_metrics_default_buckets[11];

/* The process-wide registry, made on first use and never freed: what the
 * Lua binding, the controllers' collectors and the metrics server use.
 * NULL only when that first allocation failed. */
kin_metrics_registry *kin_metrics_default(void);

/* Returns a new empty registry in *out (tests), or KIN_ENOMEM. */
int kin_metrics_registry_new(kin_metrics_registry **out);

/* Frees r with its families (their kin_metric pointers die with it). No
 * other thread may use r any more. */
void kin_metrics_registry_free(kin_metrics_registry *r);

typedef struct {
  const char *name;  /* [a-zA-Z_:][a-zA-Z0-9_:]* */
  const char *help;  /* NULL: "" */
  kin_metric_type type;
  const char *const *labels; /* label names [a-zA-Z_][a-zA-Z0-9_]*, not "__*"; "le" not on histograms */
  int nlabels;               /* 0..KIN_METRIC_MAX_LABELS */
  const double *buckets;     /* histograms: strictly increasing upper bounds (+Inf is implied);
                                NULL: kin_metrics_default_buckets */
  int nbuckets;              /* 1..KIN_METRIC_MAX_BUCKETS when buckets is given */
} kin_metric_opts;

/* Registers the family o describes in r (everything is copied), or finds
 * the one registered under that name before: *out is that family when its
 * type, label names and buckets (and help) are the same. Returns 0;
 * KIN_EINVAL for a bad name, label or bucket list (msg says which);
 * KIN_EEXIST when the name is taken by a different shape (msg says how);
 * KIN_ENOMEM. msg may be NULL. */
int kin_metrics_register(kin_metrics_registry *r, const kin_metric_opts *o, kin_metric **out,
                         char *msg, size_t msglen);

/* Looks a family up by name: NULL when none. */
kin_metric *kin_metrics_find(kin_metrics_registry *r, const char *name);

/* The family's shape (borrowed, lives as long as the family). */
kin_metric_type kin_metric_get_type(const kin_metric *m);
int kin_metric_nlabels(const kin_metric *m);
const char *kin_metric_label(const kin_metric *m, int i); /* label name i, 0 <= i < nlabels */
const char *kin_metric_name(const kin_metric *m);

/* Updates the child of m labelled values (nlabels strings, NULL when the
 * family has no labels), made on first use. add: counters and gauges (a
 * counter refuses v < 0); set: gauges; observe: histograms. Return 0,
 * KIN_EINVAL on a wrong type, a negative counter increment or a NaN, or
 * KIN_ENOMEM when a new child cannot be made. */
int kin_metric_add(kin_metric *m, const char *const *values, double v);
int kin_metric_set(kin_metric *m, const char *const *values, double v);
int kin_metric_observe(kin_metric *m, const char *const *values, double v);

/* Reads a counter's or gauge's value (a histogram's sample count) for
 * values into *v; KIN_ENOENT when that child was never updated. */
int kin_metric_get(kin_metric *m, const char *const *values, double *v);

/* ---- collectors ------------------------------------------------------- */

/* Called at scrape time on the scraping thread with the registry's lock
 * held: emits samples with kin_metrics_emit*, must not call back into the
 * registry's register/collector functions, nor block. */
typedef void (*kin_metrics_collect_fn)(void *ud, kin_metrics_sink *s);

/* Adds a collector; free_ud (may be NULL) is called with ud when the
 * collector is removed or the registry freed (also when adding fails).
 * Returns its id (> 0) or KIN_EINVAL / KIN_ENOMEM. */
int kin_metrics_add_collector(kin_metrics_registry *r, kin_metrics_collect_fn fn, void *ud,
                              void (*free_ud)(void *));

/* Removes collector id (0 or unknown: nothing). Once it returns the
 * collector does not run and will not run again (and its ud was freed). */
void kin_metrics_remove_collector(kin_metrics_registry *r, int id);

/* Emits one counter or gauge sample of family name (help and type as for
 * registration; samples of one family from several collectors are merged
 * under one HELP/TYPE, the first emitted help wins). Labels: nlabels name
 * and value pairs. Allocation failures drop the sample. */
void kin_metrics_emit(kin_metrics_sink *s, const char *name, const char *help,
                      kin_metric_type type, const char *const *lnames,
                      const char *const *lvalues, int nlabels, double v);

/* Emits one histogram child: cumulative[i] counts observations <= bounds[i]
 * (nbounds of them, +Inf implied by count). */
void kin_metrics_emit_histogram(kin_metrics_sink *s, const char *name, const char *help,
                                const char *const *lnames, const char *const *lvalues,
                                int nlabels, const double *bounds, const uint64_t *cumulative,
                                int nbounds, uint64_t count, double sum);

/* ---- exposition ------------------------------------------------------- */

#define KIN_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Renders every family and collector of r in the text format 0.0.4:
 * families sorted by name, each with # HELP and # TYPE, its samples sorted
 * by label values. Returns 0 and a malloc'd NUL-terminated text in *out
 * (the caller frees it) with its length in *len, or KIN_ENOMEM. */
int kin_metrics_render(kin_metrics_registry *r, char **out, size_t *len);

#endif
