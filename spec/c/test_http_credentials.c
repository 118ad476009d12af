/* test_http_credentials.c -- no credential to a plain http:// server, as
 * kubectl (client-go's clientcmd reads the auth information only for a
 * TLS server; kubectl v1.36.3 against `python3 -m http.server`-style
 * listener sent no Authorization header with a kubeconfig token, --token
 * or username/password): the Authorization header of every request a
 * bad_server.h listener receives is captured. Only the explicit opt-in
 * (kin_rest_config.credentials_over_http, the kubeconfig cluster
 * extension kinformer.io/credentials-over-http) sends it, with a warning
 * logged once per client (a note only for a loopback server). */
#include "kin_test.h"

#include <stdatomic.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bad_server.h"
#include "kin.h"
#include "kubeconfig.h"
#include "rest_client.h"

static void serve(bad_server *s, int fd, const char *method, const char *target,
                  const char *headers) {
  bs_json(fd, "{\"major\":\"1\",\"minor\":\"36\"}");
}

static int auth_seen(bad_server *s) {
  pthread_mutex_lock(&s->mu);
  int n = s->auth_seen;
  pthread_mutex_unlock(&s->mu);
  return n;
}

/* GET /version with cfg; asserts it succeeded. */
static void get_version(kin_client *c) {
  kin_client_request req = {.path = "/version"};
  kin_result r;
  int rc = kin_client_do(c, &req, &r);
  if (rc) fail_msg("GET /version: %s", r.message ? r.message : kin_strerror(rc));
  assert_int_equal(r.code, 200);
  kin_result_free(&r);
}

static kin_client *client_for(kin_rest_config *cfg) {
  kin_client *c = NULL;
  char err[512];
  int rc = kin_client_new(cfg, NULL, NULL, &c, err, sizeof err);
  if (rc) fail_msg("client: %s", err);
  return c;
}

static int on_data(void *ud, const char *p, size_t n) { return 0; }
static void on_done(void *ud, kin_io_response *res) { atomic_store((atomic_int *)ud, 1); }

/* A bearer token, a token file and an exec plugin: none reaches the
 * http:// server, on requests and on streams. */
static void test_http_credentials_NoneOverPlainHttp(void **state) {
  bad_server *s = bs_start(serve, NULL);
  char url[64], dir[] = "/tmp/kin_httpcred_XXXXXX", tok[128];
  assert_non_null(mkdtemp(dir));
  snprintf(tok, sizeof tok, "%s/token", dir);
  FILE *f = fopen(tok, "w");
  fputs("file-token-1\n", f);
  fclose(f);
  kin_exec_config ex = {.command = "/nonexistent/kin-plugin",
                        .api_version = "client.authentication.k8s.io/v1"};
  kin_rest_config cfgs[] = {
      {.host = (char *)bs_url(s, url, sizeof url), .bearer_token = "static-token-1"},
      {.host = url, .bearer_token_file = tok},
      {.host = url, .exec = &ex},
  };
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    kin_client *c = client_for(&cfgs[i]);
    get_version(c); /* the plugin was not run: it would have failed */
    atomic_int done = 0;
    kin_io_handle *h = NULL;
    assert_int_equal(kin_client_stream(c, "/version", NULL, on_data, on_done, (void *)&done, &h), 0);
    KIN_EVENTUALLY(atomic_load(&done), 10000);
    kin_io_handle_release(h);
    kin_client_free(c);
  }
  assert_int_equal(bs_nreq(s), 6);
  assert_int_equal(auth_seen(s), 0);
  unlink(tok);
  rmdir(dir);
  bs_stop(s);
}

/* The explicit opt-in sends the token; a server that is not loopback gets
 * a warning, once per client. */
static void test_http_credentials_OptInSendsAndWarnsOnce(void **state) {
  bad_server *s = bs_start(serve, NULL);
  char url[64];
  kin_rest_config cfg = {.host = (char *)bs_url(s, url, sizeof url),
                         .bearer_token = "static-token-2",
                         .credentials_over_http = 1};
  kin_test_log_start();
  kin_client *c = client_for(&cfg);
  get_version(c);
  get_version(c);
  kin_client_free(c);
  assert_int_equal(auth_seen(s), 2);
  char hb[4096];
  assert_non_null(strstr(bs_last_headers(s, hb, sizeof hb), "Authorization: Bearer static-token-2"));
  assert_int_equal(kin_test_log_count(NULL), 0); /* 127.0.0.1: a note at info only */
  /* 0.0.0.0 reaches this host too, but is no loopback name: a warning */
  char any[64];
  snprintf(any, sizeof any, "http://0.0.0.0:%u", s->port);
  cfg.host = any;
  c = client_for(&cfg);
  get_version(c);
  get_version(c);
  kin_client_free(c);
  assert_int_equal(kin_test_log_count("is plain HTTP and the configuration allows credentials"), 1);
  assert_int_equal(kin_test_log_count("static-token-2"), 0);
  kin_test_log_stop();
  bs_stop(s);
}

/* Through a kubeconfig: a token goes only with the cluster extension. */
static void test_http_credentials_KubeconfigExtension(void **state) {
  bad_server *s = bs_start(serve, NULL);
  char dir[] = "/tmp/kin_httpcred_XXXXXX", path[128];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/config", dir);
  for (int allow = 0; allow <= 1; allow++) {
    FILE *f = fopen(path, "w");
    fprintf(f,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
            "    server: http://127.0.0.1:%u\n%s"
            "users:\n- name: u\n  user:\n    token: kc-token\n"
            "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
            s->port,
            allow ? "    extensions:\n    - name: kinformer.io/credentials-over-http\n"
                    "      extension: {allow: true}\n"
                  : "");
    fclose(f);
    kin_kubeconfig_opts o = {path, NULL};
    kin_rest_config *cfg = NULL;
    char err[512];
    assert_int_equal(kin_kubeconfig_load(&o, &cfg, err, sizeof err), 0);
    kin_client *c = client_for(cfg);
    get_version(c);
    kin_client_free(c);
    kin_rest_config_free(cfg);
    assert_int_equal(auth_seen(s), allow);
  }
  unlink(path);
  rmdir(dir);
  bs_stop(s);
}

KIN_SUITE(http_credentials, cmocka_unit_test(test_http_credentials_NoneOverPlainHttp),
          cmocka_unit_test(test_http_credentials_OptInSendsAndWarnsOnce),
          cmocka_unit_test(test_http_credentials_KubeconfigExtension))
