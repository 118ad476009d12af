/* test_sim_concurrency.c -- optimistic concurrency under load: writers
 * doing get / increment / update-with-resourceVersion and retrying on 409
 * never lose an update (the guarantee of GuaranteedUpdate); concurrent
 * creates of one name give exactly one 201. */
#include "kin_test.h"

#include <pthread.h>

#include "sim_client.h"

#define WRITERS 4
#define INCREMENTS 25

typedef struct {
  kin_sim *sim;
  int conflicts;
} writer;

static void *increment(void *p) {
  writer *w = p;
  const char *u = "/api/v1/namespaces/default/configmaps/counter";
  for (int i = 0; i < INCREMENTS;) {
    sim_resp r = sim_req(w->sim, "GET", u, NULL);
    int n = atoi(jstr(r.json, "data.v"));
    char body[256];
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"counter\",\"resourceVersion\":\"%s\"},\"data\":{\"v\":\"%d\"}}",
             jstr(r.json, "metadata.resourceVersion"), n + 1);
    sim_resp_free(&r);
    r = sim_req(w->sim, "PUT", u, body);
    if (r.code == 200)
      i++;
    else if (r.code == 409)
      w->conflicts++;
    else
      fail_msg("unexpected %ld: %s", r.code, r.body);
    sim_resp_free(&r);
  }
  return NULL;
}

static void test_sim_ConcurrentUpdatesNeverLoseAnUpdate(void **state) {
  kin_sim *sim = sim_start(0, 0);
  long long rv0 = sim_put_cm(sim, "default", "counter", NULL, "0");
  pthread_t t[WRITERS];
  writer w[WRITERS];
  for (int i = 0; i < WRITERS; i++) {
    w[i] = (writer){sim, 0};
    pthread_create(&t[i], NULL, increment, &w[i]);
  }
  for (int i = 0; i < WRITERS; i++) pthread_join(t[i], NULL);
  sim_resp r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/counter", NULL);
  assert_int_equal(atoi(jstr(r.json, "data.v")), WRITERS * INCREMENTS);
  /* One resourceVersion per successful update, none for conflicts. */
  assert_int_equal(atoll(jstr(r.json, "metadata.resourceVersion")), rv0 + WRITERS * INCREMENTS);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

typedef struct {
  kin_sim *sim;
  long code;
} creator;

static void *create_same(void *p) {
  creator *c = p;
  sim_resp r = sim_req(c->sim, "POST", "/api/v1/namespaces/default/configmaps",
                       "{\"metadata\":{\"name\":\"once\"}}");
  c->code = r.code;
  sim_resp_free(&r);
  return NULL;
}

static void test_sim_ConcurrentCreateOneWins(void **state) {
  kin_sim *sim = sim_start(0, 0);
  pthread_t t[WRITERS];
  creator c[WRITERS];
  for (int i = 0; i < WRITERS; i++) {
    c[i] = (creator){sim, 0};
    pthread_create(&t[i], NULL, create_same, &c[i]);
  }
  int created = 0, exists = 0;
  for (int i = 0; i < WRITERS; i++) {
    pthread_join(t[i], NULL);
    created += c[i].code == 201;
    exists += c[i].code == 409;
  }
  assert_int_equal(created, 1);
  assert_int_equal(exists, WRITERS - 1);
  kin_sim_free(sim);
}

KIN_SUITE(sim_concurrency, cmocka_unit_test(test_sim_ConcurrentUpdatesNeverLoseAnUpdate),
          cmocka_unit_test(test_sim_ConcurrentCreateOneWins))
