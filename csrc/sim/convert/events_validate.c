/* events_validate.c -- the Event strategy's validation
 * (k8s.io/kubernetes pkg/apis/core/validation/events.go), run on the stored
 * (core v1) form for both group-versions: the legacy checks every write
 * passes (the namespace of involvedObject; with eventTime set, the
 * reporting controller and instance, action, reason and their lengths),
 * and for events.k8s.io/v1 the strict ones (eventTime and a valid type
 * required, the deprecated fields unset, series, immutable fields on
 * update). Field paths are the internal type's, as the server's: a
 * client of events.k8s.io/v1 reads "firstTimestamp", "source" and
 * "message"; only the reporting controller is named after the request's
 * version. The 422 names kind "Event" without a group, as the server's
 * (the internal kind). Metadata is checked by the store's own paths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convert.h"

/* The errors found so far: the causes and the aggregate message. */
typedef struct {
  json_t *causes;
  char msg[4096];
  size_t len;
  int n;
} errors;

/* Adds a field error: reason FieldValueRequired ("Required value") when
 * detail is NULL, else FieldValueInvalid with value (already printed as
 * the server prints it) and detail. */
static void add(errors *e, const char *field, const char *value, const char *detail) {
  char body[1536];
  if (!detail)
    snprintf(body, sizeof(body), "Required value");
  else
    snprintf(body, sizeof(body), "Invalid value: %s: %s", value, detail);
  json_array_append_new(e->causes,
                        json_pack("{s:s, s:s, s:s}", "reason",
                                  detail ? "FieldValueInvalid" : "FieldValueRequired", "message",
                                  body, "field", field));
  if (e->len < sizeof(e->msg))
    e->len += (size_t)snprintf(e->msg + e->len, sizeof(e->msg) - e->len, "%s%s: %s",
                               e->n ? ", " : "", field, body);
  e->n++;
}

/* Go's %q of a plain string (no escapes needed in the sim's uses but
 * quotes and backslashes). */
static void quoted(char *buf, size_t cap, const char *s) {
  size_t n = 0;
  if (cap < 3) return;
  buf[n++] = '"';
  for (; s && *s && n + 3 < cap; s++) {
    if (*s == '"' || *s == '\\') buf[n++] = '\\';
    buf[n++] = *s;
  }
  buf[n++] = '"';
  buf[n] = 0;
}

/* The string o[k], "" when absent or not a string (borrowed). */
static const char *str(const json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

/* 1 when o[k] holds a time (a non-empty string). */
static int has_time(const json_t *o, const char *k) {
  return *str(o, k) != 0;
}

/* 1 for an ASCII letter or digit. */
static int is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A DNS-1123 subdomain: lower-case labels of [a-z0-9-], alphanumeric at
 * both ends, joined by dots. */
static int dns1123_subdomain(const char *s, size_t n) {
  if (!n) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int lc_alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    int edge = i == 0 || i + 1 == n || s[i - 1] == '.' || s[i + 1] == '.';
    if (c == '.' && (i == 0 || i + 1 == n || s[i + 1] == '.')) return 0;
    if (c != '.' && !lc_alnum && (c != '-' || edge)) return 0;
  }
  return 1;
}

/* ValidateQualifiedName: the errors of validation.IsQualifiedName, each a
 * field.Invalid of value. */
