/* exec_credential.c -- client-go plugin/pkg/client/auth/exec: runs a
 * credential plugin, parses its ExecCredential and caches it until it
 * expires or a 401 invalidates it. The plugin's standard output is never
 * copied into an error: it holds the secret. Its standard error (the
 * plugin's own messages) is captured: the last lines go into the error of
 * a failed run, and a successful run's are logged at debug level. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base64.h"
#include "json_tok.h"
#include "kin.h"
#include "kubeconfig.h"
#include "log.h"
#include "util.h"

extern char **environ;

#define MAX_OUTPUT (1u << 20) /* an ExecCredential is a few KB; refuse floods */

struct kin_exec_provider {
  pthread_mutex_t mu; /* guards cached, have, runs; held while the plugin runs */
  kin_exec_config cfg;
  char *exec_info; /* KUBERNETES_EXEC_INFO, built once */
  kin_clock *clock;
  kin_exec_credential cached;
  int have;
  unsigned runs;
};



void kin_exec_credential_clear(kin_exec_credential *c) {
  kin__wipe_free(c->token);
  free(c->client_cert_data);
  kin__wipe_free(c->client_key_data);
  memset(c, 0, sizeof *c);
}

static int copy_cred(const kin_exec_credential *src, kin_exec_credential *dst) {
  memset(dst, 0, sizeof *dst);
  dst->expiration = src->expiration;
  if ((src->token && !(dst->token = strdup(src->token))) ||
      (src->client_cert_data && !(dst->client_cert_data = strdup(src->client_cert_data))) ||
      (src->client_key_data && !(dst->client_key_data = strdup(src->client_key_data)))) {
    kin_exec_credential_clear(dst);
    return KIN_ENOMEM;
  }
  return 0;
}

/* ---- a growable string for the exec-info JSON ---------------------------- */

typedef struct {
  char *p;
  size_t n, cap;
  int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = (b->cap ? b->cap * 2 : 256);
    while (cap < b->n + n + 1) cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np) {
      b->oom = 1;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_json_str(sbuf *b, const char *s) {
  sb_put(b, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    char esc[8];
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      sb_put(b, esc, 2);
    } else if (c < 0x20) {
      snprintf(esc, sizeof esc, "\\u%04x", c);
      sb_put(b, esc, 6);
    } else {
      sb_put(b, s, 1);
    }
  }
  sb_put(b, "\"", 1);
}

/* The ExecCredential kubectl hands to the plugin in KUBERNETES_EXEC_INFO;
 * interactive is always false because the core never owns a terminal. */
