/* kubeconfig.c -- the kubeconfig loader (client-go tools/clientcmd):
 * parses each file with libyaml's document API and resolves one context
 * across the files without building a merged copy, which gives kubectl's
 * merge rule for free: the first file that defines a name wins. */
#include "kubeconfig.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "base64.h"
#include "kin.h"
#include "kubeconfig_check.h"
#include "util.h"

typedef struct {
  char *path;
  char *dir; /* relative file references resolve against it, as in kubectl */
  yaml_document_t doc;
  yaml_node_t *root; /* NULL for an empty file */
} kc_file;


static char *dupstr(const char *s) { return s ? strdup(s) : NULL; }

static const char *scalar(yaml_node_t *n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The value under key in a mapping node; NULL when absent or not a map. */
static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *map, const char *key) {
  if (!map || map->type != YAML_MAPPING_NODE) return NULL;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    const char *k = scalar(yaml_document_get_node(d, p->key));
    if (k && strcmp(k, key) == 0) return yaml_document_get_node(d, p->value);
  }
  return NULL;
}

static const char *map_str(yaml_document_t *d, yaml_node_t *map, const char *key) {
  const char *s = scalar(map_get(d, map, key));
  return s && *s ? s : NULL;
}

static int parse_file(const char *path, kc_file *f, char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    kin__errf(err, errlen, "kubeconfig %s: %s", path, strerror(errno));
    return -errno;
  }
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    fclose(fp);
    return KIN_ENOMEM;
  }
  yaml_parser_set_input_file(&parser, fp);
  int rc = 0;
  if (!yaml_parser_load(&parser, &f->doc)) {
    /* libyaml's problem text quotes no input, so nothing secret leaks. */
    kin__errf(err, errlen, "kubeconfig %s: line %zu: %s%s%s", path,
         (size_t)parser.problem_mark.line + 1, parser.problem ? parser.problem : "invalid YAML",
         parser.context ? " " : "", parser.context ? parser.context : "");
    rc = parser.error == YAML_MEMORY_ERROR ? KIN_ENOMEM : KIN_EINVAL;
  }
  yaml_parser_delete(&parser);
  fclose(fp);
  if (rc) return rc;
  f->root = yaml_document_get_root_node(&f->doc);
  if (f->root && f->root->type == YAML_SCALAR_NODE && f->root->data.scalar.length == 0)
    f->root = NULL;
  if (f->root && f->root->type != YAML_MAPPING_NODE) {
    kin__errf(err, errlen, "kubeconfig %s: line %zu: top level is not a mapping", path,
         (size_t)f->root->start_mark.line + 1);
    yaml_document_delete(&f->doc);
    return KIN_EINVAL;
  }
  f->path = strdup(path);
  const char *slash = strrchr(path, '/');
  f->dir = slash ? strndup(path, (size_t)(slash - path + 1)) : strdup("");
  if (!f->path || !f->dir) {
    free(f->path);
    free(f->dir);
    yaml_document_delete(&f->doc);
    return KIN_ENOMEM;
  }
  return 0;
}

static void free_file(kc_file *f) {
  free(f->path);
  free(f->dir);
  yaml_document_delete(&f->doc);
}

/* Finds the first "section" entry (clusters/users/contexts) called name
 * over the files in order; *inner is its "field" mapping (cluster/user/
 * context), *fi and *idx say where it came from for error messages. */
static int find_named(kc_file *files, size_t nfiles, const char *section, const char *field,
                      const char *name, size_t *fi, size_t *idx, yaml_node_t **inner, char *err,
                      size_t errlen) {
  for (size_t i = 0; i < nfiles; i++) {
    yaml_document_t *d = &files[i].doc;
    yaml_node_t *seq = map_get(d, files[i].root, section);
    if (!seq) continue;
    if (seq->type != YAML_SEQUENCE_NODE) {
      if (seq->type == YAML_SCALAR_NODE && seq->data.scalar.length == 0) continue; /* null */
      kin__errf(err, errlen, "kubeconfig %s: line %zu: %s: expected a list", files[i].path,
           (size_t)seq->start_mark.line + 1, section);
      return KIN_EINVAL;
    }
    size_t n = 0;
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
         it++, n++) {
      yaml_node_t *e = yaml_document_get_node(d, *it);
      const char *nm = scalar(map_get(d, e, "name"));
      if (!nm || strcmp(nm, name) != 0) continue;
      yaml_node_t *in = map_get(d, e, field);
      if (in && in->type != YAML_MAPPING_NODE &&
          !(in->type == YAML_SCALAR_NODE && in->data.scalar.length == 0)) {
        kin__errf(err, errlen, "kubeconfig %s: line %zu: %s[%zu].%s: expected a mapping",
             files[i].path, (size_t)in->start_mark.line + 1, section, n, field);
        return KIN_EINVAL;
      }
      *fi = i;
      *idx = n;
      *inner = in && in->type == YAML_MAPPING_NODE ? in : NULL;
      return 0;
    }
  }
  return KIN_ENOENT;
}

