/* reflector_fx.h -- fixture of the reflector specs (test_reflector*.c): an
 * in-process sim whose requests are recorded (kin_sim_set_request_hook), a
 * kin_client, a kin_informer fed by the reflector under test (it gives the
 * FIFO a consumer, and an indexer to compare with the server), helpers to
 * write objects and the convergence check: the cache holds exactly the
 * server's objects at the server's resourceVersions. Header-only, like
 * sim_client.h. */
#ifndef KIN_REFLECTOR_FX_H
#define KIN_REFLECTOR_FX_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handler_rec.h"
#include "kubeconfig.h"
#include "reflector.h"
#include "rest_client.h"
#include "shared_informer.h"
#include "sim_client.h"

#define RFX_NS "default"
#define RFX_PATH "/api/v1/namespaces/" RFX_NS "/configmaps"

typedef struct rfx rfx;

struct rfx {
  kin_sim *sim;
  kin_client *client;
  kin_informer *inf;
  kin_reflector *refl;
  kin_clock *fake;  /* the reflector's clock when the test asked for one */
  rec *events;      /* what the informer's handler was given */
  pthread_mutex_t mu; /* guards reqs and on_request */
  /* Called on the sim's connection thread for every request (may be NULL). */
  void (*on_request)(rfx *fx, const char *method, const char *uri);
  char **reqs;        /* "GET /api/v1/...?..." in arrival order */
  size_t nreqs, capreqs;
  kin_transform_fn transform; /* the informer's, set before rfx_start (NULL: none) */
  void *transform_ud;
};

static void rfx_hook(void *ud, const char *method, const char *uri) {
  rfx *fx = ud;
  char *line = malloc(strlen(method) + strlen(uri) + 2);
  if (line) sprintf(line, "%s %s", method, uri);
  pthread_mutex_lock(&fx->mu);
  if (line && fx->nreqs == fx->capreqs) {
    size_t cap = fx->capreqs ? fx->capreqs * 2 : 64;
    char **v = realloc(fx->reqs, cap * sizeof(*v));
    if (v) {
      fx->reqs = v;
      fx->capreqs = cap;
    }
  }
  if (line && fx->nreqs < fx->capreqs) fx->reqs[fx->nreqs++] = line;
  else free(line);
  void (*cb)(rfx *, const char *, const char *) = fx->on_request;
  pthread_mutex_unlock(&fx->mu);
  if (cb) cb(fx, method, uri);
}

/* Sets (NULL: clears) the callback run for every request. */
static __attribute__((unused)) void rfx_on_request(rfx *fx,
                                                   void (*cb)(rfx *, const char *, const char *)) {
  pthread_mutex_lock(&fx->mu);
  fx->on_request = cb;
  pthread_mutex_unlock(&fx->mu);
}

/* Starts a sim (cfg NULL: defaults) on port (0: any) recording requests.
 * Returns KIN_EBUSY when the port cannot be bound. */
static __attribute__((unused)) int rfx_sim_try(rfx *fx, const kin_sim_config *cfg, uint16_t port) {
  kin_sim_config c;
  if (cfg) {
    c = *cfg;
  } else {
    kin_sim_config_init(&c);
    /* An API server alone: the reflector's tests see only their own
     * writes, and a restart (rfx_restart_sim) is not slowed by a control
     * plane settling before the port serves again. */
    c.controllers = "none";
  }
  c.port = port;
  int rc = kin_sim_start(&c, &fx->sim);
  if (rc == 0) kin_sim_set_request_hook(fx->sim, rfx_hook, fx);
  return rc;
}

/* Sets fx up with a sim started from cfg (NULL: defaults). */
static __attribute__((unused)) void rfx_init(rfx *fx, const kin_sim_config *cfg) {
  memset(fx, 0, sizeof(*fx));
  pthread_mutex_init(&fx->mu, NULL);
  fx->events = rec_new();
  assert_int_equal(rfx_sim_try(fx, cfg, 0), 0);
}

/* A client of url without client-side retries or rate limit, so what the
 * reflector does is what reaches the server. */
static __attribute__((unused)) kin_client *rfx_client_for(const char *url) {
  kin_rest_config rc;
  memset(&rc, 0, sizeof(rc));
  rc.host = (char *)url;
  kin_client_opts o = {.qps = -1, .max_retries = -1};
  kin_client *c = NULL;
  char err[256];
  assert_int_equal(kin_client_new(&rc, NULL, &o, &c, err, sizeof(err)), 0);
  return c;
}

/* Starts the informer and the reflector; fields of cfg left 0 get the
 * fixture's: configmaps of "default", short backoffs, fx's clock. */
