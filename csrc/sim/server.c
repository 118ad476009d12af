/* server.c -- kin_sim_start/stop: the store, the default namespaces, the
 * seed file and the MHD daemon; kubeconfig output. The top of the sim: it
 * includes the HTTP side (http_int.h), which includes the shared state
 * (store_int.h), never the other way round. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "controllers.h"
#include "convert.h"
#include "ctl_registry.h"
#include "http_int.h"
#include "kin.h"
#include "proto_int.h"

enum MHD_Result kin__sim_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **con_cls);
void kin__sim_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                           enum MHD_RequestTerminationCode toe);

void kin_sim_config_init(kin_sim_config *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  cfg->bind_address = "127.0.0.1";
  cfg->watch_history = 10000;
  cfg->bookmark_interval_ms = 60000;
  cfg->nodes = 1;
  cfg->pod_ready_delay_ms = 1000;
  cfg->job_run_ms = 1000;
}

/* Reads a whole file; caller frees; NULL when unreadable. */
static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[n] = 0;
  fclose(f);
  return buf;
}

static int create_namespace(kin__sim_store *s, const char *name) {
  kin__sim_resource *r = kin__sim_registry_find(s, "", "v1", "namespaces");
  json_t *obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                          "metadata", "name", name);
  kin__sim_result out = {0, NULL};
  kin__sim_store_create(s, r, "", obj, 0, &out);
  json_decref(obj);
  json_decref(out.body);
  return out.code == 201 ? 0 : KIN_ENOMEM;
}

/* Starts the MHD daemon on sim->sa at port (0: a free one). Returns 0 or
 * KIN_EBUSY. */
static int start_daemon(kin_sim *sim, uint16_t port) {
  /* poll(), not select(): no FD_SETSIZE cap on connections. */
  /* ITC: MHD_quiesce_daemon needs it with an internal polling thread */
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                   MHD_USE_ITC;
  if (sim->tls) flags |= MHD_USE_TLS;
  sim->sa.sin_port = htons(port);
  sim->daemon = MHD_start_daemon(
      flags, port, NULL, NULL, kin__sim_on_request, sim, MHD_OPTION_SOCK_ADDR, &sim->sa,
      MHD_OPTION_NOTIFY_COMPLETED, kin__sim_on_completed, sim,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)256 * 1024, MHD_OPTION_HTTPS_MEM_KEY,
      sim->tls ? sim->tls_key : NULL, MHD_OPTION_HTTPS_MEM_CERT, sim->tls ? sim->tls_cert : NULL,
      /* With a trust list MHD asks for (but does not require) a client
       * certificate, as Go's tls.RequestClientCert in kube-apiserver;
       * http_auth.c verifies it per request. */
      sim->client_ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, sim->client_ca,
      MHD_OPTION_END);
  return sim->daemon ? 0 : KIN_EBUSY;
}

