/* test_kubeconfig_exec.c -- exec credential plugins, ported from client-go
 * plugin/pkg/client/auth/exec exec_test.go (TestRefreshCreds,
 * TestRoundTripper's cache/401 behaviour). Each plugin is a shell script
 * written by the test; a counter file proves when it ran. */
#include "kin_test.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "kin.h"
#include "kubeconfig.h"

#define V1 "client.authentication.k8s.io/v1"
#define V1BETA1 "client.authentication.k8s.io/v1beta1"
#define T0 1767225600ULL /* 2026-01-01T00:00:00Z */

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  return remove(p);
}

typedef struct {
  char dir[64];
  char script[128];
  char counter[128];
  char info[128];
} plugin_env;

/* Writes an executable script to a new temp dir: it appends a line to the
 * counter file, stores KUBERNETES_EXEC_INFO, prints body and exits code. */
static void plugin_write(plugin_env *pe, const char *body, int code) {
  snprintf(pe->dir, sizeof pe->dir, "/tmp/kin_exec_XXXXXX");
  assert_non_null(mkdtemp(pe->dir));
  snprintf(pe->script, sizeof pe->script, "%s/plugin.sh", pe->dir);
  snprintf(pe->counter, sizeof pe->counter, "%s/count", pe->dir);
  snprintf(pe->info, sizeof pe->info, "%s/info", pe->dir);
  FILE *f = fopen(pe->script, "w");
  assert_non_null(f);
  fprintf(f,
          "#!/bin/sh\n"
          "echo run >> '%s'\n"
          "printf '%%s' \"$KUBERNETES_EXEC_INFO\" > '%s'\n"
          "cat <<'EOF'\n%s\nEOF\n"
          "exit %d\n",
          pe->counter, pe->info, body, code);
  fclose(f);
  assert_int_equal(chmod(pe->script, 0755), 0);
}

