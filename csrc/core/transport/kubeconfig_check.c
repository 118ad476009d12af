/* kubeconfig_check.c -- the kubeconfig combinations kubectl refuses,
 * refused with kubectl's words: client-go's tools/clientcmd/validation.go
 * (validateClusterInfo, validateAuthInfo: the errors, not the warnings;
 * a CA, certificate or key file that cannot be read is refused by
 * kin_client_new, naming the entry and the file)
 * and transport.go's check of a CA given with insecure-skip-tls-verify;
 * and the cluster extension that lets credentials go to an http://
 * server (kinformer.io/credentials-over-http, kubeconfig.h). */
#include <stdio.h>
#include <string.h>

#include "kin.h"
#include "kubeconfig_check.h"
#include "util.h"

#define EXT_CREDS_HTTP "kinformer.io/credentials-over-http"

static yaml_node_t *get(yaml_document_t *d, yaml_node_t *map, const char *key) {
  if (!map || map->type != YAML_MAPPING_NODE) return NULL;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(d, p->key);
    if (k && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, key))
      return yaml_document_get_node(d, p->value);
  }
  return NULL;
}

/* 1 when map has key with a non-empty value (a scalar with text, or a
 * non-empty list or mapping), as Go's len(x) != 0. */
static int has(yaml_document_t *d, yaml_node_t *map, const char *key) {
  yaml_node_t *n = get(d, map, key);
  if (!n) return 0;
  switch (n->type) {
  case YAML_SCALAR_NODE: return n->data.scalar.length > 0;
  case YAML_SEQUENCE_NODE: return n->data.sequence.items.top > n->data.sequence.items.start;
  case YAML_MAPPING_NODE: return n->data.mapping.pairs.top > n->data.mapping.pairs.start;
  default: return 0;
  }
}

static const char *str(yaml_document_t *d, yaml_node_t *map, const char *key) {
  yaml_node_t *n = get(d, map, key);
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int is_true(const char *s) {
  return s && (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "yes") || !strcmp(s, "on"));
}

int kin__kubeconfig_check_cluster(const char *path, const char *name, yaml_document_t *d,
                                  yaml_node_t *m, const char *ca_file, size_t ca_data_len,
                                  int insecure, int *creds_over_http, char *err, size_t errlen) {
  if (ca_file && *ca_file && ca_data_len) {
    kin__errf(err, errlen,
              "kubeconfig %s: certificate-authority-data and certificate-authority are both "
              "specified for %s. certificate-authority-data will override.",
              path, name);
    return KIN_EINVAL;
  }
  if (insecure && ((ca_file && *ca_file) || ca_data_len)) {
    kin__errf(err, errlen,
              "kubeconfig %s: specifying a root certificates file with the insecure flag is not "
              "allowed",
              path);
    return KIN_EINVAL;
  }
  yaml_node_t *ext = get(d, m, "extensions");
  if (!ext || ext->type != YAML_SEQUENCE_NODE) return 0;
  size_t i = 0;
  for (yaml_node_item_t *it = ext->data.sequence.items.start; it < ext->data.sequence.items.top;
       it++, i++) {
    yaml_node_t *e = yaml_document_get_node(d, *it);
    const char *en = str(d, e, "name");
    if (!en || strcmp(en, EXT_CREDS_HTTP)) continue;
    const char *allow = str(d, get(d, e, "extension"), "allow");
    if (!allow || (!is_true(allow) && strcmp(allow, "false") && strcmp(allow, "False"))) {
      kin__errf(err, errlen,
                "kubeconfig %s: cluster %s: extensions[%zu] " EXT_CREDS_HTTP
                ": extension.allow must be true or false",
                path, name, i);
      return KIN_EINVAL;
    }
    *creds_over_http = is_true(allow);
  }
  return 0;
}

int kin__kubeconfig_check_user(const char *path, const char *name, yaml_document_t *d,
                               yaml_node_t *m, char *err, size_t errlen) {
#define REFUSE(...)                                                  \
  do {                                                               \
    char t_[512];                                                    \
    snprintf(t_, sizeof t_, __VA_ARGS__);                            \
    kin__errf(err, errlen, "kubeconfig %s: %s", path, t_);           \
    return KIN_EINVAL;                                               \
  } while (0)
  int cert = has(d, m, "client-certificate"), cert_data = has(d, m, "client-certificate-data");
  int key = has(d, m, "client-key"), key_data = has(d, m, "client-key-data");
  if (cert || cert_data) {
    if (cert && cert_data)
      REFUSE("client-cert-data and client-cert are both specified for %s. client-cert-data will "
             "override.", name);
    if (key && key_data)
      REFUSE("client-key-data and client-key are both specified for %s; client-key-data will "
             "override", name);
    if (!key && !key_data)
      REFUSE("client-key-data or client-key must be specified for %s to use the clientCert "
             "authentication method.", name);
  }
  yaml_node_t *ex = get(d, m, "exec");
  if (ex && ex->type == YAML_MAPPING_NODE) {
    if (has(d, m, "auth-provider"))
      REFUSE("authProvider cannot be provided in combination with an exec plugin for %s", name);
    if (!has(d, ex, "command"))
      REFUSE("command must be specified for %s to use exec authentication plugin", name);
    if (!has(d, ex, "apiVersion"))
      REFUSE("apiVersion must be specified for %s to use exec authentication plugin", name);
    yaml_node_t *env = get(d, ex, "env");
    if (env && env->type == YAML_SEQUENCE_NODE)
      for (yaml_node_item_t *it = env->data.sequence.items.start;
           it < env->data.sequence.items.top; it++)
        if (!has(d, yaml_document_get_node(d, *it), "name"))
          REFUSE("env variable name must be specified for %s to use exec authentication plugin",
                 name);
    const char *im = str(d, ex, "interactiveMode");
    if (im && *im && strcmp(im, "Never") && strcmp(im, "IfAvailable") && strcmp(im, "Always"))
      REFUSE("invalid interactiveMode for %s: \"%s\"", name, im);
  }
  if (has(d, m, "token") && (has(d, m, "username") || has(d, m, "password")))
    REFUSE("more than one authentication method found for %s; found [token basicAuth], only one "
           "is allowed", name);
  if ((has(d, m, "as-uid") || has(d, m, "as-groups") || has(d, m, "as-user-extra")) &&
      !has(d, m, "as"))
    REFUSE("requesting uid, groups or user-extra for %s without impersonating a user", name);
  return 0;
#undef REFUSE
}
