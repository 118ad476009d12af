/* test_errors.c -- errors a user can act on (issue 12): TLS failures name
 * the verification reason and the CA in use; unreadable token,
 * certificate, key and CA files are reported when the client is created,
 * naming the kubeconfig entry and the file; error answers that are not a
 * Status (a proxy's HTML 502) carry code, content type and an excerpt, in
 * the REST client, discovery and the reflector's watch log; exec plugin
 * failures quote the plugin's stderr; error names come from one table.
 * Each message is compared with what kubectl / client-go says for the same
 * cause in the comments. */
#include "kin_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "delta_fifo.h"
#include "kin.h"
#include "kubeconfig.h"
#include "reflector.h"
#include "rest_client.h"
#include "rest_test.h"
#include "sim.h"


static kin_sim *tls_sim(void) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.tls_cert_file = kin_test_fixture_path("sim_tls.crt");
  cfg.tls_key_file = kin_test_fixture_path("sim_tls.key");
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  return sim;
}

static kin_client *client_for(const kin_rest_config *cfg) {
  kin_client_opts o = {.qps = -1, .max_retries = -1};
  kin_client *c = NULL;
  char err[512];
  if (kin_client_new(cfg, NULL, &o, &c, err, sizeof err)) fail_msg("kin_client_new: %s", err);
  return c;
}

static int get(kin_client *c, const char *path, kin_result *r) {
  kin_client_request req = {.path = path, .idempotent = 1};
  return kin_client_do(c, &req, r);
}

static void assert_has(const char *s, const char *want) {
  if (!s || !strstr(s, want)) fail_msg("want \"%s\" in \"%s\"", want, s ? s : "(null)");
}

/* ---- TLS ------------------------------------------------------------------- */

/* kubectl: Get "https://127.0.0.1:6443/version": tls: failed to verify
 * certificate: x509: certificate signed by unknown authority */
static void test_errors_TLSUnknownAuthorityNamesCA(void **state) {
  kin_sim *sim = tls_sim();
  char url[256];
  snprintf(url, sizeof url, "GET %s/version: TLS: certificate signed by unknown authority (",
           kin_sim_url(sim));
  /* A CA file that did not sign the server's certificate. */
  const char *wrong = kin_test_fixture_path("sim_client_ca.crt");
  kin_rest_config cfg = {.host = (char *)kin_sim_url(sim), .ca_file = (char *)wrong};
  kin_client *c = client_for(&cfg);
  kin_result r;
  assert_int_equal(get(c, "/version", &r), KIN_EIO);
  assert_int_equal(r.code, 0);
  assert_has(r.message, url);
  /* curl's own text (OpenSSL's reason: the sim's certificate is
   * self-signed, so "self-signed certificate"). */
  assert_has(r.message, "(SSL certificate problem: ");
  char ca[600];
  snprintf(ca, sizeof ca, "; CA: %s)", wrong);
  assert_has(r.message, ca);
  kin_result_free(&r);
  kin_client_free(c);

  /* The same CA as kubeconfig certificate-authority-data. */
  size_t n;
  char *pem = kin_test_fixture("sim_client_ca.crt", &n);
  cfg = (kin_rest_config){.host = (char *)kin_sim_url(sim),
                          .ca_data = (unsigned char *)pem,
                          .ca_data_len = n,
                          .cluster_origin = "kubeconfig /x/config: cluster \"c\""};
  c = client_for(&cfg);
  assert_int_equal(get(c, "/version", &r), KIN_EIO);
  assert_has(r.message, "TLS: certificate signed by unknown authority");
  assert_has(r.message, "; CA: kubeconfig certificate-authority-data)");
  kin_result_free(&r);
  kin_client_free(c);
  free(pem);

  /* No CA configured: the system's, which do not know the sim's
   * self-signed certificate. */
  cfg = (kin_rest_config){.host = (char *)kin_sim_url(sim)};
  c = client_for(&cfg);
  assert_int_equal(get(c, "/version", &r), KIN_EIO);
  assert_has(r.message, "TLS: certificate signed by unknown authority");
  assert_has(r.message, "; CA: system CAs)");
  kin_result_free(&r);
  kin_client_free(c);
  kin_sim_free(sim);
}

