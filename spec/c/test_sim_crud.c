/* test_sim_crud.c -- kinformer.sim create/get/update/delete over HTTP, the
 * behaviours of k8s.io/apiserver's generic registry Store (store_test.go:
 * TestStoreCreate, TestStoreUpdate, TestGracefulStoreHandleFinalizers,
 * TestStoreDeleteWithPreconditions, TestStoreDeleteCollection) and of the
 * CRD handler (customresource_handler). */
#include "kin_test.h"

#include <unistd.h>

#include "kin.h"
#include "sim_client.h"

/* Reads a whole file into a malloc'd string. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  char *buf = calloc(1, 65536);
  size_t n = fread(buf, 1, 65535, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

static void test_sim_StoreCreate(void **state) {
  kin_sim *sim = sim_start(0, 0);
  long long rv0 = (long long)kin_sim_resource_version(sim);
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps",
                       "{\"metadata\":{\"name\":\"a\"},\"data\":{\"x\":\"1\"}}");
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "kind"), "ConfigMap");
  assert_string_equal(jstr(r.json, "apiVersion"), "v1");
  assert_string_equal(jstr(r.json, "metadata.namespace"), "default");
  assert_int_equal(strlen(jstr(r.json, "metadata.uid")), 36);
  assert_int_equal(jstr(r.json, "metadata.uid")[14], '4'); /* v4 uuid */
  assert_int_equal(strlen(jstr(r.json, "metadata.creationTimestamp")), 20);
  assert_int_equal(atoll(jstr(r.json, "metadata.resourceVersion")), rv0 + 1);
  assert_string_equal(jstr(r.json, "data.x"), "1");
  sim_resp_free(&r);
  /* generation is kept by kinds with a spec, e.g. deployments. */
  r = sim_req(sim, "POST", "/apis/apps/v1/namespaces/default/deployments",
              "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
              "\"spec\":{\"replicas\":1}}");
  assert_int_equal(r.code, 201);
  assert_int_equal(jint(r.json, "metadata.generation"), 1);
  assert_int_equal(atoll(jstr(r.json, "metadata.resourceVersion")), rv0 + 2);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/a", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "data.x"), "1");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_CreateGenerateName(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps",
                       "{\"metadata\":{\"generateName\":\"gen-\"}}");
  assert_int_equal(r.code, 201);
  const char *name = jstr(r.json, "metadata.name");
  assert_int_equal(strlen(name), 9);
  assert_memory_equal(name, "gen-", 4);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_CreateAlreadyExistsAndMissingNamespace(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "a", NULL, "1");
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps",
                       "{\"metadata\":{\"name\":\"a\"}}");
  assert_int_equal(r.code, 409);
  assert_string_equal(jstr(r.json, "reason"), "AlreadyExists");
  assert_string_equal(jstr(r.json, "message"), "configmaps \"a\" already exists");
  assert_string_equal(jstr(r.json, "details.kind"), "configmaps");
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/api/v1/namespaces/nons/configmaps", "{\"metadata\":{\"name\":\"a\"}}");
  assert_int_equal(r.code, 404);
  assert_string_equal(jstr(r.json, "message"), "namespaces \"nons\" not found");
  assert_string_equal(jstr(r.json, "details.kind"), "namespaces");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/apis/apps/v1/namespaces/default/deployments/nope", NULL);
  assert_int_equal(r.code, 404);
  assert_string_equal(jstr(r.json, "message"), "deployments.apps \"nope\" not found");
  assert_string_equal(jstr(r.json, "details.group"), "apps");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_StoreUpdateConflict(void **state) {
  kin_sim *sim = sim_start(0, 0);
  long long rv = sim_put_cm(sim, "default", "a", NULL, "1");
  char body[512];
  snprintf(body, sizeof(body),
           "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"%lld\"},\"data\":{\"v\":\"2\"}}", rv);
  sim_resp r = sim_req(sim, "PUT", "/api/v1/namespaces/default/configmaps/a", body);
  assert_int_equal(r.code, 200);
  assert_int_equal(atoll(jstr(r.json, "metadata.resourceVersion")), rv + 1);
  assert_string_equal(jstr(r.json, "data.v"), "2");
  sim_resp_free(&r);
  /* The same (now stale) resourceVersion again: 409. */
  r = sim_req(sim, "PUT", "/api/v1/namespaces/default/configmaps/a", body);
  assert_int_equal(r.code, 409);
  assert_string_equal(jstr(r.json, "reason"), "Conflict");
  assert_string_equal(jstr(r.json, "message"),
                      "Operation cannot be fulfilled on configmaps \"a\": the object has been "
                      "modified; please apply your changes to the latest version and try again");
  sim_resp_free(&r);
  /* Without a resourceVersion the update is unconditional. */
  r = sim_req(sim, "PUT", "/api/v1/namespaces/default/configmaps/a",
              "{\"metadata\":{\"name\":\"a\"},\"data\":{\"v\":\"3\"}}");
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "data.v"), "3");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_UpdateNoopKeepsResourceVersion(void **state) {
  kin_sim *sim = sim_start(0, 0);
  long long rv = sim_put_cm(sim, "default", "a", NULL, "1");
  sim_resp r = sim_req(sim, "PUT", "/api/v1/namespaces/default/configmaps/a",
                       "{\"metadata\":{\"name\":\"a\",\"labels\":{}},\"data\":{\"v\":\"1\"}}");
  assert_int_equal(r.code, 200);
  assert_int_equal(atoll(jstr(r.json, "metadata.resourceVersion")), rv);
  assert_int_equal((long long)kin_sim_resource_version(sim), rv);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_GenerationBumpsOnSpecChangeOnly(void **state) {
  kin_sim *sim = sim_start(0, 0);
  const char *p = "/apis/apps/v1/namespaces/default/deployments";
  sim_resp r = sim_req(sim, "POST", p,
                       "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":1}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  const char *u = "/apis/apps/v1/namespaces/default/deployments/d";
  r = sim_req(sim, "PUT", u,
              "{\"metadata\":{\"name\":\"d\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"replicas\":1}}");
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "metadata.generation"), 1);
  assert_string_equal(jstr(r.json, "metadata.labels.a"), "b");
  sim_resp_free(&r);
  r = sim_req(sim, "PUT", u, "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":2}}");
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "metadata.generation"), 2);
  sim_resp_free(&r);
  /* /status changes status only: spec and generation stay. */
  r = sim_req(sim, "PUT", "/apis/apps/v1/namespaces/default/deployments/d/status",
              "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":9},"
              "\"status\":{\"readyReplicas\":2}}");
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "metadata.generation"), 2);
  assert_int_equal(jint(r.json, "spec.replicas"), 2);
  assert_int_equal(jint(r.json, "status.readyReplicas"), 2);
  sim_resp_free(&r);
  /* The main resource ignores status. */
  r = sim_req(sim, "PUT", u,
              "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":2},\"status\":{}}");
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "status.readyReplicas"), 2);
  sim_resp_free(&r);
  /* configmaps have no status subresource. */
  r = sim_req(sim, "PUT", "/api/v1/namespaces/default/configmaps/x/status", "{}");
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_GracefulStoreHandleFinalizers(void **state) {
  kin_sim *sim = sim_start(0, 0);
  const char *u = "/api/v1/namespaces/default/configmaps/f";
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps",
                       "{\"metadata\":{\"name\":\"f\",\"finalizers\":[\"x/y\"]}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  r = sim_req(sim, "DELETE", u, NULL);
  assert_int_equal(r.code, 200);
  assert_non_null(jstr(r.json, "metadata.deletionTimestamp"));
  sim_resp_free(&r);
  r = sim_req(sim, "GET", u, NULL);
  assert_int_equal(r.code, 200);
  assert_non_null(jstr(r.json, "metadata.deletionTimestamp"));
  sim_resp_free(&r);
  /* Removing the last finalizer removes the object. */
  r = sim_req(sim, "PUT", u, "{\"metadata\":{\"name\":\"f\",\"finalizers\":[]}}");
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", u, NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_StoreDeleteWithPreconditions(void **state) {
  kin_sim *sim = sim_start(0, 0);
  long long rv = sim_put_cm(sim, "default", "a", NULL, "1");
  const char *u = "/api/v1/namespaces/default/configmaps/a";
  sim_resp r = sim_req(sim, "DELETE", u, "{\"preconditions\":{\"uid\":\"nope\"}}");
  assert_int_equal(r.code, 409);
  assert_string_equal(jstr(r.json, "reason"), "Conflict");
  assert_non_null(strstr(jstr(r.json, "message"),
                         "Operation cannot be fulfilled on ConfigMap \"a\": the UID in the "
                         "precondition (nope) does not match the UID in record"));
  sim_resp_free(&r);
  r = sim_req(sim, "DELETE", u, "{\"preconditions\":{\"resourceVersion\":\"1\"}}");
  assert_int_equal(r.code, 409);
  assert_non_null(strstr(jstr(r.json, "message"), "the ResourceVersion in the precondition (1)"));
  sim_resp_free(&r);
  char body[128];
  snprintf(body, sizeof(body), "{\"preconditions\":{\"resourceVersion\":\"%lld\"}}", rv);
  r = sim_req(sim, "DELETE", u, body);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "status"), "Success");
  assert_string_equal(jstr(r.json, "details.name"), "a");
  sim_resp_free(&r);
  r = sim_req(sim, "DELETE", u, NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_StoreDeleteCollection(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "a", "{\"app\":\"x\"}", "1");
  sim_put_cm(sim, "default", "b", "{\"app\":\"x\"}", "1");
  sim_put_cm(sim, "default", "c", "{\"app\":\"y\"}", "1");
  sim_resp r = sim_req(sim, "DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=app%3Dx",
                       NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "kind"), "ConfigMapList");
  assert_int_equal(json_array_size(json_object_get(r.json, "items")), 2);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps", NULL);
  json_t *items = json_object_get(r.json, "items");
  assert_int_equal(json_array_size(items), 1);
  assert_string_equal(jstr(json_array_get(items, 0), "metadata.name"), "c");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* A deleted namespace is Terminating (no create in it) until the
 * namespace controller, 5 s later on its clock, has deleted its contents
 * and finalized it. */