static int plugin_runs(const plugin_env *pe) {
  FILE *f = fopen(pe->counter, "r");
  if (!f) return 0;
  int n = 0, c;
  while ((c = fgetc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char buf[4096];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

static void plugin_cleanup(plugin_env *pe) { nftw(pe->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS); }

static kin_exec_config cfg_for(plugin_env *pe, const char *version, char **args, size_t nargs) {
  kin_exec_config c = {0};
  c.command = pe->script;
  c.api_version = (char *)version;
  c.args = args;
  c.nargs = nargs;
  return c;
}

/* TestRefreshCreds v1 token + TestRoundTripper: cached until expiry,
 * re-run after invalidate (the 401 path). */
static void test_kubeconfig_exec_TokenCachedUntilExpiry(void **state) {
  plugin_env pe;
  plugin_write(&pe,
               "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":{"
               "\"token\":\"exec-tok\\/1\",\"expirationTimestamp\":\"2026-01-01T00:10:00Z\"}}",
               0);
  kin_clock *clk = kin_fake_clock_new(T0 * KIN_NSEC_PER_SEC);
  kin_exec_config cfg = cfg_for(&pe, V1, NULL, 0);
  kin_exec_provider *p;
  assert_int_equal(kin_exec_provider_new(&cfg, NULL, clk, &p), 0);
  kin_exec_credential cr;
  char err[512];
  assert_int_equal(kin_exec_provider_get(p, &cr, err, sizeof err), 0);
  assert_string_equal(cr.token, "exec-tok/1");
  assert_int_equal(cr.expiration, T0 + 600);
  assert_null(cr.client_cert_data);
  kin_exec_credential_clear(&cr);
  assert_string_equal(slurp(pe.info),
                      "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1
                      "\",\"spec\":{\"interactive\":false}}");

  kin_fake_clock_step(clk, 599 * KIN_NSEC_PER_SEC);
  assert_int_equal(kin_exec_provider_get(p, &cr, err, sizeof err), 0);
  assert_string_equal(cr.token, "exec-tok/1");
  kin_exec_credential_clear(&cr);
  assert_int_equal(plugin_runs(&pe), 1);
  assert_int_equal(kin_exec_provider_runs(p), 1);

  kin_fake_clock_step(clk, 1 * KIN_NSEC_PER_SEC); /* expired */
  assert_int_equal(kin_exec_provider_get(p, &cr, err, sizeof err), 0);
  kin_exec_credential_clear(&cr);
  assert_int_equal(plugin_runs(&pe), 2);

  kin_fake_clock_set(clk, T0 * KIN_NSEC_PER_SEC);
  assert_int_equal(kin_exec_provider_get(p, &cr, err, sizeof err), 0);
  kin_exec_credential_clear(&cr);
  assert_int_equal(plugin_runs(&pe), 2);
  kin_exec_provider_invalidate(p); /* a 401 */
  assert_int_equal(kin_exec_provider_get(p, &cr, err, sizeof err), 0);
  assert_string_equal(cr.token, "exec-tok/1");
  kin_exec_credential_clear(&cr);
  assert_int_equal(plugin_runs(&pe), 3);
  assert_int_equal(kin_exec_provider_runs(p), 3);
  kin_exec_provider_free(p);
  kin_fake_clock_free(clk);
  plugin_cleanup(&pe);
}

/* TestRefreshCreds v1beta1 client certificate, args, env and cluster info;
 * a credential without expirationTimestamp is cached until invalidated. */
static void test_kubeconfig_exec_V1beta1CertArgsEnv(void **state) {
  plugin_env pe;
  plugin_write(&pe,
               "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1BETA1 "\",\"status\":{"
               "\"clientCertificateData\":\"-----BEGIN CERTIFICATE-----\\nC\\n\","
               "\"clientKeyData\":\"-----BEGIN KEY-----\\nK\\u0021\\n\"}}",
               0);
  char *args[] = {"one", "two words"};
  kin_exec_config cfg = cfg_for(&pe, V1BETA1, args, 2);
  char *names[] = {"KIN_PLUGIN_X"}, *values[] = {"val\"x"};
  cfg.env_names = names;
  cfg.env_values = values;
  cfg.nenv = 1;
  cfg.provide_cluster_info = 1;
  kin_rest_config cl = {0};
  cl.host = "https://c:6443";
  cl.tls_server_name = "api";
  cl.ca_data = (unsigned char *)"CA";
  cl.ca_data_len = 2;
  /* The script records its args and env var in the info file instead. */
  FILE *f = fopen(pe.script, "w");
  assert_non_null(f);
  fprintf(f,
          "#!/bin/sh\necho run >> '%s'\n"
          "printf '%%s|%%s|%%s|%%s' \"$1\" \"$2\" \"$KIN_PLUGIN_X\" \"$KUBERNETES_EXEC_INFO\" > '%s'\n"
          "cat <<'EOF'\n"
          "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1BETA1 "\",\"status\":{"
          "\"clientCertificateData\":\"-----BEGIN CERTIFICATE-----\\nC\\n\","
          "\"clientKeyData\":\"-----BEGIN KEY-----\\nK\\u0021\\n\"}}\nEOF\n",
          pe.counter, pe.info);
  fclose(f);
  kin_exec_provider *p;
  assert_int_equal(kin_exec_provider_new(&cfg, &cl, NULL, &p), 0);
  kin_exec_credential cr;
  char err[512];
  assert_int_equal(kin_exec_provider_get(p, &cr, err, sizeof err), 0);
  assert_null(cr.token);
  assert_string_equal(cr.client_cert_data, "-----BEGIN CERTIFICATE-----\nC\n");
  assert_string_equal(cr.client_key_data, "-----BEGIN KEY-----\nK!\n");
  assert_int_equal(cr.expiration, 0);
  kin_exec_credential_clear(&cr);
  assert_string_equal(slurp(pe.info),
                      "one|two words|val\"x|{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1BETA1
                      "\",\"spec\":{\"cluster\":{\"server\":\"https://c:6443\","
                      "\"tls-server-name\":\"api\",\"certificate-authority-data\":\"Q0E=\"},"
                      "\"interactive\":false}}");
  assert_int_equal(kin_exec_provider_get(p, &cr, err, sizeof err), 0);
  kin_exec_credential_clear(&cr);
  assert_int_equal(plugin_runs(&pe), 1);
  kin_exec_provider_free(p);
  plugin_cleanup(&pe);
}

/* TestRefreshCreds error cases: a failing plugin names the command and
 * never the token it printed; wrong apiVersion; no credential. */
static void test_kubeconfig_exec_FailuresNameCommandNotToken(void **state) {
  plugin_env pe;
  plugin_write(&pe,
               "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1
               "\",\"status\":{\"token\":\"leaky-secret\"}}",
               3);
  kin_exec_config cfg = cfg_for(&pe, V1, NULL, 0);
  kin_exec_provider *p;
  assert_int_equal(kin_exec_provider_new(&cfg, NULL, NULL, &p), 0);
  kin_exec_credential cr;
  char err[512], want[512];
  assert_int_equal(kin_exec_provider_get(p, &cr, err, sizeof err), KIN_EINVAL);
  assert_null(cr.token);
  snprintf(want, sizeof want, "exec: executable %s failed with exit code 3", pe.script);
  assert_string_equal(err, want);
  assert_null(strstr(err, "leaky-secret"));
  /* failures are not cached: the next call runs the plugin again */
  assert_int_equal(kin_exec_provider_get(p, &cr, err, sizeof err), KIN_EINVAL);
  assert_int_equal(plugin_runs(&pe), 2);
  kin_exec_provider_free(p);
  plugin_cleanup(&pe);

  plugin_write(&pe,
               "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1BETA1
               "\",\"status\":{\"token\":\"leaky-secret\"}}",
               0);
  cfg = cfg_for(&pe, V1, NULL, 0);
  assert_int_equal(kin_exec_provider_new(&cfg, NULL, NULL, &p), 0);
  assert_int_equal(kin_exec_provider_get(p, &cr, err, sizeof err), KIN_EINVAL);
  snprintf(want, sizeof want,
           "exec plugin \"%s\": is configured to use API version " V1
           ", plugin returned version " V1BETA1,
           pe.script);
  assert_string_equal(err, want);
  kin_exec_provider_free(p);
  plugin_cleanup(&pe);

  static const char *const bad[] = {
      "not json leaky-secret",
      "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\"}",
      "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":{}}",
      "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1
      "\",\"status\":{\"clientCertificateData\":\"C\"}}",
      "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1
      "\",\"status\":{\"token\":\"leaky-secret\",\"expirationTimestamp\":\"tomorrow\"}}"};
  static const char *const why[] = {"output is not", "didn't return a status field",
                                    "didn't return a token or cert/key pair",
                                    "returned only certificate or key, not both",
                                    "status.expirationTimestamp: not RFC 3339"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    plugin_write(&pe, bad[i], 0);
    cfg = cfg_for(&pe, V1, NULL, 0);
    assert_int_equal(kin_exec_provider_new(&cfg, NULL, NULL, &p), 0);
    assert_int_equal(kin_exec_provider_get(p, &cr, err, sizeof err), KIN_EINVAL);
    assert_non_null(strstr(err, pe.script));
    if (!strstr(err, why[i])) fail_msg("case %zu: %s", i, err);
    assert_null(strstr(err, "leaky-secret"));
    kin_exec_provider_free(p);
    plugin_cleanup(&pe);
  }
}

/* A missing executable reports the installHint (exec.go "executable %s not
 * found ... installHint"). */
static void test_kubeconfig_exec_NotFoundInstallHint(void **state) {
  kin_exec_config cfg = {0};
  cfg.command = "/nonexistent/kin-plugin";
  cfg.api_version = V1;
  cfg.install_hint = "install kin-plugin from example.com";
  kin_exec_provider *p;
  assert_int_equal(kin_exec_provider_new(&cfg, NULL, NULL, &p), 0);
  kin_exec_credential cr;
  char err[512];
  assert_true(kin_exec_provider_get(p, &cr, err, sizeof err) < 0);
  assert_string_equal(err,
                      "exec: executable /nonexistent/kin-plugin not found; "
                      "install kin-plugin from example.com");
  kin_exec_provider_free(p);
}

/* Expiration timestamps with offsets and fractions (RFC 3339). */
static void test_kubeconfig_exec_ExpirationOffset(void **state) {
  plugin_env pe;
  plugin_write(&pe,
               "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":{"
               "\"token\":\"t\",\"expirationTimestamp\":\"2026-01-01T02:00:00.123+02:00\"}}",
               0);
  kin_exec_config cfg = cfg_for(&pe, V1, NULL, 0);
  kin_exec_provider *p;
  assert_int_equal(kin_exec_provider_new(&cfg, NULL, NULL, &p), 0);
  kin_exec_credential cr;
  char err[512];
  assert_int_equal(kin_exec_provider_get(p, &cr, err, sizeof err), 0);
  assert_int_equal(cr.expiration, T0);
  kin_exec_credential_clear(&cr);
  kin_exec_provider_free(p);
  plugin_cleanup(&pe);
}

KIN_SUITE(kubeconfig_exec, cmocka_unit_test(test_kubeconfig_exec_TokenCachedUntilExpiry),
          cmocka_unit_test(test_kubeconfig_exec_V1beta1CertArgsEnv),
          cmocka_unit_test(test_kubeconfig_exec_FailuresNameCommandNotToken),
          cmocka_unit_test(test_kubeconfig_exec_NotFoundInstallHint),
          cmocka_unit_test(test_kubeconfig_exec_ExpirationOffset))
