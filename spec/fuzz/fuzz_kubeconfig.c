/* fuzz_kubeconfig.c -- libFuzzer harness for the kubeconfig loader
 * (csrc/core/transport/kubeconfig.c, libyaml underneath): the input is
 * written to a kubeconfig file in a private temporary directory (the
 * loader reads only from files) and loaded with its current context, then
 * with the context named "ctx"; every field of a loaded config is read. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kubeconfig.h"

static volatile size_t sink;
static char dir[64], path[96];

static size_t slen(const char *s) { return s ? strlen(s) : 0; }

static void cleanup(void) {
  unlink(path);
  rmdir(dir);
}

static void read_config(const kin_rest_config *c) {
  sink += slen(c->host) + slen(c->ca_file) + c->ca_data_len + (size_t)c->insecure +
          slen(c->tls_server_name) + slen(c->proxy_url) + slen(c->bearer_token) +
          slen(c->bearer_token_file) + slen(c->cert_file) + c->cert_data_len +
          slen(c->key_file) + c->key_data_len + slen(c->namespace) + slen(c->context);
  if (c->ca_data_len) sink += c->ca_data[c->ca_data_len - 1];
  if (c->cert_data_len) sink += c->cert_data[c->cert_data_len - 1];
  if (c->key_data_len) sink += c->key_data[c->key_data_len - 1];
  const kin_exec_config *e = c->exec;
  if (e) {
    sink += slen(e->command) + slen(e->api_version) + slen(e->install_hint) +
            (size_t)e->provide_cluster_info;
    for (size_t i = 0; i < e->nargs; i++) sink += slen(e->args[i]);
    for (size_t i = 0; i < e->nenv; i++) sink += slen(e->env_names[i]) + slen(e->env_values[i]);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!*dir) {
    snprintf(dir, sizeof dir, "/tmp/kin_fuzz_kubeconfig_XXXXXX");
    if (!mkdtemp(dir)) abort();
    snprintf(path, sizeof path, "%s/config", dir);
    atexit(cleanup);
  }
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  fclose(f);
  static const char *const contexts[] = {NULL, "ctx"};
  for (int i = 0; i < 2; i++) {
    kin_kubeconfig_opts opts = {path, contexts[i]};
    kin_rest_config *c = NULL;
    char err[512];
    if (kin_kubeconfig_load(&opts, &c, err, sizeof err) == 0 && c) {
      read_config(c);
      kin_rest_config_free(c);
    } else {
      sink += strlen(err);
    }
  }
  return 0;
}