static void test_sim_NamespaceDeleteRemovesContents(void **state) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.fake_clock = 1;
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"tmp\"}}");
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "status.phase"), "Active");
  sim_resp_free(&r);
  sim_put_cm(sim, "tmp", "a", NULL, "1");
  r = sim_req(sim, "DELETE", "/api/v1/namespaces/tmp", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "status.phase"), "Terminating");
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/api/v1/namespaces/tmp/configmaps", "{\"metadata\":{\"name\":\"b\"}}");
  assert_int_equal(r.code, 403);
  assert_string_equal(jstr(r.json, "message"),
                      "configmaps \"b\" is forbidden: unable to create new content in namespace "
                      "tmp because it is being terminated");
  sim_resp_free(&r);
  assert_int_equal(kin_sim_settle(sim, 10000), 0);
  r = sim_req(sim, "GET", "/api/v1/namespaces/tmp/configmaps/a", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  assert_int_equal(kin_sim_clock_advance(sim, 5000), 0);
  assert_int_equal(kin_sim_settle(sim, 10000), 0);
  r = sim_req(sim, "GET", "/api/v1/namespaces/tmp/configmaps/a", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/tmp", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static const char crd_body[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\","
    "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\","
    "\"kind\":\"Widget\",\"shortNames\":[\"wd\"]},\"versions\":["
    "{\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"status\":{}}},"
    "{\"name\":\"v1beta1\",\"served\":true,\"storage\":false}]}}";

static void test_sim_CustomResourceDefinitionServesVersions(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                       crd_body);
  assert_int_equal(r.code, 201);
  json_t *conds = json_object_get(json_object_get(r.json, "status"), "conditions");
  assert_string_equal(jstr(json_array_get(conds, 1), "type"), "Established");
  assert_string_equal(jstr(json_array_get(conds, 1), "status"), "True");
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/apis/example.com/v1/namespaces/default/widgets",
              "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"},"
              "\"spec\":{\"size\":1},\"status\":{\"ok\":true}}");
  assert_int_equal(r.code, 201);
  assert_int_equal(jint(r.json, "metadata.generation"), 1);
  assert_null(json_object_get(r.json, "status")); /* status subresource: dropped on create */
  sim_resp_free(&r);
  /* Served at v1beta1 too, with that apiVersion. */
  r = sim_req(sim, "GET", "/apis/example.com/v1beta1/namespaces/default/widgets/w", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "apiVersion"), "example.com/v1beta1");
  sim_resp_free(&r);
  /* Any change outside metadata and status bumps generation. */
  r = sim_req(sim, "PUT", "/apis/example.com/v1/namespaces/default/widgets/w",
              "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"},"
              "\"spec\":{\"size\":1},\"extra\":1}");
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "metadata.generation"), 2);
  sim_resp_free(&r);
  r = sim_req(sim, "PUT", "/apis/example.com/v1/namespaces/default/widgets/w/status",
              "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"},"
              "\"status\":{\"ok\":true}}");
  assert_int_equal(r.code, 200);
  assert_true(json_is_true(json_object_get(json_object_get(r.json, "status"), "ok")));
  assert_int_equal(jint(r.json, "metadata.generation"), 2);
  sim_resp_free(&r);
  /* Deleting the CRD stops serving it. */
  r = sim_req(sim, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  /* (kube-apiserver's CRD handler delegates to the plain 404 of its mux) */
  r = sim_req(sim, "GET", "/apis/example.com/v1/namespaces/default/widgets/w", NULL);
  assert_int_equal(r.code, 404);
  assert_null(r.json);
  assert_string_equal(r.ctype, "text/plain; charset=utf-8");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_ClusterScopedCustomResource(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
      "{\"metadata\":{\"name\":\"gadgets.example.com\"},\"spec\":{\"group\":\"example.com\","
      "\"scope\":\"Cluster\",\"names\":{\"plural\":\"gadgets\",\"kind\":\"Gadget\"},"
      "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true}]}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/apis/example.com/v1/gadgets",
              "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Gadget\",\"metadata\":{\"name\":\"g\"}}");
  assert_int_equal(r.code, 201);
  assert_null(jstr(r.json, "metadata.namespace"));
  assert_string_equal(jstr(r.json, "kind"), "Gadget");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/apis/example.com/v1/namespaces/default/gadgets/g", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_PatchMergeAndJSONPatch(void **state) {
  kin_sim *sim = sim_start(0, 0);
  long long rv = sim_put_cm(sim, "default", "a", NULL, "1");
  const char *u = "/api/v1/namespaces/default/configmaps/a";
  sim_resp r = sim_do(sim, "PATCH", u, "application/merge-patch+json",
                      "{\"data\":{\"w\":\"2\"}}", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "data.v"), "1");
  assert_string_equal(jstr(r.json, "data.w"), "2");
  assert_int_equal(atoll(jstr(r.json, "metadata.resourceVersion")), rv + 1);
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", u, "application/json-patch+json",
             "[{\"op\":\"replace\",\"path\":\"/data/v\",\"value\":\"9\"}]", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "data.v"), "9");
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", u, "application/strategic-merge-patch+json",
             "{\"data\":{\"s\":\"3\"}}", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "data.s"), "3");
  sim_resp_free(&r);
  /* A patch carrying a stale resourceVersion conflicts. */
  char body[128];
  snprintf(body, sizeof(body), "{\"metadata\":{\"resourceVersion\":\"%lld\"}}", rv);
  r = sim_do(sim, "PATCH", u, "application/merge-patch+json", body, NULL);
  assert_int_equal(r.code, 409);
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", "/api/v1/namespaces/default/configmaps/zz",
             "application/merge-patch+json", "{}", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_SeedFileAndKubeconfig(void **state) {
  char seed[] = "/tmp/kin_sim_seedXXXXXX";
  int fd = mkstemp(seed);
  assert_true(fd >= 0);
  const char *lines =
      "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"s1\",\"namespace\":\"seeded\"}}\n"
      "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d1\"}}\n";
  assert_int_equal(write(fd, lines, strlen(lines)), (ssize_t)strlen(lines));
  close(fd);
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.seed_file = seed;
  cfg.token = "s3cret";
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  sim_resp r = sim_do(sim, "GET", "/api/v1/namespaces/seeded/configmaps/s1", NULL, NULL,
                      "Authorization: Bearer s3cret");
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = sim_do(sim, "GET", "/apis/apps/v1/namespaces/default/deployments/d1", NULL, NULL,
             "Authorization: Bearer s3cret");
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/seeded/configmaps/s1", NULL);
  assert_int_equal(r.code, 401);
  assert_string_equal(jstr(r.json, "reason"), "Unauthorized");
  sim_resp_free(&r);
  char kc[] = "/tmp/kin_sim_kcXXXXXX";
  fd = mkstemp(kc);
  close(fd);
  assert_int_equal(kin_sim_write_kubeconfig(sim, kc), 0);
  char *text = slurp(kc);
  assert_non_null(strstr(text, kin_sim_url(sim)));
  assert_non_null(strstr(text, "token: \"s3cret\""));
  free(text);
  unlink(kc);
  unlink(seed);
  kin_sim_free(sim);
}