/* kubectl: x509: certificate is valid for 127.0.0.1, not
 * kubernetes.default.svc */
static void test_errors_TLSHostnameMismatch(void **state) {
  kin_sim *sim = tls_sim();
  kin_rest_config cfg = {.host = (char *)kin_sim_url(sim),
                         .ca_file = (char *)kin_test_fixture_path("sim_tls.crt"),
                         .tls_server_name = "kubernetes.default.svc"};
  kin_client *c = client_for(&cfg);
  kin_result r;
  assert_int_equal(get(c, "/version", &r), KIN_EIO);
  assert_has(r.message, "TLS: certificate is not valid for kubernetes.default.svc (");
  assert_has(r.message, "kubernetes.default.svc'");
  assert_has(r.message, "; CA: ");
  kin_result_free(&r);
  kin_client_free(c);
  kin_sim_free(sim);
}

/* kubectl: x509: certificate has expired or is not yet valid. The
 * fixture sim_tls_expired.crt/.key (self-signed, CN and SAN 127.0.0.1,
 * valid 2000-01-01 to 2000-01-02, EC P-256) was made once with Python's
 * cryptography package (x509.CertificateBuilder). */
static void test_errors_TLSExpiredCertificate(void **state) {
  kin_sim *sim = kin_test_sim_start_cert("sim_tls_expired.crt", "sim_tls_expired.key");
  kin_rest_config cfg = {.host = (char *)kin_sim_url(sim),
                         .ca_file = (char *)kin_test_fixture_path("sim_tls_expired.crt")};
  kin_client *c = client_for(&cfg);
  kin_result r;
  assert_int_equal(get(c, "/version", &r), KIN_EIO);
  assert_has(r.message, "TLS: certificate has expired or is not yet valid (SSL certificate "
                        "problem: certificate has expired; CA: ");
  kin_result_free(&r);
  kin_client_free(c);
  kin_sim_free(sim);
}

/* ---- files named at creation ---------------------------------------------- */

static void write_file(const char *path, const char *content) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(content, f);
  fclose(f);
}

/* Loads the kubeconfig at path and tries to create a client: returns the
 * kin_client_new error and its message in err. */
static int client_from_kubeconfig(const char *path, char *err, size_t n) {
  kin_kubeconfig_opts ko = {.path = path};
  kin_rest_config *cfg = NULL;
  int rc = kin_kubeconfig_load(&ko, &cfg, err, n);
  if (rc) fail_msg("load: %s", err);
  kin_client *c = NULL;
  rc = kin_client_new(cfg, NULL, NULL, &c, err, n);
  kin_rest_config_free(cfg);
  kin_client_free(c);
  return rc;
}

/* clientcmd: unable to read client-cert /x for u due to open /x: no such
 * file or directory (and the same for client-key, certificate-authority;
 * tokenFile fails at the first request there, here at creation). */
