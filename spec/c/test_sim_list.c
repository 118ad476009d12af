/* test_sim_list.c -- kinformer.sim LIST: label and field selectors,
 * limit/continue paging (the etcd3 store's TestList / TestListContinuation
 * / TestListInconsistentContinuation), and the resourceVersion semantics of
 * ListOptions. */
#include "kin_test.h"

#include "sim_client.h"

static size_t nitems(const sim_resp *r) { return json_array_size(json_object_get(r->json, "items")); }

static const char *item_name(const sim_resp *r, size_t i) {
  return jstr(json_array_get(json_object_get(r->json, "items"), i), "metadata.name");
}

static void test_sim_ListLabelSelector(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "a", "{\"app\":\"web\",\"tier\":\"fe\"}", "1");
  sim_put_cm(sim, "default", "b", "{\"app\":\"web\",\"tier\":\"be\"}", "1");
  sim_put_cm(sim, "default", "c", "{\"app\":\"db\"}", "1");
  sim_resp r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps?labelSelector=app%3Dweb", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "kind"), "ConfigMapList");
  assert_int_equal(nitems(&r), 2);
  assert_string_equal(item_name(&r, 0), "a");
  assert_string_equal(item_name(&r, 1), "b");
  /* Items of a built-in list carry no kind/apiVersion, as the server's. */
  assert_null(json_object_get(json_array_get(json_object_get(r.json, "items"), 0), "kind"));
  assert_string_equal(jstr(json_array_get(json_object_get(r.json, "items"), 0), "data.v"), "1");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/configmaps?labelSelector=tier%20in%20(be),app", NULL);
  assert_int_equal(nitems(&r), 1);
  assert_string_equal(item_name(&r, 0), "b");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/configmaps?labelSelector=!tier", NULL);
  assert_int_equal(nitems(&r), 1);
  assert_string_equal(item_name(&r, 0), "c");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/configmaps?labelSelector=a%20in", NULL);
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "reason"), "BadRequest");
  /* labels.Parse's error passes through NewBadRequest unchanged; apimachinery
   * v0.36.3 parseValues words this one without the comma the others have. */
  assert_string_equal(jstr(r.json, "message"), "unable to parse requirement: found '' expected: '('");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* Label selectors read the labels in the stored bytes (selector.c); labels
 * with escapes or a map too large for that go through the parser. Both
 * must answer as a match on the parsed object: a label's name is a whole
 * member name of metadata.labels, annotations are not labels, null and
 * non-string values are no labels. */
static void test_sim_ListLabelSelectorStoredBytes(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "web1", "{\"app\":\"web\"}", "1");
  sim_put_cm(sim, "default", "esc", "{\"app\":\"we\\\"b\",\"k\":\"v\"}", "1");
  sim_put_cm(sim, "default", "prefix", "{\"app.kubernetes.io/name\":\"web\",\"apps\":\"x\"}", "1");
  sim_put_cm(sim, "default", "nolabels", "null", "1");
  sim_put_cm(sim, "default", "num", "{\"app\":7}", "1");
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps",
                       "{\"metadata\":{\"name\":\"ann\",\"annotations\":{\"app\":\"web\"}}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  /* More than 4 KB of labels. */
  char big[8192], *p = big;
  p += sprintf(p, "{\"metadata\":{\"name\":\"big\",\"labels\":{");
  for (int i = 0; i < 80; i++)
    p += sprintf(p, "%s\"l%02d\":\"%063d\"", i ? "," : "", i, i);
  sprintf(p, "}}}");
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps", big);
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  static const struct {
    const char *sel, *want;
  } cases[] = {
      {"app%3Dweb", "web1"},
      {"app", "esc,web1"},
      {"!app", "ann,big,nolabels,num,prefix"},
      {"k%3Dv", "esc"},
      {"l79%3D000000000000000000000000000000000000000000000000000000000000079", "big"},
      {"l79", "big"},
      {"apps%20in%20(x,y),!app", "prefix"},
      {"app%20notin%20(web)", "ann,big,esc,nolabels,num,prefix"},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    char path[256], got[256] = "";
    snprintf(path, sizeof(path), "/api/v1/namespaces/default/configmaps?labelSelector=%s",
             cases[c].sel);
    r = sim_req(sim, "GET", path, NULL);
    assert_int_equal(r.code, 200);
    for (size_t i = 0; i < nitems(&r); i++)
      snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? "," : "",
               item_name(&r, i));
    if (strcmp(got, cases[c].want))
      fail_msg("labelSelector=%s: got %s, want %s", cases[c].sel, got, cases[c].want);
    sim_resp_free(&r);
  }
  kin_sim_free(sim);
}

