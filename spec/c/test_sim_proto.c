/* test_sim_proto.c -- protobuf bodies (application/vnd.kubernetes.protobuf)
 * in kinformer.sim: the transcoder against kube-apiserver v1.36.3's own
 * answers (spec/c/fixtures/proto, captured by spec/e2e/capture-proto.sh:
 * decoding its bytes gives its JSON, encoding its JSON gives its bytes),
 * then the HTTP side: protobuf create/update/get/list/watch/delete, Accept
 * negotiation, and the server's 400/406/415 answers, worded as it words
 * them (captured from it with curl). */
#include "kin_test.h"

#include "kin.h"
#include "proto_int.h"
#include "sim_client.h"

#define PB "application/vnd.kubernetes.protobuf"

static const char *const fixtures[] = {
    "configmap", "configmaplist", "crd",  "daemonset",      "deployment", "event",
    "event_core", "lease",        "namespace", "node",      "pod",        "scale",
    "secret",    "service",       "serviceaccount", "statefulset", "status_404", NULL};

static json_t *load_json(const char *s) {
  json_error_t e;
  json_t *v = json_loads(s, 0, &e);
  if (!v) fail_msg("not JSON: %s", e.text);
  return v;
}

static void assert_json_equal(const json_t *got, const json_t *want, const char *what) {
  if (json_equal(got, want)) return;
  char *a = json_dumps(got, JSON_SORT_KEYS), *b = json_dumps(want, JSON_SORT_KEYS);
  print_error("%s:\n got %s\nwant %s\n", what, a, b);
  free(a);
  free(b);
  fail();
}

/* Every captured object decodes to kube-apiserver's JSON and its JSON
 * encodes to kube-apiserver's bytes, byte for byte (field order, zero
 * values of non-pointer fields, sorted map entries, the envelope). */
static void test_sim_ProtoMatchesKubeApiserver(void **state) {
  for (int i = 0; fixtures[i]; i++) {
    char name[64];
    size_t pn, jn;
    snprintf(name, sizeof(name), "proto/%s.pb", fixtures[i]);
    char *pb = kin_test_fixture(name, &pn);
    snprintf(name, sizeof(name), "proto/%s.json", fixtures[i]);
    char *js = kin_test_fixture(name, &jn);
    json_t *want = load_json(js);
    if (!strcmp(fixtures[i], "statefulset")) {
      /* The server's defaulting (not its codec) gives volumeClaimTemplates
       * apiVersion and kind, which have no protobuf field. */
      json_t *t = json_array_get(json_object_get(json_object_get(want, "spec"),
                                                 "volumeClaimTemplates"), 0);
      assert_int_equal(json_object_del(t, "apiVersion"), 0);
      assert_int_equal(json_object_del(t, "kind"), 0);
    }
    char err[512];
    kin__sim_pb_type tm;
    json_t *got = kin__sim_pb_unwrap((const uint8_t *)pb, pn, -1, &tm, err, sizeof(err));
    if (!got) fail_msg("%s: %s", fixtures[i], err);
    assert_json_equal(got, want, fixtures[i]);
    json_decref(got);
    json_decref(want);
    want = load_json(js);
    kin__buf out = {0};
    if (kin__sim_pb_wrap(want, NULL, NULL, &out, err, sizeof(err)))
      fail_msg("%s: %s", fixtures[i], err);
    if (out.len != pn || memcmp(out.p, pb, pn))
      fail_msg("%s: encoded %zu bytes, kube-apiserver %zu (or they differ)", fixtures[i], out.len,
               pn);
    kin__buf_free(&out);
    json_decref(want);
    free(pb);
    free(js);
  }
}