static void test_errors_MissingFilesNamedAtCreation(void **state) {
  char dir[] = "/tmp/kin_err_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256], want[768], err[512];
  snprintf(path, sizeof path, "%s/config", dir);
  static const struct {
    const char *user_fields, *cluster_fields, *what, *file, *origin;
  } cases[] = {
      {"tokenFile: missing-token", "", "token file", "missing-token", "user \"u\""},
      {"tokenFile: /nonexistent/tok", "", "token file", "/nonexistent/tok", "user \"u\""},
      {"client-certificate: nope.crt\n    client-key: nope.key", "", "client-certificate",
       "nope.crt", "user \"u\""},
      {"", "\n    certificate-authority: ca-gone.crt", "certificate-authority", "ca-gone.crt",
       "cluster \"c\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char kc[1024];
    snprintf(kc, sizeof kc,
             "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
             "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1%s\n"
             "users:\n- name: u\n  user:\n    %s\n"
             "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n",
             cases[i].cluster_fields, cases[i].user_fields[0] ? cases[i].user_fields : "{}");
    if (!cases[i].user_fields[0])
      snprintf(kc, sizeof kc,
               "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
               "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1%s\n"
               "contexts:\n- name: x\n  context:\n    cluster: c\n",
               cases[i].cluster_fields);
    write_file(path, kc);
    assert_int_equal(client_from_kubeconfig(path, err, sizeof err), KIN_ENOENT);
    char file[300];
    if (cases[i].file[0] == '/') snprintf(file, sizeof file, "%s", cases[i].file);
    else snprintf(file, sizeof file, "%s/%s", dir, cases[i].file);
    snprintf(want, sizeof want, "kubeconfig %s: %s: %s %s: No such file or directory", path,
             cases[i].origin, cases[i].what, file);
    if (strcmp(err, want)) fail_msg("case %zu: want \"%s\", got \"%s\"", i, want, err);
  }
  /* A directory where a file should be. */
  write_file(path, "apiVersion: v1\ncurrent-context: x\n"
                   "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n"
                   "    certificate-authority: /tmp\n"
                   "contexts:\n- name: x\n  context:\n    cluster: c\n");
  assert_int_equal(client_from_kubeconfig(path, err, sizeof err), -EISDIR);
  assert_has(err, "certificate-authority /tmp: Is a directory");
  unlink(path);
  rmdir(dir);
}

/* rest.InClusterConfig: open /var/run/secrets/.../token: no such file or
 * directory; a missing ca.crt is refused at creation too. */
static void test_errors_InClusterMissingFiles(void **state) {
  char dir[] = "/tmp/kin_sa_XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
  kin_in_cluster_opts io = {.sa_dir = dir};
  kin_rest_config *cfg = NULL;
  char err[512], want[600];
  assert_int_equal(kin_in_cluster_config(&io, &cfg, err, sizeof err), KIN_ENOENT);
  snprintf(want, sizeof want, "in-cluster: token file %s/token: No such file or directory", dir);
  assert_string_equal(err, want);

  char p[300];
  snprintf(p, sizeof p, "%s/token", dir);
  write_file(p, "tok\n");
  assert_int_equal(kin_in_cluster_config(&io, &cfg, err, sizeof err), 0);
  kin_client *c = NULL;
  assert_int_equal(kin_client_new(cfg, NULL, NULL, &c, err, sizeof err), KIN_ENOENT);
  snprintf(want, sizeof want,
           "in-cluster: certificate-authority %s/ca.crt: No such file or directory", dir);
  assert_string_equal(err, want);
  kin_rest_config_free(cfg);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  unlink(p);
  rmdir(dir);
}

/* ---- answers that are not a Status: a tiny loopback server ---------------- */

/* Answers every request with `watch_resp` when its request line has
 * watch=true, else with `resp`; one request per connection. */
typedef struct {
  int fd;
  unsigned short port;
  const char *resp, *watch_resp;
  int stop;         /* atomic: set by raw_stop, read by the server thread */
  pthread_t th;
  int requests;
} raw_srv;

static void *raw_loop(void *ud) {
  raw_srv *s = ud;
  while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
    struct pollfd pf = {.fd = s->fd, .events = POLLIN};
    if (poll(&pf, 1, 20) <= 0) continue;
    int c = accept(s->fd, NULL, NULL);
    if (c < 0) continue;
    char req[4096];
    size_t n = 0;
    while (n < sizeof req - 1) {
      ssize_t r = recv(c, req + n, sizeof req - 1 - n, 0);
      if (r <= 0) break;
      n += (size_t)r;
      req[n] = 0;
      if (strstr(req, "\r\n\r\n")) break;
    }
    req[n] = 0;
    __atomic_add_fetch(&s->requests, 1, __ATOMIC_SEQ_CST);
    const char *out = s->watch_resp && strstr(req, "watch=true") ? s->watch_resp : s->resp;
    size_t len = strlen(out), off = 0;
    while (off < len) {
      ssize_t w = send(c, out + off, len - off, MSG_NOSIGNAL);
      if (w <= 0) break;
      off += (size_t)w;
    }
    shutdown(c, SHUT_WR);
    close(c);
  }
  return NULL;
}