static __attribute__((unused)) void rfx_start(rfx *fx, kin_reflector_config *cfg) {
  if (!fx->client) fx->client = rfx_client_for(kin_sim_url(fx->sim));
  kin_informer_config ic = {.clock = fx->fake, .name = "v1/configmaps",
                            .transform = fx->transform, .transform_ud = fx->transform_ud};
  assert_int_equal(kin_informer_new(&ic, &fx->inf), 0);
  kin_event_handler h = handler_for(fx->events);
  assert_int_equal(kin_informer_add_handler(fx->inf, &h, 0, NULL), 0);
  assert_int_equal(kin_informer_run(fx->inf), 0);
  kin_reflector_config c;
  memset(&c, 0, sizeof(c));
  if (cfg) c = *cfg;
  c.client = fx->client;
  if (!c.resource.resource)
    c.resource = (kin_resource){.group = "", .version = "v1", .resource = "configmaps",
                                .kind = "ConfigMap", .namespaced = 1};
  if (!c.namespace) c.namespace = RFX_NS;
  if (!c.backoff_initial_ns) c.backoff_initial_ns = 20 * KIN_NSEC_PER_MSEC;
  if (!c.backoff_max_ns) c.backoff_max_ns = 200 * KIN_NSEC_PER_MSEC;
  c.fifo = kin_informer_fifo(fx->inf);
  c.clock = fx->fake;
  assert_int_equal(kin_reflector_new(&c, &fx->refl), 0);
  assert_int_equal(kin_reflector_run(fx->refl), 0);
}

static __attribute__((unused)) void rfx_free(rfx *fx) {
  kin_reflector_free(fx->refl);
  kin_informer_free(fx->inf);
  kin_client_free(fx->client);
  if (fx->sim) kin_sim_set_request_hook(fx->sim, NULL, NULL);
  kin_sim_free(fx->sim);
  if (fx->fake) kin_fake_clock_free(fx->fake);
  rec_free(fx->events);
  for (size_t i = 0; i < fx->nreqs; i++) free(fx->reqs[i]);
  free(fx->reqs);
  pthread_mutex_destroy(&fx->mu);
}

static __attribute__((unused)) kin_reflector_stats rfx_stats(rfx *fx) {
  kin_reflector_stats st;
  kin_reflector_get_stats(fx->refl, &st);
  return st;
}

/* ---- recorded requests ---------------------------------------------------- */

/* Copies into out the i-th recorded request (0-based) containing must and
 * not containing mustnt (NULL: no condition); returns 0 when there is none. */
static __attribute__((unused)) int rfx_req(rfx *fx, size_t i, const char *must,
                                           const char *mustnt, char *out, size_t n) {
  int found = 0;
  pthread_mutex_lock(&fx->mu);
  for (size_t k = 0; k < fx->nreqs && !found; k++) {
    const char *r = fx->reqs[k];
    if ((must && !strstr(r, must)) || (mustnt && strstr(r, mustnt))) continue;
    if (i-- == 0) {
      snprintf(out, n, "%s", r);
      found = 1;
    }
  }
  pthread_mutex_unlock(&fx->mu);
  return found;
}

static __attribute__((unused)) size_t rfx_count(rfx *fx, const char *must, const char *mustnt) {
  char buf[8];
  size_t n = 0;
  while (rfx_req(fx, n, must, mustnt, buf, sizeof(buf))) n++;
  return n;
}

/* The value of query parameter name in a recorded request, or NULL. */
static __attribute__((unused)) const char *rfx_param(const char *req, const char *name, char *out,
                                                     size_t n) {
  size_t nl = strlen(name);
  for (const char *p = strchr(req, '?'); p; p = strchr(p + 1, '&')) {
    if (!strncmp(p + 1, name, nl) && p[1 + nl] == '=') {
      const char *v = p + 2 + nl;
      size_t len = strcspn(v, "&");
      snprintf(out, n, "%.*s", (int)len, v);
      return out;
    }
  }
  return NULL;
}

/* Fails unless query parameter name of req is want (NULL: absent). */
static __attribute__((unused)) void rfx_expect_param(const char *req, const char *name,
                                                     const char *want) {
  char v[256];
  const char *got = rfx_param(req, name, v, sizeof(v));
  if (!want && got) fail_msg("%s: unexpected %s=%s", req, name, got);
  if (want && (!got || strcmp(got, want)))
    fail_msg("%s: %s=%s, want %s", req, name, got ? got : "(absent)", want);
}

/* Replaces the sim by a new one from cfg (NULL: defaults) on the same
 * port, as a server restarted behind the client: the client sees its
 * connections refused until the new one is up. */
static __attribute__((unused)) void rfx_restart_sim(rfx *fx, const kin_sim_config *cfg,
                                                    void (*while_down)(rfx *fx)) {
  uint16_t port = kin_sim_port(fx->sim);
  kin_sim_set_request_hook(fx->sim, NULL, NULL);
  kin_sim_free(fx->sim);
  fx->sim = NULL;
  if (while_down) while_down(fx);
  int rc = KIN_EBUSY;
  for (int i = 0; i < 100 && rc == KIN_EBUSY; i++) {
    rc = rfx_sim_try(fx, cfg, port);
    if (rc == KIN_EBUSY) kin_test_sleep_ms(50);
  }
  assert_int_equal(rc, 0);
}

/* ---- objects ---------------------------------------------------------------- */