/* The special shapes, one by one, through encode then decode. */
static void test_sim_ProtoSpecialFields(void **state) {
  json_t *pod = load_json(
      "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"d\","
      "\"labels\":{\"z\":\"1\",\"a\":\"2\"},\"creationTimestamp\":\"2024-02-29T23:59:59Z\"},"
      "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"ports\":[{\"containerPort\":80}],"
      "\"resources\":{\"limits\":{\"cpu\":\"250m\",\"memory\":\"1Gi\"}},"
      "\"readinessProbe\":{\"httpGet\":{\"port\":\"http\"}},"
      "\"livenessProbe\":{\"tcpSocket\":{\"port\":8080}}}],"
      "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}],\"terminationGracePeriodSeconds\":0,"
      "\"automountServiceAccountToken\":false},\"status\":{}}");
  kin__buf b = {0};
  char err[512];
  assert_int_equal(kin__sim_pb_wrap(pod, NULL, NULL, &b, err, sizeof(err)), 0);
  kin__sim_pb_type tm;
  json_t *back = kin__sim_pb_unwrap((const uint8_t *)b.p, b.len, -1, &tm, err, sizeof(err));
  assert_non_null(back);
  assert_string_equal(tm.kind, "Pod");
  json_t *c = json_array_get(json_object_get(json_object_get(back, "spec"), "containers"), 0);
  /* IntOrString both ways, Quantity strings, pointer zeros kept */
  assert_string_equal(jstr(c, "readinessProbe.httpGet.port"), "http");
  assert_int_equal(jint(c, "livenessProbe.tcpSocket.port"), 8080);
  assert_string_equal(jstr(c, "resources.limits.cpu"), "250m");
  assert_string_equal(jstr(back, "metadata.creationTimestamp"), "2024-02-29T23:59:59Z");
  json_t *spec = json_object_get(back, "spec");
  assert_true(json_is_false(json_object_get(spec, "automountServiceAccountToken")));
  assert_true(json_is_integer(json_object_get(spec, "terminationGracePeriodSeconds")));
  /* the inlined VolumeSource */
  assert_true(json_is_object(json_object_get(json_array_get(json_object_get(spec, "volumes"), 0),
                                             "emptyDir")));
  /* containers carry "resources":{} as Go's struct does; the JSON that
   * went in had every field the decoder writes */
  assert_json_equal(json_object_get(back, "metadata"), json_object_get(pod, "metadata"),
                    "metadata");
  json_decref(back);
  kin__buf_free(&b);
  json_decref(pod);

  /* Secret bytes: base64 in JSON, raw on the wire */
  json_t *sec = load_json("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"},"
                          "\"data\":{\"k\":\"AAEC/w==\"},\"type\":\"Opaque\"}");
  assert_int_equal(kin__sim_pb_wrap(sec, NULL, NULL, &b, err, sizeof(err)), 0);
  assert_non_null(memmem(b.p, b.len, "\x00\x01\x02\xff", 4));
  back = kin__sim_pb_unwrap((const uint8_t *)b.p, b.len, -1, &tm, err, sizeof(err));
  assert_string_equal(jstr(back, "data.k"), "AAEC/w==");
  json_decref(back);
  kin__buf_free(&b);
  /* a bytes field that is not base64 is refused, not sent */
  json_object_set_new(json_object_get(sec, "data"), "k", json_string("*not base64*"));
  assert_int_equal(kin__sim_pb_wrap(sec, NULL, NULL, &b, err, sizeof(err)), KIN_EINVAL);
  assert_string_equal(err, "field data[k]: illegal base64 data");
  kin__buf_free(&b);
  json_decref(sec);

  /* Lease: MicroTime keeps microseconds */
  json_t *lease = load_json("{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
                            "\"metadata\":{\"name\":\"l\"},\"spec\":{\"renewTime\":"
                            "\"2024-01-02T03:04:05.000007Z\",\"leaseDurationSeconds\":15}}");
  assert_int_equal(kin__sim_pb_wrap(lease, NULL, NULL, &b, err, sizeof(err)), 0);
  back = kin__sim_pb_unwrap((const uint8_t *)b.p, b.len, -1, &tm, err, sizeof(err));
  assert_string_equal(jstr(back, "spec.renewTime"), "2024-01-02T03:04:05.000007Z");
  assert_int_equal(jint(back, "spec.leaseDurationSeconds"), 15);
  json_decref(back);
  kin__buf_free(&b);
  json_decref(lease);

  /* A value of the wrong JSON type is an error, not a guess. */
  json_t *cm = load_json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":7}}");
  assert_int_equal(kin__sim_pb_wrap(cm, NULL, NULL, &b, err, sizeof(err)), KIN_EINVAL);
  assert_string_equal(err, "field name: expected a string");
  kin__buf_free(&b);
  json_decref(cm);
  /* no protobuf form for a kind the sim does not serve built in */
  cm = load_json("{\"apiVersion\":\"example.com/v1\",\"kind\":\"Foo\"}");
  assert_int_equal(kin__sim_pb_wrap(cm, NULL, NULL, &b, err, sizeof(err)), KIN_EINVAL);
  kin__buf_free(&b);
  json_decref(cm);
}

