/* test_client_auth.c -- the REST client's transport and credentials
 * against a TLS kin_sim: CA and client certificate (client-go
 * transport/transport_test.go TestNew, rest TestTLSConfig...), bearer
 * token and rotating token file (transport/token_source_test.go,
 * rest TestInClusterConfig), exec plugin through the client
 * (plugin/pkg/client/auth/exec TestRoundTripper: cache, expiry, 401
 * refresh), in-cluster config end to end, clear TLS errors, and no secret
 * in any message or log line. Config parsing itself is in
 * test_kubeconfig*.c. */
#include "kin_test.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "kin.h"
#include "kubeconfig.h"
#include "rest_client.h"
#include "rest_test.h"
#include "sim.h"

#define TOKEN "kin-test-token-5f1e9c"
#define WRONG "kin-wrong-token-77ab2d"
#define T0 1767225600ULL /* 2026-01-01T00:00:00Z */


/* A TLS sim; token and the fixture client CA as asked. */
static kin_sim *tls_sim(const char *token, int client_ca) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.tls_cert_file = kin_test_fixture_path("sim_tls.crt");
  cfg.tls_key_file = kin_test_fixture_path("sim_tls.key");
  cfg.token = token;
  if (client_ca) cfg.client_ca_file = kin_test_fixture_path("sim_client_ca.crt");
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  return sim;
}

static kin_client *client_for(const kin_rest_config *cfg, kin_clock *clk) {
  kin_client_opts o = {.qps = -1, .clock = clk};
  kin_client *c = NULL;
  char err[256];
  int rc = kin_client_new(cfg, NULL, &o, &c, err, sizeof err);
  if (rc) fail_msg("kin_client_new: %s", err);
  return c;
}

/* GET path; returns the rc and fills *r. */
static int get(kin_client *c, const char *path, kin_result *r) {
  kin_client_request req = {.path = path, .idempotent = 1};
  return kin_client_do(c, &req, r);
}

/* The user the sim authenticated (SelfSubjectReview), copied into buf. */
static const char *whoami(kin_client *c, char *buf, size_t n) {
  const char *rev = "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}";
  kin_client_request req = {.method = "POST",
                            .path = "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                            .body = rev,
                            .body_len = strlen(rev)};
  kin_result r;
  int rc = kin_client_do(c, &req, &r);
  if (rc) fail_msg("whoami: %d %s", (int)r.code, r.message ? r.message : "");
  const char *u = strstr(r.body, "\"username\":\"");
  assert_non_null(u);
  u += strlen("\"username\":\"");
  size_t k = strcspn(u, "\"");
  assert_true(k < n);
  memcpy(buf, u, k);
  buf[k] = 0;
  kin_result_free(&r);
  return buf;
}

static void test_client_auth_TLSClientCertificate(void **state) {
  kin_sim *sim = tls_sim(NULL, 1);
  char user[64];
  /* Files. */
  kin_rest_config cfg = {.host = (char *)kin_sim_url(sim),
                         .ca_file = (char *)kin_test_fixture_path("sim_tls.crt"),
                         .cert_file = (char *)kin_test_fixture_path("sim_client_alice.crt"),
                         .key_file = (char *)kin_test_fixture_path("sim_client_alice.key")};
  kin_client *c = client_for(&cfg, NULL);
  kin_result r;
  assert_int_equal(get(c, "/api/v1/namespaces", &r), 0);
  assert_int_equal(r.code, 200);
  kin_result_free(&r);
  assert_string_equal(whoami(c, user, sizeof user), "alice");
  kin_client_free(c);

  /* The same from memory (kubeconfig *-data). */
  size_t ca_n, crt_n, key_n;
  char *ca = kin_test_fixture("sim_tls.crt", &ca_n);
  char *crt = kin_test_fixture("sim_client_alice.crt", &crt_n);
  char *key = kin_test_fixture("sim_client_alice.key", &key_n);
  cfg = (kin_rest_config){.host = (char *)kin_sim_url(sim),
                          .ca_data = (unsigned char *)ca,
                          .ca_data_len = ca_n,
                          .cert_data = (unsigned char *)crt,
                          .cert_data_len = crt_n,
                          .key_data = (unsigned char *)key,
                          .key_data_len = key_n};
  c = client_for(&cfg, NULL);
  free(ca);
  free(crt);
  free(key); /* deep-copied: the client must not need them */
  assert_string_equal(whoami(c, user, sizeof user), "alice");
  kin_client_free(c);

  /* No certificate, or one from an untrusted CA: 401 with its Status. */
  cfg = (kin_rest_config){.host = (char *)kin_sim_url(sim), .ca_file = (char *)kin_test_fixture_path("sim_tls.crt")};
  c = client_for(&cfg, NULL);
  assert_int_equal(get(c, "/api/v1/namespaces", &r), KIN_ESTATUS);
  assert_int_equal(r.code, 401);
  assert_string_equal(r.reason, "Unauthorized");
  kin_result_free(&r);
  kin_client_free(c);
  cfg.cert_file = (char *)kin_test_fixture_path("sim_client_other.crt");
  cfg.key_file = (char *)kin_test_fixture_path("sim_client_other.key");
  c = client_for(&cfg, NULL);
  assert_int_equal(get(c, "/api/v1/namespaces", &r), KIN_ESTATUS);
  assert_int_equal(r.code, 401);
  kin_result_free(&r);
  kin_client_free(c);
  kin_sim_free(sim);
}

