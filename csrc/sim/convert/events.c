/* events.c -- one Event storage behind v1 and events.k8s.io/v1, as
 * kube-apiserver keeps both in one etcd prefix in core v1 form and converts
 * through the internal core.Event (k8s.io/kubernetes pkg/apis/events/v1
 * conversion.go and its generated conversions):
 *
 *   events.k8s.io/v1          core v1 (stored)
 *   regarding                 involvedObject
 *   note                      message
 *   reportingController       reportingComponent
 *   reportingInstance         reportingInstance
 *   deprecatedSource          source
 *   deprecatedFirstTimestamp  firstTimestamp
 *   deprecatedLastTimestamp   lastTimestamp
 *   deprecatedCount           count
 *   eventTime, series{count, lastObservedTime}, action, reason, related,
 *   type: the same names.
 *
 * Every field has its counterpart, so nothing is lost either way; what is
 * not a field of the type is dropped, as the typed decoder drops it. The
 * objects come out as Go's encoding/json writes the types: omitempty
 * strings and counts left out when empty, the struct fields (references,
 * source, times) always present, a zero time as null, times normalized
 * (Time to seconds, MicroTime to microseconds, both in UTC). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convert.h"

/* The internal Event: borrowed values of the object read, NULL when
 * absent. */
typedef struct {
  const json_t *metadata, *involved, *reason, *message, *source, *first, *last, *count, *type,
      *event_time, *series, *action, *related, *controller, *instance;
} internal_event;

/* Reads a core v1 Event. */
static void read_core(const json_t *o, internal_event *e) {
  e->metadata = json_object_get(o, "metadata");
  e->involved = json_object_get(o, "involvedObject");
  e->reason = json_object_get(o, "reason");
  e->message = json_object_get(o, "message");
  e->source = json_object_get(o, "source");
  e->first = json_object_get(o, "firstTimestamp");
  e->last = json_object_get(o, "lastTimestamp");
  e->count = json_object_get(o, "count");
  e->type = json_object_get(o, "type");
  e->event_time = json_object_get(o, "eventTime");
  e->series = json_object_get(o, "series");
  e->action = json_object_get(o, "action");
  e->related = json_object_get(o, "related");
  e->controller = json_object_get(o, "reportingComponent");
  e->instance = json_object_get(o, "reportingInstance");
}

/* Reads an events.k8s.io/v1 Event (Convert_v1_Event_To_core_Event). */
static void read_events_v1(const json_t *o, internal_event *e) {
  e->metadata = json_object_get(o, "metadata");
  e->involved = json_object_get(o, "regarding");
  e->reason = json_object_get(o, "reason");
  e->message = json_object_get(o, "note");
  e->source = json_object_get(o, "deprecatedSource");
  e->first = json_object_get(o, "deprecatedFirstTimestamp");
  e->last = json_object_get(o, "deprecatedLastTimestamp");
  e->count = json_object_get(o, "deprecatedCount");
  e->type = json_object_get(o, "type");
  e->event_time = json_object_get(o, "eventTime");
  e->series = json_object_get(o, "series");
  e->action = json_object_get(o, "action");
  e->related = json_object_get(o, "related");
  e->controller = json_object_get(o, "reportingController");
  e->instance = json_object_get(o, "reportingInstance");
}

/* Sets o[k] to v when v is a non-empty string (omitempty); with always,
 * to "" otherwise. */
static void put_str(json_t *o, const char *k, const json_t *v, int always) {
  const char *s = json_string_value(v);
  if (s && *s)
    json_object_set_new(o, k, json_stringn(s, json_string_length(v)));
  else if (always)
    json_object_set_new(o, k, json_string(""));
}

/* Sets o[k] to v when v is a non-zero integer (omitempty int32); with
 * always, to 0 otherwise. */
static void put_int(json_t *o, const char *k, const json_t *v, int always) {
  json_int_t n = json_is_integer(v) ? json_integer_value(v) : 0;
  if (n || always) json_object_set_new(o, k, json_integer(n));
}

/* The conversion's state: the first error met (a time Go's decoder
 * refuses), "" when none. */
typedef struct {
  char err[512];
} conv;

/* Go's strconv.Quote of a printable string into buf. */
static void go_quote(char *buf, size_t cap, const char *s) {
  size_t n = 0;
  if (cap < 3) return;
  buf[n++] = '"';
  for (; *s && n + 3 < cap; s++) {
    if (*s == '"' || *s == '\\') buf[n++] = '\\';
    buf[n++] = *s;
  }
  buf[n++] = '"';
  buf[n] = 0;
}

/* Reads n digits (fixed) or 1-2 digits (!fixed) at *p into *v; -1 when
 * there are none (Go's getnum). */