/* Sends method path with a binary body of content type ctype and an
 * Accept header (NULL: none). */
static sim_resp pb_do(kin_sim *sim, const char *method, const char *path, const char *ctype,
                      const void *body, size_t len, const char *accept) {
  sim_resp r;
  memset(&r, 0, sizeof(r));
  sim_sink sink = {0};
  CURL *c = sim_easy(sim, method, path, &sink, &r);
  struct curl_slist *h = NULL;
  char hb[256];
  snprintf(hb, sizeof(hb), "Content-Type: %s", ctype ? ctype : "application/json");
  h = curl_slist_append(h, hb);
  snprintf(hb, sizeof(hb), "Accept: %s", accept ? accept : "");
  h = curl_slist_append(h, accept ? hb : "Accept:");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
  }
  sim_finish(c, h, &sink, &r, method, path);
  return r;
}

/* The JSON of a protobuf answer (fails the test when it is none). */
static json_t *pb_json(const sim_resp *r) {
  if (strcmp(r->ctype, PB)) fail_msg("Content-Type %s: %s", r->ctype, r->body);
  char err[512];
  kin__sim_pb_type tm;
  json_t *v = kin__sim_pb_unwrap((const uint8_t *)r->body, r->len, -1, &tm, err, sizeof(err));
  if (!v) fail_msg("answer does not decode: %s", err);
  return v;
}

/* The protobuf body of a JSON object. */
static kin__buf pb_body(const char *json) {
  json_t *v = load_json(json);
  kin__buf b = {0};
  char err[512];
  if (kin__sim_pb_wrap(v, NULL, NULL, &b, err, sizeof(err))) fail_msg("%s", err);
  json_decref(v);
  return b;
}