static void test_client_auth_TLSErrorsAreClear(void **state) {
  kin_sim *sim = tls_sim(NULL, 0);
  /* A CA that did not sign the server's certificate. */
  kin_rest_config cfg = {.host = (char *)kin_sim_url(sim),
                         .ca_file = (char *)kin_test_fixture_path("sim_client_ca.crt")};
  kin_client *c = client_for(&cfg, NULL);
  kin_result r;
  assert_int_equal(get(c, "/version", &r), KIN_EIO);
  assert_int_equal(r.code, 0);
  assert_non_null(r.message);
  assert_non_null(strstr(r.message, "SSL certificate problem"));
  kin_result_free(&r);
  kin_client_free(c);

  /* insecure-skip-tls-verify gets through. */
  cfg = (kin_rest_config){.host = (char *)kin_sim_url(sim), .insecure = 1};
  c = client_for(&cfg, NULL);
  assert_int_equal(get(c, "/version", &r), 0);
  kin_result_free(&r);
  kin_client_free(c);

  /* tls-server-name: the certificate is checked against that name. */
  cfg = (kin_rest_config){.host = (char *)kin_sim_url(sim),
                          .ca_file = (char *)kin_test_fixture_path("sim_tls.crt"),
                          .tls_server_name = "kubernetes.default.svc"};
  c = client_for(&cfg, NULL);
  assert_int_equal(get(c, "/version", &r), KIN_EIO);
  assert_non_null(r.message);
  kin_result_free(&r);
  kin_client_free(c);

  /* A client certificate file that does not exist: named when the client
   * is created, not at the first request. */
  cfg = (kin_rest_config){.host = (char *)kin_sim_url(sim),
                          .ca_file = (char *)kin_test_fixture_path("sim_tls.crt"),
                          .cert_file = "/nonexistent/client.crt",
                          .key_file = "/nonexistent/client.key"};
  char err[256];
  c = NULL;
  assert_int_equal(kin_client_new(&cfg, NULL, NULL, &c, err, sizeof err), KIN_ENOENT);
  assert_null(c);
  assert_string_equal(err, "rest config: client-certificate /nonexistent/client.crt: No such "
                           "file or directory");
  kin_sim_free(sim);
}

static void test_client_auth_BearerToken(void **state) {
  kin_sim *sim = tls_sim(TOKEN, 0);
  kin_rest_config cfg = {.host = (char *)kin_sim_url(sim),
                         .ca_file = (char *)kin_test_fixture_path("sim_tls.crt"),
                         .bearer_token = TOKEN};
  kin_client *c = client_for(&cfg, NULL);
  kin_result r;
  char user[64];
  assert_int_equal(get(c, "/api/v1/namespaces", &r), 0);
  kin_result_free(&r);
  assert_string_equal(whoami(c, user, sizeof user), "kinformer-sim");
  kin_client_free(c);
  /* A wrong static token is not retried: nothing can refresh it. */
  cfg.bearer_token = WRONG;
  c = client_for(&cfg, NULL);
  assert_int_equal(get(c, "/api/v1/namespaces", &r), KIN_ESTATUS);
  assert_int_equal(r.code, 401);
  assert_int_equal(r.retries, 0);
  kin_result_free(&r);
  kin_client_free(c);
  kin_sim_free(sim);
}

