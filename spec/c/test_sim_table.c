/* test_sim_table.c -- server-side Table output (csrc/sim/http/http_table.c):
 * the Accept negotiation, kube-apiserver v1.36.3's columns and cells for
 * pods, configmaps and deployments, includeObject, a Table watch (columns
 * only on the first event), custom resources' printer columns, and
 * duration.HumanDuration. */
#include "kin_test.h"

#include "http_int.h"
#include "kin.h"
#include "sim_client.h"

#define TABLE_ACCEPT                                                                          \
  "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;" \
  "g=meta.k8s.io,application/json"

static sim_resp get_table(kin_sim *sim, const char *path) {
  return sim_do(sim, "GET", path, NULL, NULL, TABLE_ACCEPT);
}

static const char *col(const json_t *t, size_t i) {
  return json_string_value(json_object_get(json_array_get(json_object_get(t, "columnDefinitions"), i), "name"));
}

static const json_t *cell(const json_t *t, size_t row, size_t i) {
  return json_array_get(json_object_get(json_array_get(json_object_get(t, "rows"), row), "cells"), i);
}

static void test_sim_TableAccept(void **state) {
  assert_string_equal(kin__sim_table_accept(TABLE_ACCEPT + 8), "v1");
  assert_string_equal(kin__sim_table_accept("application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
                      "v1beta1");
  assert_null(kin__sim_table_accept("application/json"));
  assert_null(kin__sim_table_accept(NULL));
  assert_null(kin__sim_table_accept("application/json, application/json;as=Table;v=v1;g=meta.k8s.io"));
  /* a media range the sim cannot give is skipped */
  assert_string_equal(kin__sim_table_accept("application/json;as=PartialObjectMetadataList;v=v1;"
                                            "g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io"),
                      "v1");
  char b[32];
  static const struct {
    long long s;
    const char *want;
  } d[] = {{-5, "<invalid>"}, {-1, "0s"}, {0, "0s"},       {119, "119s"},  {120, "2m"},
           {125, "2m5s"},     {600, "10m"}, {10799, "179m"}, {10800, "3h"}, {11100, "3h5m"},
           {8 * 3600, "8h"},  {47 * 3600, "47h"}, {48 * 3600, "2d"}, {50 * 3600, "2d2h"},
           {8 * 86400, "8d"}, {730 * 86400, "2y"}, {1060 * 86400, "2y330d"}, {3000 * 86400, "8y"}};
  for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
    kin__sim_human_duration(d[i].s, b, sizeof(b));
    assert_string_equal(b, d[i].want);
  }
}