static char *build_exec_info(const kin_exec_config *cfg, const kin_rest_config *cl) {
  sbuf b = {0};
  sb_str(&b, "{\"kind\":\"ExecCredential\",\"apiVersion\":");
  sb_json_str(&b, cfg->api_version);
  sb_str(&b, ",\"spec\":{");
  if (cfg->provide_cluster_info && cl) {
    sb_str(&b, "\"cluster\":{\"server\":");
    sb_json_str(&b, cl->host ? cl->host : "");
    if (cl->tls_server_name) {
      sb_str(&b, ",\"tls-server-name\":");
      sb_json_str(&b, cl->tls_server_name);
    }
    if (cl->insecure) sb_str(&b, ",\"insecure-skip-tls-verify\":true");
    if (cl->ca_data) {
      char *enc = kin__base64_encode(cl->ca_data, cl->ca_data_len);
      if (!enc) b.oom = 1;
      else {
        sb_str(&b, ",\"certificate-authority-data\":");
        sb_json_str(&b, enc);
        free(enc);
      }
    }
    if (cl->proxy_url) {
      sb_str(&b, ",\"proxy-url\":");
      sb_json_str(&b, cl->proxy_url);
    }
    if (cl->disable_compression) sb_str(&b, ",\"disable-compression\":true");
    sb_str(&b, "},");
  }
  sb_str(&b, "\"interactive\":false}}");
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

/* ---- provider lifecycle -------------------------------------------------- */


static int cfg_copy(const kin_exec_config *s, kin_exec_config *d) {
  memset(d, 0, sizeof *d);
  d->provide_cluster_info = s->provide_cluster_info;
  if (!(d->command = strdup(s->command)) || !(d->api_version = strdup(s->api_version)) ||
      (s->install_hint && !(d->install_hint = strdup(s->install_hint))))
    return KIN_ENOMEM;
  if (s->nargs && !(d->args = calloc(s->nargs, sizeof(char *)))) return KIN_ENOMEM;
  for (; d->nargs < s->nargs; d->nargs++)
    if (!(d->args[d->nargs] = strdup(s->args[d->nargs]))) return KIN_ENOMEM;
  if (s->nenv && (!(d->env_names = calloc(s->nenv, sizeof(char *))) ||
                  !(d->env_values = calloc(s->nenv, sizeof(char *)))))
    return KIN_ENOMEM;
  for (; d->nenv < s->nenv; d->nenv++) {
    d->env_names[d->nenv] = strdup(s->env_names[d->nenv]);
    d->env_values[d->nenv] = strdup(s->env_values[d->nenv]);
    if (!d->env_names[d->nenv] || !d->env_values[d->nenv]) {
      d->nenv++;
      return KIN_ENOMEM;
    }
  }
  return 0;
}

int kin_exec_provider_new(const kin_exec_config *cfg, const kin_rest_config *cluster,
                          kin_clock *clock, kin_exec_provider **out) {
  *out = NULL;
  if (!cfg || !cfg->command || !cfg->api_version) return KIN_EINVAL;
  kin_exec_provider *p = calloc(1, sizeof *p);
  if (!p) return KIN_ENOMEM;
  if (cfg_copy(cfg, &p->cfg) || !(p->exec_info = build_exec_info(cfg, cluster))) {
    kin__exec_config_clear(&p->cfg);
    free(p->exec_info);
    free(p);
    return KIN_ENOMEM;
  }
  p->clock = clock;
  pthread_mutex_init(&p->mu, NULL);
  *out = p;
  return 0;
}

void kin_exec_provider_free(kin_exec_provider *p) {
  if (!p) return;
  pthread_mutex_destroy(&p->mu);
  kin_exec_credential_clear(&p->cached);
  kin__exec_config_clear(&p->cfg);
  free(p->exec_info);
  free(p);
}

void kin_exec_provider_invalidate(kin_exec_provider *p) {
  pthread_mutex_lock(&p->mu);
  kin_exec_credential_clear(&p->cached);
  p->have = 0;
  pthread_mutex_unlock(&p->mu);
}

unsigned kin_exec_provider_runs(kin_exec_provider *p) {
  pthread_mutex_lock(&p->mu);
  unsigned n = p->runs;
  pthread_mutex_unlock(&p->mu);
  return n;
}

/* ---- ExecCredential parsing --------------------------------------------- */

/* RFC 3339 ("2006-01-02T15:04:05Z", optional fraction and offset) to Unix
 * seconds; KIN_EINVAL when malformed. */
static int parse_rfc3339(const char *s, int64_t *out) {
  struct tm tm = {0};
  int used = 0;
  if (sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
             &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 6 || used < 19)
    return KIN_EINVAL;
  const char *p = s + used;
  if (*p == '.')
    for (p++; *p >= '0' && *p <= '9'; p++) {
    }
  int64_t off = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int hh, mm, n = 0;
    if (sscanf(p + 1, "%2d:%2d%n", &hh, &mm, &n) != 2 || n != 5) return KIN_EINVAL;
    off = (int64_t)(hh * 3600 + mm * 60) * (*p == '-' ? -1 : 1);
    p += 6;
  } else {
    return KIN_EINVAL;
  }
  if (*p) return KIN_EINVAL;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  *out = (int64_t)timegm(&tm) - off;
  return 0;
}

/* Parses a plugin's output (js, len bytes, not NUL-terminated) into *cred
 * (zeroed first; on failure left cleared). want_version is the apiVersion
 * the config asks for; cmd names the plugin in err. Internal: the exec
 * provider and spec/fuzz/fuzz_exec_credential.c call it. */
