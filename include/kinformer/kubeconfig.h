/* kubeconfig.h -- how to reach and authenticate to an API server: the
 * kubeconfig loader (client-go tools/clientcmd), in-cluster config
 * (rest.InClusterConfig), service-account token rotation and exec
 * credential plugins (plugin/pkg/client/auth/exec).
 *
 * Nothing here ever copies a token or key into an error message or a log
 * line: errors name the file and the field, never the value. */
#ifndef KIN_KUBECONFIG_H
#define KIN_KUBECONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"

/* An exec credential plugin as written in users[].user.exec. */
typedef struct kin_exec_config {
  char *command;      /* resolved against the kubeconfig's directory when relative with a '/' */
  char **args;        /* nargs strings */
  size_t nargs;
  char **env_names;   /* nenv name/value pairs added to the plugin's environment */
  char **env_values;
  size_t nenv;
  char *api_version;  /* client.authentication.k8s.io/v1 or v1beta1 */
  char *install_hint; /* may be NULL */
  int provide_cluster_info;
} kin_exec_config;

/* Everything a client needs for one context (client-go rest.Config). Every
 * pointer is owned by the config and freed by kin_rest_config_free; unset
 * fields are NULL / 0. */
typedef struct kin_rest_config {
  char *host;             /* server URL, e.g. https://10.0.0.1:443 */
  char *ca_file;          /* certificate-authority (path) */
  unsigned char *ca_data; /* decoded certificate-authority-data (PEM bytes) */
  size_t ca_data_len;
  int insecure;           /* insecure-skip-tls-verify; verification is on otherwise */
  /* Send the bearer token, token file or exec credential to a plain
   * http:// server. 0 (the default): as kubectl, no credential goes to an
   * http:// server at all. A kubeconfig sets it only explicitly, with the
   * cluster extension (docs/security.md):
   *   extensions:
   *   - name: kinformer.io/credentials-over-http
   *     extension: {allow: true}
   * and the client then logs a warning once. Ignored for https://. */
  int credentials_over_http;
  char *tls_server_name;
  char *proxy_url;
  /* disable-compression: do not ask the server for gzip (client-go's
   * DisableCompression, kubectl's --disable-compression); 0 asks for it. */
  int disable_compression;
  char *bearer_token;      /* secret: never log */
  char *bearer_token_file; /* re-read by kin_token_file when it rotates */
  char *cert_file;
  unsigned char *cert_data;
  size_t cert_data_len;
  char *key_file;
  unsigned char *key_data; /* secret: never log */
  size_t key_data_len;
  kin_exec_config *exec;   /* NULL when the user has no exec plugin */
  char *namespace;         /* the context's namespace, "default" when unset */
  char *context;           /* name of the context used (NULL in-cluster) */
  /* Where the cluster and user fields came from, for error messages:
   * "kubeconfig /path/config: cluster \"c\"", "kubeconfig /path/config:
   * user \"u\"", "in-cluster"; NULL (a config built by hand): "rest
   * config". kin_client_new names them when a file they point to cannot
   * be read. */
  char *cluster_origin;
  char *user_origin;
} kin_rest_config;

typedef struct kin_kubeconfig_opts {
  const char *path;    /* explicit file; NULL: $KUBECONFIG, then ~/.kube/config */
  const char *context; /* NULL: current-context */
} kin_kubeconfig_opts;

/* Frees the fields of e (not e itself) and zeroes it; internal, shared by
 * the loader and the exec provider. */
void kin__exec_config_clear(kin_exec_config *e);

/* Loads the kubeconfig chosen by opts (NULL: defaults) into a new config
 * owned by the caller (free with kin_rest_config_free). The chosen
 * cluster and user are validated as kubectl does (client-go's
 * clientcmd validation and transport checks), and refused with kubectl's
 * text (KIN_EINVAL, err "kubeconfig <path>: <kubectl's text>"): CA file
 * and data both given; insecure-skip-tls-verify with a CA ("specifying a
 * root certificates file with the insecure flag is not allowed"); a client
 * certificate without key; more than one authentication method (token and
 * username/password); auth-provider with exec; exec without apiVersion;
 * as-groups/as-uid/as-user-extra without as. Several
 * colon-separated files in $KUBECONFIG are merged as kubectl does: the first
 * file that defines a cluster/user/context name wins, and current-context
 * comes from the first file that sets it. On failure *out is NULL, a
 * negative KIN_E* is returned and err (if errlen > 0) names file and field. */