/* LeaseStrategy.AllowCreateOnUpdate: a PUT of a missing Lease creates it;
 * a ConfigMap PUT does not. */
static void test_sim_UpdateCreatesLease(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/l",
                       "{\"metadata\":{\"name\":\"l\"},\"spec\":{\"holderIdentity\":\"me\"}}");
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "spec.holderIdentity"), "me");
  sim_resp_free(&r);
  r = sim_req(sim, "PUT", "/api/v1/namespaces/default/configmaps/nx", "{\"metadata\":{\"name\":\"nx\"}}");
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* Serving over TLS with the fixture certificate (self-signed, 127.0.0.1). */
static void test_sim_ServesTLS(void **state) {
  kin_sim *sim = kin_test_sim_start(1);
  assert_memory_equal(kin_sim_url(sim), "https://127.0.0.1:", 18);
  sim_resp r = sim_req(sim, "GET", "/api/v1/namespaces/default", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "metadata.name"), "default");
  sim_resp_free(&r);
  kin_sim_free(sim);
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.tls_cert_file = kin_test_fixture_path("sim_tls.crt");
  cfg.tls_key_file = "/nonexistent/key.pem";
  assert_int_equal(kin_sim_start(&cfg, &sim), KIN_EINVAL);
}

/* ?dryRun=All answers as the write would and changes nothing; other
 * values get the server's 422. */
