/* cron.c -- the standard cron schedules of CronJobs (wl.h), as
 * robfig/cron's standard parser reads them: five fields (minute, hour,
 * day of month, month, day of week) of "*", "N", "A-B", "/STEP" and
 * comma lists, month and day names, and the @yearly, @annually,
 * @monthly, @weekly, @daily, @midnight and @hourly macros; in UTC. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "wl.h"

static const char *const months[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                     "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const days[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

/* Reads a number or name at *p; returns it or -1. */
static int value(const char **p, int field) {
  if (isdigit((unsigned char)**p)) {
    int v = 0;
    while (isdigit((unsigned char)**p)) v = v * 10 + (*(*p)++ - '0');
    return v;
  }
  const char *const *names = field == 3 ? months : field == 4 ? days : NULL;
  int n = field == 3 ? 12 : 7;
  for (int i = 0; names && i < n; i++)
    if (!strncasecmp(*p, names[i], 3)) {
      *p += 3;
      return field == 3 ? i + 1 : i;
    }
  return -1;
}

/* Parses one field (lo..hi) into *bits; *star when it begins with "*".
 * Returns 0 or -1. */
static int field_parse(const char *s, size_t len, int field, int lo, int hi, uint64_t *bits,
                       int *star) {
  char buf[128];
  if (!len || len >= sizeof(buf)) return -1;
  memcpy(buf, s, len);
  buf[len] = 0;
  *bits = 0;
  *star = buf[0] == '*' || buf[0] == '?';
  for (char *save, *part = strtok_r(buf, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
    const char *p = part;
    int a, b, step = 1;
    if (*p == '*' || *p == '?') {
      a = lo;
      b = hi;
      p++;
    } else {
      a = value(&p, field);
      b = a;
      if (*p == '-') {
        p++;
        b = value(&p, field);
      }
    }
    if (*p == '/') {
      p++;
      step = value(&p, -1);
      if (b == a && part[0] != '*') b = hi;
    }
    if (field == 4 && b == 7) b = 6, *bits |= 1; /* 7 is Sunday too */
    if (*p || a < lo || b > hi || a > b || step <= 0) return -1;
    for (int v = a; v <= b; v += step) *bits |= 1ull << v;
  }
  return 0;
}

int kin__simwl_cron_parse(const char *spec, kin__simwl_cron *out) {
  static const struct {
    const char *name, *spec;
  } macros[] = {{"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
                {"@weekly", "0 0 * * 0"},  {"@daily", "0 0 * * *"},     {"@midnight", "0 0 * * *"},
                {"@hourly", "0 * * * *"}};
  while (spec && isspace((unsigned char)*spec)) spec++;
  if (!spec) return -1;
  for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]); i++)
    if (!strcmp(spec, macros[i].name)) spec = macros[i].spec;
  static const int lo[5] = {0, 0, 1, 1, 0}, hi[5] = {59, 23, 31, 12, 7};
  uint64_t *bits[5] = {&out->minute, &out->hour, &out->dom, &out->month, &out->dow};
  int stars[5];
  const char *p = spec;
  for (int f = 0; f < 5; f++) {
    while (isspace((unsigned char)*p)) p++;
    const char *e = p;
    while (*e && !isspace((unsigned char)*e)) e++;
    if (field_parse(p, (size_t)(e - p), f, lo[f], hi[f], bits[f], &stars[f])) return -1;
    p = e;
  }
  while (isspace((unsigned char)*p)) p++;
  if (*p) return -1;
  out->dom_star = stars[2];
  out->dow_star = stars[4];
  return 0;
}

/* 1 when the day of tm matches (robfig: AND when either is "*", else OR). */
static int day_ok(const kin__simwl_cron *c, const struct tm *tm) {
  int dom = (c->dom >> tm->tm_mday) & 1, dow = (c->dow >> tm->tm_wday) & 1;
  return c->dom_star || c->dow_star ? dom && dow : dom || dow;
}

time_t kin__simwl_cron_next(const kin__simwl_cron *c, time_t after) {
  time_t t = after - after % 60 + 60;
  /* day by day for five years, then hours and minutes within a day */
  for (int d = 0; d < 5 * 366 + 1; d++) {
    struct tm tm;
    gmtime_r(&t, &tm);
    if ((c->month >> (tm.tm_mon + 1)) & 1 && day_ok(c, &tm)) {
      for (int h = tm.tm_hour; h < 24; h++) {
        if (!((c->hour >> h) & 1)) continue;
        for (int mi = h == tm.tm_hour ? tm.tm_min : 0; mi < 60; mi++)
          if ((c->minute >> mi) & 1) return t - tm.tm_hour * 3600 - tm.tm_min * 60 + h * 3600 + mi * 60;
      }
    }
    /* the next day at 00:00 */
    t = t - tm.tm_hour * 3600 - tm.tm_min * 60 - tm.tm_sec + 86400;
  }
  return -1;
}