static void rm_tree(const char *dir);

/* Replaces path's content as kubelet does (write elsewhere, rename), with
 * a distinct mtime so the change is seen whatever the clock granularity. */
static void rotate(const char *path, const char *content, time_t mtime) {
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  assert_non_null(f);
  fputs(content, f);
  fclose(f);
  struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
  assert_int_equal(utimensat(AT_FDCWD, tmp, ts, 0), 0);
  assert_int_equal(rename(tmp, path), 0);
}

static void test_client_auth_TokenFileRotated(void **state) {
  kin_sim *sim = tls_sim(TOKEN, 0);
  char dir[] = "/tmp/kin_tokfile_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/token", dir);
  rotate(path, WRONG "\n", 1000000);
  kin_rest_config cfg = {.host = (char *)kin_sim_url(sim),
                         .ca_file = (char *)kin_test_fixture_path("sim_tls.crt"),
                         .bearer_token_file = path};
  kin_client *c = client_for(&cfg, NULL);
  kin_result r;
  /* The file's token is refused; the file did not change: no retry. */
  assert_int_equal(get(c, "/api/v1/namespaces", &r), KIN_ESTATUS);
  assert_int_equal(r.code, 401);
  assert_int_equal(r.retries, 0);
  kin_result_free(&r);
  /* Rotated between calls: the next call reads the new token. */
  rotate(path, TOKEN "\n", 1000060);
  assert_int_equal(get(c, "/api/v1/namespaces", &r), 0);
  assert_int_equal(r.retries, 0);
  kin_result_free(&r);

  /* Rotated back to a refused token: the 401 re-reads the file, finds
   * the token it sent, and does not retry. (The 401-then-reread retry
   * itself needs the file to change while the request is at the server,
   * which the sim answers 401 too fast to stage; the exec plugin test
   * covers that path of kin_client_do.) */
  rotate(path, WRONG "\n", 1000120);
  assert_int_equal(get(c, "/api/v1/namespaces", &r), KIN_ESTATUS);
  assert_int_equal(r.code, 401);
  assert_int_equal(r.retries, 0);
  kin_result_free(&r);
  kin_client_free(c);
  rm_tree(dir);
  kin_sim_free(sim);
}

/* ---- exec plugin ------------------------------------------------------------ */

typedef struct {
  char dir[64];
  char script[128];
} plugin;

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  return remove(p);
}

static void rm_tree(const char *dir) { nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS); }

static void put_file(const char *dir, const char *name, const char *content) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(content, f);
  fclose(f);
}

/* A plugin that prints first.json on its first `first_runs` runs and
 * rest.json after, counting runs in a file. */
static void plugin_new(plugin *p, const char *first, int first_runs, const char *rest) {
  snprintf(p->dir, sizeof p->dir, "/tmp/kin_cexec_XXXXXX");
  assert_non_null(mkdtemp(p->dir));
  snprintf(p->script, sizeof p->script, "%s/plugin.sh", p->dir);
  put_file(p->dir, "first.json", first);
  put_file(p->dir, "rest.json", rest);
  char s[1024];
  snprintf(s, sizeof s,
           "#!/bin/sh\n"
           "echo run >> '%1$s/count'\n"
           "n=$(wc -l < '%1$s/count')\n"
           "if [ \"$n\" -le %2$d ]; then cat '%1$s/first.json'; else cat '%1$s/rest.json'; fi\n",
           p->dir, first_runs);
  put_file(p->dir, "plugin.sh", s);
  assert_int_equal(chmod(p->script, 0755), 0);
}