static int getnum(const char **p, int n, int fixed, int *v) {
  const char *s = *p;
  if (n == 4) {
    for (int i = 0; i < 4; i++)
      if (s[i] < '0' || s[i] > '9') return -1;
    *v = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
    *p = s + 4;
    return 0;
  }
  if (s[0] < '0' || s[0] > '9') return -1;
  if (s[1] < '0' || s[1] > '9') {
    if (fixed) return -1;
    *v = s[0] - '0';
    *p = s + 1;
    return 0;
  }
  *v = (s[0] - '0') * 10 + (s[1] - '0');
  *p = s + 2;
  return 0;
}

/* Parses s as Go's time.Parse with layout RFC3339 (micro 0: any fraction
 * accepted after the seconds) or metav1's RFC3339Micro (micro 1: exactly
 * six fraction digits), as metav1.Time and MicroTime unmarshal: 0 with
 * UTC seconds and microseconds, or -1 with Go's error text in c->err. */
static int parse_time(conv *c, const char *s, int micro, time_t *secs, long *micros) {
  static const char *const elems[] = {"2006", "-", "01", "-", "02", "T", "15", ":", "04",
                                      ":", "05", ".000000", "Z07:00", NULL};
  const char *layout = "2006-01-02T15:04:05Z07:00", *micro_layout =
      "2006-01-02T15:04:05.000000Z07:00";
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  const char *p = s, *bad = NULL, *range = NULL;
  long us = 0, off = 0;
  int v = 0;
  for (int i = 0; elems[i] && !bad && !range; i++) {
    const char *e = elems[i];
    if (!strcmp(e, ".000000")) {
      if (!micro) continue;
      if (strlen(p) < 7 || (*p != '.' && *p != ',')) {
        bad = e;
        break;
      }
      for (int k = 1; k < 7; k++) {
        if (p[k] < '0' || p[k] > '9') bad = e;
        us = us * 10 + (p[k] - '0');
      }
      if (!bad) p += 7;
    } else if (!strcmp(e, "Z07:00")) {
      if (*p == 'Z') {
        p++;
      } else if ((p[0] == '+' || p[0] == '-') && strlen(p) >= 6 && p[3] == ':') {
        const char *hp = p + 1, *mp = p + 4;
        int hh, mm;
        if (getnum(&hp, 2, 1, &hh) || getnum(&mp, 2, 1, &mm)) {
          bad = e;
          break;
        }
        off = (hh * 3600L + mm * 60L) * (p[0] == '-' ? -1 : 1);
        p += 6;
      } else {
        bad = e;
      }
    } else if (e[0] < '0' || e[0] > '9') {
      if (*p != e[0]) bad = e;
      else p++;
    } else {
      int fixed = strcmp(e, "15") != 0;
      if (getnum(&p, (int)strlen(e), fixed, &v)) {
        bad = e;
        break;
      }
      if (!strcmp(e, "2006")) tm.tm_year = v - 1900;
      if (!strcmp(e, "01")) (v < 1 || v > 12) ? (void)(range = "month") : (void)(tm.tm_mon = v - 1);
      if (!strcmp(e, "02")) tm.tm_mday = v;
      if (!strcmp(e, "15")) (v > 23) ? (void)(range = "hour") : (void)(tm.tm_hour = v);
      if (!strcmp(e, "04")) (v > 59) ? (void)(range = "minute") : (void)(tm.tm_min = v);
      if (!strcmp(e, "05")) {
        if (v > 59) range = "second";
        tm.tm_sec = v;
        /* a fraction the layout does not name is read after the seconds */
        if (!micro && (*p == '.' || *p == ',') && p[1] >= '0' && p[1] <= '9') {
          int digits = 0;
          for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 6) us = us * 10 + (*p - '0');
          for (; digits < 6; digits++) us *= 10;
        }
      }
    }
  }
  char qs[200], qv[200], qe[32];
  go_quote(qs, sizeof(qs), s);
  if (bad) {
    go_quote(qv, sizeof(qv), p);
    go_quote(qe, sizeof(qe), bad);
    snprintf(c->err, sizeof(c->err), "parsing time %s as \"%s\": cannot parse %s as %s", qs,
             micro ? micro_layout : layout, qv, qe);
    return -1;
  }
  if (!range && *p) {
    go_quote(qv, sizeof(qv), p);
    snprintf(c->err, sizeof(c->err), "parsing time %s: extra text: %s", qs, qv);
    return -1;
  }
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int y = tm.tm_year + 1900;
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (!range && (tm.tm_mday < 1 || tm.tm_mday > mdays[tm.tm_mon] + (tm.tm_mon == 1 && leap)))
    range = "day";
  if (range) {
    snprintf(c->err, sizeof(c->err), "parsing time %s: %s out of range", qs, range);
    return -1;
  }
  *secs = timegm(&tm) - off;
  *micros = us;
  return 0;
}

