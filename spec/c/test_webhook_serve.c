/* test_webhook_serve.c -- webhook.h answered in memory
 * (kin_webhook_server_serve): validating, mutating and conversion reviews
 * with their exact answers, bodies that are no review, unknown paths,
 * size limits, a failing fn, the deadline, controller-runtime's metrics,
 * and remove waiting for a call under way. */
#include "kin_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kin.h"
#include "metrics.h"
#include "webhook.h"
#include "webhook_int.h"
#include "webhook_test_util.h"

static char *dup_s(const char *s) { return strdup(s); }

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What the last call of a test fn saw. */
static struct {
  char uid[64], op[32], kind[64], resource[64], name[64], ns[64], obj_name[64], old_name[64];
  char user[256], options[64], desired[64];
  int dry_run, has_object, has_old;
  size_t nobjects;
  uint64_t deadline_left_ms;
} seen;

static void record(const kin_webhook_request *r) {
  memset(&seen, 0, sizeof seen);
  snprintf(seen.uid, sizeof seen.uid, "%s", r->uid);
  snprintf(seen.op, sizeof seen.op, "%s", r->operation);
  snprintf(seen.kind, sizeof seen.kind, "%s/%s/%s", r->kind_group, r->kind_version, r->kind);
  snprintf(seen.resource, sizeof seen.resource, "%s/%s/%s%s%s", r->resource_group,
           r->resource_version, r->resource, *r->sub_resource ? "/" : "", r->sub_resource);
  snprintf(seen.name, sizeof seen.name, "%s", r->name);
  snprintf(seen.ns, sizeof seen.ns, "%s", r->namespace_);
  snprintf(seen.user, sizeof seen.user, "%.*s", (int)r->user_info_len, r->user_info);
  snprintf(seen.options, sizeof seen.options, "%.*s", (int)r->options_len, r->options);
  snprintf(seen.desired, sizeof seen.desired, "%s", r->desired_api_version);
  seen.dry_run = r->dry_run;
  seen.has_object = r->object != NULL;
  seen.has_old = r->old_object != NULL;
  if (r->object) snprintf(seen.obj_name, sizeof seen.obj_name, "%s", kin_obj_name(r->object));
  if (r->old_object) snprintf(seen.old_name, sizeof seen.old_name, "%s", kin_obj_name(r->old_object));
  seen.nobjects = r->nobjects;
  uint64_t now = mono_ns();
  seen.deadline_left_ms = r->deadline_ns > now ? (r->deadline_ns - now) / 1000000 : 0;
}

/* Allows objects whose name is not "bad"; denies "bad" with a warning. */
static int validate(void *ud, const kin_webhook_request *r, kin_webhook_response *resp) {
  (void)ud;
  record(r);
  if (r->object && strcmp(kin_obj_name(r->object), "bad") == 0) {
    resp->allowed = 0;
    resp->message = dup_s("name \"bad\" is not allowed");
    resp->warnings = calloc(1, sizeof(char *));
    resp->warnings[0] = dup_s("think again");
    resp->nwarnings = 1;
    return 0;
  }
  resp->allowed = 1;
  return 0;
}

/* Adds spec.replicas: 1. */
static int mutate(void *ud, const kin_webhook_request *r, kin_webhook_response *resp) {
  (void)ud;
  record(r);
  resp->allowed = 1;
  resp->patch = dup_s("[{\"op\":\"add\",\"path\":\"/spec/replicas\",\"value\":1}]");
  resp->patch_len = r->dry_run ? 0 : strlen(resp->patch); /* 0: NUL-terminated */
  return 0;
}

/* Sets each object's apiVersion to the desired one (text surgery enough
 * for the test's objects, which start with "apiVersion"). */