static char *cred_token(const char *token, const char *expires) {
  static char buf[2][512];
  static int k;
  char *b = buf[k++ % 2];
  snprintf(b, 512,
           "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
           "\"status\":{\"token\":\"%s\"%s%s%s}}",
           token, expires ? ",\"expirationTimestamp\":\"" : "", expires ? expires : "",
           expires ? "\"" : "");
  return b;
}

static kin_exec_config exec_cfg(plugin *p) {
  return (kin_exec_config){.command = p->script,
                           .api_version = "client.authentication.k8s.io/v1"};
}

static int plugin_runs(plugin *p) {
  char path[256];
  snprintf(path, sizeof path, "%s/count", p->dir);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int n = 0, ch;
  while ((ch = fgetc(f)) != EOF) n += ch == '\n';
  fclose(f);
  return n;
}

static void test_client_auth_ExecPluginTokenCachedAndExpired(void **state) {
  kin_sim *sim = tls_sim(TOKEN, 0);
  plugin p;
  /* Valid for one minute after T0. */
  plugin_new(&p, cred_token(TOKEN, "2026-01-01T00:01:00Z"), 1000, "");
  kin_exec_config ec = exec_cfg(&p);
  kin_rest_config cfg = {.host = (char *)kin_sim_url(sim),
                         .ca_file = (char *)kin_test_fixture_path("sim_tls.crt"),
                         .exec = &ec};
  kin_clock *clk = kin_fake_clock_new(T0 * KIN_NSEC_PER_SEC);
  kin_client *c = client_for(&cfg, clk);
  assert_int_equal(plugin_runs(&p), 0); /* lazily, at the first request */
  kin_result r;
  for (int i = 0; i < 3; i++) {
    assert_int_equal(get(c, "/api/v1/namespaces", &r), 0);
    kin_result_free(&r);
  }
  assert_int_equal(plugin_runs(&p), 1);
  /* Expired: the next request runs it again. */
  kin_fake_clock_step(clk, 61 * KIN_NSEC_PER_SEC);
  assert_int_equal(get(c, "/api/v1/namespaces", &r), 0);
  kin_result_free(&r);
  assert_int_equal(plugin_runs(&p), 2);
  /* Told of a 401 by the caller (a watch): runs again on the next use. */
  kin_client_auth_failed(c);
  assert_int_equal(get(c, "/api/v1/namespaces", &r), 0);
  kin_result_free(&r);
  assert_int_equal(plugin_runs(&p), 3);
  kin_client_free(c);
  kin_fake_clock_free(clk);
  rm_tree(p.dir);
  kin_sim_free(sim);
}

static void test_client_auth_ExecPlugin401RunsOnceMore(void **state) {
  kin_sim *sim = tls_sim(TOKEN, 0);
  plugin p;
  /* A stale credential first (no expiry: cached until refused). */
  plugin_new(&p, cred_token(WRONG, NULL), 1, cred_token(TOKEN, NULL));
  kin_exec_config ec = exec_cfg(&p);
  kin_rest_config cfg = {.host = (char *)kin_sim_url(sim),
                         .ca_file = (char *)kin_test_fixture_path("sim_tls.crt"),
                         .exec = &ec};
  kin_client *c = client_for(&cfg, NULL);
  kin_result r;
  assert_int_equal(get(c, "/api/v1/namespaces", &r), 0);
  assert_int_equal(r.retries, 1);
  kin_result_free(&r);
  assert_int_equal(plugin_runs(&p), 2);
  assert_int_equal(get(c, "/api/v1/namespaces", &r), 0);
  assert_int_equal(r.retries, 0);
  kin_result_free(&r);
  assert_int_equal(plugin_runs(&p), 2);
  kin_client_free(c);
  rm_tree(p.dir);

  /* A plugin that is always refused: one re-run per request, then the 401. */
  plugin_new(&p, cred_token(WRONG, NULL), 1000, "");
  ec = exec_cfg(&p);
  c = client_for(&cfg, NULL);
  assert_int_equal(get(c, "/api/v1/namespaces", &r), KIN_ESTATUS);
  assert_int_equal(r.code, 401);
  assert_int_equal(r.retries, 1);
  kin_result_free(&r);
  assert_int_equal(plugin_runs(&p), 2);
  kin_client_free(c);
  rm_tree(p.dir);
  kin_sim_free(sim);
}

