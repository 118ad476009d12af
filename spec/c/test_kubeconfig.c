/* test_kubeconfig.c -- kubeconfig loading (client-go tools/clientcmd
 * loader_test.go / client_config_test.go), in-cluster config
 * (rest.InClusterConfig) and service-account token rotation, and the
 * internal base64 decoder. Fixtures are written to a mkdtemp directory. */
#include "kin_test.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "kin.h"
#include "kubeconfig.h"

#define SECRET "sekret-token-1"

static char *mktmp(void) {
  char *d = strdup("/tmp/kin_kubeconfig_XXXXXX");
  assert_non_null(d);
  assert_non_null(mkdtemp(d));
  return d;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  return remove(p);
}

static void rmtmp(char *d) {
  nftw(d, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free(d);
}

/* Writes content to dir/name and returns the path (caller frees). */
static char *put(const char *dir, const char *name, const char *content) {
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  assert_non_null(p);
  sprintf(p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(content, f);
  fclose(f);
  return p;
}

/* Saves and restores one environment variable around a test. */
typedef struct {
  const char *name;
  char *old;
} saved_env;

static saved_env env_set(const char *name, const char *value) {
  saved_env s = {name, getenv(name) ? strdup(getenv(name)) : NULL};
  if (value) setenv(name, value, 1);
  else unsetenv(name);
  return s;
}

static void env_restore(saved_env s) {
  if (s.old) setenv(s.name, s.old, 1);
  else unsetenv(s.name);
  free(s.old);
}

/* base64("CA-PEM") = Q0EtUEVN, base64("CERT") = Q0VSVA==, base64("KEY") = S0VZ */
static const char *const MAIN_CONFIG =
    "apiVersion: v1\n"
    "kind: Config\n"
    "current-context: dev\n"
    "clusters:\n"
    "- name: c1\n"
    "  cluster:\n"
    "    server: https://c1.example:6443\n"
    "    certificate-authority-data: Q0EtUEVN\n"
    "    tls-server-name: api.c1\n"
    "    proxy-url: http://proxy:3128\n"
    "- name: c2\n"
    "  cluster:\n"
    "    server: https://c2.example\n"
    "    certificate-authority: ca.crt\n"
    "users:\n"
    "- name: u1\n"
    "  user:\n"
    "    token: " SECRET "\n"
    "- name: u2\n"
    "  user:\n"
    "    tokenFile: tok\n"
    "    client-certificate: cert.pem\n"
    "    client-key: /abs/key.pem\n"
    "- name: u3\n"
    "  user:\n"
    "    client-certificate-data: Q0VSVA==\n"
    "    client-key-data: S0VZ\n"
    "contexts:\n"
    "- name: dev\n"
    "  context: {cluster: c1, user: u1, namespace: team-a}\n"
    "- name: prod\n"
    "  context: {cluster: c2, user: u2}\n"
    "- name: data\n"
    "  context: {cluster: c1, user: u3}\n"
    "- name: ghost\n"
    "  context: {cluster: nope, user: u1}\n"
    "- name: anon\n"
    "  context: {cluster: c2}\n";

static kin_rest_config *load_ok(const char *path, const char *ctx) {
  kin_kubeconfig_opts o = {path, ctx};
  kin_rest_config *c = NULL;
  char err[512];
  int rc = kin_kubeconfig_load(&o, &c, err, sizeof err);
  if (rc) fail_msg("load %s: %s", path, err);
  assert_non_null(c);
  return c;
}

static void expect_err(const char *path, const char *ctx, int want_rc, const char *want) {
  kin_kubeconfig_opts o = {path, ctx};
  kin_rest_config *c = (kin_rest_config *)1;
  char err[512];
  int rc = kin_kubeconfig_load(&o, &c, err, sizeof err);
  assert_null(c);
  assert_int_equal(rc, want_rc);
  assert_string_equal(err, want);
}

static void test_kubeconfig_base64_Decode(void **state) {
  static const struct {
    const char *in, *out;
  } ok[] = {{"", ""}, {"Zg==", "f"}, {"Zm8=", "fo"}, {"Zm9v", "foo"}, {"Zm9vYg==", "foob"},
            {"Zm9vYmE=", "fooba"}, {"Zm9vYmFy", "foobar"}, {"Zm8", "fo"}, {"Zm9v\nYmFy\n", "foobar"}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    unsigned char *out;
    size_t n;
    assert_int_equal(kin__base64_decode(ok[i].in, strlen(ok[i].in), &out, &n), 0);
    assert_int_equal(n, strlen(ok[i].out));
    assert_string_equal((char *)out, ok[i].out);
    char *enc = kin__base64_encode(out, n);
    unsigned char *back;
    size_t bn;
    assert_int_equal(kin__base64_decode(enc, strlen(enc), &back, &bn), 0);
    assert_memory_equal(back, out, n);
    free(enc);
    free(back);
    free(out);
  }
  char *enc = kin__base64_encode((const unsigned char *)"foobar", 6);
  assert_string_equal(enc, "Zm9vYmFy");
  free(enc);
  enc = kin__base64_encode((const unsigned char *)"fo", 2);
  assert_string_equal(enc, "Zm8=");
  free(enc);
  static const char *const bad[] = {"Zm9v!", "Z", "Zg=a", "Zg===", "Z===", "%%%%"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    unsigned char *out = (unsigned char *)1;
    size_t n;
    assert_int_equal(kin__base64_decode(bad[i], strlen(bad[i]), &out, &n), KIN_EINVAL);
    assert_null(out);
  }
}

/* client_config_test.go TestCreateClean / TestCreateCleanDefault. */
static void test_kubeconfig_CurrentContext(void **state) {
  char *d = mktmp();
  char *p = put(d, "config", MAIN_CONFIG);
  kin_rest_config *c = load_ok(p, NULL);
  assert_string_equal(c->context, "dev");
  assert_string_equal(c->host, "https://c1.example:6443");
  assert_int_equal(c->ca_data_len, 6);
  assert_memory_equal(c->ca_data, "CA-PEM", 6);
  assert_null(c->ca_file);
  assert_int_equal(c->insecure, 0);
  assert_string_equal(c->tls_server_name, "api.c1");
  assert_string_equal(c->proxy_url, "http://proxy:3128");
  assert_string_equal(c->bearer_token, SECRET);
  assert_null(c->bearer_token_file);
  assert_null(c->exec);
  assert_string_equal(c->namespace, "team-a");
  kin_rest_config_free(c);
  free(p);
  rmtmp(d);
}

/* TestOverrideContext-like: a named context, file references resolved
 * against the kubeconfig's directory (TestResolveRelativePaths). */
static void test_kubeconfig_NamedContextFilesResolved(void **state) {
  char *d = mktmp();
  char *p = put(d, "config", MAIN_CONFIG);
  kin_rest_config *c = load_ok(p, "prod");
  char want[512];
  assert_string_equal(c->host, "https://c2.example");
  snprintf(want, sizeof want, "%s/ca.crt", d);
  assert_string_equal(c->ca_file, want);
  assert_null(c->ca_data);
  assert_int_equal(c->insecure, 0); /* with a CA kubectl refuses it: KubectlRefusals */
  assert_null(c->bearer_token);
  snprintf(want, sizeof want, "%s/tok", d);
  assert_string_equal(c->bearer_token_file, want);
  snprintf(want, sizeof want, "%s/cert.pem", d);
  assert_string_equal(c->cert_file, want);
  assert_string_equal(c->key_file, "/abs/key.pem");
  assert_string_equal(c->namespace, "default");
  kin_rest_config_free(c);

  c = load_ok(p, "data");
  assert_int_equal(c->cert_data_len, 4);
  assert_memory_equal(c->cert_data, "CERT", 4);
  assert_int_equal(c->key_data_len, 3);
  assert_memory_equal(c->key_data, "KEY", 3);
  assert_null(c->cert_file);
  assert_null(c->bearer_token);
  kin_rest_config_free(c);

  c = load_ok(p, "anon"); /* a context without user: anonymous */
  assert_null(c->bearer_token);
  assert_null(c->cert_data);
  assert_null(c->exec);
  kin_rest_config_free(c);
  free(p);
  rmtmp(d);
}

static void test_kubeconfig_MissingContextOrCluster(void **state) {
  char *d = mktmp();
  char *p = put(d, "config", MAIN_CONFIG);
  char want[512];
  snprintf(want, sizeof want, "kubeconfig %s: context \"dev2\" not found", p);
  expect_err(p, "dev2", KIN_ENOENT, want);
  snprintf(want, sizeof want, "kubeconfig %s: cluster \"nope\" of context \"ghost\" not found", p);
  expect_err(p, "ghost", KIN_ENOENT, want);
  char *q = put(d, "nocur", "clusters: []\n");
  snprintf(want, sizeof want, "kubeconfig %s: no current-context set and no context given", q);
  expect_err(q, NULL, KIN_EINVAL, want);
  char missing[512];
  snprintf(missing, sizeof missing, "%s/absent", d);
  kin_kubeconfig_opts o = {missing, NULL};
  kin_rest_config *c;
  char err[512];
  assert_int_equal(kin_kubeconfig_load(&o, &c, err, sizeof err), KIN_ENOENT);
  assert_non_null(strstr(err, missing));
  free(q);
  free(p);
  rmtmp(d);
}

/* loader_test.go TestMergeContext / TestNonExistentCommandLineFile: the
 * first file to define a name wins, current-context from the first file
 * that sets it, missing files in $KUBECONFIG are skipped. */
static void test_kubeconfig_MergeKubeconfigList(void **state) {
  char *d = mktmp();
  char *a = put(d, "a",
                "clusters:\n"
                "- name: x\n  cluster: {server: https://from-a}\n"
                "users:\n- name: ua\n  user: {token: token-a}\n"
                "contexts:\n"
                "- name: shared\n  context: {cluster: x, user: ua, namespace: ns-a}\n");
  char *b = put(d, "b",
                "current-context: only-b\n"
                "clusters:\n"
                "- name: x\n  cluster: {server: https://from-b}\n"
                "- name: y\n  cluster: {server: https://y-from-b}\n"
                "users:\n- name: ua\n  user: {token: token-b}\n"
                "contexts:\n"
                "- name: shared\n  context: {cluster: y, user: ua, namespace: ns-b}\n"
                "- name: only-b\n  context: {cluster: x, user: ua, namespace: ns-only-b}\n");
  char *c2 = put(d, "c", "current-context: from-c\n");
  char list[1024];
  snprintf(list, sizeof list, "%s/absent:%s:%s:%s", d, a, b, c2);
  saved_env s = env_set("KUBECONFIG", list);
  kin_rest_config *c = load_ok(NULL, NULL);
  /* b is the first file with current-context; x and ua come from a. */
  assert_string_equal(c->context, "only-b");
  assert_string_equal(c->namespace, "ns-only-b");
  assert_string_equal(c->host, "https://from-a");
  assert_string_equal(c->bearer_token, "token-a");
  kin_rest_config_free(c);
  c = load_ok(NULL, "shared");
  assert_string_equal(c->namespace, "ns-a");
  assert_string_equal(c->host, "https://from-a");
  kin_rest_config_free(c);
  /* the context name set in a later file only wins when earlier ones are silent */
  snprintf(list, sizeof list, "%s:%s", c2, b);
  setenv("KUBECONFIG", list, 1);
  char err[512], want[1100];
  kin_kubeconfig_opts o = {NULL, NULL};
  assert_int_equal(kin_kubeconfig_load(&o, &c, err, sizeof err), KIN_ENOENT);
  snprintf(want, sizeof want, "kubeconfig %s: context \"from-c\" not found", list);
  assert_string_equal(err, want);
  env_restore(s);
  free(a);
  free(b);
  free(c2);
  rmtmp(d);
}

/* Without KUBECONFIG the file is ~/.kube/config. */
static void test_kubeconfig_DefaultHomeConfig(void **state) {
  char *d = mktmp();
  char kube[512];
  snprintf(kube, sizeof kube, "%s/.kube", d);
  assert_int_equal(mkdir(kube, 0700), 0);
  char *p = put(kube, "config", MAIN_CONFIG);
  saved_env s1 = env_set("KUBECONFIG", NULL);
  saved_env s2 = env_set("HOME", d);
  kin_rest_config *c = load_ok(NULL, "prod");
  assert_string_equal(c->host, "https://c2.example");
  kin_rest_config_free(c);
  env_restore(s2);
  env_restore(s1);
  free(p);
  rmtmp(d);
}

/* kubeconfig is also accepted as JSON, which is YAML. */
static void test_kubeconfig_JSONAccepted(void **state) {
  char *d = mktmp();
  char *p = put(d, "config.json",
                "{\"apiVersion\":\"v1\",\"kind\":\"Config\",\"current-context\":\"j\","
                "\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":\"https://j\","
                "\"insecure-skip-tls-verify\":true}}],"
                "\"users\":[{\"name\":\"u\",\"user\":{\"token\":\"jtok\"}}],"
                "\"contexts\":[{\"name\":\"j\",\"context\":{\"cluster\":\"c\",\"user\":\"u\","
                "\"namespace\":\"jns\"}}]}");
  kin_rest_config *c = load_ok(p, NULL);
  assert_string_equal(c->host, "https://j");
  assert_int_equal(c->insecure, 1);
  assert_string_equal(c->bearer_token, "jtok");
  assert_string_equal(c->namespace, "jns");
  kin_rest_config_free(c);
  free(p);
  rmtmp(d);
}

static void test_kubeconfig_BrokenYAMLNamesFileAndLine(void **state) {
  char *d = mktmp();
  char *p = put(d, "config",
                "apiVersion: v1\n"
                "current-context: dev\n"
                "users:\n"
                "- name: u\n"
                "  user:\n"
                "    token: " SECRET "\n"
                "    bad: value: nope\n");
  kin_kubeconfig_opts o = {p, NULL};
  kin_rest_config *c;
  char err[512], want[512];
  assert_int_equal(kin_kubeconfig_load(&o, &c, err, sizeof err), KIN_EINVAL);
  snprintf(want, sizeof want, "kubeconfig %s: line 7: mapping values are not allowed", p);
  assert_memory_equal(err, want, strlen(want));
  assert_null(strstr(err, SECRET));
  free(p);
  p = put(d, "list", "- a\n- b\n");
  o.path = p;
  assert_int_equal(kin_kubeconfig_load(&o, &c, err, sizeof err), KIN_EINVAL);
  snprintf(want, sizeof want, "kubeconfig %s: line 1: top level is not a mapping", p);
  assert_string_equal(err, want);
  free(p);
  rmtmp(d);
}

static void test_kubeconfig_BrokenFieldsNamed(void **state) {
  char *d = mktmp();
  char *p = put(d, "config",
                "current-context: x\n"
                "clusters:\n- name: c\n  cluster: {server: https://c}\n"
                "users:\n"
                "- name: ok\n  user: {token: " SECRET "}\n"
                "- name: bad\n  user:\n    token: " SECRET "\n"
                "    client-certificate-data: '" SECRET "!'\n"
                "contexts:\n"
                "- name: x\n  context: {cluster: c, user: bad}\n"
                "- name: y\n  context: {cluster: c, user: badca}\n");
  char want[512];
  snprintf(want, sizeof want,
           "kubeconfig %s: users[1].user.client-certificate-data: invalid base64", p);
  expect_err(p, NULL, KIN_EINVAL, want);
  free(p);
  p = put(d, "ca",
          "clusters:\n- name: c\n  cluster:\n    server: https://c\n"
          "    certificate-authority-data: 'not base64'\n"
          "    insecure-skip-tls-verify: maybe\n"
          "- name: noserver\n  cluster: {}\n"
          "contexts:\n- name: x\n  context: {cluster: c}\n"
          "- name: y\n  context: {cluster: noserver}\n");
  snprintf(want, sizeof want,
           "kubeconfig %s: clusters[0].cluster.certificate-authority-data: invalid base64", p);
  expect_err(p, "x", KIN_EINVAL, want);
  snprintf(want, sizeof want,
           "kubeconfig %s: clusters[1].cluster.server: no server found for cluster", p);
  expect_err(p, "y", KIN_EINVAL, want);
  free(p);
  rmtmp(d);
}

/* The exec section of a user (client-go api.ExecConfig). */
static void test_kubeconfig_ExecConfigParsed(void **state) {
  char *d = mktmp();
  char *p = put(d, "config",
                "current-context: x\n"
                "clusters:\n- name: c\n  cluster: {server: https://c}\n"
                "users:\n- name: u\n  user:\n    exec:\n"
                "      apiVersion: client.authentication.k8s.io/v1beta1\n"
                "      command: ./bin/plugin\n"
                "      args: [get-token, --region, eu]\n"
                "      env:\n      - name: A\n        value: one\n      - name: B\n"
                "      installHint: install it\n"
                "      provideClusterInfo: true\n"
                "      interactiveMode: Never\n"
                "contexts:\n- name: x\n  context: {cluster: c, user: u}\n");
  kin_rest_config *c = load_ok(p, NULL);
  assert_non_null(c->exec);
  char want[512];
  snprintf(want, sizeof want, "%s/./bin/plugin", d);
  assert_string_equal(c->exec->command, want);
  assert_string_equal(c->exec->api_version, "client.authentication.k8s.io/v1beta1");
  assert_int_equal(c->exec->nargs, 3);
  assert_string_equal(c->exec->args[0], "get-token");
  assert_string_equal(c->exec->args[2], "eu");
  assert_int_equal(c->exec->nenv, 2);
  assert_string_equal(c->exec->env_names[0], "A");
  assert_string_equal(c->exec->env_values[0], "one");
  assert_string_equal(c->exec->env_names[1], "B");
  assert_string_equal(c->exec->env_values[1], "");
  assert_string_equal(c->exec->install_hint, "install it");
  assert_int_equal(c->exec->provide_cluster_info, 1);
  kin_rest_config_free(c);
  free(p);
  p = put(d, "bad",
          "clusters:\n- name: c\n  cluster: {server: https://c}\n"
          "users:\n- name: u\n  user:\n    exec: {command: p, apiVersion: v9}\n"
          "contexts:\n- name: x\n  context: {cluster: c, user: u}\n");
  snprintf(want, sizeof want,
           "kubeconfig %s: users[0].user.exec.apiVersion: unsupported, want "
           "client.authentication.k8s.io/v1 or v1beta1",
           p);
  expect_err(p, "x", KIN_EINVAL, want);
  free(p);
  rmtmp(d);
}

/* ---- in-cluster ----------------------------------------------------------- */

static char *fake_sa(const char *ns) {
  char *d = mktmp();
  free(put(d, "token", "sa-token-1\n"));
  free(put(d, "ca.crt", "CA"));
  if (ns) free(put(d, "namespace", ns));
  return d;
}

/* rest config_test.go TestInClusterConfig (host/port joining, files). */
static void test_kubeconfig_InClusterConfig(void **state) {
  char *d = fake_sa("kube-system\n");
  saved_env h = env_set("KUBERNETES_SERVICE_HOST", "10.0.0.1");
  saved_env pt = env_set("KUBERNETES_SERVICE_PORT", "443");
  kin_in_cluster_opts o = {d};
  kin_rest_config *c;
  char err[512], want[512];
  assert_int_equal(kin_in_cluster_config(&o, &c, err, sizeof err), 0);
  assert_string_equal(c->host, "https://10.0.0.1:443");
  assert_string_equal(c->bearer_token, "sa-token-1");
  snprintf(want, sizeof want, "%s/token", d);
  assert_string_equal(c->bearer_token_file, want);
  snprintf(want, sizeof want, "%s/ca.crt", d);
  assert_string_equal(c->ca_file, want);
  assert_string_equal(c->namespace, "kube-system");
  assert_int_equal(c->insecure, 0);
  kin_rest_config_free(c);

  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  snprintf(want, sizeof want, "%s/namespace", d);
  unlink(want);
  assert_int_equal(kin_in_cluster_config(&o, &c, err, sizeof err), 0);
  assert_string_equal(c->host, "https://[fd00::1]:443");
  assert_string_equal(c->namespace, "default");
  kin_rest_config_free(c);

  snprintf(want, sizeof want, "%s/token", d);
  unlink(want);
  assert_int_equal(kin_in_cluster_config(&o, &c, err, sizeof err), KIN_ENOENT);
  assert_null(c);
  assert_non_null(strstr(err, want));

  unsetenv("KUBERNETES_SERVICE_PORT");
  assert_int_equal(kin_in_cluster_config(&o, &c, err, sizeof err), KIN_ENOENT);
  assert_non_null(strstr(err, "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT"));
  env_restore(pt);
  env_restore(h);
  rmtmp(d);
}

static void set_mtime(const char *path, time_t sec) {
  struct timespec ts[2] = {{sec, 0}, {sec, 0}};
  assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* transport cachingTokenSource / rest TestInClusterConfig token rotation:
 * the token is re-read when the file changes, and only then. */
static void test_kubeconfig_TokenFileRotation(void **state) {
  char *d = mktmp();
  char *p = put(d, "token", "tok-1\n");
  set_mtime(p, 1000000);
  kin_token_file *tf = kin_token_file_new(p);
  assert_non_null(tf);
  char *t, err[512];
  assert_int_equal(kin_token_file_get(tf, &t, err, sizeof err), 0);
  assert_string_equal(t, "tok-1");
  free(t);
  /* same size and mtime: the cached token is served without a re-read */
  free(put(d, "token", "tok-X\n"));
  set_mtime(p, 1000000);
  assert_int_equal(kin_token_file_get(tf, &t, err, sizeof err), 0);
  assert_string_equal(t, "tok-1");
  free(t);
  /* rotation: new content and mtime */
  free(put(d, "token", "tok-2\n"));
  set_mtime(p, 1000060);
  assert_int_equal(kin_token_file_get(tf, &t, err, sizeof err), 0);
  assert_string_equal(t, "tok-2");
  free(t);
  /* a file briefly missing during replacement keeps the last token */
  unlink(p);
  assert_int_equal(kin_token_file_get(tf, &t, err, sizeof err), 0);
  assert_string_equal(t, "tok-2");
  free(t);
  kin_token_file_free(tf);

  tf = kin_token_file_new(p);
  assert_int_equal(kin_token_file_get(tf, &t, err, sizeof err), KIN_ENOENT);
  assert_null(t);
  assert_non_null(strstr(err, p));
  kin_token_file_free(tf);
  free(p);
  rmtmp(d);
}

/* One cluster c and user u, with extra lines under each. */
static char *refusal_config(const char *dir, const char *cluster, const char *user) {
  char buf[2048];
  snprintf(buf, sizeof buf,
           "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
           "    server: https://127.0.0.1:6443\n%susers:\n- name: u\n  user:\n%s"
           "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
           cluster, user);
  return put(dir, "config", buf);
}

/* The combinations kubectl v1.36.3 refuses (its texts, as captured with
 * `kubectl --kubeconfig F get --raw /version`), refused with them. */
static void test_kubeconfig_KubectlRefusals(void **state) {
  char *dir = mktmp();
  char *ca = put(dir, "ca.crt", "x");
  char cl_ca[512];
  snprintf(cl_ca, sizeof cl_ca, "    insecure-skip-tls-verify: true\n    certificate-authority: %s\n", ca);
  char cl_both[512];
  snprintf(cl_both, sizeof cl_both, "    certificate-authority: %s\n    certificate-authority-data: Zm9v\n", ca);
  static const char tok[] = "    token: t\n";
  const struct {
    const char *cluster, *user, *want;
  } cases[] = {
      {cl_ca, tok, "specifying a root certificates file with the insecure flag is not allowed"},
      {"    insecure-skip-tls-verify: true\n    certificate-authority-data: Zm9v\n", tok,
       "specifying a root certificates file with the insecure flag is not allowed"},
      {"", "    token: t\n    username: a\n    password: b\n",
       "more than one authentication method found for u; found [token basicAuth], only one is "
       "allowed"},
      {"", "    token: t\n    password: b\n",
       "more than one authentication method found for u; found [token basicAuth], only one is "
       "allowed"},
      {cl_both, tok,
       "certificate-authority-data and certificate-authority are both specified for c. "
       "certificate-authority-data will override."},
      {"", "    client-certificate-data: Q0VSVA==\n",
       "client-key-data or client-key must be specified for u to use the clientCert "
       "authentication method."},
      {"", "    client-certificate-data: Q0VSVA==\n    client-certificate: /x/c.crt\n    client-key-data: S0VZ\n",
       "client-cert-data and client-cert are both specified for u. client-cert-data will override."},
      {"", "    client-certificate-data: Q0VSVA==\n    client-key: /x/k.key\n    client-key-data: S0VZ\n",
       "client-key-data and client-key are both specified for u; client-key-data will override"},
      {"", "    token: t\n    as-groups: [g]\n",
       "requesting uid, groups or user-extra for u without impersonating a user"},
      {"", "    auth-provider: {name: gcp}\n    exec:\n      command: foo\n"
           "      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n",
       "authProvider cannot be provided in combination with an exec plugin for u"},
      {"", "    exec:\n      command: foo\n      apiVersion: client.authentication.k8s.io/v1\n"
           "      interactiveMode: Sometimes\n",
       "invalid interactiveMode for u: \"Sometimes\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *cfg = refusal_config(dir, cases[i].cluster, cases[i].user);
    char want[1024];
    snprintf(want, sizeof want, "kubeconfig %s: %s", cfg, cases[i].want);
    expect_err(cfg, NULL, KIN_EINVAL, want);
    free(cfg);
  }
  /* What kubectl accepts still loads: insecure without a CA, a CA alone,
   * token with as-groups and as. */
  char *cfg = refusal_config(dir, "    insecure-skip-tls-verify: true\n", "    token: t\n    as: me\n    as-groups: [g]\n");
  kin_rest_config *c = load_ok(cfg, NULL);
  assert_int_equal(c->insecure, 1);
  kin_rest_config_free(c);
  free(cfg);
  free(ca);
  rmtmp(dir);
}

/* Credentials over plain HTTP only with the explicit cluster extension. */
static void test_kubeconfig_CredentialsOverHttpExtension(void **state) {
  char *dir = mktmp();
  char *cfg = refusal_config(dir, "", "    token: t\n");
  kin_rest_config *c = load_ok(cfg, NULL);
  assert_int_equal(c->credentials_over_http, 0);
  kin_rest_config_free(c);
  free(cfg);
  cfg = refusal_config(dir,
                       "    extensions:\n    - name: other/ext\n      extension: {x: 1}\n"
                       "    - name: kinformer.io/credentials-over-http\n      extension: {allow: true}\n",
                       "    token: t\n");
  c = load_ok(cfg, NULL);
  assert_int_equal(c->credentials_over_http, 1);
  kin_rest_config_free(c);
  free(cfg);
  cfg = refusal_config(dir,
                       "    extensions:\n    - name: kinformer.io/credentials-over-http\n"
                       "      extension: {allow: maybe}\n",
                       "    token: t\n");
  char want[1024];
  snprintf(want, sizeof want,
           "kubeconfig %s: cluster c: extensions[0] kinformer.io/credentials-over-http: "
           "extension.allow must be true or false", cfg);
  expect_err(cfg, NULL, KIN_EINVAL, want);
  free(cfg);
  rmtmp(dir);
}

KIN_SUITE(kubeconfig, cmocka_unit_test(test_kubeconfig_base64_Decode),
          cmocka_unit_test(test_kubeconfig_CurrentContext),
          cmocka_unit_test(test_kubeconfig_NamedContextFilesResolved),
          cmocka_unit_test(test_kubeconfig_MissingContextOrCluster),
          cmocka_unit_test(test_kubeconfig_MergeKubeconfigList),
          cmocka_unit_test(test_kubeconfig_DefaultHomeConfig),
          cmocka_unit_test(test_kubeconfig_JSONAccepted),
          cmocka_unit_test(test_kubeconfig_BrokenYAMLNamesFileAndLine),
          cmocka_unit_test(test_kubeconfig_BrokenFieldsNamed),
          cmocka_unit_test(test_kubeconfig_ExecConfigParsed),
          cmocka_unit_test(test_kubeconfig_InClusterConfig),
          cmocka_unit_test(test_kubeconfig_TokenFileRotation),
          cmocka_unit_test(test_kubeconfig_KubectlRefusals),
          cmocka_unit_test(test_kubeconfig_CredentialsOverHttpExtension))