int kin__exec_credential_parse(const char *cmd, const char *want_version, const char *js,
                               size_t len, kin_exec_credential *cred, char *err, size_t errlen) {
  memset(cred, 0, sizeof *cred);
  kin__json j;
  int rc = kin__json_parse(&j, js, len);
  if (rc == KIN_ENOMEM) return rc;
  if (rc) {
    kin__errf(err, errlen, "exec plugin \"%s\": output is not valid JSON", cmd);
    return KIN_EINVAL;
  }
  rc = KIN_EINVAL;
  int oom = 0;
  char *kind = NULL, *ver = NULL, *exp = NULL;
  if (!kin__json_is_object(&j, 0)) {
    kin__errf(err, errlen, "exec plugin \"%s\": output is not a JSON object", cmd);
    goto out;
  }
  kind = kin__json_strdup_oom(&j, kin__json_get(&j, 0, "kind"), &oom);
  ver = kin__json_strdup_oom(&j, kin__json_get(&j, 0, "apiVersion"), &oom);
  if (oom) goto nomem;
  if (!kind || strcmp(kind, "ExecCredential") != 0) {
    kin__errf(err, errlen, "exec plugin \"%s\": output kind is not ExecCredential", cmd);
    goto out;
  }
  if (!ver || strcmp(ver, want_version) != 0) {
    kin__errf(err, errlen, "exec plugin \"%s\": is configured to use API version %s, plugin returned version %s",
         cmd, want_version, ver ? ver : "(none)");
    goto out;
  }
  int st = kin__json_get(&j, 0, "status");
  if (!kin__json_is_object(&j, st)) {
    kin__errf(err, errlen, "exec plugin \"%s\": didn't return a status field", cmd);
    goto out;
  }
  cred->token = kin__json_strdup_oom(&j, kin__json_get(&j, st, "token"), &oom);
  cred->client_cert_data =
      kin__json_strdup_oom(&j, kin__json_get(&j, st, "clientCertificateData"), &oom);
  cred->client_key_data = kin__json_strdup_oom(&j, kin__json_get(&j, st, "clientKeyData"), &oom);
  exp = kin__json_strdup_oom(&j, kin__json_get(&j, st, "expirationTimestamp"), &oom);
  if (oom) goto nomem;
  /* Empty strings count as absent, as in Go's zero values. */
  if (cred->token && !*cred->token) kin__wipe_free(cred->token), cred->token = NULL;
  if (cred->client_cert_data && !*cred->client_cert_data)
    free(cred->client_cert_data), cred->client_cert_data = NULL;
  if (cred->client_key_data && !*cred->client_key_data)
    kin__wipe_free(cred->client_key_data), cred->client_key_data = NULL;
  if (!cred->client_cert_data != !cred->client_key_data) {
    kin__errf(err, errlen, "exec plugin \"%s\": returned only certificate or key, not both", cmd);
    goto out;
  }
  if (!cred->token && !cred->client_cert_data) {
    kin__errf(err, errlen, "exec plugin \"%s\": didn't return a token or cert/key pair", cmd);
    goto out;
  }
  if (exp && *exp && parse_rfc3339(exp, &cred->expiration)) {
    kin__errf(err, errlen, "exec plugin \"%s\": status.expirationTimestamp: not RFC 3339", cmd);
    goto out;
  }
  rc = 0;
  goto out;
nomem:
  rc = KIN_ENOMEM;
  kin__errf(err, errlen, "exec plugin \"%s\": out of memory", cmd);
out:
  if (rc) kin_exec_credential_clear(cred);
  free(kind);
  free(ver);
  free(exp);
  kin__json_free(&j);
  return rc;
}

/* ---- running the plugin -------------------------------------------------- */

/* The plugin's environment: ours, then the configured pairs (which win, as
 * in client-go), then KUBERNETES_EXEC_INFO. Caller frees with free_env. */
static char **build_env(const kin_exec_provider *p) {
  size_t n = 0;
  while (environ && environ[n]) n++;
  char **env = calloc(n + p->cfg.nenv + 2, sizeof *env);
  if (!env) return NULL;
  size_t k = 0;
  int oom = 0;
  for (size_t i = 0; i < n && !oom; i++) {
    const char *eq = strchr(environ[i], '=');
    size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
    int overridden = strncmp(environ[i], "KUBERNETES_EXEC_INFO", nl) == 0 &&
                     nl == sizeof "KUBERNETES_EXEC_INFO" - 1;
    for (size_t j = 0; j < p->cfg.nenv; j++)
      overridden |= strlen(p->cfg.env_names[j]) == nl &&
                    strncmp(environ[i], p->cfg.env_names[j], nl) == 0;
    if (!overridden && !(env[k++] = strdup(environ[i]))) oom = 1;
  }
  for (size_t j = 0; j < p->cfg.nenv && !oom; j++) {
    size_t len = strlen(p->cfg.env_names[j]) + strlen(p->cfg.env_values[j]) + 2;
    if (!(env[k] = malloc(len))) oom = 1;
    else snprintf(env[k++], len, "%s=%s", p->cfg.env_names[j], p->cfg.env_values[j]);
  }
  if (!oom) {
    size_t len = strlen(p->exec_info) + sizeof "KUBERNETES_EXEC_INFO=";
    if (!(env[k] = malloc(len))) oom = 1;
    else snprintf(env[k++], len, "KUBERNETES_EXEC_INFO=%s", p->exec_info);
  }
  if (oom) {
    for (size_t i = 0; i < k; i++) free(env[i]);
    free(env);
    return NULL;
  }
  return env;
}