static int convert(void *ud, const kin_webhook_request *r, kin_webhook_response *resp) {
  (void)ud;
  record(r);
  resp->converted = calloc(r->nobjects + 1, sizeof(char *));
  resp->converted_len = calloc(r->nobjects + 1, sizeof(size_t));
  for (size_t i = 0; i < r->nobjects; i++) {
    char buf[256];
    snprintf(buf, sizeof buf, "{\"apiVersion\":\"%s\",\"kind\":\"Website\",\"metadata\":{\"name\":\"%s\"}}",
             r->desired_api_version, kin_obj_name(r->objects[i]));
    resp->converted[i] = dup_s(buf);
    resp->converted_len[i] = strlen(buf);
  }
  resp->nconverted = r->nobjects;
  return 0;
}

/* Converts one object too few. */
static int convert_short(void *ud, const kin_webhook_request *r, kin_webhook_response *resp) {
  (void)ud, (void)r;
  resp->nconverted = 0;
  return 0;
}

/* Fails as a handler that raised. */
static int broken(void *ud, const kin_webhook_request *r, kin_webhook_response *resp) {
  (void)ud, (void)r;
  resp->message = dup_s("webhook /broken: attempt to index a nil value");
  return KIN_EIO;
}

static kin_webhook_server *new_server(kin_metrics_registry *reg, size_t max_bytes) {
  kin_webhook_server_config cfg = {.metrics = reg, .max_request_bytes = max_bytes};
  kin_webhook_server *s = NULL;
  char err[200];
  assert_int_equal(kin_webhook_server_new(&cfg, &s, err, sizeof err), 0);
  return s;
}

static void add(kin_webhook_server *s, const char *path, kin_webhook_type t, kin_webhook_fn fn) {
  kin_webhook_hook h = {.path = path, .type = t, .fn = fn};
  assert_int_equal(kin_webhook_server_add(s, &h), 0);
}

/* Serves body at path; returns the status with the answer in *out. */
static int serve(kin_webhook_server *s, const char *path, const char *body, uint32_t tmo,
                 char **out) {
  size_t n = 0;
  *out = NULL;
  int st = kin_webhook_server_serve(s, path, body, strlen(body), tmo, out, &n);
  assert_non_null(*out);
  assert_int_equal(strlen(*out), n);
  return st;
}

#define ADMISSION(obj, extra)                                                                   \
  "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"         \
  "\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\","                                           \
  "\"kind\":{\"group\":\"example.com\",\"version\":\"v1\",\"kind\":\"Website\"},"               \
  "\"resource\":{\"group\":\"example.com\",\"version\":\"v1\",\"resource\":\"websites\"},"      \
  "\"name\":\"" obj "\",\"namespace\":\"default\",\"operation\":\"CREATE\","                    \
  "\"userInfo\":{\"username\":\"admin\",\"groups\":[\"system:masters\"]},"                      \
  "\"object\":{\"apiVersion\":\"example.com/v1\",\"kind\":\"Website\",\"metadata\":{\"name\":\"" obj \
  "\",\"namespace\":\"default\"},\"spec\":{}},\"oldObject\":null,\"dryRun\":false" extra "}}"

