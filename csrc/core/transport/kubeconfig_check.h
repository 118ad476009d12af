/* kubeconfig_check.h -- internal: kubectl's validation of the chosen
 * cluster and user (kubeconfig_check.c), called by the loader
 * (kubeconfig.c) on the entries it resolved. Each returns 0, or
 * KIN_EINVAL with err "kubeconfig <path>: <kubectl's text>"; none keeps a
 * pointer into the document. Not thread-shared: they read one load's
 * documents. */
#ifndef KIN_KUBECONFIG_CHECK_H
#define KIN_KUBECONFIG_CHECK_H

#include <stddef.h>
#include <yaml.h>

/* The cluster entry m named name in file path, given what the loader read
 * from it (ca_file, ca_data_len, insecure): CA file and data both set, a
 * CA with insecure-skip-tls-verify; and reads the extension
 * kinformer.io/credentials-over-http into *creds_over_http (left alone
 * when absent). Takes no kin_rest_config so the check depends on nothing
 * of the loader (no call cycle). */
int kin__kubeconfig_check_cluster(const char *path, const char *name, yaml_document_t *d,
                                  yaml_node_t *m, const char *ca_file, size_t ca_data_len,
                                  int insecure, int *creds_over_http, char *err, size_t errlen);

/* The user entry m named name, after the loader read it: certificate
 * without key or given twice, exec with auth-provider or without command
 * or apiVersion or with a nameless env entry or a bad interactiveMode,
 * token with username/password, impersonation extras without as. */
int kin__kubeconfig_check_user(const char *path, const char *name, yaml_document_t *d,
                               yaml_node_t *m, char *err, size_t errlen);

#endif
