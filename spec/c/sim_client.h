/* sim_client.h -- a tiny libcurl client for the kinformer.sim specs
 * (spec/c/test_sim_*.c): start a sim, send one request, read a watch
 * stream as lines. Header-only: the Makefile builds only test_*.c. */
#ifndef KIN_SIM_CLIENT_H
#define KIN_SIM_CLIENT_H

#include <curl/curl.h>
#include <pthread.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin_test.h"
#include "sim.h"

typedef struct {
  long code;
  char *body;     /* NUL-terminated */
  size_t len;
  json_t *json;   /* parsed body or NULL */
  char ctype[128];
  char etag[160], location[512], cache_control[64]; /* those headers or "" */
  char warning[1024]; /* the Warning headers, joined by "\n" ("" none) */
} sim_resp;

typedef struct {
  char *p;
  size_t len, cap;
  size_t max_lines; /* stop the transfer after this many '\n' (0: never) */
  size_t lines;
} sim_sink;

static size_t sim_sink_write(char *ptr, size_t size, size_t nmemb, void *ud) {
  sim_sink *s = ud;
  size_t n = size * nmemb;
  if (s->len + n + 1 > s->cap) {
    size_t nc = s->cap ? s->cap * 2 : 4096;
    while (nc < s->len + n + 1) nc *= 2;
    s->p = realloc(s->p, nc);
    s->cap = nc;
  }
  memcpy(s->p + s->len, ptr, n);
  s->len += n;
  s->p[s->len] = 0;
  for (size_t i = 0; i < n; i++)
    if (ptr[i] == '\n') s->lines++;
  if (s->max_lines && s->lines >= s->max_lines) return 0; /* enough: abort */
  return n;
}

/* Copies the value of header line ptr (n bytes) into out when it is name. */
static void sim_header_copy(const char *ptr, size_t n, const char *name, char *out, size_t cap) {
  size_t k = strlen(name);
  if (n <= k + 2 || strncasecmp(ptr, name, k) || ptr[k] != ':' || ptr[k + 1] != ' ') return;
  size_t l = n - k - 2;
  while (l && (ptr[k + 2 + l - 1] == '\r' || ptr[k + 2 + l - 1] == '\n')) l--;
  if (l >= cap) l = cap - 1;
  memcpy(out, ptr + k + 2, l);
  out[l] = 0;
}

static size_t sim_header_cb(char *ptr, size_t size, size_t nmemb, void *ud) {
  sim_resp *r = ud;
  size_t n = size * nmemb;
  sim_header_copy(ptr, n, "Content-Type", r->ctype, sizeof(r->ctype));
  sim_header_copy(ptr, n, "ETag", r->etag, sizeof(r->etag));
  sim_header_copy(ptr, n, "Location", r->location, sizeof(r->location));
  sim_header_copy(ptr, n, "Cache-Control", r->cache_control, sizeof(r->cache_control));
  char w[512] = "";
  sim_header_copy(ptr, n, "Warning", w, sizeof(w));
  size_t l = strlen(r->warning);
  if (w[0] && l + strlen(w) + 2 < sizeof(r->warning))
    snprintf(r->warning + l, sizeof(r->warning) - l, "%s%s", l ? "\n" : "", w);
  return n;
}

/* A curl handle for method path (relative to the sim URL) whose body goes
 * to sink and whose Content-Type to r->ctype; 20 s timeout. The caller sets
 * TLS, headers and body, then calls sim_finish. */
static __attribute__((unused)) CURL *sim_easy(kin_sim *sim, const char *method, const char *path,
                                              sim_sink *sink, sim_resp *r) {
  char url[2048];
  snprintf(url, sizeof(url), "%s%s", kin_sim_url(sim), path);
  CURL *c = curl_easy_init();
  assert_non_null(c);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sim_sink_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, sim_header_cb);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  return c;
}

/* Performs the request of sim_easy (failing the test when it cannot),
 * frees c and h, and fills r with the status, the body and its JSON. */
static __attribute__((unused)) void sim_finish(CURL *c, struct curl_slist *h, sim_sink *sink,
                                               sim_resp *r, const char *method, const char *path) {
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) fail_msg("curl %s %s: %s", method, path, curl_easy_strerror(rc));
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  r->body = sink->p ? sink->p : strdup("");
  r->len = sink->len;
  json_error_t e;
  r->json = json_loads(r->body, 0, &e);
}

/* Sends method path (relative to the sim URL) with an optional body of
 * content type ctype (NULL: application/json) and extra header hdr. */
static __attribute__((unused)) sim_resp sim_do(kin_sim *sim, const char *method,
                                               const char *path, const char *ctype,
                                               const char *body, const char *hdr) {
  sim_resp r;
  memset(&r, 0, sizeof(r));
  sim_sink sink = {0};
  CURL *c = sim_easy(sim, method, path, &sink, &r);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  struct curl_slist *h = NULL;
  char ct[256];
  snprintf(ct, sizeof(ct), "Content-Type: %s", ctype ? ctype : "application/json");
  h = curl_slist_append(h, ct);
  if (hdr) h = curl_slist_append(h, hdr);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  }
  sim_finish(c, h, &sink, &r, method, path);
  return r;
}

static __attribute__((unused)) sim_resp sim_req(kin_sim *sim, const char *method,
                                                const char *path, const char *body) {
  return sim_do(sim, method, path, NULL, body, NULL);
}