int kin_kubeconfig_load(const kin_kubeconfig_opts *opts, kin_rest_config **out, char *err,
                        size_t errlen);

void kin_rest_config_free(kin_rest_config *c);

typedef struct kin_in_cluster_opts {
  /* NULL: /var/run/secrets/kubernetes.io/serviceaccount (token, ca.crt,
   * namespace); tests point it to a fake directory. */
  const char *sa_dir;
} kin_in_cluster_opts;

/* Builds the config of a pod (rest.InClusterConfig) from
 * KUBERNETES_SERVICE_HOST/PORT and the service-account directory; the
 * caller owns *out. Fails with KIN_ENOENT when not running in a cluster. */
int kin_in_cluster_config(const kin_in_cluster_opts *opts, kin_rest_config **out, char *err,
                          size_t errlen);

/* ---- token file that rotates (in_cluster.c) ----------------------------- */

/* A bearer token read from a file and re-read whenever the file's mtime or
 * size changes, as kubelet rotates projected service-account tokens.
 * Thread-safe: an internal mutex guards the cached token. */
typedef struct kin_token_file kin_token_file;

/* Returns a new reader of path (the caller frees it), or NULL on OOM. */
kin_token_file *kin_token_file_new(const char *path);
void kin_token_file_free(kin_token_file *tf);

/* Stores in *token a malloc'd copy of the current token (trailing
 * whitespace removed) that the caller frees; on failure *token is NULL. */
int kin_token_file_get(kin_token_file *tf, char **token, char *err, size_t errlen);

/* ---- exec credential plugins (exec_credential.c) ------------------------ */

/* Runs a plugin, caches its ExecCredential until expirationTimestamp and
 * re-runs it after kin_exec_provider_invalidate (called on a 401).
 * Thread-safe: an internal mutex guards the cache and serialises runs. */
typedef struct kin_exec_provider kin_exec_provider;

/* A credential; every field owned by the struct, freed by
 * kin_exec_credential_clear. */
typedef struct kin_exec_credential {
  char *token;             /* secret */
  char *client_cert_data;  /* PEM */
  char *client_key_data;   /* PEM, secret */
  int64_t expiration;      /* Unix seconds, 0 when the plugin gave none */
} kin_exec_credential;

void kin_exec_credential_clear(kin_exec_credential *c);

/* Parses an ExecCredential (the plugin's stdout, len bytes) into *cred;
 * internal, used by the provider and the fuzz harness. 0, KIN_EINVAL with
 * err naming cmd and the field, or KIN_ENOMEM. */
int kin__exec_credential_parse(const char *cmd, const char *want_version, const char *js,
                               size_t len, kin_exec_credential *cred, char *err, size_t errlen);

/* A new provider for cfg (deep-copied; cluster may be NULL and is only read
 * for provideClusterInfo). clock may be NULL (wall clock); a fake clock's
 * now() is taken as nanoseconds since the Unix epoch. The caller frees it. */
int kin_exec_provider_new(const kin_exec_config *cfg, const kin_rest_config *cluster,
                          kin_clock *clock, kin_exec_provider **out);
void kin_exec_provider_free(kin_exec_provider *p);

/* Fills out with a copy of the cached credential, running the plugin when
 * there is none or it expired. On failure out is zeroed and err names the
 * command, as client-go ("exec: executable X failed with exit code 1: ...",
 * "exec: executable X not found; <installHint>"), with the last lines of
 * the plugin's stderr, never its stdout (which holds the credential). */
int kin_exec_provider_get(kin_exec_provider *p, kin_exec_credential *out, char *err,
                          size_t errlen);

/* Drops the cached credential so the next get runs the plugin again. */
void kin_exec_provider_invalidate(kin_exec_provider *p);

/* Number of times the plugin ran (for tests and metrics). */
unsigned kin_exec_provider_runs(kin_exec_provider *p);

#endif