static void test_sim_TableBuiltins(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps",
                       "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                       "\"cm1\"},\"data\":{\"a\":\"1\",\"b\":\"2\"},\"binaryData\":{\"c\":\"AA==\"}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/pods",
              "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\"},\"spec\":{"
              "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"},{\"name\":\"d\",\"image\":"
              "\"nginx\"}]}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/apis/apps/v1/namespaces/default/deployments",
              "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d1\"},"
              "\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{\"app\":\"d1\"}},"
              "\"template\":{\"metadata\":{\"labels\":{\"app\":\"d1\"}},\"spec\":{\"containers\":"
              "[{\"name\":\"c\",\"image\":\"busybox\"},{\"name\":\"e\",\"image\":\"nginx:1\"}]}}}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);

  /* plain JSON without the header */
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps", NULL);
  assert_string_equal(jstr(r.json, "kind"), "ConfigMapList");
  sim_resp_free(&r);

  r = get_table(sim, "/api/v1/namespaces/default/configmaps");
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "kind"), "Table");
  assert_string_equal(jstr(r.json, "apiVersion"), "meta.k8s.io/v1");
  assert_non_null(jstr(r.json, "metadata.resourceVersion"));
  assert_string_equal(col(r.json, 0), "Name");
  assert_string_equal(col(r.json, 1), "Data");
  assert_string_equal(col(r.json, 2), "Age");
  assert_string_equal(json_string_value(cell(r.json, 0, 0)), "cm1");
  assert_int_equal(json_integer_value(cell(r.json, 0, 1)), 3); /* data + binaryData */
  const char *a = json_string_value(cell(r.json, 0, 2));
  assert_true(a && a[strlen(a) - 1] == 's');
  const json_t *obj = json_object_get(json_array_get(json_object_get(r.json, "rows"), 0), "object");
  assert_string_equal(jstr(obj, "kind"), "PartialObjectMetadata");
  assert_string_equal(jstr(obj, "apiVersion"), "meta.k8s.io/v1");
  assert_string_equal(jstr(obj, "metadata.name"), "cm1");
  assert_null(json_object_get(obj, "data"));
  sim_resp_free(&r);

  r = get_table(sim, "/api/v1/namespaces/default/pods/p1?includeObject=None");
  assert_int_equal(r.code, 200);
  static const char *const pod_cols[] = {"Name", "Ready", "Status", "Restarts", "Age", "IP",
                                         "Node", "Nominated Node", "Readiness Gates"};
  for (size_t i = 0; i < 9; i++) assert_string_equal(col(r.json, i), pod_cols[i]);
  assert_int_equal(jint(json_array_get(json_object_get(r.json, "columnDefinitions"), 5), "priority"), 1);
  assert_string_equal(json_string_value(cell(r.json, 0, 1)), "0/2");
  assert_string_equal(json_string_value(cell(r.json, 0, 2)), "Pending");
  assert_string_equal(json_string_value(cell(r.json, 0, 3)), "0");
  assert_string_equal(json_string_value(cell(r.json, 0, 6)), "<none>");
  assert_true(json_is_null(json_object_get(json_array_get(json_object_get(r.json, "rows"), 0), "object")));
  sim_resp_free(&r);

  r = get_table(sim, "/apis/apps/v1/namespaces/default/deployments?includeObject=Object");
  static const char *const d_cols[] = {"Name", "Ready", "Up-to-date", "Available", "Age",
                                       "Containers", "Images", "Selector"};
  for (size_t i = 0; i < 8; i++) assert_string_equal(col(r.json, i), d_cols[i]);
  assert_string_equal(json_string_value(cell(r.json, 0, 1)), "0/2");
  assert_int_equal(json_integer_value(cell(r.json, 0, 2)), 0);
  assert_string_equal(json_string_value(cell(r.json, 0, 5)), "c,e");
  assert_string_equal(json_string_value(cell(r.json, 0, 6)), "busybox,nginx:1");
  assert_string_equal(json_string_value(cell(r.json, 0, 7)), "app=d1");
  obj = json_object_get(json_array_get(json_object_get(r.json, "rows"), 0), "object");
  assert_string_equal(jstr(obj, "kind"), "Deployment");
  assert_int_equal(jint(obj, "spec.replicas"), 2);
  sim_resp_free(&r);

  r = get_table(sim, "/api/v1/namespaces/default/pods?includeObject=Bad");
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "reason"), "BadRequest");
  assert_string_equal(jstr(r.json, "message"),
                      "Unable to convert to Table as requested: includeObject: Invalid value: "
                      "\"Bad\": must be 'Metadata', 'Object', 'None', or empty");
  sim_resp_free(&r);

  r = get_table(sim, "/api/v1/namespaces/default/pods/nope");
  assert_int_equal(r.code, 404);
  assert_string_equal(jstr(r.json, "kind"), "Status");
  sim_resp_free(&r);

  /* a resource without a printer: the default Name, Created At */
  r = get_table(sim, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
  assert_string_equal(col(r.json, 0), "Name");
  assert_string_equal(col(r.json, 1), "Created At");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* libcurl with the Table Accept header, reading the watch to its end. */
static json_t *watch_table(kin_sim *sim, const char *path) {
  sim_resp r = sim_do(sim, "GET", path, NULL, NULL, TABLE_ACCEPT);
  json_t *events = json_array();
  char *p = r.body;
  while (p && *p) {
    char *nl = strchr(p, '\n');
    if (!nl) break;
    json_error_t e;
    json_t *ev = json_loadb(p, (size_t)(nl - p), 0, &e);
    assert_non_null(ev);
    json_array_append_new(events, ev);
    p = nl + 1;
  }
  sim_resp_free(&r);
  return events;
}

static void test_sim_TableWatch(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "a", NULL, "1");
  sim_put_cm(sim, "default", "b", NULL, "1");
  json_t *ev = watch_table(sim, "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1");
  assert_int_equal(json_array_size(ev), 2);
  const json_t *t0 = json_object_get(json_array_get(ev, 0), "object");
  const json_t *t1 = json_object_get(json_array_get(ev, 1), "object");
  assert_string_equal(jstr(json_array_get(ev, 0), "type"), "ADDED");
  assert_string_equal(jstr(t0, "kind"), "Table");
  assert_string_equal(col(t0, 1), "Data");
  assert_string_equal(json_string_value(cell(t0, 0, 0)), "a");
  assert_true(json_is_null(json_object_get(t1, "columnDefinitions")));
  assert_string_equal(json_string_value(cell(t1, 0, 0)), "b");
  json_decref(ev);
  kin_sim_free(sim);
}