/* Sets o[k] to the time v as metav1.Time (micro 0: seconds) or MicroTime
 * (micro 1) marshals it: UTC, null for the zero time (with always; else
 * nothing is set). A string Go would not parse records its error in c
 * (the first one) and is kept as it is. */
static void put_time(conv *c, json_t *o, const char *k, const json_t *v, int micro, int always) {
  const char *s = json_string_value(v);
  time_t t;
  long us;
  if (!s || !*s) {
    if (always) json_object_set_new(o, k, json_null());
    return;
  }
  conv scratch;
  if (parse_time(c->err[0] ? &scratch : c, s, micro, &t, &us)) {
    json_object_set_new(o, k, json_string(s));
    return;
  }
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[48], frac[16] = "";
  if (micro) snprintf(frac, sizeof(frac), ".%06d", (int)(us % 1000000));
  snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d%sZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  json_object_set_new(o, k, json_string(buf));
}

/* corev1.ObjectReference (every field omitempty), a new object. */
static json_t *reference(const json_t *v) {
  static const char *const fields[] = {"kind", "namespace", "name", "uid", "apiVersion",
                                       "resourceVersion", "fieldPath", NULL};
  json_t *o = json_object();
  for (int i = 0; o && fields[i]; i++) put_str(o, fields[i], json_object_get(v, fields[i]), 0);
  return o;
}

/* corev1.EventSource (component, host; omitempty), a new object. */
static json_t *source(const json_t *v) {
  json_t *o = json_object();
  if (!o) return NULL;
  put_str(o, "component", json_object_get(v, "component"), 0);
  put_str(o, "host", json_object_get(v, "host"), 0);
  return o;
}

/* EventSeries: events.k8s.io/v1's fields are never omitted, core v1's
 * count is omitempty (its lastObservedTime, a struct, is always there). */
static json_t *series(conv *c, const json_t *v, int events_v1) {
  json_t *o = json_object();
  if (!o) return NULL;
  put_int(o, "count", json_object_get(v, "count"), events_v1);
  put_time(c, o, "lastObservedTime", json_object_get(v, "lastObservedTime"), 1, 1);
  return o;
}

/* A new object with kind, apiVersion and a copy of the metadata first;
 * NULL on ENOMEM. */