/* Appends s JSON-escaped (PEM newlines) to out. */
static void json_escape_into(char *out, size_t n, const char *s) {
  size_t k = strlen(out);
  for (; *s && k + 3 < n; s++) {
    if (*s == '\n') {
      out[k++] = '\\';
      out[k++] = 'n';
    } else {
      out[k++] = *s;
    }
  }
  out[k] = 0;
}

static void test_client_auth_ExecPluginClientCertificate(void **state) {
  kin_sim *sim = tls_sim(NULL, 1);
  char *crt = kin_test_fixture("sim_client_alice.crt", NULL);
  char *key = kin_test_fixture("sim_client_alice.key", NULL);
  static char cred[8192];
  snprintf(cred, sizeof cred,
           "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
           "\"status\":{\"clientCertificateData\":\"");
  json_escape_into(cred, sizeof cred, crt);
  strncat(cred, "\",\"clientKeyData\":\"", sizeof cred - strlen(cred) - 1);
  json_escape_into(cred, sizeof cred, key);
  strncat(cred, "\"}}", sizeof cred - strlen(cred) - 1);
  free(crt);
  free(key);
  plugin p;
  plugin_new(&p, cred, 1000, "");
  kin_exec_config ec = exec_cfg(&p);
  kin_rest_config cfg = {.host = (char *)kin_sim_url(sim),
                         .ca_file = (char *)kin_test_fixture_path("sim_tls.crt"),
                         .exec = &ec};
  kin_client *c = client_for(&cfg, NULL);
  char user[64];
  assert_string_equal(whoami(c, user, sizeof user), "alice");
  assert_int_equal(plugin_runs(&p), 1);
  kin_client_free(c);
  rm_tree(p.dir);
  kin_sim_free(sim);
}

static void test_client_auth_InClusterConfig(void **state) {
  kin_sim *sim = tls_sim(TOKEN, 0);
  char dir[] = "/tmp/kin_sa_XXXXXX";
  assert_non_null(mkdtemp(dir));
  put_file(dir, "token", TOKEN "\n");
  put_file(dir, "namespace", "team-a\n");
  char *ca = kin_test_fixture("sim_tls.crt", NULL);
  put_file(dir, "ca.crt", ca);
  free(ca);
  char port[16];
  snprintf(port, sizeof port, "%u", (unsigned)kin_sim_port(sim));
  setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", port, 1);
  kin_in_cluster_opts io = {.sa_dir = dir};
  kin_rest_config *cfg = NULL;
  char err[256];
  int rc = kin_in_cluster_config(&io, &cfg, err, sizeof err);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  assert_int_equal(rc, 0);
  kin_client *c = client_for(cfg, NULL);
  kin_rest_config_free(cfg); /* the client keeps its own copy */
  assert_string_equal(kin_client_namespace(c), "team-a");
  kin_resource ns = rt_resource(c, "v1/namespaces");
  kin_result r;
  assert_int_equal(kin_client_get(c, NULL, &ns, NULL, "default", &r), 0);
  assert_true(rt_body_has(&r, "\"name\":\"default\""));
  kin_result_free(&r);
  kin_client_free(c);
  rm_tree(dir);
  kin_sim_free(sim);
}

static void test_client_auth_FromSimKubeconfig(void **state) {
  kin_sim *sim = tls_sim(TOKEN, 0);
  char path[] = "/tmp/kin_kc_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(kin_sim_write_kubeconfig(sim, path), 0);
  kin_kubeconfig_opts ko = {.path = path};
  kin_rest_config *cfg = NULL;
  char err[256];
  assert_int_equal(kin_kubeconfig_load(&ko, &cfg, err, sizeof err), 0);
  kin_client *c = client_for(cfg, NULL);
  kin_rest_config_free(cfg);
  unlink(path);
  kin_resource cm = rt_resource(c, "v1/configmaps");
  kin_result r;
  assert_int_equal(kin_client_list(c, NULL, &cm, "default", NULL, &r), 0);
  assert_true(rt_body_has(&r, "ConfigMapList"));
  kin_result_free(&r);
  kin_client_free(c);
  kin_sim_free(sim);
}