static void free_env(char **env) {
  for (size_t i = 0; env[i]; i++) free(env[i]);
  free(env);
}

/* client-go's wrapCmdRunErrorLocked for a missing binary, in one line. */
static void not_found(const kin_exec_provider *p, char *err, size_t errlen) {
  kin__errf(err, errlen, "exec: executable %s not found%s%s", p->cfg.command,
       p->cfg.install_hint ? "; " : "", p->cfg.install_hint ? p->cfg.install_hint : "");
}

#define STDERR_KEEP 2048 /* bytes of the plugin's stderr kept (the end) */
#define STDERR_LINES 3   /* lines of it quoted in an error */

/* The last STDERR_KEEP bytes of the plugin's standard error. */
typedef struct {
  char b[STDERR_KEEP];
  size_t n;
} tail_buf;

static void tail_add(tail_buf *t, const char *p, size_t n) {
  if (n > sizeof t->b) {
    p += n - sizeof t->b;
    n = sizeof t->b;
  }
  if (t->n + n > sizeof t->b) {
    size_t drop = t->n + n - sizeof t->b;
    memmove(t->b, t->b + drop, t->n - drop);
    t->n -= drop;
  }
  memcpy(t->b + t->n, p, n);
  t->n += n;
}

/* Writes the last STDERR_LINES non-empty lines of t into out, joined by
 * " / ", control characters dropped; "" when there is none. */
static void tail_lines(const tail_buf *t, char *out, size_t n) {
  out[0] = 0;
  size_t end = t->n, starts[STDERR_LINES], ends[STDERR_LINES];
  int k = 0;
  while (k < STDERR_LINES && end > 0) {
    while (end > 0 && (t->b[end - 1] == '\n' || t->b[end - 1] == '\r' || t->b[end - 1] == ' ' ||
                       t->b[end - 1] == '\t'))
      end--;
    if (!end) break;
    size_t st = end;
    while (st > 0 && t->b[st - 1] != '\n') st--;
    starts[k] = st;
    ends[k++] = end;
    end = st;
  }
  size_t o = 0;
  for (int i = k - 1; i >= 0 && o + 1 < n; i--) {
    if (i != k - 1 && o + 4 < n) memcpy(out + o, " / ", 3), o += 3;
    for (size_t j = starts[i]; j < ends[i] && o + 1 < n; j++) {
      unsigned char ch = (unsigned char)t->b[j];
      if (ch >= 0x20 && ch != 0x7f) out[o++] = (char)ch;
      else if (ch == '\t') out[o++] = ' ';
    }
  }
  out[o] = 0;
}

/* Runs the plugin with stdin on /dev/null; stdout is captured into *out
 * (caller frees with kin__wipe_free), stderr into a tail for the error of
 * a failed run (kubectl shows it on the terminal; a library has none). */