/* Returns the new object's resourceVersion. */
static __attribute__((unused)) long long rfx_create(rfx *fx, const char *name) {
  return sim_put_cm(fx->sim, RFX_NS, name, NULL, "1");
}

/* Returns the object's new resourceVersion. */
static __attribute__((unused)) long long rfx_update(rfx *fx, const char *name, const char *val) {
  char path[256], body[128];
  snprintf(path, sizeof(path), RFX_PATH "/%s", name);
  snprintf(body, sizeof(body), "{\"data\":{\"v\":\"%s\"}}", val);
  sim_resp r = sim_do(fx->sim, "PATCH", path, "application/merge-patch+json", body, NULL);
  if (r.code != 200) fail_msg("patch %s: %ld %s", name, r.code, r.body);
  long long rv = atoll(jstr(r.json, "metadata.resourceVersion"));
  sim_resp_free(&r);
  return rv;
}

static __attribute__((unused)) void rfx_delete(rfx *fx, const char *name) {
  char path[256];
  snprintf(path, sizeof(path), RFX_PATH "/%s", name);
  sim_resp r = sim_req(fx->sim, "DELETE", path, NULL);
  if (r.code != 200) fail_msg("delete %s: %ld %s", name, r.code, r.body);
  sim_resp_free(&r);
}

/* ---- convergence -------------------------------------------------------------- */

static int rfx_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "name@rv" of every object the informer caches, sorted; the caller frees
 * the array and its strings (rfx_strv_free). */
static __attribute__((unused)) char **rfx_cache_lines(kin_informer *inf, size_t *n) {
  kin_obj **objs;
  size_t k;
  assert_int_equal(kin_indexer_list(kin_informer_indexer(inf), &objs, &k), 0);
  char **v = calloc(k + 1, sizeof(*v));
  for (size_t i = 0; i < k; i++) {
    v[i] = malloc(strlen(kin_obj_name(objs[i])) + strlen(kin_obj_resource_version(objs[i])) + 2);
    sprintf(v[i], "%s@%s", kin_obj_name(objs[i]), kin_obj_resource_version(objs[i]));
    kin_obj_unref(objs[i]);
  }
  free(objs);
  qsort(v, k, sizeof(*v), rfx_cmp);
  *n = k;
  return v;
}

static __attribute__((unused)) char **rfx_server(rfx *fx, size_t *n) {
  /* Through the cluster-wide path, so the request log tells it from the
   * reflector's. */
  sim_resp r = sim_req(fx->sim, "GET", "/api/v1/configmaps?fieldSelector=metadata.namespace%3D" RFX_NS,
                       NULL);
  assert_int_equal(r.code, 200);
  json_t *items = json_object_get(r.json, "items");
  size_t k = json_array_size(items);
  char **v = calloc(k + 1, sizeof(*v));
  for (size_t i = 0; i < k; i++) {
    json_t *it = json_array_get(items, i);
    const char *name = jstr(it, "metadata.name"), *rv = jstr(it, "metadata.resourceVersion");
    v[i] = malloc(strlen(name) + strlen(rv) + 2);
    sprintf(v[i], "%s@%s", name, rv);
  }
  sim_resp_free(&r);
  qsort(v, k, sizeof(*v), rfx_cmp);
  *n = k;
  return v;
}

static __attribute__((unused)) void rfx_strv_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

/* 1 when the cache equals the server's list (names and resourceVersions). */
static __attribute__((unused)) int rfx_converged(rfx *fx) {
  size_t a, b;
  char **c = rfx_cache_lines(fx->inf, &a), **s = rfx_server(fx, &b);
  int eq = a == b;
  for (size_t i = 0; eq && i < a; i++) eq = !strcmp(c[i], s[i]);
  rfx_strv_free(c, a);
  rfx_strv_free(s, b);
  return eq;
}

/* Waits for convergence; on timeout fails with the first difference. */
static __attribute__((unused)) void rfx_expect_converged(rfx *fx, int timeout_ms) {
  for (int i = 0; i < timeout_ms / 10; i++) {
    if (rfx_converged(fx)) return;
    kin_test_sleep_ms(10);
  }
  size_t a, b;
  char **c = rfx_cache_lines(fx->inf, &a), **s = rfx_server(fx, &b);
  size_t i = 0;
  while (i < a && i < b && !strcmp(c[i], s[i])) i++;
  char msg[256];
  snprintf(msg, sizeof(msg), "cache (%zu objects) != server (%zu): first difference %s vs %s", a,
           b, i < a ? c[i] : "(end)", i < b ? s[i] : "(end)");
  rfx_strv_free(c, a);
  rfx_strv_free(s, b);
  fail_msg("%s", msg);
}

/* The server's current resourceVersion as a string. */
static __attribute__((unused)) const char *rfx_server_rv(rfx *fx, char *buf, size_t n) {
  snprintf(buf, n, "%llu", (unsigned long long)kin_sim_resource_version(fx->sim));
  return buf;
}

static __attribute__((unused)) const char *rfx_last_rv(rfx *fx, char *buf, size_t n) {
  kin_reflector_last_sync_rv(fx->refl, buf, n);
  return buf;
}

#endif