static void test_sim_TableCustomResource(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(
      sim, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
      "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
      "\"metadata\":{\"name\":\"widgets.t.example.com\"},\"spec\":{\"group\":\"t.example.com\","
      "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\"},"
      "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
      "\"additionalPrinterColumns\":[{\"name\":\"Size\",\"type\":\"integer\",\"jsonPath\":"
      "\".spec.size\",\"description\":\"the size\"},{\"name\":\"Color\",\"type\":\"string\","
      "\"jsonPath\":\".spec.color\",\"priority\":1},{\"name\":\"Gone\",\"type\":\"string\","
      "\"jsonPath\":\".spec.gone\"}]},{\"name\":\"v2\",\"served\":true,\"storage\":false,"
      "\"additionalPrinterColumns\":[{\"name\":\"Ready\",\"type\":\"string\",\"jsonPath\":"
      "\".status.conditions[?(@.type==\\\"Ready\\\")].status\"}]}]}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/apis/t.example.com/v1/namespaces/default/widgets",
              "{\"apiVersion\":\"t.example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":"
              "\"w1\"},\"spec\":{\"size\":3,\"color\":\"red\"}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  r = get_table(sim, "/apis/t.example.com/v1/namespaces/default/widgets");
  assert_int_equal(r.code, 200);
  const json_t *cols = json_object_get(r.json, "columnDefinitions");
  assert_int_equal(json_array_size(cols), 4);
  assert_string_equal(col(r.json, 1), "Size");
  assert_string_equal(jstr(json_array_get(cols, 1), "description"), "the size");
  assert_string_equal(jstr(json_array_get(cols, 2), "description"),
                      "Custom resource definition column (in JSONPath format): .spec.color");
  assert_int_equal(jint(json_array_get(cols, 2), "priority"), 1);
  assert_int_equal(json_integer_value(cell(r.json, 0, 1)), 3);
  assert_string_equal(json_string_value(cell(r.json, 0, 2)), "red");
  assert_true(json_is_null(cell(r.json, 0, 3)));
  sim_resp_free(&r);
  /* a JSONPath the sim does not evaluate: Name, Age */
  r = get_table(sim, "/apis/t.example.com/v2/namespaces/default/widgets");
  assert_int_equal(json_array_size(json_object_get(r.json, "columnDefinitions")), 2);
  assert_string_equal(col(r.json, 1), "Age");
  assert_string_equal(jstr(json_array_get(json_object_get(r.json, "columnDefinitions"), 1), "type"),
                      "date");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

KIN_SUITE(sim_table, cmocka_unit_test(test_sim_TableAccept), cmocka_unit_test(test_sim_TableBuiltins),
          cmocka_unit_test(test_sim_TableWatch), cmocka_unit_test(test_sim_TableCustomResource))
