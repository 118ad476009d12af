/* exposition.c -- the Prometheus text format 0.0.4: the sink collectors
 * and families emit into, number and label formatting, sorting and
 * writing. Not thread-safe: one sink belongs to one render. */
#include "metrics_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"

const char *kin__metrics_fmt_double(char buf[32], double v) {
  if (isnan(v)) return strcpy(buf, "NaN");
  if (isinf(v)) return strcpy(buf, v > 0 ? "+Inf" : "-Inf");
  if (v == 0) return strcpy(buf, signbit(v) ? "-0" : "0");
  /* shortest mantissa that reads back as v */
  int p = 1;
  for (; p < 17; p++) {
    snprintf(buf, 32, "%.*e", p - 1, v);
    if (strtod(buf, NULL) == v) break;
  }
  snprintf(buf, 32, "%.*e", p - 1, v);
  int exp = atoi(strchr(buf, 'e') + 1);
  if (exp < -4 || exp >= 6) return buf; /* "%e" already has Go's two-digit exponent */
  int decimals = p - 1 - exp;
  snprintf(buf, 32, "%.*f", decimals > 0 ? decimals : 0, v);
  return buf;
}

static void put_escaped(kin__buf *b, const char *s, int quote) {
  const char *run = s;
  for (; *s; s++) {
    const char *rep = NULL;
    if (*s == '\\') rep = "\\\\";
    else if (*s == '\n') rep = "\\n";
    else if (quote && *s == '"') rep = "\\\"";
    if (!rep) continue;
    kin__buf_add(b, run, (size_t)(s - run));
    kin__buf_puts(b, rep);
    run = s + 1;
  }
  kin__buf_add(b, run, (size_t)(s - run));
}

void kin__metrics_put_labels(kin__buf *b, const char *const *lnames, const char *const *lvalues,
                             int nlabels, const char *extra_name, const char *extra_value) {
  if (nlabels == 0 && !extra_name) return;
  kin__buf_puts(b, "{");
  for (int i = 0; i < nlabels; i++) {
    kin__buf_printf(b, "%s%s=\"", i ? "," : "", lnames[i]);
    put_escaped(b, lvalues[i] ? lvalues[i] : "", 1);
    kin__buf_puts(b, "\"");
  }
  if (extra_name) {
    kin__buf_printf(b, "%s%s=\"", nlabels ? "," : "", extra_name);
    put_escaped(b, extra_value, 1);
    kin__buf_puts(b, "\"");
  }
  kin__buf_puts(b, "}");
}

/* Adds an entry owning text (taken, also on failure). */
static void add_entry(kin_metrics_sink *s, const char *name, const char *help,
                      kin_metric_type type, kin__buf *key, kin__buf *text) {
  if (key->oom || text->oom) goto fail;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    kin__metrics_entry *e = realloc(s->e, cap * sizeof *e);
    if (!e) goto fail;
    s->e = e;
    s->cap = cap;
  }
  kin__metrics_entry *e = &s->e[s->n];
  e->family = strdup(name);
  e->help = strdup(help ? help : "");
  e->key = key->p ? key->p : strdup("");
  e->text = text->p;
  if (!e->family || !e->help || !e->key || !e->text) {
    free(e->family);
    free(e->help);
    free(e->key);
    free(e->text);
    return;
  }
  e->type = type;
  e->seq = s->n++;
  return;
fail:
  kin__buf_free(key);
  kin__buf_free(text);
}

void kin_metrics_emit(kin_metrics_sink *s, const char *name, const char *help,
                      kin_metric_type type, const char *const *lnames,
                      const char *const *lvalues, int nlabels, double v) {
  kin__buf key = {0}, text = {0};
  char num[32];
  kin__metrics_put_labels(&key, lnames, lvalues, nlabels, NULL, NULL);
  kin__buf_puts(&text, name);
  if (key.p) kin__buf_puts(&text, key.p);
  kin__buf_printf(&text, " %s\n", kin__metrics_fmt_double(num, v));
  add_entry(s, name, help, type, &key, &text);
}

void kin_metrics_emit_histogram(kin_metrics_sink *s, const char *name, const char *help,
                                const char *const *lnames, const char *const *lvalues,
                                int nlabels, const double *bounds, const uint64_t *cumulative,
                                int nbounds, uint64_t count, double sum) {
  kin__buf key = {0}, text = {0};
  char num[32];
  kin__metrics_put_labels(&key, lnames, lvalues, nlabels, NULL, NULL);
  for (int i = 0; i <= nbounds; i++) {
    kin__buf_printf(&text, "%s_bucket", name);
    kin__metrics_put_labels(&text, lnames, lvalues, nlabels, "le",
                            i < nbounds ? kin__metrics_fmt_double(num, bounds[i]) : "+Inf");
    kin__buf_printf(&text, " %llu\n",
                    (unsigned long long)(i < nbounds ? cumulative[i] : count));
  }
  kin__buf_printf(&text, "%s_sum%s %s\n", name, key.p ? key.p : "",
                  kin__metrics_fmt_double(num, sum));
  kin__buf_printf(&text, "%s_count%s %llu\n", name, key.p ? key.p : "",
                  (unsigned long long)count);
  add_entry(s, name, help, KIN_METRIC_HISTOGRAM, &key, &text);
}

void kin__metrics_sink_free(kin_metrics_sink *s) {
  for (size_t i = 0; i < s->n; i++) {
    free(s->e[i].family);
    free(s->e[i].help);
    free(s->e[i].key);
    free(s->e[i].text);
  }
  free(s->e);
  memset(s, 0, sizeof *s);
}

static int by_family_key(const void *a, const void *b) {
  const kin__metrics_entry *x = a, *y = b;
  int c = strcmp(x->family, y->family);
  if (c == 0) c = strcmp(x->key, y->key);
  if (c == 0) c = x->seq < y->seq ? -1 : x->seq > y->seq;
  return c;
}

static const char *type_name(kin_metric_type t) {
  return t == KIN_METRIC_COUNTER ? "counter" : t == KIN_METRIC_GAUGE ? "gauge" : "histogram";
}

int kin__metrics_sink_write(kin_metrics_sink *s, kin__buf *b) {
  /* entries of one family are adjacent after sorting; its help and type are
   * those of its first emitted entry (lowest seq) */
  if (s->n) qsort(s->e, s->n, sizeof *s->e, by_family_key);
  for (size_t i = 0; i < s->n;) {
    size_t j = i, first = i;
    while (j < s->n && strcmp(s->e[j].family, s->e[i].family) == 0) {
      if (s->e[j].seq < s->e[first].seq) first = j;
      j++;
    }
    kin__buf_printf(b, "# HELP %s ", s->e[i].family);
    put_escaped(b, s->e[first].help, 0);
    kin__buf_printf(b, "\n# TYPE %s %s\n", s->e[i].family, type_name(s->e[first].type));
    for (size_t k = i; k < j; k++) {
      if (s->e[k].type != s->e[first].type) continue; /* a clashing emitter: dropped */
      if (k > i && strcmp(s->e[k].key, s->e[k - 1].key) == 0) continue; /* duplicate series */
      kin__buf_puts(b, s->e[k].text);
    }
    i = j;
  }
  return b->oom ? KIN_ENOMEM : 0;
}