static void test_sim_DryRun(void **state) {
  kin_sim *sim = sim_start(0, 0);
  long long rv = sim_put_cm(sim, "default", "a", NULL, "1");
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps?dryRun=All",
                       "{\"metadata\":{\"name\":\"dry\"}}");
  assert_int_equal(r.code, 201);
  assert_non_null(jstr(r.json, "metadata.uid"));
  assert_null(jstr(r.json, "metadata.resourceVersion"));
  sim_resp_free(&r);
  r = sim_req(sim, "PUT", "/api/v1/namespaces/default/configmaps/a?dryRun=All",
              "{\"metadata\":{\"name\":\"a\"},\"data\":{\"v\":\"2\"}}");
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "data.v"), "2");
  sim_resp_free(&r);
  r = sim_req(sim, "DELETE", "/api/v1/namespaces/default/configmaps/a?dryRun=All", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "status"), "Success");
  sim_resp_free(&r);
  assert_int_equal((long long)kin_sim_resource_version(sim), rv);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/a", NULL);
  assert_string_equal(jstr(r.json, "data.v"), "1");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/dry", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps?dryRun=x",
              "{\"metadata\":{\"name\":\"dry\"}}");
  assert_int_equal(r.code, 422);
  assert_string_equal(jstr(r.json, "message"),
                      "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: "
                      "[\"x\"]: supported values: \"All\"");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

