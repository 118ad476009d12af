/* event_sink.c -- the REST side of the recorder (event_sink.h): Event
 * bodies in the shapes of events.k8s.io/v1 (tools/events) and core v1
 * (tools/record), created or patched through the kin_client. Runs on the
 * recorder's writer thread only; no state of its own. */
#include "event_sink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "kin.h"
#include "rest_client.h"

/* The API server's limit on an Event's note / message (noteLengthLimit). */
#define NOTE_MAX 1024

void kin__event_item_free(kin__event_item *it) {
  if (!it) return;
  free((char *)it->ref.api_version);
  free((char *)it->ref.kind);
  free((char *)it->ref.namespace_);
  free((char *)it->ref.name);
  free((char *)it->ref.uid);
  free((char *)it->ref.resource_version);
  free((char *)it->ref.field_path);
  free(it->component);
  free(it->host);
  free(it->type);
  free(it->reason);
  free(it->action);
  free(it->message);
  free(it);
}

void kin__event_time(uint64_t wall_ns, int micro, char *buf, size_t n) {
  time_t t = (time_t)(wall_ns / KIN_NSEC_PER_SEC);
  struct tm tm;
  gmtime_r(&t, &tm);
  char base[32];
  strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
  if (micro)
    snprintf(buf, n, "%s.%06uZ", base, (unsigned)(wall_ns % KIN_NSEC_PER_SEC / 1000));
  else
    snprintf(buf, n, "%sZ", base);
}

int kin__event_sink_detect(kin_client *c, kin_io_canceler *cancel, long timeout_ms) {
  /* the group-version's resource list, as discovery would fetch it, but
   * with the writer's canceler and timeout */
  kin_client_request req = {.path = "/apis/events.k8s.io/v1", .idempotent = 1,
                            .cancel = cancel, .timeout_ms = timeout_ms};
  kin_result res;
  int rc = kin_client_do(c, &req, &res);
  if (rc == 0)
    rc = res.body && strstr(res.body, "\"name\":\"events\"") ? KIN_EVENTS_API_EVENTS_V1
                                                             : KIN_EVENTS_API_CORE_V1;
  else if (rc == KIN_ESTATUS && res.code == 404)
    rc = KIN_EVENTS_API_CORE_V1;
  kin_result_free(&res);
  return rc;
}

static int set(const char *v) { return v && *v; }

/* Appends ,"k":"v" when v is set. */
static void field(kin__buf *b, const char *k, const char *v) {
  if (!set(v)) return;
  kin__buf_printf(b, ",\"%s\":", k);
  kin__buf_json_str(b, v);
}

/* Appends the message cut to NOTE_MAX bytes at a UTF-8 boundary. */
static void note(kin__buf *b, const char *k, const char *msg) {
  size_t n = strlen(msg);
  char *cut = NULL;
  if (n > NOTE_MAX) {
    n = NOTE_MAX;
    while (n > 0 && ((unsigned char)msg[n] & 0xC0) == 0x80) n--;
    cut = strndup(msg, n);
  }
  kin__buf_printf(b, ",\"%s\":", k);
  kin__buf_json_str(b, cut ? cut : msg);
  free(cut);
}

/* The ObjectReference of it (regarding / involvedObject). */
static void ref(kin__buf *b, const char *k, const kin_event_ref *r) {
  kin__buf_printf(b, ",\"%s\":{\"kind\":", k);
  kin__buf_json_str(b, r->kind);
  field(b, "namespace", r->namespace_);
  field(b, "name", r->name);
  field(b, "uid", r->uid);
  field(b, "apiVersion", r->api_version);
  field(b, "resourceVersion", r->resource_version);
  field(b, "fieldPath", r->field_path);
  kin__buf_puts(b, "}");
}

static const char *event_ns(const kin__event_item *it) {
  return set(it->ref.namespace_) ? it->ref.namespace_ : "default";
}

