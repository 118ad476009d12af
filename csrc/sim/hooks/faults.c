/* faults.c -- fault injection for testing clients: drop, cut, corrupt or
 * stall watches; fail the next requests with 429/500/503; add latency.
 * Reachable from C (sim.h) and over HTTP: POST /kinformer-sim/faults with
 * a JSON object, e.g. {"failNext":{"code":503,"count":2}}. The state lives
 * in kin__sim_store.faults under the store lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_int.h"
#include "kin.h"

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * KIN_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Bumps one watch-fault generation and wakes every watch to apply it. */
static void bump(kin_sim *sim, unsigned *gen) {
  pthread_mutex_lock(&sim->store.mu);
  (*gen)++;
  pthread_cond_broadcast(&sim->store.cond);
  pthread_mutex_unlock(&sim->store.mu);
}

void kin_sim_drop_watches(kin_sim *sim) { bump(sim, &sim->store.faults.drop_gen); }

void kin_sim_cut_watches(kin_sim *sim) { bump(sim, &sim->store.faults.cut_gen); }

void kin_sim_send_malformed_line(kin_sim *sim) { bump(sim, &sim->store.faults.malformed_gen); }

void kin_sim_stall_watches(kin_sim *sim, uint32_t ms) {
  pthread_mutex_lock(&sim->store.mu);
  sim->store.faults.stall_until = mono_ns() + (uint64_t)ms * KIN_NSEC_PER_MSEC;
  pthread_cond_broadcast(&sim->store.cond);
  pthread_mutex_unlock(&sim->store.mu);
}

int kin_sim_fail_next(kin_sim *sim, int code, unsigned count) {
  if (code != 429 && code != 500 && code != 503) return KIN_EINVAL;
  pthread_mutex_lock(&sim->store.mu);
  sim->store.faults.fail_code = code;
  sim->store.faults.fail_count = count;
  pthread_mutex_unlock(&sim->store.mu);
  return 0;
}

void kin_sim_set_latency(kin_sim *sim, uint32_t ms) {
  pthread_mutex_lock(&sim->store.mu);
  sim->store.faults.latency_ms = ms;
  pthread_mutex_unlock(&sim->store.mu);
}

void kin_sim_set_request_hook(kin_sim *sim, kin_sim_request_hook fn, void *ud) {
  pthread_mutex_lock(&sim->store.mu);
  sim->store.faults.hook = fn;
  sim->store.faults.hook_ud = ud;
  pthread_mutex_unlock(&sim->store.mu);
}

static enum MHD_Result add_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value) {
  kin__buf *b = cls;
  kin__buf_printf(b, "%c%s=%s", b->p && memchr(b->p, '?', b->len) ? '&' : '?', key,
                  value ? value : "");
  return MHD_YES;
}

void kin__sim_call_request_hook(kin__sim_req *req, const char *url) {
  pthread_mutex_lock(&req->sim->store.mu);
  kin_sim_request_hook fn = req->sim->store.faults.hook;
  void *ud = req->sim->store.faults.hook_ud;
  pthread_mutex_unlock(&req->sim->store.mu);
  if (!fn) return;
  kin__buf b = {0};
  kin__buf_puts(&b, url);
  MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, add_query_arg, &b);
  if (!b.oom) fn(ud, req->method, b.p);
  kin__buf_free(&b);
}

/* The Status of an injected failure, as the server's max-in-flight filter
 * (429), a panic (500) or an unavailable backend (503) words it. */
static enum MHD_Result respond_failure(kin__sim_req *req, int code) {
  kin__sim_result r = {0, NULL};
  if (code == 429)
    kin__sim_err(&r, 429, "TooManyRequests", json_pack("{s:i}", "retryAfterSeconds", 1),
                 "Too many requests, please try again later.");
  else if (code == 503)
    kin__sim_err(&r, 503, "ServiceUnavailable", NULL,
                 "the server is currently unable to handle the request");
  else
    kin__sim_err(&r, 500, "InternalError",
                 json_pack("{s:[{s:s}]}", "causes", "message", "injected fault"),
                 "Internal error occurred: injected fault");
  char *s = json_dumps(r.body, JSON_COMPACT);
  json_decref(r.body);
  kin__buf b = {0};
  if (s) kin__buf_printf(&b, "%s\n", s);
  free(s);
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      b.len, b.p ? b.p : (char *)"", b.p ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", "application/json");
  if (code == 429 || code == 503) MHD_add_response_header(resp, "Retry-After", "1");
  enum MHD_Result ret = kin__sim_queue_response(req, (unsigned)code, resp);
  MHD_destroy_response(resp);
  return ret;
}

int kin__sim_apply_request_faults(kin__sim_req *req, const char *url, enum MHD_Result *ret) {
  /* Health checks stay out of it, as they bypass the server's filters. */
  if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz") || !strcmp(url, "/livez")) return 0;
  kin__sim_faults *f = &req->sim->store.faults;
  pthread_mutex_lock(&req->sim->store.mu);
  uint32_t latency = f->latency_ms;
  int code = 0;
  if (f->fail_count) {
    f->fail_count--;
    code = f->fail_code;
  }
  pthread_mutex_unlock(&req->sim->store.mu);
  if (latency) {
    struct timespec ts = {(time_t)(latency / 1000), (long)(latency % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  if (!code) return 0;
  *ret = respond_failure(req, code);
  return 1;
}

/* POST /kinformer-sim/faults {"dropWatches":true, "cutWatches":true,
 * "malformedLine":true, "stallWatchesMs":N, "failNext":{"code":C,"count":N},
 * "latencyMs":N, "compact":true}; answers {"resourceVersion":"..."}. */
int kin__sim_handle_faults(kin__sim_req *req, const char *url, enum MHD_Result *ret) {
  if (strcmp(url, "/kinformer-sim/faults")) return 0;
  kin__sim_result out = {0, NULL};
  json_t *f = kin__sim_post_json(req);
  kin_sim *sim = req->sim;
  if (!json_is_object(f)) {
    kin__sim_err_bad_request(&out, "POST a JSON object of faults to /kinformer-sim/faults");
  } else {
    json_t *fail = json_object_get(f, "failNext");
    if (fail && kin_sim_fail_next(sim, (int)json_integer_value(json_object_get(fail, "code")),
                                  (unsigned)json_integer_value(json_object_get(fail, "count")))) {
      kin__sim_err_bad_request(&out, "failNext.code must be 429, 500 or 503");
    } else {
      if (json_is_true(json_object_get(f, "dropWatches"))) kin_sim_drop_watches(sim);
      if (json_is_true(json_object_get(f, "cutWatches"))) kin_sim_cut_watches(sim);
      if (json_is_true(json_object_get(f, "malformedLine"))) kin_sim_send_malformed_line(sim);
      if (json_is_true(json_object_get(f, "compact"))) kin_sim_compact(sim);
      json_t *v = json_object_get(f, "stallWatchesMs");
      if (json_is_integer(v)) kin_sim_stall_watches(sim, (uint32_t)json_integer_value(v));
      v = json_object_get(f, "latencyMs");
      if (json_is_integer(v)) kin_sim_set_latency(sim, (uint32_t)json_integer_value(v));
      char rv[24];
      snprintf(rv, sizeof(rv), "%llu", (unsigned long long)kin_sim_resource_version(sim));
      out.code = 200;
      out.body = json_pack("{s:s}", "resourceVersion", rv);
    }
  }
  json_decref(f);
  *ret = kin__sim_respond_result(req, &out);
  return 1;
}
