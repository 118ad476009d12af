/* io_response.c -- the small helpers around a request's outcome: the
 * canceler a LIST is ended with from another thread, and freeing and
 * classifying a kin_io_response. See io_engine.h. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "io_engine.h"

int kin_io_canceler_init(kin_io_canceler *cx) {
  cx->fired = 0;
  cx->h = NULL;
  return pthread_mutex_init(&cx->mu, NULL) ? KIN_ENOMEM : 0;
}

void kin_io_canceler_destroy(kin_io_canceler *cx) { pthread_mutex_destroy(&cx->mu); }

void kin_io_canceler_fire(kin_io_canceler *cx) {
  pthread_mutex_lock(&cx->mu);
  cx->fired = 1;
  if (cx->h) kin_io_cancel(cx->h);
  pthread_mutex_unlock(&cx->mu);
}

int kin_io_canceler_fired(kin_io_canceler *cx) {
  pthread_mutex_lock(&cx->mu);
  int f = cx->fired;
  pthread_mutex_unlock(&cx->mu);
  return f;
}

void kin_io_response_free(kin_io_response *res) {
  if (!res) return;
  free(res->retry_after);
  free(res->content_type);
  free(res->body);
  memset(res, 0, sizeof(*res));
}

/* Returns 1 for a connection the server refused (curl's
 * CURLE_COULDNT_CONNECT), else 0. */
int kin_io_response_refused(const kin_io_response *res) {
  return res && res->curl_code == CURLE_COULDNT_CONNECT;
}
