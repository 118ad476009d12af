/* webhook_test_util.h -- shared by the webhook server's C suites
 * (test_webhook_serve.c, test_webhook_https.c): a gate that holds a hook's
 * call until the test releases it, to observe a call under way. */
#ifndef KIN_WEBHOOK_TEST_UTIL_H
#define KIN_WEBHOOK_TEST_UTIL_H

#include <pthread.h>

#include "webhook.h"

/* A gate: entered once a call reached it, release lets it go on. mu
 * guards entered and release; cv signals either. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int entered, release;
} wh_test_gate;

#define WH_TEST_GATE_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0}

/* A kin_webhook_fn whose ud is a wh_test_gate: marks it entered, waits for
 * its release, then allows. Returns 0. */
int wh_test_gate_fn(void *ud, const kin_webhook_request *r, kin_webhook_response *resp);

/* Waits until a call entered g. */
void wh_test_gate_wait_entered(wh_test_gate *g);

/* Lets the calls held at g (and later ones) go on. */
void wh_test_gate_release(wh_test_gate *g);

#endif