static void raw_start(raw_srv *s, const char *resp, const char *watch_resp) {
  memset(s, 0, sizeof *s);
  s->resp = resp;
  s->watch_resp = watch_resp;
  s->fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(s->fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t al = sizeof a;
  assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &al), 0);
  s->port = ntohs(a.sin_port);
  assert_int_equal(listen(s->fd, 16), 0);
  assert_int_equal(pthread_create(&s->th, NULL, raw_loop, s), 0);
}

static void raw_stop(raw_srv *s) {
  __atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
  pthread_join(s->th, NULL);
  close(s->fd);
}

static kin_client *raw_client(raw_srv *s) {
  char host[64];
  snprintf(host, sizeof host, "http://127.0.0.1:%u", (unsigned)s->port);
  kin_rest_config cfg = {.host = host};
  return client_for(&cfg);
}

#define HTML_BODY                                                                      \
  "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"                 \
  "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"        \
  "</body>\r\n</html>\r\n"
#define LIST_BODY                                                                      \
  "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1\"},"   \
  "\"items\":[]}"

/* A whole HTTP/1.1 response (static storage, one per slot). */
static const char *resp(int slot, const char *status, const char *ctype, const char *body) {
  static char bufs[4][2048];
  snprintf(bufs[slot], sizeof bufs[slot],
           "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
           status, ctype, strlen(body), body);
  return bufs[slot];
}
#define HTML_502 resp(0, "502 Bad Gateway", "text/html; charset=utf-8", HTML_BODY)
#define LIST_OK resp(1, "200 OK", "application/json", LIST_BODY)

/* kubectl: Error from server (InternalError): an error on the server
 * ("<html>...") has prevented the request from succeeding */
static void test_errors_HTMLBadGatewayInClientAndDiscovery(void **state) {
  raw_srv s;
  raw_start(&s, HTML_502, NULL);
  kin_client *c = raw_client(&s);
  kin_result r;
  assert_int_equal(get(c, "/api/v1/namespaces/default/configmaps", &r), KIN_ESTATUS);
  assert_int_equal(r.code, 502);
  assert_string_equal(r.reason, "InternalError");
  assert_string_equal(r.message, "502 Bad Gateway (text/html: \"502 Bad Gateway\")");
  kin_result_free(&r);

  /* Discovery reports the same answer (was: an error code, HTTP code 0). */
  kin_resource res;
  assert_int_equal(kin_client_resource_why(c, "v1/configmaps", &res, &r), KIN_ESTATUS);
  assert_int_equal(r.code, 502);
  assert_string_equal(r.reason, "InternalError");
  assert_string_equal(r.message, "502 Bad Gateway (text/html: \"502 Bad Gateway\")");
  kin_result_free(&r);
  kin_client_free(c);
  raw_stop(&s);
}

static void test_errors_NonStatusBodies(void **state) {
  char buf[256];
  /* Plain text: the first printable characters, whitespace collapsed. */
  const char *t = "upstream connect error or disconnect/reset before headers.\n reset reason: "
                  "connection failure, transport failure reason: delayed connect error: 111";
  kin_http_describe_body(503, "text/plain", t, strlen(t), buf, sizeof buf);
  assert_string_equal(buf, "503 Service Unavailable (text/plain: \"upstream connect error or "
                           "disconnect/reset before headers. reset reason: connect...\")");
  /* Quotes are escaped, control characters dropped. */
  const char *j = "{\"error\":\"bad\x01\"}";
  kin_http_describe_body(500, "application/json", j, strlen(j), buf, sizeof buf);
  assert_string_equal(buf, "500 Internal Server Error (application/json: \"{\\\"error\\\":\\\"bad\\\"}\")");
  /* No content type; an unknown code. */
  kin_http_describe_body(599, NULL, "x", 1, buf, sizeof buf);
  assert_string_equal(buf, "599 (body: \"x\")");
  /* Empty: client-go's words. */
  kin_http_describe_body(502, "text/html", "  \n", 3, buf, sizeof buf);
  assert_string_equal(buf, "the server responded with the status code 502 but did not return "
                           "more information");
  /* A small buffer is never overrun and stays terminated. */
  char small[24];
  kin_http_describe_body(503, "text/plain", t, strlen(t), small, sizeof small);
  assert_true(strlen(small) < sizeof small);
  assert_string_equal(kin_status_reason_for_code(502), "InternalError");
  assert_string_equal(kin_status_reason_for_code(404), "NotFound");
  assert_string_equal(kin_status_reason_for_code(418), "Unknown");
}