static void qualified_name(errors *e, const char *field, const char *value) {
  static const char key_re[] =
      "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
      "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
      "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  char q[512], d[1024];
  quoted(q, sizeof(q), value);
  const char *slash = strchr(value, '/');
  const char *name = value;
  if (slash && strchr(slash + 1, '/')) {
    snprintf(d, sizeof(d), "a valid label key %s with an optional DNS subdomain prefix and '/' "
             "(e.g. 'example.com/MyName')", key_re);
    add(e, field, q, d);
    return;
  }
  if (slash) {
    size_t pn = (size_t)(slash - value);
    name = slash + 1;
    if (!pn) {
      add(e, field, q, "prefix part must be non-empty");
    } else {
      if (pn > 253) add(e, field, q, "prefix part must be no more than 253 bytes");
      if (!dns1123_subdomain(value, pn))
        add(e, field, q,
            "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
    }
  }
  size_t n = strlen(name);
  if (!n)
    add(e, field, q, "name part must be non-empty");
  else if (n > 63)
    add(e, field, q, "name part must be no more than 63 bytes");
  int ok = n && is_alnum(name[0]) && is_alnum(name[n - 1]);
  for (size_t i = 0; ok && i < n; i++)
    ok = is_alnum(name[i]) || name[i] == '-' || name[i] == '_' || name[i] == '.';
  if (!ok) {
    snprintf(d, sizeof(d), "name part %s", key_re);
    add(e, field, q, d);
  }
}

/* legacyValidateEvent; core_v1: written through v1 (names the controller
 * reportingComponent). */
static void legacy(errors *e, const json_t *ev, int core_v1) {
  const char *ns = str(json_object_get(ev, "metadata"), "namespace");
  const char *ins = str(json_object_get(ev, "involvedObject"), "namespace");
  const char *ctl_field = core_v1 ? "reportingComponent" : "reportingController";
  char q[600];
  quoted(q, sizeof(q), ins);
  if (!has_time(ev, "eventTime")) {
    if ((!*ins && *ns && strcmp(ns, "default")) || (*ins && strcmp(ns, ins)))
      add(e, "involvedObject.namespace", q, "does not match event.namespace");
    return;
  }
  if (!*ins && strcmp(ns, "default") && strcmp(ns, "kube-system"))
    add(e, "involvedObject.namespace", q, "does not match event.namespace");
  const char *ctl = str(ev, "reportingComponent");
  if (!*ctl) add(e, ctl_field, NULL, NULL);
  qualified_name(e, ctl_field, ctl);
  static const struct {
    const char *field;
    size_t limit;
  } limits[] = {{"reportingInstance", 128}, {"action", 128}, {"reason", 128}};
  for (size_t i = 0; i < 3; i++) {
    size_t n = strlen(str(ev, limits[i].field));
    char d[64];
    snprintf(d, sizeof(d), "can have at most %zu characters", limits[i].limit);
    if (!n) add(e, limits[i].field, NULL, NULL);
    if (n > limits[i].limit) add(e, limits[i].field, "\"\"", d);
  }
  if (strlen(str(ev, "message")) > 1024)
    add(e, "message", "\"\"", "can have at most 1024 characters");
}

/* validateV1EventSeries. */
static void series(errors *e, const json_t *ev) {
  const json_t *s = json_object_get(ev, "series");
  if (!json_is_object(s)) return;
  if (json_integer_value(json_object_get(s, "count")) < 2)
    add(e, "series.count", "\"\"", "should be at least 2");
  if (!has_time(s, "lastObservedTime")) add(e, "series.lastObservedTime", NULL, NULL);
}

/* The name checks: ValidateObjectMeta's NameIsDNSSubdomain for
 * events.k8s.io/v1 (strict), else only the generic path-segment rule
 * every name passes (path.ValidateObjectName). */
static void name_checks(errors *e, const json_t *ev, int strict) {
  const char *name = str(json_object_get(ev, "metadata"), "name");
  char q[600];
  quoted(q, sizeof(q), name);
  if (!strict) {
    if (!strcmp(name, ".") || !strcmp(name, "..")) {
      char d[16];
      snprintf(d, sizeof(d), "may not be '%s'", name);
      add(e, "metadata.name", q, d);
      return;
    }
    if (strchr(name, '/')) add(e, "metadata.name", q, "may not contain '/'");
    if (strchr(name, '%')) add(e, "metadata.name", q, "may not contain '%'");
    return;
  }
  if (strlen(name) > 253) add(e, "metadata.name", q, "must be no more than 253 characters");
  if (!dns1123_subdomain(name, strlen(name)))
    add(e, "metadata.name", q,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
        "'-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
}

/* The strict checks of a create through events.k8s.io/v1. */
static void strict_create(errors *e, const json_t *ev) {
  name_checks(e, ev, 1);
  series(e, ev);
  if (!has_time(ev, "eventTime")) add(e, "eventTime", NULL, NULL);
  const char *type = str(ev, "type");
  if (strcmp(type, "Normal") && strcmp(type, "Warning")) {
    char d[300];
    snprintf(d, sizeof(d), "has invalid value: %.250s", type);
    add(e, "type", "\"\"", d);
  }
  if (has_time(ev, "firstTimestamp")) add(e, "firstTimestamp", "\"\"", "needs to be unset");
  if (has_time(ev, "lastTimestamp")) add(e, "lastTimestamp", "\"\"", "needs to be unset");
  if (json_integer_value(json_object_get(ev, "count")))
    add(e, "count", "\"\"", "needs to be unset");
  const json_t *src = json_object_get(ev, "source");
  if (*str(src, "component") || *str(src, "host")) add(e, "source", "\"\"", "needs to be unset");
}

/* The value of a changed immutable field as field.Invalid prints it: the
 * JSON of the internal type, whose structs carry no JSON tags (Go field
 * names, every field written): an ObjectReference or EventSource as an
 * object of its Go fields, a nil pointer as null, times as their JSON
 * strings (null for the zero time), strings quoted, counts plain. */
static void printed(char *buf, size_t cap, const char *key, const json_t *v) {
  static const char *const ref[] = {"kind", "Kind", "namespace", "Namespace", "name", "Name",
                                    "uid", "UID", "apiVersion", "APIVersion",
                                    "resourceVersion", "ResourceVersion", "fieldPath",
                                    "FieldPath", NULL};
  static const char *const src[] = {"component", "Component", "host", "Host", NULL};
  const char *const *fields = !strcmp(key, "involvedObject") || !strcmp(key, "related") ? ref
                              : !strcmp(key, "source")                                 ? src
                                                                                        : NULL;
  json_t *shown = NULL;
  if (fields && json_is_object(v)) {
    shown = json_object();
    for (int i = 0; shown && fields[i]; i += 2)
      json_object_set_new(shown, fields[i + 1], json_string(str(v, fields[i])));
  } else if (!v || json_is_null(v)) {
    int zero_string = !fields && strcmp(key, "firstTimestamp") && strcmp(key, "lastTimestamp") &&
                      strcmp(key, "eventTime") && strcmp(key, "count");
    snprintf(buf, cap, "%s", zero_string ? "\"\"" : !strcmp(key, "count") ? "0" : "null");
    return;
  }
  char *s = json_dumps(shown ? shown : v, JSON_COMPACT | JSON_ENCODE_ANY);
  json_decref(shown);
  snprintf(buf, cap, "%s", s ? s : "");
  free(s);
}

/* The strict checks of an update through events.k8s.io/v1. */
static void strict_update(errors *e, const json_t *ev, const json_t *old) {
  if (!json_equal(json_object_get(ev, "series"), json_object_get(old, "series"))) series(e, ev);
  static const struct {
    const char *key, *field;
  } immutable[] = {{"involvedObject", "involvedObject"},
                   {"reason", "reason"},
                   {"message", "message"},
                   {"source", "source"},
                   {"firstTimestamp", "firstTimestamp"},
                   {"lastTimestamp", "lastTimestamp"},
                   {"count", "count"},
                   {"reason", "reason"},
                   {"type", "type"},
                   {"eventTime", "eventTime"},
                   {"action", "action"},
                   {"related", "related"},
                   {"reportingComponent", "reportingController"},
                   {"reportingInstance", "reportingInstance"}};
  for (size_t i = 0; i < sizeof(immutable) / sizeof(immutable[0]); i++) {
    const json_t *a = json_object_get(ev, immutable[i].key);
    const json_t *b = json_object_get(old, immutable[i].key);
    if ((!a && !b) || json_equal(a, b) || (!a && json_is_null(b)) || (json_is_null(a) && !b))
      continue;
    if (json_is_string(a) && !*json_string_value(a) && !b) continue;
    if (json_is_string(b) && !*json_string_value(b) && !a) continue;
    char v[1024];
    printed(v, sizeof(v), immutable[i].key, a);
    add(e, immutable[i].field, v, "field is immutable");
  }
}

int kin__sim_event_validate(const kin__sim_resource *r, const json_t *obj, const json_t *old,
                            kin__sim_result *out) {
  int events_v1 = !strcmp(r->group, "events.k8s.io");
  errors e;
  memset(&e, 0, sizeof(e));
  e.causes = json_array();
  if (!e.causes) return 0;
  legacy(&e, obj, !events_v1);
  if (events_v1 && !old) strict_create(&e, obj);
  if (events_v1 && old) strict_update(&e, obj, old);
  /* the generic ObjectMeta check of a create, after the strategy's (a
   * 422 of its own) */
  if (!e.n && !old && !events_v1) name_checks(&e, obj, 0);
  if (!e.n) {
    json_decref(e.causes);
    return 0;
  }
  const char *name = str(json_object_get(obj, "metadata"), "name");
  json_t *details = json_pack("{s:s, s:s, s:o}", "name", name, "kind", "Event", "causes",
                              e.causes);
  if (e.n == 1)
    kin__sim_err(out, 422, "Invalid", details, "Event \"%s\" is invalid: %s", name, e.msg);
  else
    kin__sim_err(out, 422, "Invalid", details, "Event \"%s\" is invalid: [%s]", name, e.msg);
  return -1;
}