static __attribute__((unused)) void sim_resp_free(sim_resp *r) {
  free(r->body);
  json_decref(r->json);
  memset(r, 0, sizeof(*r));
}

/* Reads a watch stream until it ends, max_lines lines arrived (0: no
 * limit) or timeout_ms passed; returns the events as a JSON array. */
static __attribute__((unused)) json_t *sim_watch(kin_sim *sim, const char *path,
                                                 size_t max_lines, long timeout_ms) {
  sim_sink sink = {0};
  sink.max_lines = max_lines;
  char url[2048];
  snprintf(url, sizeof(url), "%s%s", kin_sim_url(sim), path);
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sim_sink_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_perform(c);
  curl_easy_cleanup(c);
  json_t *events = json_array();
  char *p = sink.p;
  while (p && *p) {
    char *nl = strchr(p, '\n');
    if (!nl) break;
    json_error_t e;
    json_t *ev = json_loadb(p, (size_t)(nl - p), 0, &e);
    if (!ev) fail_msg("watch line is not JSON: %.*s", (int)(nl - p), p);
    json_array_append_new(events, ev);
    p = nl + 1;
  }
  free(sink.p);
  return events;
}

static __attribute__((unused)) kin_sim *sim_start(size_t history, unsigned bookmark_ms) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  /* without the workloads' controllers: the suites test the API
   * server's answers about Deployments and Pods, which they would change
   * (pods scheduled and run, status written) */
  cfg.controllers = KIN_TEST_NO_WORKLOADS;
  if (history) cfg.watch_history = history;
  if (bookmark_ms) cfg.bookmark_interval_ms = bookmark_ms;
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  /* The controllers' first writes (the default ServiceAccounts) are done
   * before a test counts resourceVersions. */
  assert_int_equal(kin_sim_settle(sim, 10000), 0);
  return sim;
}

/* Field helpers on a response or event object. */
static __attribute__((unused)) const char *jstr(const json_t *o, const char *path) {
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", path);
  const json_t *v = o;
  for (char *save, *t = strtok_r(buf, ".", &save); t && v; t = strtok_r(NULL, ".", &save))
    v = json_object_get(v, t);
  return json_string_value(v);
}

static __attribute__((unused)) long long jint(const json_t *o, const char *path) {
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", path);
  const json_t *v = o;
  for (char *save, *t = strtok_r(buf, ".", &save); t && v; t = strtok_r(NULL, ".", &save))
    v = json_object_get(v, t);
  return json_integer_value(v);
}

/* Creates a ConfigMap name in ns with optional labels (raw JSON) and
 * data value; returns its resourceVersion. */
static __attribute__((unused)) long long sim_put_cm(kin_sim *sim, const char *ns,
                                                    const char *name, const char *labels,
                                                    const char *val) {
  char path[256], body[1024];
  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps", ns);
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
           "\"labels\":%s},\"data\":{\"v\":\"%s\"}}",
           name, labels ? labels : "{}", val ? val : "");
  sim_resp r = sim_req(sim, "POST", path, body);
  if (r.code != 201) fail_msg("create %s/%s: %ld %s", ns, name, r.code, r.body);
  long long rv = atoll(jstr(r.json, "metadata.resourceVersion"));
  sim_resp_free(&r);
  return rv;
}

/* A watch read on its own thread; mu guards every field after it. */
typedef struct {
  kin_sim *sim;
  const char *path;
  pthread_t thread;
  pthread_mutex_t mu;
  char data[65536];
  size_t len, lines;
  int finished;
  CURLcode rc;
} bg_watch;

static __attribute__((unused)) size_t bg_write(char *p, size_t size, size_t n, void *ud) {
  bg_watch *w = ud;
  n *= size;
  pthread_mutex_lock(&w->mu);
  for (size_t i = 0; i < n && w->len + 1 < sizeof(w->data); i++) {
    w->data[w->len++] = p[i];
    if (p[i] == '\n') w->lines++;
  }
  w->data[w->len] = 0;
  pthread_mutex_unlock(&w->mu);
  return n;
}

static __attribute__((unused)) void *bg_run(void *ud) {
  bg_watch *w = ud;
  char url[512];
  snprintf(url, sizeof(url), "%s%s", kin_sim_url(w->sim), w->path);
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, bg_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_cleanup(c);
  pthread_mutex_lock(&w->mu);
  w->rc = rc;
  w->finished = 1;
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

static __attribute__((unused)) void bg_start(bg_watch *w, kin_sim *sim, const char *path) {
  memset(w, 0, sizeof(*w));
  w->sim = sim;
  w->path = path;
  pthread_mutex_init(&w->mu, NULL);
  pthread_create(&w->thread, NULL, bg_run, w);
}

static __attribute__((unused)) size_t bg_lines(bg_watch *w) {
  pthread_mutex_lock(&w->mu);
  size_t n = w->lines;
  pthread_mutex_unlock(&w->mu);
  return n;
}

static __attribute__((unused)) int bg_finished(bg_watch *w) {
  pthread_mutex_lock(&w->mu);
  int f = w->finished;
  pthread_mutex_unlock(&w->mu);
  return f;
}

static __attribute__((unused)) void bg_join(bg_watch *w) {
  pthread_join(w->thread, NULL);
  pthread_mutex_destroy(&w->mu);
}

#endif