/* A path from the kubeconfig made absolute against the file's directory. */
static char *resolve(const kc_file *f, const char *p) {
  if (!p) return NULL;
  if (p[0] == '/' || !f->dir[0]) return strdup(p);
  size_t a = strlen(f->dir), b = strlen(p);
  char *r = malloc(a + b + 1);
  if (!r) return NULL;
  memcpy(r, f->dir, a);
  memcpy(r + a, p, b + 1);
  return r;
}

static int parse_bool(const char *s, int *v) {
  static const char *const yes[] = {"true", "yes", "on", "y"};
  static const char *const no[] = {"false", "no", "off", "n"};
  for (size_t i = 0; i < 4; i++) {
    if (strcasecmp(s, yes[i]) == 0) return *v = 1, 0;
    if (strcasecmp(s, no[i]) == 0) return *v = 0, 0;
  }
  return KIN_EINVAL;
}

/* Decodes a *-data field; the error names the field, never its content. */
static int decode_field(const kc_file *f, const char *where, yaml_document_t *d, yaml_node_t *m,
                        const char *key, unsigned char **out, size_t *outlen, char *err,
                        size_t errlen) {
  const char *s = map_str(d, m, key);
  if (!s) return 0;
  int rc = kin__base64_decode(s, strlen(s), out, outlen);
  if (rc == KIN_EINVAL) kin__errf(err, errlen, "kubeconfig %s: %s.%s: invalid base64", f->path, where, key);
  return rc;
}

#define OOM_IF_NULL(src, dst)                                                   \
  do {                                                                          \
    if ((src) && !(dst)) return KIN_ENOMEM;                                     \
  } while (0)

static int load_cluster(const kc_file *f, size_t idx, yaml_document_t *d, yaml_node_t *m,
                        kin_rest_config *c, char *err, size_t errlen) {
  char where[64];
  snprintf(where, sizeof where, "clusters[%zu].cluster", idx);
  const char *server = map_str(d, m, "server");
  if (!server) {
    kin__errf(err, errlen, "kubeconfig %s: %s.server: no server found for cluster", f->path, where);
    return KIN_EINVAL;
  }
  c->host = strdup(server);
  OOM_IF_NULL(server, c->host);
  const char *s = map_str(d, m, "certificate-authority");
  c->ca_file = resolve(f, s);
  OOM_IF_NULL(s, c->ca_file);
  int rc = decode_field(f, where, d, m, "certificate-authority-data", &c->ca_data,
                        &c->ca_data_len, err, errlen);
  if (rc) return rc;
  if ((s = map_str(d, m, "insecure-skip-tls-verify")) && parse_bool(s, &c->insecure)) {
    kin__errf(err, errlen, "kubeconfig %s: %s.insecure-skip-tls-verify: not a boolean", f->path, where);
    return KIN_EINVAL;
  }
  s = map_str(d, m, "tls-server-name");
  OOM_IF_NULL(s, c->tls_server_name = dupstr(s));
  s = map_str(d, m, "proxy-url");
  OOM_IF_NULL(s, c->proxy_url = dupstr(s));
  if ((s = map_str(d, m, "disable-compression")) && parse_bool(s, &c->disable_compression)) {
    kin__errf(err, errlen, "kubeconfig %s: %s.disable-compression: not a boolean", f->path, where);
    return KIN_EINVAL;
  }
  return 0;
}

