/* webhook_test_util.c -- the webhook suites' call gate (see
 * webhook_test_util.h). */
#include "webhook_test_util.h"

/* See webhook_test_util.h: 0 once released, with resp allowed. */
int wh_test_gate_fn(void *ud, const kin_webhook_request *r, kin_webhook_response *resp) {
  (void)r;
  wh_test_gate *g = ud;
  pthread_mutex_lock(&g->mu);
  g->entered = 1;
  pthread_cond_broadcast(&g->cv);
  while (!g->release) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
  resp->allowed = 1;
  return 0;
}

/* Blocks on g's cv until entered. */
void wh_test_gate_wait_entered(wh_test_gate *g) {
  pthread_mutex_lock(&g->mu);
  while (!g->entered) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
}

/* Sets release and wakes the waiters. */
void wh_test_gate_release(wh_test_gate *g) {
  pthread_mutex_lock(&g->mu);
  g->release = 1;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}