static void test_webhook_serve_Validating(void **state) {
  (void)state;
  kin_webhook_server *s = new_server(NULL, 0);
  add(s, "/validate-example-com-v1-website", KIN_WEBHOOK_VALIDATING, validate);
  char *out;
  assert_int_equal(serve(s, "/validate-example-com-v1-website",
                         ADMISSION("ok", ",\"options\":{\"kind\":\"CreateOptions\"}"), 0, &out),
                   200);
  assert_string_equal(out, "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\","
                           "\"response\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\","
                           "\"allowed\":true,\"status\":{\"metadata\":{},\"code\":200}}}\n");
  free(out);
  assert_string_equal(seen.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  assert_string_equal(seen.op, "CREATE");
  assert_string_equal(seen.kind, "example.com/v1/Website");
  assert_string_equal(seen.resource, "example.com/v1/websites");
  assert_string_equal(seen.name, "ok");
  assert_string_equal(seen.ns, "default");
  assert_string_equal(seen.obj_name, "ok");
  assert_false(seen.has_old);
  assert_false(seen.dry_run);
  assert_string_equal(seen.user, "{\"username\":\"admin\",\"groups\":[\"system:masters\"]}");
  assert_string_equal(seen.options, "{\"kind\":\"CreateOptions\"}");

  assert_int_equal(serve(s, "/validate-example-com-v1-website", ADMISSION("bad", ""), 0, &out), 200);
  assert_string_equal(out, "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\","
                           "\"response\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\","
                           "\"allowed\":false,\"status\":{\"metadata\":{},\"message\":"
                           "\"name \\\"bad\\\" is not allowed\",\"reason\":\"Forbidden\","
                           "\"code\":403},\"warnings\":[\"think again\"]}}\n");
  free(out);
  assert_string_equal(seen.options, "null");
  kin_webhook_server_free(s);
}

static void test_webhook_serve_MutatingAndDelete(void **state) {
  (void)state;
  kin_webhook_server *s = new_server(NULL, 0);
  add(s, "/mutate", KIN_WEBHOOK_MUTATING, mutate);
  char *out;
  assert_int_equal(serve(s, "/mutate", ADMISSION("web", ""), 0, &out), 200);
  /* base64 of [{"op":"add","path":"/spec/replicas","value":1}] */
  assert_string_equal(out, "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\","
                           "\"response\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\","
                           "\"allowed\":true,\"status\":{\"metadata\":{},\"code\":200},"
                           "\"patch\":\"W3sib3AiOiJhZGQiLCJwYXRoIjoiL3NwZWMvcmVwbGljYXMiLCJ2YWx1"
                           "ZSI6MX1d\",\"patchType\":\"JSONPatch\"}}\n");
  free(out);
  /* a DELETE: object null, oldObject set, dry run, a v1beta1 review answered in kind */
  const char *del =
      "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{"
      "\"uid\":\"u\\u00e9\",\"operation\":\"DELETE\",\"subResource\":\"status\",\"object\":null,"
      "\"oldObject\":{\"metadata\":{\"name\":\"gone\"}},\"dryRun\":true}}";
  assert_int_equal(serve(s, "/mutate", del, 0, &out), 200);
  assert_non_null(strstr(out, "\"apiVersion\":\"admission.k8s.io/v1beta1\""));
  assert_non_null(strstr(out, "\"uid\":\"u\xc3\xa9\""));
  assert_non_null(strstr(out, "\"patchType\":\"JSONPatch\"")); /* patch_len 0: strlen */
  free(out);
  assert_false(seen.has_object);
  assert_string_equal(seen.old_name, "gone");
  assert_true(seen.dry_run);
  assert_string_equal(seen.op, "DELETE");
  assert_string_equal(seen.resource, "///status");
  assert_string_equal(seen.user, "{}");
  kin_webhook_server_free(s);
}

static void test_webhook_serve_Conversion(void **state) {
  (void)state;
  kin_webhook_server *s = new_server(NULL, 0);
  add(s, "/convert", KIN_WEBHOOK_CONVERSION, convert);
  add(s, "/short", KIN_WEBHOOK_CONVERSION, convert_short);
  const char *review =
      "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{"
      "\"uid\":\"c-1\",\"desiredAPIVersion\":\"example.com/v2\",\"objects\":["
      "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Website\",\"metadata\":{\"name\":\"a\"}},"
      "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Website\",\"metadata\":{\"name\":\"b\"}}]}}";
  char *out;
  assert_int_equal(serve(s, "/convert", review, 0, &out), 200);
  assert_string_equal(
      out, "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\",\"response\":{"
           "\"uid\":\"c-1\",\"convertedObjects\":["
           "{\"apiVersion\":\"example.com/v2\",\"kind\":\"Website\",\"metadata\":{\"name\":\"a\"}},"
           "{\"apiVersion\":\"example.com/v2\",\"kind\":\"Website\",\"metadata\":{\"name\":\"b\"}}],"
           "\"result\":{\"metadata\":{},\"status\":\"Success\"}}}\n");
  free(out);
  assert_int_equal(seen.nobjects, 2);
  assert_string_equal(seen.desired, "example.com/v2");
  assert_int_equal(serve(s, "/short", review, 0, &out), 200);
  assert_string_equal(
      out, "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\",\"response\":{"
           "\"uid\":\"c-1\",\"convertedObjects\":null,\"result\":{\"metadata\":{},\"status\":"
           "\"Failure\",\"message\":\"converted 0 objects, expected 2\"}}}\n");
  free(out);
  /* an AdmissionReview sent to a conversion hook */
  assert_int_equal(serve(s, "/convert", ADMISSION("x", ""), 0, &out), 400);
  assert_string_equal(out, "kind \"AdmissionReview\" is not ConversionReview: this webhook takes a "
                           "apiextensions.k8s.io/v1 ConversionReview\n");
  free(out);
  kin_webhook_server_free(s);
}

static void test_webhook_serve_BadBodies(void **state) {
  (void)state;
  kin_webhook_server *s = new_server(NULL, 64 * 1024);
  add(s, "/v", KIN_WEBHOOK_VALIDATING, validate);
  static const struct {
    const char *body;
    int status;
    const char *msg;
  } cases[] = {
      {"<html><body>hi</body></html>", 400, "the body is not JSON (error at byte 0)\n"},
      {"{\"a\":", 400, "the body is not JSON (error at byte 5)\n"},
      {"[1,2]", 400, "the body is not a JSON object\n"},
      {"{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}", 400,
       "kind \"Pod\" is not AdmissionReview: this webhook takes a admission.k8s.io/v1 "
       "AdmissionReview\n"},
      {"{\"apiVersion\":\"admission.k8s.io/v2\",\"kind\":\"AdmissionReview\"}", 400,
       "apiVersion \"admission.k8s.io/v2\" is not admission.k8s.io/v1 (or "
       "admission.k8s.io/v1beta1)\n"},
      {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}", 400,
       "got an empty AdmissionRequest\n"},
      {"{\"kind\":\"AdmissionReview\",\"request\":{\"uid\":7}}", 400, "request.uid: not a string\n"},
      {"{\"request\":{\"object\":[1]}}", 400, "request.object: not a JSON object\n"},
      {"{\"request\":{\"object\":{\"metadata\":3}}}", 400,
       "request.object: not a Kubernetes object (metadata is not an object)\n"},
      {"{\"request\":{\"kind\":{\"group\":1}}}", 400, "request.kind.group: not a string\n"},
      {"{\"request\":{\"dryRun\":\"yes\"}}", 400, "request.dryRun: not a boolean\n"},
      {"", 400, "request body is empty\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *out;
    int st = serve(s, "/v", cases[i].body, 0, &out);
    if (st != cases[i].status || strcmp(out, cases[i].msg) != 0)
      fail_msg("case %zu: %d %s", i, st, out);
    free(out);
  }
  char *out;
  assert_int_equal(serve(s, "/nope", "{}", 0, &out), 404);
  assert_string_equal(out, "404 page not found\n");
  free(out);
  char *big = malloc(64 * 1024 + 2);
  memset(big, ' ', 64 * 1024 + 1);
  big[64 * 1024 + 1] = 0;
  assert_int_equal(serve(s, "/v", big, 0, &out), 413);
  assert_string_equal(out, "request entity is too large; limit is 65536 bytes\n");
  free(out);
  free(big);
  /* a minimal review is enough: apiVersion and kind defaulted */
  assert_int_equal(serve(s, "/v", "{\"request\":{\"uid\":\"m\"}}", 0, &out), 200);
  assert_non_null(strstr(out, "\"apiVersion\":\"admission.k8s.io/v1\""));
  free(out);
  kin_webhook_server_free(s);
}

static void test_webhook_serve_FailureCountsPanic(void **state) {
  (void)state;
  kin_metrics_registry *reg;
  assert_int_equal(kin_metrics_registry_new(&reg), 0);
  kin_webhook_server *s = new_server(reg, 0);
  add(s, "/broken", KIN_WEBHOOK_VALIDATING, broken);
  add(s, "/broken-convert", KIN_WEBHOOK_CONVERSION, broken);
  add(s, "/v", KIN_WEBHOOK_VALIDATING, validate);
  char *out;
  assert_int_equal(serve(s, "/broken", ADMISSION("x", ""), 0, &out), 200);
  assert_string_equal(out, "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\","
                           "\"response\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\","
                           "\"allowed\":false,\"status\":{\"metadata\":{},\"message\":"
                           "\"webhook /broken: attempt to index a nil value\",\"code\":500}}}\n");
  free(out);
  assert_int_equal(serve(s, "/broken-convert",
                         "{\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"c\","
                         "\"desiredAPIVersion\":\"g/v2\",\"objects\":[]}}",
                         0, &out),
                   200);
  assert_non_null(strstr(out, "\"status\":\"Failure\",\"message\":\"webhook /broken: attempt to "
                              "index a nil value\""));
  free(out);
  assert_int_equal(serve(s, "/v", "nope", 0, &out), 400);
  free(out);
  assert_int_equal(serve(s, "/v", ADMISSION("ok", ""), 0, &out), 200);
  free(out);
  size_t n;
  assert_int_equal(kin_metrics_render(reg, &out, &n), 0);
  static const char *const want[] = {
      "controller_runtime_webhook_panics_total 1\n",
      "controller_runtime_conversion_webhook_panics_total 1\n",
      "controller_runtime_webhook_requests_total{webhook=\"/broken\",code=\"200\"} 1\n",
      "controller_runtime_webhook_requests_total{webhook=\"/broken\",code=\"500\"} 0\n",
      "controller_runtime_webhook_requests_total{webhook=\"/v\",code=\"400\"} 1\n",
      "controller_runtime_webhook_requests_total{webhook=\"/v\",code=\"200\"} 1\n",
      "controller_runtime_webhook_requests_in_flight{webhook=\"/v\"} 0\n",
      "controller_runtime_webhook_latency_seconds_bucket{webhook=\"/v\",le=\"1e-08\"} 0\n",
      "controller_runtime_webhook_latency_seconds_bucket{webhook=\"/v\",le=\"1000\"} 2\n",
      "controller_runtime_webhook_latency_seconds_count{webhook=\"/v\"} 2\n",
      "# HELP controller_runtime_webhook_requests_total Total number of admission requests by HTTP "
      "status code.\n",
      "# TYPE controller_runtime_webhook_latency_seconds histogram\n",
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!strstr(out, want[i])) fail_msg("no %s in:\n%s", want[i], out);
  free(out);
  /* a second server on the same registry shares the families */
  kin_webhook_server *s2 = new_server(reg, 0);
  kin_webhook_server_free(s2);
  kin_webhook_server_free(s);
  kin_metrics_registry_free(reg);
}

static void test_webhook_serve_Deadline(void **state) {
  (void)state;
  kin_webhook_server *s = new_server(NULL, 0);
  kin_webhook_hook h = {.path = "/v", .type = KIN_WEBHOOK_VALIDATING, .fn = validate,
                        .timeout_ns = 20ull * 1000000000ull};
  assert_int_equal(kin_webhook_server_add(s, &h), 0);
  char *out;
  /* no ?timeout=: the hook's 20 s less 1 s */
  assert_int_equal(serve(s, "/v", ADMISSION("ok", ""), 0, &out), 200);
  free(out);
  assert_in_range(seen.deadline_left_ms, 18500, 19000);
  /* ?timeout=5s: less half a second */
  assert_int_equal(serve(s, "/v", ADMISSION("ok", ""), 5000, &out), 200);
  free(out);
  assert_in_range(seen.deadline_left_ms, 4000, 4500);
  /* ?timeout=1h: cut to kube-apiserver's largest, 30 s, less 1 s */
  assert_int_equal(serve(s, "/v", ADMISSION("ok", ""), 3600000, &out), 200);
  free(out);
  assert_in_range(seen.deadline_left_ms, 28500, 29000);
  kin_webhook_server_free(s);

  char err[200];
  assert_int_equal(kin_webhook_server_new(&(kin_webhook_server_config){.bind_address = "x"}, &s,
                                          err, sizeof err),
                   KIN_EINVAL);
  assert_string_equal(err, "webhook bind address \"x\": want host:port or :port");
  assert_int_equal(kin_webhook_server_new(&(kin_webhook_server_config){.bind_address = "nohost:1"},
                                          &s, err, sizeof err),
                   KIN_EINVAL);
  assert_string_equal(err, "webhook bind address \"nohost:1\": \"nohost\" is not an IP address");

  /* kube-apiserver's ?timeout= is a Go duration */
  static const struct {
    const char *in;
    uint64_t ns;
  } ok[] = {{"10s", 10000000000ull}, {"1m30s", 90000000000ull}, {"500ms", 500000000ull},
            {"1.5s", 1500000000ull}, {"0", 0},  {"2h", 7200000000000ull}, {"3us", 3000ull},
            {"7ns", 7}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    uint64_t ns = 1;
    assert_int_equal(kin__wh_parse_duration(ok[i].in, &ns), 0);
    assert_int_equal(ns, ok[i].ns);
  }
  static const char *const bad[] = {"", "10", "s", "10x", "-1s", "1s2", "abc"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t ns;
    if (kin__wh_parse_duration(bad[i], &ns) != KIN_EINVAL) fail_msg("\"%s\" parsed", bad[i]);
  }
}

/* remove waits for a call under way */
static wh_test_gate gate = WH_TEST_GATE_INIT;

static void *serve_thread(void *arg) {
  char *out = NULL;
  size_t n;
  const char *body = "{\"request\":{\"uid\":\"t\"}}";
  intptr_t st = kin_webhook_server_serve(arg, "/slow", body, strlen(body), 0, &out, &n);
  free(out);
  return (void *)st;
}

static int removed;
static void *remove_thread(void *arg) {
  intptr_t rc = kin_webhook_server_remove(arg, "/slow");
  __atomic_store_n(&removed, 1, __ATOMIC_SEQ_CST);
  return (void *)rc;
}

static void test_webhook_serve_RemoveWaits(void **state) {
  (void)state;
  kin_webhook_server *s = new_server(NULL, 0);
  kin_webhook_hook slow = {.path = "/slow", .type = KIN_WEBHOOK_VALIDATING, .fn = wh_test_gate_fn,
                           .ud = &gate};
  assert_int_equal(kin_webhook_server_add(s, &slow), 0);
  kin_webhook_hook dup = slow;
  assert_int_equal(kin_webhook_server_add(s, &dup), KIN_EEXIST);
  dup.path = "slow";
  assert_int_equal(kin_webhook_server_add(s, &dup), KIN_EINVAL);
  pthread_t a, b;
  pthread_create(&a, NULL, serve_thread, s);
  wh_test_gate_wait_entered(&gate);
  pthread_create(&b, NULL, remove_thread, s);
  kin_test_sleep_ms(50);
  assert_false(__atomic_load_n(&removed, __ATOMIC_SEQ_CST));
  /* removed from the table already: a new request finds nothing */
  char *out;
  assert_int_equal(serve(s, "/slow", "{}", 0, &out), 404);
  free(out);
  wh_test_gate_release(&gate);
  void *st, *rc;
  pthread_join(a, &st);
  pthread_join(b, &rc);
  assert_int_equal((intptr_t)st, 200);
  assert_int_equal((intptr_t)rc, 0);
  assert_int_equal(kin_webhook_server_remove(s, "/slow"), KIN_ENOENT);
  kin_webhook_server_free(s);
}

KIN_SUITE(webhook_serve, cmocka_unit_test(test_webhook_serve_Validating),
          cmocka_unit_test(test_webhook_serve_MutatingAndDelete),
          cmocka_unit_test(test_webhook_serve_Conversion),
          cmocka_unit_test(test_webhook_serve_BadBodies),
          cmocka_unit_test(test_webhook_serve_FailureCountsPanic),
          cmocka_unit_test(test_webhook_serve_Deadline),
          cmocka_unit_test(test_webhook_serve_RemoveWaits))