static void test_sim_ListFieldSelector(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "a", NULL, "1");
  sim_put_cm(sim, "default", "b", NULL, "1");
  sim_put_cm(sim, "kube-system", "a", NULL, "1");
  sim_resp r = sim_req(sim, "GET", "/api/v1/configmaps?fieldSelector=metadata.name%3Da", NULL);
  assert_int_equal(nitems(&r), 2);
  sim_resp_free(&r);
  r = sim_req(sim, "GET",
              "/api/v1/configmaps?fieldSelector=metadata.name%3D%3Da,metadata.namespace!%3Ddefault",
              NULL);
  assert_int_equal(nitems(&r), 1);
  assert_string_equal(jstr(json_array_get(json_object_get(r.json, "items"), 0), "metadata.namespace"),
                      "kube-system");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/configmaps?fieldSelector=data.x%3D1", NULL);
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "message"),
                      "\"data.x\" is not a known field selector: only \"metadata.name\", "
                      "\"metadata.namespace\"");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/configmaps?fieldSelector=metadata.name%3E1", NULL);
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "message"),
                      "invalid selector: 'metadata.name>1'; can't understand 'metadata.name>1'");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* Pods select on their registry's fields (GetAttrs: spec.nodeName,
 * status.phase...); unknown ones get that registry's message. */
static void test_sim_ListPodFieldSelector(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/pods",
                       "{\"metadata\":{\"name\":\"p1\"},\"spec\":{\"nodeName\":\"n1\"}}");
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "status.phase"), "Pending");
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/pods", "{\"metadata\":{\"name\":\"p2\"}}");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", NULL);
  assert_int_equal(nitems(&r), 1);
  assert_string_equal(item_name(&r, 0), "p1");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3D,status.phase%3DPending", NULL);
  assert_int_equal(nitems(&r), 1);
  assert_string_equal(item_name(&r, 0), "p2");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/pods?fieldSelector=foo.bar%3D1", NULL);
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "message"), "field label not supported: foo.bar");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_ListContinuation(void **state) {
  kin_sim *sim = sim_start(0, 0);
  char name[16];
  for (int i = 0; i < 7; i++) {
    snprintf(name, sizeof(name), "cm%d", i);
    sim_put_cm(sim, "default", name, NULL, "1");
  }
  long long rv = (long long)kin_sim_resource_version(sim);
  char path[1024];
  snprintf(path, sizeof(path), "/api/v1/namespaces/default/configmaps?limit=3");
  int seen = 0, pages = 0;
  for (;;) {
    sim_resp r = sim_req(sim, "GET", path, NULL);
    assert_int_equal(r.code, 200);
    assert_int_equal(atoll(jstr(r.json, "metadata.resourceVersion")), rv);
    for (size_t i = 0; i < nitems(&r); i++) {
      snprintf(name, sizeof(name), "cm%d", seen++);
      assert_string_equal(item_name(&r, i), name);
    }
    pages++;
    const char *cont = jstr(r.json, "metadata.continue");
    if (pages == 1) assert_int_equal(jint(r.json, "metadata.remainingItemCount"), 4);
    if (!cont) {
      sim_resp_free(&r);
      break;
    }
    /* A write between pages does not show up: pages are one snapshot. */
    if (pages == 1) sim_put_cm(sim, "default", "cm00", NULL, "1");
    snprintf(path, sizeof(path), "/api/v1/namespaces/default/configmaps?limit=3&continue=%s", cont);
    sim_resp_free(&r);
  }
  assert_int_equal(seen, 7);
  assert_int_equal(pages, 3);
  kin_sim_free(sim);
}

/* With watch_cache_lists, resourceVersion=0 is served whole, as the watch
 * cache does: limit ignored, one page, no continue (checked against
 * kube-apiserver v1.36.3). Any other resourceVersion still pages, and
 * without the option "0" pages too. */