static int run_plugin(kin_exec_provider *p, char **out, size_t *outlen, char *err,
                      size_t errlen) {
  *out = NULL;
  *outlen = 0;
  const char *cmd = p->cfg.command;
  char **argv = calloc(p->cfg.nargs + 2, sizeof *argv);
  char **env = build_env(p);
  int fds[2] = {-1, -1}, efds[2] = {-1, -1};
  tail_buf etail;
  etail.n = 0;
  int rc = 0;
  posix_spawn_file_actions_t fa;
  int fa_ok = 0;
  if (!argv || !env) {
    rc = KIN_ENOMEM;
    goto done;
  }
  argv[0] = p->cfg.command;
  for (size_t i = 0; i < p->cfg.nargs; i++) argv[i + 1] = p->cfg.args[i];
  /* O_CLOEXEC: a plugin started concurrently elsewhere must not inherit
   * our pipe, or our read would never see EOF. */
  if (pipe2(fds, O_CLOEXEC) != 0 || pipe2(efds, O_CLOEXEC) != 0 ||
      posix_spawn_file_actions_init(&fa) != 0) {
    rc = -errno;
    kin__errf(err, errlen, "exec plugin \"%s\": %s", cmd, strerror(errno));
    goto done;
  }
  fa_ok = 1;
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, efds[1], 2);
  pid_t pid;
  int se = posix_spawnp(&pid, cmd, &fa, NULL, argv, env);
  close(fds[1]);
  fds[1] = -1;
  close(efds[1]);
  efds[1] = -1;
  if (se != 0) {
    if (se == ENOENT) not_found(p, err, errlen);
    else kin__errf(err, errlen, "exec plugin \"%s\": %s", cmd, strerror(se));
    rc = -se;
    goto done;
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  int too_big = 0;
  int out_open = 1;
  for (;;) {
    /* Both pipes are drained together, so a plugin that writes much to
     * stderr cannot block on it while we wait for stdout. */
    struct pollfd pf[2] = {{.fd = out_open ? fds[0] : -1, .events = POLLIN},
                           {.fd = efds[0], .events = POLLIN}};
    if (!out_open && efds[0] < 0) break;
    if (poll(pf, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (efds[0] >= 0 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      char eb[1024];
      ssize_t r = read(efds[0], eb, sizeof eb);
      if (r > 0) tail_add(&etail, eb, (size_t)r);
      else if (r == 0 || errno != EINTR) {
        close(efds[0]);
        efds[0] = -1;
      }
    }
    if (!out_open || !(pf[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    if (buf && n + 1 >= cap && cap < MAX_OUTPUT) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        kin__wipe_free(buf); /* NUL-terminated below before every wipe */
        buf = NULL;
      } else {
        buf = nb;
        cap *= 2;
      }
    }
    char sink[4096];
    char *dst = buf && n + 1 < cap ? buf + n : sink;
    size_t room = buf && n + 1 < cap ? cap - n - 1 : sizeof sink;
    ssize_t r = read(fds[0], dst, room);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      out_open = 0;
      continue;
    }
    if (dst == sink) too_big = 1; /* keep draining so the plugin can exit */
    else {
      n += (size_t)r;
      buf[n] = 0;
    }
  }
  if (buf) buf[n] = 0;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  char etext[512];
  tail_lines(&etail, etext, sizeof etext);
  if (!buf) {
    rc = KIN_ENOMEM;
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && !etext[0]) {
    not_found(p, err, errlen); /* the shell's "command not found" */
    rc = KIN_ENOENT;
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    /* client-go: "exec: executable %s failed with exit code %d", plus
     * what the plugin said on stderr. */
    if (WIFEXITED(status))
      kin__errf(err, errlen, "exec: executable %s failed with exit code %d%s%s", cmd,
                WEXITSTATUS(status), etext[0] ? ": " : "", etext);
    else
      kin__errf(err, errlen, "exec: executable %s killed by signal %d%s%s", cmd,
                WTERMSIG(status), etext[0] ? ": " : "", etext);
    rc = WIFEXITED(status) && WEXITSTATUS(status) == 127 ? KIN_ENOENT : KIN_EINVAL;
  } else if (too_big) {
    kin__errf(err, errlen, "exec plugin \"%s\": output larger than %u bytes", cmd, MAX_OUTPUT);
    rc = KIN_EINVAL;
  }
  if (rc) kin__wipe_free(buf);
  else {
    *out = buf;
    *outlen = n;
    if (etext[0]) kin_log(KIN_LOG_DEBUG, "exec", "exec plugin %s: stderr: %s", cmd, etext);
  }
done:
  if (fa_ok) posix_spawn_file_actions_destroy(&fa);
  if (fds[0] >= 0) close(fds[0]);
  if (fds[1] >= 0) close(fds[1]);
  if (efds[0] >= 0) close(efds[0]);
  if (efds[1] >= 0) close(efds[1]);
  if (env) free_env(env);
  free(argv);
  if (rc == KIN_ENOMEM) kin__errf(err, errlen, "exec plugin \"%s\": out of memory", cmd);
  return rc;
}

static int64_t now_sec(const kin_exec_provider *p) {
  if (p->clock) return (int64_t)(kin_clock_now(p->clock) / KIN_NSEC_PER_SEC);
  return (int64_t)time(NULL);
}

int kin_exec_provider_get(kin_exec_provider *p, kin_exec_credential *out, char *err,
                          size_t errlen) {
  memset(out, 0, sizeof *out);
  if (err && errlen) err[0] = 0;
  pthread_mutex_lock(&p->mu);
  int rc = 0;
  if (p->have && p->cached.expiration && now_sec(p) >= p->cached.expiration) {
    kin_exec_credential_clear(&p->cached);
    p->have = 0;
  }
  if (!p->have) {
    char *buf;
    size_t n;
    p->runs++;
    rc = run_plugin(p, &buf, &n, err, errlen);
    if (!rc) {
      rc = kin__exec_credential_parse(p->cfg.command, p->cfg.api_version, buf, n, &p->cached, err,
                                      errlen);
      kin__wipe_free(buf);
      p->have = rc == 0;
    }
  }
  if (!rc) rc = copy_cred(&p->cached, out);
  pthread_mutex_unlock(&p->mu);
  return rc;
}