static int load_exec(const kc_file *f, const char *where, yaml_document_t *d, yaml_node_t *m,
                     kin_rest_config *c, char *err, size_t errlen) {
  kin_exec_config *e = calloc(1, sizeof *e);
  if (!e) return KIN_ENOMEM;
  c->exec = e;
  const char *cmd = map_str(d, m, "command");
  if (!cmd) {
    kin__errf(err, errlen, "kubeconfig %s: %s.exec.command: missing", f->path, where);
    return KIN_EINVAL;
  }
  /* Like client-go, only a relative path with a separator is taken relative
   * to the kubeconfig; a bare name is looked up in PATH. */
  e->command = strchr(cmd, '/') ? resolve(f, cmd) : strdup(cmd);
  if (!e->command) return KIN_ENOMEM;
  const char *s = map_str(d, m, "apiVersion");
  if (!s || (strcmp(s, "client.authentication.k8s.io/v1") != 0 &&
             strcmp(s, "client.authentication.k8s.io/v1beta1") != 0)) {
    kin__errf(err, errlen, "kubeconfig %s: %s.exec.apiVersion: %s", f->path, where,
         s ? "unsupported, want client.authentication.k8s.io/v1 or v1beta1" : "missing");
    return KIN_EINVAL;
  }
  if (!(e->api_version = strdup(s))) return KIN_ENOMEM;
  s = map_str(d, m, "installHint");
  OOM_IF_NULL(s, e->install_hint = dupstr(s));
  if ((s = map_str(d, m, "provideClusterInfo")) && parse_bool(s, &e->provide_cluster_info)) {
    kin__errf(err, errlen, "kubeconfig %s: %s.exec.provideClusterInfo: not a boolean", f->path, where);
    return KIN_EINVAL;
  }
  yaml_node_t *args = map_get(d, m, "args");
  if (args && args->type == YAML_SEQUENCE_NODE) {
    size_t n = (size_t)(args->data.sequence.items.top - args->data.sequence.items.start);
    if (n && !(e->args = calloc(n, sizeof *e->args))) return KIN_ENOMEM;
    for (size_t i = 0; i < n; i++) {
      const char *a = scalar(yaml_document_get_node(d, args->data.sequence.items.start[i]));
      if (!a) {
        kin__errf(err, errlen, "kubeconfig %s: %s.exec.args[%zu]: expected a string", f->path, where, i);
        return KIN_EINVAL;
      }
      if (!(e->args[e->nargs++] = strdup(a))) return KIN_ENOMEM;
    }
  }
  yaml_node_t *env = map_get(d, m, "env");
  if (env && env->type == YAML_SEQUENCE_NODE) {
    size_t n = (size_t)(env->data.sequence.items.top - env->data.sequence.items.start);
    if (n && (!(e->env_names = calloc(n, sizeof(char *))) ||
              !(e->env_values = calloc(n, sizeof(char *)))))
      return KIN_ENOMEM;
    for (size_t i = 0; i < n; i++) {
      yaml_node_t *kv = yaml_document_get_node(d, env->data.sequence.items.start[i]);
      const char *nm = scalar(map_get(d, kv, "name"));
      const char *val = scalar(map_get(d, kv, "value"));
      if (!nm || !*nm) {
        kin__errf(err, errlen, "kubeconfig %s: %s.exec.env[%zu].name: missing", f->path, where, i);
        return KIN_EINVAL;
      }
      e->env_names[e->nenv] = strdup(nm);
      e->env_values[e->nenv] = strdup(val ? val : "");
      e->nenv++;
      if (!e->env_names[e->nenv - 1] || !e->env_values[e->nenv - 1]) return KIN_ENOMEM;
    }
  }
  return 0;
}