static void test_sim_ListResourceVersionZeroIgnoresLimit(void **state) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.watch_cache_lists = 1;
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  for (int i = 0; i < 5; i++) {
    char name[16];
    snprintf(name, sizeof(name), "cm%d", i);
    sim_put_cm(sim, "default", name, NULL, "1");
  }
  sim_resp r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps?limit=2&resourceVersion=0", NULL);
  assert_int_equal(r.code, 200);
  assert_int_equal(nitems(&r), 5);
  assert_null(jstr(r.json, "metadata.continue"));
  sim_resp_free(&r);
  r = sim_req(sim, "GET",
              "/api/v1/namespaces/default/configmaps?limit=2&resourceVersion=0&resourceVersionMatch=NotOlderThan",
              NULL);
  assert_int_equal(nitems(&r), 5);
  sim_resp_free(&r);
  char path[256];
  snprintf(path, sizeof(path), "/api/v1/namespaces/default/configmaps?limit=2&resourceVersion=%llu",
           (unsigned long long)kin_sim_resource_version(sim));
  r = sim_req(sim, "GET", path, NULL);
  assert_int_equal(nitems(&r), 2);
  assert_non_null(jstr(r.json, "metadata.continue"));
  sim_resp_free(&r);
  kin_sim_free(sim);

  sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "a", NULL, "1");
  sim_put_cm(sim, "default", "b", NULL, "1");
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps?limit=1&resourceVersion=0", NULL);
  assert_int_equal(nitems(&r), 1);
  assert_non_null(jstr(r.json, "metadata.continue"));
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_ListContinueExpired(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "a", NULL, "1");
  sim_put_cm(sim, "default", "b", NULL, "1");
  sim_resp r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps?limit=1", NULL);
  char cont[512];
  snprintf(cont, sizeof(cont), "%s", jstr(r.json, "metadata.continue"));
  sim_resp_free(&r);
  sim_put_cm(sim, "default", "c", NULL, "1");
  kin_sim_compact(sim);
  char path[1024];
  snprintf(path, sizeof(path), "/api/v1/namespaces/default/configmaps?limit=1&continue=%s", cont);
  r = sim_req(sim, "GET", path, NULL);
  assert_int_equal(r.code, 410);
  assert_string_equal(jstr(r.json, "reason"), "Expired");
  assert_non_null(strstr(jstr(r.json, "message"),
                         "The provided continue parameter is too old to display a consistent list result."));
  /* The inconsistent token of the Status continues from the latest state. */
  const char *next = jstr(r.json, "metadata.continue");
  assert_non_null(next);
  snprintf(path, sizeof(path), "/api/v1/namespaces/default/configmaps?continue=%s", next);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", path, NULL);
  assert_int_equal(r.code, 200);
  assert_int_equal(nitems(&r), 2);
  assert_string_equal(item_name(&r, 0), "b");
  assert_string_equal(item_name(&r, 1), "c");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps?continue=garbage", NULL);
  assert_int_equal(r.code, 400);
  assert_non_null(strstr(jstr(r.json, "message"), "invalid continue token: continue key is not valid"));
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_ListResourceVersionMatch(void **state) {
  kin_sim *sim = sim_start(0, 0);
  long long rv1 = sim_put_cm(sim, "default", "a", NULL, "1");
  sim_put_cm(sim, "default", "b", NULL, "1");
  char path[256];
  /* Exact: the state at that version, rebuilt from the history. */
  snprintf(path, sizeof(path),
           "/api/v1/namespaces/default/configmaps?resourceVersion=%lld&resourceVersionMatch=Exact", rv1);
  sim_resp r = sim_req(sim, "GET", path, NULL);
  assert_int_equal(r.code, 200);
  assert_int_equal(nitems(&r), 1);
  assert_int_equal(atoll(jstr(r.json, "metadata.resourceVersion")), rv1);
  sim_resp_free(&r);
  snprintf(path, sizeof(path),
           "/api/v1/namespaces/default/configmaps?resourceVersion=%lld&resourceVersionMatch=NotOlderThan", rv1);
  r = sim_req(sim, "GET", path, NULL);
  assert_int_equal(nitems(&r), 2);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps?resourceVersion=0", NULL);
  assert_int_equal(nitems(&r), 2);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps?resourceVersionMatch=Exact", NULL);
  assert_int_equal(r.code, 422);
  assert_string_equal(jstr(r.json, "message"),
                      "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                      "resourceVersionMatch is forbidden unless resourceVersion is provided");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps?resourceVersion=999999", NULL);
  assert_int_equal(r.code, 504);
  assert_string_equal(jstr(r.json, "reason"), "Timeout");
  assert_non_null(strstr(jstr(r.json, "message"), "Too large resource version: 999999"));
  sim_resp_free(&r);
  kin_sim_compact(sim);
  r = sim_req(sim, "GET", path, NULL);
  assert_int_equal(r.code, 200); /* NotOlderThan: served from the latest */
  sim_resp_free(&r);
  snprintf(path, sizeof(path),
           "/api/v1/namespaces/default/configmaps?resourceVersion=%lld&resourceVersionMatch=Exact", rv1);
  r = sim_req(sim, "GET", path, NULL);
  assert_int_equal(r.code, 410);
  assert_string_equal(jstr(r.json, "reason"), "Expired");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_ListAllNamespacesSorted(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "kube-system", "z", NULL, "1");
  sim_put_cm(sim, "default", "y", NULL, "1");
  sim_resp r = sim_req(sim, "GET", "/api/v1/configmaps", NULL);
  assert_int_equal(nitems(&r), 2);
  assert_string_equal(item_name(&r, 0), "y");
  assert_string_equal(item_name(&r, 1), "z");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces", NULL);
  assert_string_equal(jstr(r.json, "kind"), "NamespaceList");
  assert_int_equal(nitems(&r), 4);
  assert_string_equal(item_name(&r, 0), "default");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

KIN_SUITE(sim_list, cmocka_unit_test(test_sim_ListLabelSelector),
          cmocka_unit_test(test_sim_ListLabelSelectorStoredBytes),
          cmocka_unit_test(test_sim_ListFieldSelector),
          cmocka_unit_test(test_sim_ListPodFieldSelector),
          cmocka_unit_test(test_sim_ListContinuation),
          cmocka_unit_test(test_sim_ListResourceVersionZeroIgnoresLimit),
          cmocka_unit_test(test_sim_ListContinueExpired),
          cmocka_unit_test(test_sim_ListResourceVersionMatch),
          cmocka_unit_test(test_sim_ListAllNamespacesSorted))