/* An events.k8s.io/v1 Event (a repeat created again carries its series). */
static void body_events_v1(kin__buf *b, const kin__event_item *it, const kin__event_out *o) {
  char first[40], last[40];
  kin__event_time(o->first_ns, 1, first, sizeof(first));
  kin__event_time(o->last_ns, 1, last, sizeof(last));
  kin__buf_puts(b, "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":");
  kin__buf_json_str(b, o->name);
  kin__buf_puts(b, ",\"namespace\":");
  kin__buf_json_str(b, event_ns(it));
  kin__buf_printf(b, "},\"eventTime\":\"%s\"", first);
  field(b, "reportingController", it->component);
  field(b, "reportingInstance", it->host);
  field(b, "action", set(it->action) ? it->action : it->reason);
  field(b, "reason", it->reason);
  field(b, "type", it->type);
  ref(b, "regarding", &it->ref);
  note(b, "note", o->message);
  if (o->count > 1) kin__buf_printf(b, ",\"series\":{\"count\":%u,\"lastObservedTime\":\"%s\"}", o->count, last);
  kin__buf_puts(b, "}");
}

/* A core v1 Event, as tools/record makes it. */
static void body_core_v1(kin__buf *b, const kin__event_item *it, const kin__event_out *o) {
  char first[40], last[40];
  kin__event_time(o->first_ns, 0, first, sizeof(first));
  kin__event_time(o->last_ns, 0, last, sizeof(last));
  kin__buf_puts(b, "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":");
  kin__buf_json_str(b, o->name);
  kin__buf_puts(b, ",\"namespace\":");
  kin__buf_json_str(b, event_ns(it));
  kin__buf_puts(b, "}");
  ref(b, "involvedObject", &it->ref);
  field(b, "reason", it->reason);
  note(b, "message", o->message);
  kin__buf_puts(b, ",\"source\":{\"component\":");
  kin__buf_json_str(b, it->component);
  field(b, "host", it->host);
  kin__buf_printf(b, "},\"firstTimestamp\":\"%s\",\"lastTimestamp\":\"%s\",\"count\":%u", first,
                  last, o->count);
  field(b, "type", it->type);
  field(b, "reportingComponent", it->component);
  field(b, "reportingInstance", it->host);
  kin__buf_puts(b, "}");
}

/* The patch of a repeat: the series (events.k8s.io/v1, whose note is
 * immutable) or count, lastTimestamp and message (core v1). */
static void patch_body(kin__buf *b, int api, const kin__event_out *o) {
  char last[40];
  if (api == KIN_EVENTS_API_EVENTS_V1) {
    kin__event_time(o->last_ns, 1, last, sizeof(last));
    kin__buf_printf(b, "{\"series\":{\"count\":%u,\"lastObservedTime\":\"%s\"}}", o->count, last);
    return;
  }
  kin__event_time(o->last_ns, 0, last, sizeof(last));
  kin__buf_printf(b, "{\"count\":%u,\"lastTimestamp\":\"%s\"", o->count, last);
  note(b, "message", o->message);
  kin__buf_puts(b, "}");
}

int kin__event_sink_write(kin_client *c, const kin_call_ctx *ctx, int api,
                          const kin__event_item *it, const kin__event_out *o, kin_result *res) {
  memset(res, 0, sizeof(*res));
  /* both are built-ins: no discovery lookup (which no canceler reaches) */
  kin_resource r = {.group = api == KIN_EVENTS_API_EVENTS_V1 ? "events.k8s.io" : "",
                    .version = "v1", .resource = "events", .kind = "Event", .namespaced = 1};
  int rc;
  kin__buf b = {0};
  if (o->repeat) {
    patch_body(&b, api, o);
    if (b.oom) return KIN_ENOMEM;
    rc = kin_client_patch(c, ctx, &r, event_ns(it), o->name, KIN_PATCH_MERGE, b.p, b.len, NULL,
                          res);
    kin__buf_free(&b);
    if (rc != KIN_ESTATUS || res->code != 404) return rc;
    /* gone (expired or deleted): create it again, as client-go does */
    kin_result_free(res);
    memset(res, 0, sizeof(*res));
  }
  if (api == KIN_EVENTS_API_EVENTS_V1)
    body_events_v1(&b, it, o);
  else
    body_core_v1(&b, it, o);
  if (b.oom) {
    kin__buf_free(&b);
    return KIN_ENOMEM;
  }
  kin_write_opts wo = {.name = o->name};
  rc = kin_client_create(c, ctx, &r, event_ns(it), b.p, b.len, &wo, res);
  kin__buf_free(&b);
  return rc;
}
