/* test_sim_errors.c -- kinformer.sim bad input: each answer is the Status
 * kube-apiserver v1.36 gives (code, reason, message), checked against a
 * real server by hand; see docs/sim.md for the known divergences. */
#include "kin_test.h"

#include "sim_client.h"

static void expect(sim_resp *r, long code, const char *reason, const char *msg) {
  if (r->code != code) fail_msg("code %ld != %ld: %s", r->code, code, r->body);
  assert_string_equal(jstr(r->json, "kind"), "Status");
  assert_string_equal(jstr(r->json, "status"), "Failure");
  assert_int_equal(jint(r->json, "code"), code);
  assert_string_equal(jstr(r->json, "reason"), reason);
  if (msg) assert_string_equal(jstr(r->json, "message"), msg);
  sim_resp_free(r);
}

static const char *cms = "/api/v1/namespaces/default/configmaps";

static void test_sim_ErrorsMalformedBody(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", cms, "");
  expect(&r, 400, "BadRequest",
         "the object provided is unrecognized (must be of type ConfigMap): couldn't get "
         "version/kind; json parse error: unexpected end of JSON input (<empty>)");
  r = sim_req(sim, "POST", cms, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"b\"");
  assert_int_equal(r.code, 400);
  assert_non_null(strstr(jstr(r.json, "message"),
                         "the object provided is unrecognized (must be of type ConfigMap): "
                         "couldn't get version/kind; json parse error: "));
  assert_non_null(strstr(jstr(r.json, "message"), "({\"apiVersion\":\"v1\",\"kind\":\"Con ...)"));
  sim_resp_free(&r);
  r = sim_req(sim, "POST", cms, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{}}");
  expect(&r, 422, "Invalid",
         "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required");
  r = sim_req(sim, "POST", cms, "{\"metadata\":{\"name\":\"Bad_Name\"}}");
  assert_int_equal(r.code, 422);
  assert_string_equal(jstr(json_array_get(json_object_get(json_object_get(r.json, "details"), "causes"), 0), "field"),
                      "metadata.name");
  assert_non_null(strstr(jstr(r.json, "message"),
                         "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: "
                         "\"Bad_Name\": a lowercase RFC 1123 subdomain must consist of"));
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_ErrorsWrongKindForPath(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", cms, "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"b\"}}");
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "message"),
                      "Secret in version \"v1\" cannot be handled as a ConfigMap: converting "
                      "(v1.Secret) to (core.ConfigMap): unknown conversion");
  sim_resp_free(&r);
  r = sim_req(sim, "POST", cms, "{\"apiVersion\":\"apps/v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"b\"}}");
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "message"),
                      "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: no kind "
                      "\"ConfigMap\" is registered for version \"apps/v1\" in scheme "
                      "\"pkg/runtime/scheme.go:111\"");
  sim_resp_free(&r);
  r = sim_req(sim, "POST", cms, "{\"metadata\":{\"name\":\"c\",\"namespace\":\"other\"}}");
  expect(&r, 400, "BadRequest",
         "the namespace of the provided object does not match the namespace sent on the request");
  sim_put_cm(sim, "default", "a", NULL, "1");
  r = sim_req(sim, "PUT", "/api/v1/namespaces/default/configmaps/a", "{\"metadata\":{\"name\":\"zz\"}}");
  expect(&r, 400, "BadRequest", "the name of the object (zz) does not match the name on the URL (a)");
  r = sim_req(sim, "PUT", "/api/v1/namespaces/default/configmaps/nx", "{\"metadata\":{\"name\":\"nx\"}}");
  expect(&r, 404, "NotFound", "configmaps \"nx\" not found");
  kin_sim_free(sim);
}