static void test_sim_ProtoCrud(void **state) {
  kin_sim *sim = sim_start(0, 0);
  const char *cms = "/api/v1/namespaces/default/configmaps";
  kin__buf b = pb_body("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                       "\"c1\",\"labels\":{\"a\":\"b\"}},\"data\":{\"k\":\"v\"},"
                       "\"binaryData\":{\"bin\":\"AAEC\"}}");
  /* kubectl's headers: protobuf first, JSON as the fallback */
  sim_resp r = pb_do(sim, "POST", cms, PB, b.p, b.len, PB ", application/json");
  kin__buf_free(&b);
  assert_int_equal(r.code, 201);
  json_t *v = pb_json(&r);
  assert_string_equal(jstr(v, "kind"), "ConfigMap");
  assert_string_equal(jstr(v, "data.k"), "v");
  assert_non_null(jstr(v, "metadata.uid"));
  json_decref(v);
  sim_resp_free(&r);
  /* stored as JSON: a JSON client reads it */
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/c1", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(r.ctype, "application/json");
  assert_string_equal(jstr(r.json, "data.k"), "v");
  assert_string_equal(jstr(r.json, "binaryData.bin"), "AAEC");
  assert_string_equal(jstr(r.json, "metadata.labels.a"), "b");
  char rv[32];
  snprintf(rv, sizeof(rv), "%s", jstr(r.json, "metadata.resourceVersion"));
  sim_resp_free(&r);

  /* PUT in protobuf */
  char body[512];
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c1\","
           "\"resourceVersion\":\"%s\"},\"data\":{\"k\":\"w\"}}", rv);
  b = pb_body(body);
  r = pb_do(sim, "PUT", "/api/v1/namespaces/default/configmaps/c1", PB, b.p, b.len, PB);
  kin__buf_free(&b);
  assert_int_equal(r.code, 200);
  v = pb_json(&r);
  assert_string_equal(jstr(v, "data.k"), "w");
  json_decref(v);
  sim_resp_free(&r);

  /* LIST in protobuf: items without kind, decoded by the list's message */
  r = pb_do(sim, "GET", cms, NULL, NULL, 0, PB);
  assert_int_equal(r.code, 200);
  v = pb_json(&r);
  assert_string_equal(jstr(v, "kind"), "ConfigMapList");
  assert_int_equal(json_array_size(json_object_get(v, "items")), 1);
  assert_string_equal(jstr(json_array_get(json_object_get(v, "items"), 0), "data.k"), "w");
  json_decref(v);
  sim_resp_free(&r);

  /* errors are Status messages in protobuf */
  r = pb_do(sim, "GET", "/api/v1/namespaces/default/configmaps/nope", NULL, NULL, 0, PB);
  assert_int_equal(r.code, 404);
  v = pb_json(&r);
  assert_string_equal(jstr(v, "kind"), "Status");
  assert_string_equal(jstr(v, "reason"), "NotFound");
  assert_string_equal(jstr(v, "details.name"), "nope");
  assert_int_equal(jint(v, "code"), 404);
  json_decref(v);
  sim_resp_free(&r);

  /* DELETE with protobuf DeleteOptions (preconditions that do not hold) */
  b = pb_body("{\"apiVersion\":\"v1\",\"kind\":\"DeleteOptions\",\"preconditions\":"
              "{\"uid\":\"not-the-uid\"}}");
  r = pb_do(sim, "DELETE", "/api/v1/namespaces/default/configmaps/c1", PB, b.p, b.len, PB);
  assert_int_equal(r.code, 409);
  sim_resp_free(&r);
  r = pb_do(sim, "DELETE", "/api/v1/namespaces/default/configmaps/c1", PB, NULL, 0, PB);
  assert_int_equal(r.code, 200);
  v = pb_json(&r); /* Status Success naming what went */
  assert_string_equal(jstr(v, "status"), "Success");
  assert_string_equal(jstr(v, "details.name"), "c1");
  json_decref(v);
  sim_resp_free(&r);
  kin__buf_free(&b);

  /* the scale subresource: autoscaling/v1 Scale both ways */
  b = pb_body("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
              "\"d\"},\"spec\":{\"replicas\":0,\"selector\":{\"matchLabels\":{\"a\":\"b\"}},"
              "\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":"
              "[{\"name\":\"c\",\"image\":\"i\"}]}}}}");
  r = pb_do(sim, "POST", "/apis/apps/v1/namespaces/default/deployments", PB, b.p, b.len, NULL);
  kin__buf_free(&b);
  assert_int_equal(r.code, 201);
  assert_string_equal(r.ctype, "application/json"); /* no Accept: JSON */
  assert_int_equal(jint(r.json, "spec.replicas"), 0); /* a pointer's 0 is kept */
  sim_resp_free(&r);
  b = pb_body("{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"Scale\",\"metadata\":{\"name\":"
              "\"d\"},\"spec\":{\"replicas\":4}}");
  r = pb_do(sim, "PUT", "/apis/apps/v1/namespaces/default/deployments/d/scale", PB, b.p, b.len,
            PB);
  kin__buf_free(&b);
  assert_int_equal(r.code, 200);
  v = pb_json(&r);
  assert_string_equal(jstr(v, "kind"), "Scale");
  assert_int_equal(jint(v, "spec.replicas"), 4);
  json_decref(v);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* Reads a protobuf watch until it ends; returns its events as JSON
 * {type, object} (the object unwrapped from its RawExtension). */
static json_t *pb_watch(kin_sim *sim, const char *path) {
  sim_resp r = pb_do(sim, "GET", path, NULL, NULL, 0, PB);
  assert_int_equal(r.code, 200);
  assert_string_equal(r.ctype, PB ";stream=watch");
  json_t *events = json_array();
  size_t off = 0;
  while (off + 4 <= r.len) {
    const uint8_t *p = (const uint8_t *)r.body + off;
    size_t n = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
    assert_true(off + 4 + n <= r.len);
    /* metav1.WatchEvent, not enveloped: decoded through the schema */
    char err[512];
    int msg = kin__pb_root_msg("v1", "WatchEvent");
    json_t *ev = kin__sim_pb_decode(msg, p + 4, n, err, sizeof(err));
    if (!ev) fail_msg("frame: %s", err);
    json_array_append_new(events, ev);
    off += 4 + n;
  }
  assert_int_equal(off, r.len);
  sim_resp_free(&r);
  return events;
}