KIN_SUITE(sim_crud, cmocka_unit_test(test_sim_DryRun), cmocka_unit_test(test_sim_ServesTLS), cmocka_unit_test(test_sim_UpdateCreatesLease), cmocka_unit_test(test_sim_StoreCreate),
          cmocka_unit_test(test_sim_CreateGenerateName),
          cmocka_unit_test(test_sim_CreateAlreadyExistsAndMissingNamespace),
          cmocka_unit_test(test_sim_StoreUpdateConflict),
          cmocka_unit_test(test_sim_UpdateNoopKeepsResourceVersion),
          cmocka_unit_test(test_sim_GenerationBumpsOnSpecChangeOnly),
          cmocka_unit_test(test_sim_GracefulStoreHandleFinalizers),
          cmocka_unit_test(test_sim_StoreDeleteWithPreconditions),
          cmocka_unit_test(test_sim_StoreDeleteCollection),
          cmocka_unit_test(test_sim_NamespaceDeleteRemovesContents),
          cmocka_unit_test(test_sim_CustomResourceDefinitionServesVersions),
          cmocka_unit_test(test_sim_ClusterScopedCustomResource),
          cmocka_unit_test(test_sim_PatchMergeAndJSONPatch),
          cmocka_unit_test(test_sim_SeedFileAndKubeconfig))