static json_t *object_head(const internal_event *e, const char *api_version) {
  json_t *o = json_pack("{s:s, s:s}", "kind", "Event", "apiVersion", api_version);
  if (!o) return NULL;
  json_t *md = json_is_object(e->metadata) ? json_deep_copy(e->metadata) : json_object();
  if (!md || json_object_set_new(o, "metadata", md)) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* The core v1 Event of e, in the type's field order. */
static json_t *write_core(conv *c, const internal_event *e) {
  json_t *o = object_head(e, "v1");
  if (!o) return NULL;
  json_object_set_new(o, "involvedObject", reference(e->involved));
  put_str(o, "reason", e->reason, 0);
  put_str(o, "message", e->message, 0);
  json_object_set_new(o, "source", source(e->source));
  put_time(c, o, "firstTimestamp", e->first, 0, 1);
  put_time(c, o, "lastTimestamp", e->last, 0, 1);
  put_int(o, "count", e->count, 0);
  put_str(o, "type", e->type, 0);
  put_time(c, o, "eventTime", e->event_time, 1, 1);
  if (json_is_object(e->series)) json_object_set_new(o, "series", series(c, e->series, 0));
  put_str(o, "action", e->action, 0);
  if (json_is_object(e->related)) json_object_set_new(o, "related", reference(e->related));
  put_str(o, "reportingComponent", e->controller, 1);
  put_str(o, "reportingInstance", e->instance, 1);
  return o;
}

/* The events.k8s.io/v1 Event of e, in the type's field order
 * (Convert_core_Event_To_v1_Event). */
static json_t *write_events_v1(conv *c, const internal_event *e) {
  json_t *o = object_head(e, "events.k8s.io/v1");
  if (!o) return NULL;
  put_time(c, o, "eventTime", e->event_time, 1, 1);
  if (json_is_object(e->series)) json_object_set_new(o, "series", series(c, e->series, 1));
  put_str(o, "reportingController", e->controller, 0);
  put_str(o, "reportingInstance", e->instance, 0);
  put_str(o, "action", e->action, 0);
  put_str(o, "reason", e->reason, 0);
  json_object_set_new(o, "regarding", reference(e->involved));
  if (json_is_object(e->related)) json_object_set_new(o, "related", reference(e->related));
  put_str(o, "note", e->message, 0);
  put_str(o, "type", e->type, 0);
  json_object_set_new(o, "deprecatedSource", source(e->source));
  put_time(c, o, "deprecatedFirstTimestamp", e->first, 0, 1);
  put_time(c, o, "deprecatedLastTimestamp", e->last, 0, 1);
  put_int(o, "deprecatedCount", e->count, 0);
  return o;
}

json_t *kin__sim_event_to_events_v1(const json_t *core) {
  internal_event e;
  conv c = {""};
  read_core(core, &e);
  return write_events_v1(&c, &e);
}

/* Removes from a managedFields entry's field set (fieldsV1) the top-level
 * fields that are not in the Event type of its version (events_v1: the
 * events.k8s.io/v1 one): the server's decoder drops them before its field
 * manager sees the object, the sim's field manager ran on the body as
 * sent. */
static void drop_unknown_fields(json_t *set, int events_v1) {
  static const char *const core[] = {
      "f:metadata", "f:involvedObject", "f:reason", "f:message", "f:source", "f:firstTimestamp",
      "f:lastTimestamp", "f:count", "f:type", "f:eventTime", "f:series", "f:action",
      "f:related", "f:reportingComponent", "f:reportingInstance", NULL};
  static const char *const ev[] = {
      "f:metadata", "f:eventTime", "f:series", "f:reportingController", "f:reportingInstance",
      "f:action", "f:reason", "f:regarding", "f:related", "f:note", "f:type",
      "f:deprecatedSource", "f:deprecatedFirstTimestamp", "f:deprecatedLastTimestamp",
      "f:deprecatedCount", NULL};
  const char *const *known = events_v1 ? ev : core;
  const char *k;
  json_t *v;
  void *tmp;
  json_object_foreach_safe(set, tmp, k, v) {
    int found = 0;
    for (int i = 0; known[i] && !found; i++) found = !strcmp(known[i], k);
    if (!found) json_object_del(set, k);
  }
}

/* Removes from o's managedFields the entries of apiVersion other (the
 * other Event version). The server's field manager cannot convert an
 * Event's field set between the two versions (its version converter
 * answers "not registered"), and structured-merge-diff then drops every
 * manager of the other version on each write (merge.Updater.update). */
static void drop_managers_of(json_t *o, const char *other) {
  json_t *mf = json_object_get(json_object_get(o, "metadata"), "managedFields");
  for (size_t i = json_array_size(mf); i-- > 0;) {
    json_t *entry = json_array_get(mf, i);
    const char *av = json_string_value(json_object_get(entry, "apiVersion"));
    if (av && !strcmp(av, other))
      json_array_remove(mf, i);
    else if (av)
      drop_unknown_fields(json_object_get(entry, "fieldsV1"), strcmp(av, "v1") != 0);
  }
  if (json_is_array(mf) && !json_array_size(mf))
    json_object_del(json_object_get(o, "metadata"), "managedFields");
}

/* The stored form of e written through the Event version whose managers'
 * other is not ("v1" or "events.k8s.io/v1"), or NULL with the decoder's
 * 400 in err (a time Go does not parse) or nothing in err (ENOMEM). */
static json_t *stored_form(const internal_event *e, const char *other, kin__sim_result *err) {
  conv c = {""};
  json_t *o = write_core(&c, e);
  if (o && c.err[0]) {
    json_decref(o);
    kin__sim_err_bad_request(err, "Event in version \"v1\" cannot be handled as a Event: %s",
                             c.err);
    return NULL;
  }
  if (o) drop_managers_of(o, other);
  return o;
}

json_t *kin__sim_event_from_events_v1(const json_t *ev, kin__sim_result *err) {
  internal_event e;
  read_events_v1(ev, &e);
  return stored_form(&e, "v1", err);
}

json_t *kin__sim_event_core_canonical(const json_t *core, kin__sim_result *err) {
  internal_event e;
  read_core(core, &e);
  return stored_form(&e, "events.k8s.io/v1", err);
}

void kin__sim_event_hooks(kin__sim_resource *r) {
  if (r->crd_name || strcmp(r->resource, "events") || strcmp(r->version, "v1")) return;
  if (!strcmp(r->group, "events.k8s.io")) {
    r->convert_out = kin__sim_event_to_events_v1;
    r->convert_in = kin__sim_event_from_events_v1;
  } else if (!*r->group) {
    r->convert_in = kin__sim_event_core_canonical;
  } else {
    return;
  }
  r->validate = kin__sim_event_validate;
}