static int log_has(rt_log *l, const char *s) { return rt_log_count(l, s) > 0; }

/* Runs a reflector against a raw server answering lists with list_resp and
 * watches with watch_resp (NULL: list_resp), waits for a log line with
 * wait_for and asserts that one reads want. */
static void reflector_logs(const char *list_resp, const char *watch_resp, const char *wait_for,
                           const char *want) {
  raw_srv s;
  raw_start(&s, list_resp, watch_resp);
  kin_client *c = raw_client(&s);
  kin_delta_fifo *fifo = NULL;
  kin_delta_fifo_config fc = {0};
  assert_int_equal(kin_delta_fifo_new(&fc, &fifo), 0);
  rt_log l;
  rt_log_start(&l);
  kin_reflector_config rc = {.client = c,
                             .resource = {.version = "v1", .resource = "configmaps",
                                          .kind = "ConfigMap", .namespaced = 1},
                             .fifo = fifo,
                             .backoff_initial_ns = 20 * KIN_NSEC_PER_MSEC,
                             .backoff_max_ns = 50 * KIN_NSEC_PER_MSEC,
                             .name = "configmaps"};
  kin_reflector *refl = NULL;
  assert_int_equal(kin_reflector_new(&rc, &refl), 0);
  assert_int_equal(kin_reflector_run(refl), 0);
  KIN_EVENTUALLY(log_has(&l, wait_for), 5000);
  kin_reflector_stop(refl);
  kin_reflector_free(refl);
  assert_true(log_has(&l, want));
  rt_log_stop(&l);
  kin_delta_fifo_free(fifo);
  kin_client_free(c);
  raw_stop(&s);
}

/* The reflector's watch log line says what the proxy answered (was:
 * "watch ended with: 502 " and nothing after it). */
static void test_errors_WatchLogNamesHTMLBody(void **state) {
  reflector_logs(LIST_OK, HTML_502, "watch ended with",
                 "configmaps: watch ended with: 502 InternalError: 502 Bad Gateway "
                 "(text/html: \"502 Bad Gateway\")");
}

/* A list that gets the HTML page logs it too. */
static void test_errors_ListLogNamesHTMLBody(void **state) {
  reflector_logs(HTML_502, NULL, "failed to list",
                 "configmaps: failed to list: 502 InternalError: 502 Bad Gateway "
                 "(text/html: \"502 Bad Gateway\")");
}

/* A proxy's HTML page with status 200 where a list belongs: the log names
 * what came (status, content type, the page's title), as it does for an
 * error status. */
static void test_errors_ListOfHTMLNamesTheBody(void **state) {
  (void)state;
  reflector_logs(resp(2, "200 OK", "text/html; charset=utf-8", HTML_BODY), NULL, "failed to list",
                 "configmaps: failed to list: unable to understand list result: 200 "
                 "(text/html: \"502 Bad Gateway\")");
}

/* A list page whose second item is no object: the page fails, and the log
 * says which item (one strict pass finds the items, kin_obj_parse reads
 * each). */
#define LIST_BAD_ITEM_BODY                                                                     \
  "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1\"},"        \
  "\"items\":[{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\"}},\"not an object\"]}"
static void test_errors_ListItemNotAnObject(void **state) {
  reflector_logs(resp(2, "200 OK", "application/json", LIST_BAD_ITEM_BODY), NULL,
                 "cannot be read", "configmaps: item 1 of a list page cannot be read");
}

/* ---- exec plugin stderr ---------------------------------------------------- */

/* client-go: exec: executable /p/plugin.sh failed with exit code 1 (the
 * plugin's stderr goes to the terminal there; a library has none, so its
 * last lines are in the message). */