static void assert_no_secret(const kin_result *r, rt_log *l, const char *secret) {
  if (r->message) assert_null(strstr(r->message, secret));
  if (r->reason) assert_null(strstr(r->reason, secret));
  assert_int_equal(rt_log_count(l, secret), 0);
}

static void test_client_auth_TokenNeverInMessagesOrLog(void **state) {
  kin_sim *sim = tls_sim(TOKEN, 0);
  rt_log l;
  rt_log_start(&l);
  kin_result r;
  /* Refused token, on a plain request and on a retried one. */
  kin_rest_config cfg = {.host = (char *)kin_sim_url(sim),
                         .ca_file = (char *)kin_test_fixture_path("sim_tls.crt"),
                         .bearer_token = WRONG};
  kin_client *c = client_for(&cfg, NULL);
  assert_int_equal(get(c, "/api/v1/namespaces", &r), KIN_ESTATUS);
  assert_no_secret(&r, &l, WRONG);
  kin_result_free(&r);
  kin_client_free(c);

  cfg.bearer_token = TOKEN;
  c = client_for(&cfg, NULL);
  assert_int_equal(kin_sim_fail_next(sim, 503, 1), 0);
  assert_int_equal(get(c, "/api/v1/namespaces", &r), 0);
  assert_int_equal(r.retries, 1); /* the retry was logged */
  assert_true(rt_log_count(&l, "retry 1 of") == 1);
  assert_no_secret(&r, &l, TOKEN);
  kin_result_free(&r);
  kin_client_free(c);

  /* A transport failure with a token configured. */
  cfg.ca_file = (char *)kin_test_fixture_path("sim_client_ca.crt");
  c = client_for(&cfg, NULL);
  assert_int_equal(get(c, "/api/v1/namespaces", &r), KIN_EIO);
  assert_no_secret(&r, &l, TOKEN);
  kin_result_free(&r);
  kin_client_free(c);

  /* An exec plugin that fails after printing a token-looking line, and a
   * token file that cannot be read. */
  plugin p;
  plugin_new(&p, "{\"status\":{\"token\":\"" TOKEN "\"}", 1000, "");
  kin_exec_config ec = exec_cfg(&p);
  cfg = (kin_rest_config){.host = (char *)kin_sim_url(sim),
                          .ca_file = (char *)kin_test_fixture_path("sim_tls.crt"),
                          .exec = &ec};
  c = client_for(&cfg, NULL);
  assert_int_not_equal(get(c, "/api/v1/namespaces", &r), 0);
  assert_non_null(r.message);
  assert_non_null(strstr(r.message, p.script)); /* names the command */
  assert_no_secret(&r, &l, TOKEN);
  kin_result_free(&r);
  kin_client_free(c);
  rm_tree(p.dir);

  cfg = (kin_rest_config){.host = (char *)kin_sim_url(sim),
                          .ca_file = (char *)kin_test_fixture_path("sim_tls.crt"),
                          .bearer_token_file = "/nonexistent/token"};
  char err[256];
  c = NULL;
  assert_int_equal(kin_client_new(&cfg, NULL, NULL, &c, err, sizeof err), KIN_ENOENT);
  assert_non_null(strstr(err, "token file /nonexistent/token: No such file or directory"));
  rt_log_stop(&l);
  kin_sim_free(sim);
}

KIN_SUITE(client_auth, cmocka_unit_test(test_client_auth_TLSClientCertificate),
          cmocka_unit_test(test_client_auth_TLSErrorsAreClear),
          cmocka_unit_test(test_client_auth_BearerToken),
          cmocka_unit_test(test_client_auth_TokenFileRotated),
          cmocka_unit_test(test_client_auth_ExecPluginTokenCachedAndExpired),
          cmocka_unit_test(test_client_auth_ExecPlugin401RunsOnceMore),
          cmocka_unit_test(test_client_auth_ExecPluginClientCertificate),
          cmocka_unit_test(test_client_auth_InClusterConfig),
          cmocka_unit_test(test_client_auth_FromSimKubeconfig),
          cmocka_unit_test(test_client_auth_TokenNeverInMessagesOrLog))