int kin_sim_start(const kin_sim_config *cfg_in, kin_sim **out) {
  kin_sim_config cfg;
  if (cfg_in)
    cfg = *cfg_in;
  else
    kin_sim_config_init(&cfg);
  *out = NULL;
  kin_sim *sim = calloc(1, sizeof(*sim));
  if (!sim) return KIN_ENOMEM;
  pthread_mutex_init(&sim->stop_mu, NULL);
  pthread_mutex_init(&sim->tokens_mu, NULL);
  pthread_mutex_init(&sim->request_log.mu, NULL);
  sim->request_log.limit = cfg.request_log_limit ? cfg.request_log_limit : 1000000;
  sim->stopped = 1; /* nothing to stop until the daemon runs */
  sim->watch_cache_lists = cfg.watch_cache_lists;
  int gate_rc = kin__sim_feature_gates(cfg.feature_gates, &sim->gate_sharded, NULL, 0);
  int rc = kin__sim_store_init(&sim->store, cfg.watch_history, cfg.bookmark_interval_ms);
  if (cfg.pre_encode) sim->store.pre_encode = kin__sim_pb_pre_encode;
  if (!rc) rc = kin__sim_registry_init_builtins(&sim->store);
  if (!rc) rc = kin__sim_admission_init(sim);
  /* Events' conversion and validation hooks (convert/, which depends on
   * the store and not the other way round). */
  for (size_t i = 0; !rc && i < sim->store.nres; i++) kin__sim_event_hooks(sim->store.res[i]);
  static const char *const namespaces[] = {"default", "kube-system", "kube-public",
                                           "kube-node-lease"};
  for (size_t i = 0; !rc && i < 4; i++) rc = create_namespace(&sim->store, namespaces[i]);
  if (!rc && cfg.legacy_events_only) {
    kin__sim_resource *ev = kin__sim_registry_find(&sim->store, "events.k8s.io", "v1", "events");
    if (ev) ev->removed = 1;
  }
  if (!rc && cfg.seed_file) rc = kin__sim_store_seed(&sim->store, cfg.seed_file);
  /* The bootstrap roles after the seed: a seeded (replayed) one is kept. */
  if (!rc) rc = kin__sim_rbac_bootstrap(&sim->store);
  if (!rc && gate_rc) rc = gate_rc;
  if (!rc && cfg.authorization_mode && strcmp(cfg.authorization_mode, "AlwaysAllow"))
    rc = !strcmp(cfg.authorization_mode, "RBAC") ? (sim->authz_rbac = 1, 0) : KIN_EINVAL;
  if (!rc && cfg.token) rc = (sim->token = strdup(cfg.token)) ? 0 : KIN_ENOMEM;
  if (!rc && cfg.tls_cert_file && cfg.tls_key_file) {
    sim->tls_cert = read_file(cfg.tls_cert_file);
    sim->tls_key = read_file(cfg.tls_key_file);
    sim->tls = 1;
    if (!sim->tls_cert || !sim->tls_key) rc = KIN_EINVAL;
  }
  /* Client certificates only exist over TLS. */
  if (!rc && cfg.client_ca_file)
    rc = sim->tls && (sim->client_ca = read_file(cfg.client_ca_file)) ? kin__sim_client_ca_check(sim->client_ca) : KIN_EINVAL;
  sim->nodes = cfg.nodes < 0 ? 0 : cfg.nodes;
  sim->pod_ready_delay_ms = cfg.pod_ready_delay_ms;
  sim->job_run_ms = cfg.job_run_ms;
  if (!rc) rc = kin__simctl_start(sim, kin__simctl_all, cfg.controllers, cfg.fake_clock, &sim->ctl);
  /* Serve the state a cluster has once its controllers ran (the default
   * ServiceAccounts, say), so what a client sees first does not race them. */
  if (!rc && sim->ctl) (void)kin__simctl_wait_idle(sim->ctl, 5000);
  sim->sa.sin_family = AF_INET;
  sim->sa.sin_port = htons(cfg.port);
  const char *bind_addr = cfg.bind_address ? cfg.bind_address : "127.0.0.1";
  if (!rc && inet_pton(AF_INET, bind_addr, &sim->sa.sin_addr) != 1) rc = KIN_EINVAL;
  if (!rc) rc = start_daemon(sim, cfg.port);
  if (rc) {
    kin_sim_free(sim);
    return rc;
  }
  sim->stopped = 0;
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(sim->daemon, MHD_DAEMON_INFO_BIND_PORT);
  sim->port = di ? di->port : cfg.port;
  const char *host = strcmp(bind_addr, "0.0.0.0") ? bind_addr : "127.0.0.1";
  snprintf(sim->url, sizeof(sim->url), "%s://%s:%u", sim->tls ? "https" : "http", host,
           (unsigned)sim->port);
  *out = sim;
  return 0;
}

const char *kin_sim_url(const kin_sim *sim) { return sim->url; }

uint16_t kin_sim_port(const kin_sim *sim) { return sim->port; }

/* Stops accepting connections on sim's port (new ones are refused) while
 * the open ones go on; called before the watches are ended, so a client
 * whose watch the stop ends meets a refused connection when it watches
 * again, never a watch accepted by a server going away (a "very short
 * watch" that would make it relist). */
static void stop_accepting(kin_sim *sim) {
  MHD_socket fd = MHD_quiesce_daemon(sim->daemon);
  if (fd != MHD_INVALID_SOCKET) close(fd);
}

void kin_sim_stop(kin_sim *sim) {
  pthread_mutex_lock(&sim->stop_mu);
  /* The controllers first: a stopped server changes nothing more. */
  kin__simctl_free(sim->ctl);
  sim->ctl = NULL;
  if (!sim->stopped) {
    stop_accepting(sim);
    pthread_mutex_lock(&sim->store.mu);
    sim->store.stopping = 1;
    pthread_cond_broadcast(&sim->store.cond);
    pthread_mutex_unlock(&sim->store.mu);
    MHD_stop_daemon(sim->daemon);
    sim->daemon = NULL;
    sim->stopped = 1;
  }
  pthread_mutex_unlock(&sim->stop_mu);
}

/* Stops serving as kin_sim_stop does (every connection closed, the
 * threads joined), waits down_ms, and serves again on the same port with
 * the same store: resourceVersions, objects and watch history survive, as
 * a kube-apiserver restarted over the same etcd. */