static void test_sim_ErrorsMediaTypesAndMethods(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "a", NULL, "1");
  const char *a = "/api/v1/namespaces/default/configmaps/a";
  sim_resp r = sim_do(sim, "POST", cms, "text/plain", "{}", NULL);
  expect(&r, 415, "UnsupportedMediaType",
         "the body of the request was in an unknown format - accepted media types include: "
         "application/json, application/yaml, application/vnd.kubernetes.protobuf");
  r = sim_do(sim, "PATCH", a, "application/json", "{}", NULL);
  expect(&r, 415, "UnsupportedMediaType", "415: Unsupported Media Type");
  /* apply without ?fieldManager is refused before the body is read */
  r = sim_do(sim, "PATCH", a, "application/apply-patch+yaml", "{}", NULL);
  expect(&r, 422, "Invalid",
         "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required "
         "for apply patch");
  r = sim_do(sim, "PATCH", a, "application/apply-patch+cbor", "{}", NULL);
  expect(&r, 415, "UnsupportedMediaType", "415: Unsupported Media Type");
  r = sim_do(sim, "PATCH", a, "application/merge-patch+json", "\"scalar\"", NULL);
  assert_int_equal(r.code, 400);
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", a, "application/merge-patch+json", "{\"metadata\":7}", NULL);
  assert_true(r.code == 200 || r.code == 400); /* never a crash */
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", a, "application/merge-patch+json", "{", NULL);
  assert_int_equal(r.code, 400);
  assert_non_null(strstr(jstr(r.json, "message"), "error decoding patch: "));
  sim_resp_free(&r);
  r = sim_req(sim, "POST", a, "{}");
  expect(&r, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
  r = sim_req(sim, "DELETE", "/api/v1/namespaces", NULL); /* no deletecollection */
  expect(&r, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
  r = sim_req(sim, "GET", "/api/v1/namespaces/default", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/foos", NULL);
  expect(&r, 404, "NotFound", "the server could not find the requested resource");
  r = sim_req(sim, "GET", "/nothing/here", NULL);
  assert_int_equal(r.code, 404);
  assert_string_equal(r.body, "404 page not found\n");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_ErrorsRequestEntityTooLarge(void **state) {
  kin_sim *sim = sim_start(0, 0);
  size_t n = 3u * 1024u * 1024u + 100;
  char *body = malloc(n + 1);
  memset(body, ' ', n);
  const char *head = "{\"metadata\":{\"name\":\"big\"},\"data\":{\"x\":\"";
  memcpy(body, head, strlen(head));
  memcpy(body + n - 3, "\"}}", 3);
  body[n] = 0;
  sim_resp r = sim_req(sim, "POST", cms, body);
  expect(&r, 413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728");
  free(body);
  kin_sim_free(sim);
}

static void test_sim_ErrorsCustomResourceDecoding(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
      "{\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\","
      "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\"},"
      "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true}]}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  const char *p = "/apis/example.com/v1/namespaces/default/widgets";
  r = sim_req(sim, "POST", p, "{\"metadata\":{\"name\":\"w\"}}");
  expect(&r, 400, "BadRequest",
         "the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing "
         "in '{\"metadata\":{\"name\":\"w\"}}' ({\"metadata\":{\"name\":\"w\"}})");
  r = sim_req(sim, "POST", p, "{\"apiVersion\":\"example.com/v2\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"}}");
  expect(&r, 400, "BadRequest",
         "the API version in the data (example.com/v2) does not match the expected API version "
         "(example.com/v1)");
  r = sim_req(sim, "POST", p, "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Gadget\",\"metadata\":{\"name\":\"w\"}}");
  assert_string_equal(jstr(r.json, "details.kind"), "Gadget");
  assert_string_equal(jstr(r.json, "details.group"), "example.com");
  expect(&r, 422, "Invalid",
         "Gadget.example.com \"w\" is invalid: kind: Invalid value: \"Gadget\": must be Widget");
  r = sim_do(sim, "PATCH", "/apis/example.com/v1/namespaces/default/widgets/w",
             "application/strategic-merge-patch+json", "{}", NULL);
  expect(&r, 415, "UnsupportedMediaType",
         "the body of the request was in an unknown format - accepted media types include: "
         "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml");
  kin_sim_free(sim);
}

/* patch.go: a JSON patch that is no array of operations is 400 BadRequest
 * (decoded once the object exists: a missing one is 404 first); one that
 * fails to apply, a failed "test" included, is 422 Invalid. A strategic
 * merge patch error
 * maps as interpretStrategicMergePatchError: 400, 422 or a plain 500. */
static void test_sim_ErrorsPatchCodes(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "p", NULL, "1");
  const char *a = "/api/v1/namespaces/default/configmaps/p";
  const char *jp = "application/json-patch+json", *smp = "application/strategic-merge-patch+json";
  sim_resp r = sim_do(sim, "PATCH", a, jp, "{\"op\":\"add\"}", NULL);
  expect(&r, 400, "BadRequest",
         "error decoding patch: json: cannot unmarshal object into Go value of type "
         "[]handlers.jsonPatchOp");
  r = sim_do(sim, "PATCH", a, jp, "[1]", NULL);
  expect(&r, 400, "BadRequest",
         "error decoding patch: json: cannot unmarshal number into Go value of type "
         "handlers.jsonPatchOp");
  r = sim_do(sim, "PATCH", "/api/v1/namespaces/default/configmaps/p?fieldValidation=Ignore", jp,
             "{\"op\":\"add\"}", NULL);
  expect(&r, 400, "BadRequest", "json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  r = sim_do(sim, "PATCH", "/api/v1/namespaces/default/configmaps/nope", jp, "{}", NULL);
  expect(&r, 404, "NotFound", "configmaps \"nope\" not found");
  r = sim_do(sim, "PATCH", a, jp,
             "[{\"op\":\"add\",\"path\":\"/data/w\",\"value\":\"x\"},"
             "{\"op\":\"test\",\"path\":\"/data/v\",\"value\":\"2\"}]",
             NULL);
  assert_int_equal(json_object_size(json_object_get(r.json, "details")), 0);
  /* the real message is the fixed "the server rejected our request due to
   * an error in our request"; the sim names the failing operation */
  expect(&r, 422, "Invalid", "testing value /data/v failed: test failed");
  r = sim_do(sim, "PATCH", a, jp, "[{\"op\":\"remove\",\"path\":\"/data/nope\"}]", NULL);
  expect(&r, 422, "Invalid",
         "error in remove for path: '/data/nope': Unable to remove nonexistent key: nope: missing value");
  r = sim_req(sim, "GET", a, NULL); /* nothing applied */
  assert_int_equal(r.code, 200);
  assert_null(json_object_get(json_object_get(r.json, "data"), "w"));
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", a, jp,
             "[{\"op\":\"test\",\"path\":\"/data/v\",\"value\":\"1\"}]", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", a, smp, "[1]", NULL);
  expect(&r, 400, "BadRequest",
         "json: cannot unmarshal array into Go value of type map[string]interface {}");
  r = sim_do(sim, "PATCH", a, smp, "{\"metadata\":{\"$deleteFromPrimitiveList\":[\"a\"]}}", NULL);
  expect(&r, 400, "BadRequest", "invalid patch format of primitive list");
  sim_put_cm(sim, "default", "f", NULL, "1");
  r = sim_do(sim, "PATCH", "/api/v1/namespaces/default/configmaps/f", "application/merge-patch+json",
             "{\"metadata\":{\"finalizers\":[\"a\"]}}", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", "/api/v1/namespaces/default/configmaps/f", smp,
             "{\"metadata\":{\"finalizers\":[1]}}", NULL);
  assert_int_equal(r.code, 500);
  assert_null(jstr(r.json, "reason"));
  assert_string_equal(jstr(r.json, "message"), "list element types are not identical: [[a] [1]]");
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", "/api/v1/namespaces/default/configmaps/f", "application/merge-patch+json",
             "{\"metadata\":{\"finalizers\":[[\"a\"]]}}", NULL);
  assert_int_equal(r.code, 200); /* the sim has no schema to refuse it */
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", "/api/v1/namespaces/default/configmaps/f", smp,
             "{\"metadata\":{\"finalizers\":[[\"b\"]]}}", NULL);
  expect(&r, 422, "Invalid", "lists of lists are not supported");
  kin_sim_free(sim);
}

KIN_SUITE(sim_errors, cmocka_unit_test(test_sim_ErrorsCustomResourceDecoding), cmocka_unit_test(test_sim_ErrorsMalformedBody),
          cmocka_unit_test(test_sim_ErrorsWrongKindForPath),
          cmocka_unit_test(test_sim_ErrorsMediaTypesAndMethods),
          cmocka_unit_test(test_sim_ErrorsPatchCodes),
          cmocka_unit_test(test_sim_ErrorsRequestEntityTooLarge))