static void test_errors_ExecPluginStderr(void **state) {
  char dir[] = "/tmp/kin_eplug_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char script[300];
  snprintf(script, sizeof script, "%s/plugin.sh", dir);
  write_file(script, "#!/bin/sh\n"
                     "echo '{\"status\":{\"token\":\"secret-on-stdout\"}}'\n"
                     "echo 'line one' >&2\necho 'line two' >&2\necho 'line three' >&2\n"
                     "printf 'error: token expired,\\trun login\\n\\n' >&2\n"
                     "exit 1\n");
  assert_int_equal(chmod(script, 0755), 0);
  kin_exec_config cfg = {.command = script, .api_version = "client.authentication.k8s.io/v1"};
  kin_exec_provider *p;
  assert_int_equal(kin_exec_provider_new(&cfg, NULL, NULL, &p), 0);
  kin_exec_credential cr;
  char err[512], want[700];
  assert_int_equal(kin_exec_provider_get(p, &cr, err, sizeof err), KIN_EINVAL);
  snprintf(want, sizeof want,
           "exec: executable %s failed with exit code 1: line two / line three / error: token "
           "expired, run login",
           script);
  assert_string_equal(err, want);
  assert_null(strstr(err, "secret-on-stdout"));
  kin_exec_provider_free(p);

  /* Through the client: the request's error is the plugin's. */
  /* (http:// sends a credential only when the config allows it) */
  kin_rest_config rc = {.host = "http://127.0.0.1:1", .exec = &cfg, .credentials_over_http = 1};
  kin_client *c = client_for(&rc);
  kin_result r;
  assert_int_equal(get(c, "/version", &r), KIN_EINVAL);
  assert_has(r.message, "failed with exit code 1: line two / line three / error: token expired");
  kin_result_free(&r);
  kin_client_free(c);

  /* A missing executable is named (client-go: exec: executable x not found). */
  cfg.command = "kin-no-such-plugin-7f3a";
  assert_int_equal(kin_exec_provider_new(&cfg, NULL, NULL, &p), 0);
  assert_true(kin_exec_provider_get(p, &cr, err, sizeof err) < 0);
  assert_string_equal(err, "exec: executable kin-no-such-plugin-7f3a not found");
  kin_exec_provider_free(p);
  unlink(script);
  rmdir(dir);
}

/* ---- one table of error names ---------------------------------------------- */

static void test_errors_NamesFromOneTable(void **state) {
  assert_string_equal(kin_errname(KIN_EIO), "EIO");
  assert_string_equal(kin_errname(KIN_ESTATUS), "ESTATUS");
  assert_string_equal(kin_errname(KIN_ENOMEM), "ENOMEM");
  assert_string_equal(kin_errname(KIN_ECLOSED), "ECLOSED");
  assert_string_equal(kin_errname(KIN_ETIMEDOUT), "ETIMEDOUT");
  assert_string_equal(kin_errname(-EACCES), "EACCES");
  assert_string_equal(kin_errname(-EISDIR), "EISDIR");
  assert_string_equal(kin_errname(1), "EUNKNOWN");
  assert_string_equal(kin_strerror(KIN_EIO), "transport error");
  assert_string_equal(kin_strerror(-EACCES), "Permission denied");
}

KIN_SUITE(errors, cmocka_unit_test(test_errors_TLSUnknownAuthorityNamesCA),
          cmocka_unit_test(test_errors_TLSHostnameMismatch),
          cmocka_unit_test(test_errors_TLSExpiredCertificate),
          cmocka_unit_test(test_errors_MissingFilesNamedAtCreation),
          cmocka_unit_test(test_errors_InClusterMissingFiles),
          cmocka_unit_test(test_errors_HTMLBadGatewayInClientAndDiscovery),
          cmocka_unit_test(test_errors_NonStatusBodies),
          cmocka_unit_test(test_errors_WatchLogNamesHTMLBody),
          cmocka_unit_test(test_errors_ListLogNamesHTMLBody),
          cmocka_unit_test(test_errors_ListItemNotAnObject),
          cmocka_unit_test(test_errors_ListOfHTMLNamesTheBody),
          cmocka_unit_test(test_errors_ExecPluginStderr),
          cmocka_unit_test(test_errors_NamesFromOneTable))