static void test_sim_ProtoWatch(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/secrets",
                       "{\"metadata\":{\"name\":\"s1\"},\"data\":{\"k\":\"aGk=\"}}");
  assert_int_equal(r.code, 201);
  char rv[32];
  snprintf(rv, sizeof(rv), "%s", jstr(r.json, "metadata.resourceVersion"));
  sim_resp_free(&r);
  r = sim_req(sim, "DELETE", "/api/v1/namespaces/default/secrets/s1", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  char path[256];
  snprintf(path, sizeof(path),
           "/api/v1/namespaces/default/secrets?watch=1&resourceVersion=0&timeoutSeconds=1");
  json_t *evs = pb_watch(sim, path);
  /* from rv 0: nothing is left */
  assert_int_equal(json_array_size(evs), 0);
  json_decref(evs);
  /* from the create: the DELETED event, its object enveloped in the RawExtension */
  snprintf(path, sizeof(path),
           "/api/v1/namespaces/default/secrets?watch=1&resourceVersion=%s&timeoutSeconds=1", rv);
  evs = pb_watch(sim, path);
  assert_int_equal(json_array_size(evs), 1);
  json_t *ev = json_array_get(evs, 0);
  assert_string_equal(jstr(ev, "type"), "DELETED");
  /* the object: enveloped protobuf inside the RawExtension */
  assert_string_equal(jstr(ev, "object.kind"), "Secret");
  assert_string_equal(jstr(ev, "object.data.k"), "aGk=");
  assert_string_equal(jstr(ev, "object.metadata.name"), "s1");
  json_decref(evs);

  /* WatchList in protobuf: the initial ADDED, then the BOOKMARK that ends
   * them, its object a Secret carrying only metadata */
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/secrets",
              "{\"metadata\":{\"name\":\"s2\"},\"type\":\"Opaque\"}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  evs = pb_watch(sim, "/api/v1/namespaces/default/secrets?watch=1&sendInitialEvents=true&"
                      "resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&"
                      "timeoutSeconds=1");
  assert_true(json_array_size(evs) >= 2);
  assert_string_equal(jstr(json_array_get(evs, 0), "type"), "ADDED");
  assert_string_equal(jstr(json_array_get(evs, 0), "object.type"), "Opaque");
  ev = json_array_get(evs, 1);
  assert_string_equal(jstr(ev, "type"), "BOOKMARK");
  assert_string_equal(jstr(ev, "object.kind"), "Secret");
  json_t *ann = json_object_get(json_object_get(json_object_get(ev, "object"), "metadata"),
                                "annotations");
  assert_string_equal(json_string_value(json_object_get(ann, "k8s.io/initial-events-end")), "true");
  json_decref(evs);

  /* a watch error (too old) is an ERROR frame with a Status */
  kin_sim_compact(sim);
  evs = pb_watch(sim, path);
  assert_int_equal(json_array_size(evs), 1);
  assert_string_equal(jstr(json_array_get(evs, 0), "type"), "ERROR");
  json_decref(evs);
  kin_sim_free(sim);
}

/* A periodic BOOKMARK on a protobuf watch is a frame like any event (it
 * once went out as a bare JSON line, which a client reads as a frame of
 * 0x7b227479 bytes: '{"ty'). */
static void test_sim_ProtoWatchPeriodicBookmark(void **state) {
  kin_sim *sim = sim_start(0, 100);
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/secrets",
                       "{\"metadata\":{\"name\":\"s1\"}}");
  assert_int_equal(r.code, 201);
  char path[256];
  snprintf(path, sizeof(path),
           "/api/v1/namespaces/default/secrets?watch=1&resourceVersion=%s&"
           "allowWatchBookmarks=true&timeoutSeconds=1",
           jstr(r.json, "metadata.resourceVersion"));
  sim_resp_free(&r);
  json_t *evs = pb_watch(sim, path); /* fails on a frame that does not decode */
  assert_true(json_array_size(evs) >= 2);
  for (size_t i = 0; i < json_array_size(evs); i++) {
    assert_string_equal(jstr(json_array_get(evs, i), "type"), "BOOKMARK");
    assert_string_equal(jstr(json_array_get(evs, i), "object.kind"), "Secret");
  }
  json_decref(evs);
  kin_sim_free(sim);
}