static int load_user(const kc_file *f, size_t idx, yaml_document_t *d, yaml_node_t *m,
                     kin_rest_config *c, char *err, size_t errlen) {
  char where[64];
  snprintf(where, sizeof where, "users[%zu].user", idx);
  const char *s = map_str(d, m, "token");
  OOM_IF_NULL(s, c->bearer_token = dupstr(s));
  s = map_str(d, m, "tokenFile");
  OOM_IF_NULL(s, c->bearer_token_file = resolve(f, s));
  s = map_str(d, m, "client-certificate");
  OOM_IF_NULL(s, c->cert_file = resolve(f, s));
  s = map_str(d, m, "client-key");
  OOM_IF_NULL(s, c->key_file = resolve(f, s));
  int rc = decode_field(f, where, d, m, "client-certificate-data", &c->cert_data,
                        &c->cert_data_len, err, errlen);
  if (!rc)
    rc = decode_field(f, where, d, m, "client-key-data", &c->key_data, &c->key_data_len, err,
                      errlen);
  if (rc) return rc;
  yaml_node_t *ex = map_get(d, m, "exec");
  if (ex && ex->type == YAML_MAPPING_NODE) return load_exec(f, where, d, ex, c, err, errlen);
  return 0;
}

/* "kubeconfig <path>: <what> \"<name>\"" for messages about the files
 * an entry points to; NULL on OOM. */
static char *origin_of(const char *path, const char *what, const char *name) {
  size_t n = strlen(path) + strlen(what) + strlen(name) + sizeof "kubeconfig :  \"\"";
  char *o = malloc(n);
  if (o) snprintf(o, n, "kubeconfig %s: %s \"%s\"", path, what, name);
  return o;
}

static int resolve_context(kc_file *files, size_t nfiles, const char *label, const char *want,
                           kin_rest_config *c, char *err, size_t errlen) {
  const char *ctx = want;
  for (size_t i = 0; !ctx && i < nfiles; i++)
    ctx = map_str(&files[i].doc, files[i].root, "current-context");
  if (!ctx) {
    kin__errf(err, errlen, "kubeconfig %s: no current-context set and no context given", label);
    return KIN_EINVAL;
  }
  size_t fi, idx;
  yaml_node_t *m;
  int rc = find_named(files, nfiles, "contexts", "context", ctx, &fi, &idx, &m, err, errlen);
  if (rc == KIN_ENOENT) kin__errf(err, errlen, "kubeconfig %s: context \"%s\" not found", label, ctx);
  if (rc) return rc;
  if (!(c->context = strdup(ctx))) return KIN_ENOMEM;
  yaml_document_t *d = &files[fi].doc;
  const char *cluster = map_str(d, m, "cluster");
  const char *user = map_str(d, m, "user");
  const char *ns = map_str(d, m, "namespace");
  if (!(c->namespace = strdup(ns ? ns : "default"))) return KIN_ENOMEM;
  if (!cluster) {
    kin__errf(err, errlen, "kubeconfig %s: contexts[%zu].context.cluster: missing", files[fi].path, idx);
    return KIN_EINVAL;
  }
  /* cluster and user point into documents that live until the load ends. */
  const char *cl = cluster, *us = user ? user : "";
  rc = find_named(files, nfiles, "clusters", "cluster", cl, &fi, &idx, &m, err, errlen);
  if (rc == KIN_ENOENT)
    kin__errf(err, errlen, "kubeconfig %s: cluster \"%s\" of context \"%s\" not found", label, cl, ctx);
  if (rc) return rc;
  if ((rc = load_cluster(&files[fi], idx, &files[fi].doc, m, c, err, errlen)) ||
      (rc = kin__kubeconfig_check_cluster(files[fi].path, cl, &files[fi].doc, m, c->ca_file,
                                           c->ca_data_len, c->insecure,
                                           &c->credentials_over_http, err, errlen)))
    return rc;
  if (!(c->cluster_origin = origin_of(files[fi].path, "cluster", cl))) return KIN_ENOMEM;
  if (!us[0]) return 0; /* a context without a user is anonymous */
  rc = find_named(files, nfiles, "users", "user", us, &fi, &idx, &m, err, errlen);
  if (rc == KIN_ENOENT)
    kin__errf(err, errlen, "kubeconfig %s: user \"%s\" of context \"%s\" not found", label, us, ctx);
  if (rc) return rc;
  if (!(c->user_origin = origin_of(files[fi].path, "user", us))) return KIN_ENOMEM;
  if ((rc = load_user(&files[fi], idx, &files[fi].doc, m, c, err, errlen))) return rc;
  return kin__kubeconfig_check_user(files[fi].path, us, &files[fi].doc, m, err, errlen);
}