int kin_sim_restart(kin_sim *sim, uint32_t down_ms) {
  pthread_mutex_lock(&sim->stop_mu);
  if (sim->stopped) {
    pthread_mutex_unlock(&sim->stop_mu);
    return KIN_EINVAL;
  }
  stop_accepting(sim);
  pthread_mutex_lock(&sim->store.mu);
  sim->store.stopping = 1;
  pthread_cond_broadcast(&sim->store.cond);
  pthread_mutex_unlock(&sim->store.mu);
  MHD_stop_daemon(sim->daemon);
  sim->daemon = NULL;
  if (down_ms) {
    struct timespec ts = {down_ms / 1000, (long)(down_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  pthread_mutex_lock(&sim->store.mu);
  sim->store.stopping = 0;
  pthread_mutex_unlock(&sim->store.mu);
  int rc = KIN_EBUSY;
  for (int i = 0; i < 100 && rc == KIN_EBUSY; i++) { /* the port may linger briefly */
    rc = start_daemon(sim, sim->port);
    if (rc == KIN_EBUSY) {
      struct timespec ts = {0, 50 * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
  if (rc) sim->stopped = 1;
  pthread_mutex_unlock(&sim->stop_mu);
  return rc;
}

void kin_sim_free(kin_sim *sim) {
  if (!sim) return;
  kin_sim_stop(sim);
  kin__simctl_free(sim->ctl); /* a start that failed before serving */
  sim->ctl = NULL;
  /* The registry's objects first (each holds its own reference), then
   * the history's and the store. */
  kin__sim_registry_free(&sim->store);
  kin__sim_store_free(&sim->store);
  kin__sim_rbac_free(sim->rbac);
  kin__sim_admission_free(sim);
  pthread_mutex_destroy(&sim->stop_mu);
  pthread_mutex_destroy(&sim->tokens_mu);
  for (size_t i = 0; i < sim->ntokens; i++) {
    free(sim->tokens[i].user);
    free(sim->tokens[i].token);
  }
  free(sim->tokens);
  pthread_mutex_destroy(&sim->request_log.mu);
  kin__buf_free(&sim->request_log.buf);
  free(sim->token);
  free(sim->tls_cert);
  free(sim->tls_key);
  free(sim->client_ca);
  free(sim);
}

int kin_sim_controllers_check(const char *spec, char *bad, size_t cap) {
  return kin__simctl_parse(kin__simctl_all, spec, bad, cap);
}

const char *kin_sim_controller_name(size_t i, int *on_by_default) {
  for (size_t k = 0; kin__simctl_all[k]; k++) {
    if (k != i) continue;
    if (on_by_default) *on_by_default = !kin__simctl_all[k]->off_by_default;
    return kin__simctl_all[k]->name;
  }
  return NULL;
}

/* The controller manager is only freed by kin_sim_stop, which callers must
 * not race with these (as with every call on a stopped server). */
uint64_t kin_sim_clock_now_ms(kin_sim *sim) { return sim->ctl ? kin__simctl_now_ms(sim->ctl) : 0; }

int kin_sim_clock_advance(kin_sim *sim, uint64_t ms) {
  return sim->ctl ? kin__simctl_advance(sim->ctl, ms) : KIN_EINVAL;
}

int kin_sim_settle(kin_sim *sim, uint32_t timeout_ms) {
  return sim->ctl ? kin__simctl_wait_idle(sim->ctl, timeout_ms) : 0;
}

int kin_sim_write_kubeconfig(const kin_sim *sim, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return KIN_EINVAL;
  fprintf(f,
          "apiVersion: v1\nkind: Config\nclusters:\n- name: kinformer-sim\n  cluster:\n"
          "    server: %s\n%s",
          sim->url, sim->tls ? "    insecure-skip-tls-verify: true\n" : "");
  /* A token over plain HTTP needs the explicit opt-in (kubeconfig.h). */
  if (!sim->tls && sim->token)
    fprintf(f, "    extensions:\n    - name: kinformer.io/credentials-over-http\n"
               "      extension: {allow: true}\n");
  fprintf(f, "users:\n- name: kinformer-sim\n  user:%s%s%s\n", sim->token ? "\n    token: \"" : " {}",
          sim->token ? sim->token : "", sim->token ? "\"" : "");
  fprintf(f, "contexts:\n- name: kinformer-sim\n  context:\n    cluster: kinformer-sim\n"
             "    user: kinformer-sim\n    namespace: default\ncurrent-context: kinformer-sim\n");
  return fclose(f) ? KIN_EINVAL : 0;
}