static void test_sim_ProtoBadBodies(void **state) {
  kin_sim *sim = sim_start(0, 0);
  const char *cms = "/api/v1/namespaces/default/configmaps";
  static const struct {
    const char *body;
    size_t len;
    const char *msg;
  } cases[] = {
      {"xyz", 3,
       "the object provided is unrecognized (must be of type ConfigMap): provided data does not "
       "appear to be a protobuf message, expected prefix [107 56 115 0] (78797a)"},
      {"", 0, "the object provided is unrecognized (must be of type ConfigMap): empty data "
              "(<empty>)"},
      {"k8s\0", 4, "the object provided is unrecognized (must be of type ConfigMap): empty body "
                   "(6b387300)"},
      {"k8s\0\x0a\x05", 6, "the object provided is unrecognized (must be of type ConfigMap): "
                           "unexpected EOF (6b3873000a05)"},
      {"k8s\0\x0a\x0f\x0a\x02v1\x12\x09" "ConfigMap\x12\x02\x08\x01", 25,
       "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: proto: wrong wireType = 0 "
       "for field ObjectMeta"},
      {"k8s\0\x0a\x0f\x0a\x02v1\x12\x09" "ConfigMap\x12\x03\x0a\x01\x00", 26,
       "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: proto: ObjectMeta: illegal "
       "tag 0 (wire type 0)"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    sim_resp r = pb_do(sim, "POST", cms, PB, cases[i].len ? cases[i].body : NULL, cases[i].len,
                       "application/json");
    assert_int_equal(r.code, 400);
    assert_string_equal(jstr(r.json, "reason"), "BadRequest");
    assert_string_equal(jstr(r.json, "message"), cases[i].msg);
    sim_resp_free(&r);
  }
  /* a Secret's bytes posted to configmaps: the kind check of JSON bodies */
  kin__buf b = pb_body("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"x\"}}");
  sim_resp r = pb_do(sim, "POST", cms, PB, b.p, b.len, NULL);
  kin__buf_free(&b);
  assert_int_equal(r.code, 400);
  assert_non_null(strstr(jstr(r.json, "message"), "Secret in version \"v1\" cannot be handled as a ConfigMap"));
  sim_resp_free(&r);
  /* protobuf patches are no patch type */
  r = pb_do(sim, "PATCH", "/api/v1/namespaces/default/configmaps/x", PB, "k8s\0", 4, NULL);
  assert_int_equal(r.code, 415);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_ProtoNegotiation(void **state) {
  kin_sim *sim = sim_start(0, 0);
  const char *ns = "/api/v1/namespaces/default";
  static const struct {
    const char *accept;
    int pb;
  } cases[] = {
      {PB, 1},
      {PB ", application/json", 1},
      {"application/json, " PB, 0},
      {"application/json;q=0.5, " PB, 1},
      {"*/*", 0},
      {"application/*", 0},
      {"text/html, " PB ";q=0.1", 1},
      {PB ";as=Table;g=meta.k8s.io;v=v1, application/json", 0},
      {PB ";stream=watch", 1},
      {PB ";sv=v1, application/json", 0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    sim_resp r = pb_do(sim, "GET", ns, NULL, NULL, 0, cases[i].accept);
    assert_int_equal(r.code, 200);
    if (strcmp(r.ctype, cases[i].pb ? PB : "application/json"))
      fail_msg("Accept %s: Content-Type %s", cases[i].accept, r.ctype);
    sim_resp_free(&r);
  }
  /* nothing acceptable: kube-apiserver's 406, in JSON */
  sim_resp r = pb_do(sim, "GET", ns, NULL, NULL, 0, "text/html");
  assert_int_equal(r.code, 406);
  assert_string_equal(jstr(r.json, "reason"), "NotAcceptable");
  assert_string_equal(jstr(r.json, "message"),
                      "406: Not Acceptable\n\nAvailable representations: application/json, "
                      "application/yaml, " PB);
  sim_resp_free(&r);
  r = pb_do(sim, "GET", "/api/v1/namespaces", NULL, NULL, 0, "text/html");
  assert_int_equal(r.code, 406);
  assert_string_equal(jstr(r.json, "message"),
                      "406: Not Acceptable\n\nAvailable representations: application/json, "
                      "application/yaml, " PB ", application/json;stream=watch, " PB
                      ";stream=watch");
  sim_resp_free(&r);
  /* and the write does not happen */
  r = pb_do(sim, "POST", "/api/v1/namespaces/default/configmaps", NULL,
            "{\"metadata\":{\"name\":\"never\"}}", 29, "text/html");
  assert_int_equal(r.code, 406);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/never", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

#define CRD                                                                                     \
  "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","         \
  "\"metadata\":{\"name\":\"foos.example.com\"},\"spec\":{\"group\":\"example.com\","           \
  "\"names\":{\"plural\":\"foos\",\"singular\":\"foo\",\"kind\":\"Foo\",\"listKind\":"          \
  "\"FooList\"},\"scope\":\"Namespaced\",\"versions\":[{\"name\":\"v1\",\"served\":true,"       \
  "\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","                      \
  "\"x-kubernetes-preserve-unknown-fields\":true}}}]}}"

/* Custom resources have no protobuf form. */
static void test_sim_ProtoCustomResources(void **state) {
  kin_sim *sim = sim_start(0, 0);
  /* the CRD itself does (apiextensions.k8s.io/v1 is built in) */
  kin__buf b = pb_body(CRD);
  sim_resp r = pb_do(sim, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", PB,
                     b.p, b.len, PB);
  kin__buf_free(&b);
  assert_int_equal(r.code, 201);
  json_t *v = pb_json(&r);
  assert_string_equal(jstr(v, "spec.names.kind"), "Foo");
  json_t *schema = json_object_get(json_object_get(
      json_array_get(json_object_get(json_object_get(v, "spec"), "versions"), 0), "schema"),
      "openAPIV3Schema");
  assert_true(json_is_true(json_object_get(schema, "x-kubernetes-preserve-unknown-fields")));
  json_decref(v);
  sim_resp_free(&r);
  const char *foos = "/apis/example.com/v1/namespaces/default/foos";
  /* Accept protobuf only: 406, the Status itself in protobuf as
   * apiextensions' handler writes it */
  r = pb_do(sim, "GET", foos, NULL, NULL, 0, PB);
  assert_int_equal(r.code, 406);
  v = pb_json(&r);
  assert_string_equal(jstr(v, "message"), "only the following media types are accepted: "
                                          "application/json, application/yaml, " PB);
  json_decref(v);
  sim_resp_free(&r);
  /* with a JSON fallback: JSON */
  r = pb_do(sim, "GET", foos, NULL, NULL, 0, PB ", application/json");
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "kind"), "FooList");
  sim_resp_free(&r);
  /* a protobuf body: 415 (kube-apiserver v1.36.3 panics on it: docs/sim.md) */
  r = pb_do(sim, "POST", foos, PB, "k8s\0", 4, "application/json");
  assert_int_equal(r.code, 415);
  assert_string_equal(jstr(r.json, "message"),
                      "the body of the request was in an unknown format - accepted media types "
                      "include: application/json, application/yaml");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

KIN_SUITE(sim_proto, cmocka_unit_test(test_sim_ProtoMatchesKubeApiserver),
          cmocka_unit_test(test_sim_ProtoSpecialFields), cmocka_unit_test(test_sim_ProtoCrud),
          cmocka_unit_test(test_sim_ProtoWatch),
          cmocka_unit_test(test_sim_ProtoWatchPeriodicBookmark), cmocka_unit_test(test_sim_ProtoBadBodies),
          cmocka_unit_test(test_sim_ProtoNegotiation),
          cmocka_unit_test(test_sim_ProtoCustomResources))