int kin_kubeconfig_load(const kin_kubeconfig_opts *opts, kin_rest_config **out, char *err,
                        size_t errlen) {
  *out = NULL;
  if (err && errlen) err[0] = 0;
  const char *path = opts ? opts->path : NULL;
  const char *want = opts && opts->context && *opts->context ? opts->context : NULL;
  char *list = NULL;
  int explicit = 1; /* missing files are an error unless they come from $KUBECONFIG */
  if (path) {
    list = strdup(path);
  } else if (getenv("KUBECONFIG") && *getenv("KUBECONFIG")) {
    list = strdup(getenv("KUBECONFIG"));
    explicit = 0;
  } else {
    const char *home = getenv("HOME");
    if (!home) {
      kin__errf(err, errlen, "kubeconfig: HOME is not set and KUBECONFIG is empty");
      return KIN_ENOENT;
    }
    size_t n = strlen(home) + sizeof "/.kube/config";
    if ((list = malloc(n))) snprintf(list, n, "%s/.kube/config", home);
  }
  if (!list) return KIN_ENOMEM;
  /* strtok_r cuts list; errors name the whole list as the user gave it. */
  char *label = strdup(list);
  if (!label) {
    free(list);
    return KIN_ENOMEM;
  }
  size_t cap = 1;
  for (const char *p = list; *p; p++) cap += *p == ':';
  kc_file *files = calloc(cap, sizeof *files);
  kin_rest_config *c = calloc(1, sizeof *c);
  size_t nfiles = 0;
  int rc = files && c ? 0 : KIN_ENOMEM;
  char *save = NULL;
  char *tok = rc || explicit ? NULL : strtok_r(list, ":", &save);
  for (; !rc && tok; tok = strtok_r(NULL, ":", &save)) {
    int dup = 0;
    for (size_t i = 0; i < nfiles; i++) dup |= strcmp(files[i].path, tok) == 0;
    if (dup) continue;
    FILE *probe = fopen(tok, "rb");
    if (!probe && errno == ENOENT) continue; /* kubectl skips missing entries */
    if (probe) fclose(probe);
    rc = parse_file(tok, &files[nfiles], err, errlen);
    if (!rc) nfiles++;
  }
  if (!rc && explicit) {
    rc = parse_file(list, &files[0], err, errlen);
    if (!rc) nfiles = 1;
  }
  if (!rc && nfiles == 0) {
    kin__errf(err, errlen, "kubeconfig %s: no configuration file found", label);
    rc = KIN_ENOENT;
  }
  if (!rc) rc = resolve_context(files, nfiles, label, want, c, err, errlen);
  if (rc == KIN_ENOMEM) kin__errf(err, errlen, "kubeconfig %s: out of memory", label);
  for (size_t i = 0; i < nfiles; i++) free_file(&files[i]);
  free(files);
  free(list);
  free(label);
  if (rc) {
    kin_rest_config_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

void kin__exec_config_clear(kin_exec_config *e) {
  free(e->command);
  for (size_t i = 0; i < e->nargs; i++) free(e->args[i]);
  free(e->args);
  for (size_t i = 0; i < e->nenv; i++) {
    free(e->env_names[i]);
    free(e->env_values[i]);
  }
  free(e->env_names);
  free(e->env_values);
  free(e->api_version);
  free(e->install_hint);
  memset(e, 0, sizeof(*e));
}

static void free_exec(kin_exec_config *e) {
  if (!e) return;
  kin__exec_config_clear(e);
  free(e);
}

/* Secrets are wiped before free so they do not linger in freed heap. */
static void free_secret(void *p, size_t n) {
  if (!p) return;
  volatile unsigned char *v = p;
  for (size_t i = 0; i < n; i++) v[i] = 0;
  free(p);
}

void kin_rest_config_free(kin_rest_config *c) {
  if (!c) return;
  free(c->host);
  free(c->ca_file);
  free(c->ca_data);
  free(c->tls_server_name);
  free(c->proxy_url);
  if (c->bearer_token) free_secret(c->bearer_token, strlen(c->bearer_token));
  free(c->bearer_token_file);
  free(c->cert_file);
  free(c->cert_data);
  free(c->key_file);
  free_secret(c->key_data, c->key_data_len);
  free_exec(c->exec);
  free(c->namespace);
  free(c->context);
  free(c->cluster_origin);
  free(c->user_origin);
  free(c);
}
