/* kinformer-sim -- kinformer.sim as a standalone program: serves until
 * SIGINT or SIGTERM.
 *
 *   kinformer-sim [--bind ADDR] [--port N] [--tls-cert FILE --tls-key FILE]
 *                 [--client-ca-file FILE] [--token T] [--seed FILE] [--kubeconfig PATH]
 *                 [--history N] [--bookmark-interval MS] [--watch-cache-lists]
 *                 [--controllers=LIST] [--fake-clock] [--pre-encode]
 *                 [--feature-gates=ShardedListAndWatch=true]
 *                 [--authorization-mode AlwaysAllow|RBAC]
 *                 [--nodes N] [--pod-ready-delay-ms MS] [--job-run-ms MS]
 *
 * --nodes, --pod-ready-delay-ms and --job-run-ms time the simulated
 * workloads (kin_sim_config.nodes, .pod_ready_delay_ms, .job_run_ms).
 * --controllers takes kube-controller-manager's syntax ("*", "name",
 * "-name", comma-separated; "none": a bare API server). --pre-encode keeps
 * each built-in object's protobuf bytes from its commit and serves them in
 * lists and watches (benchmarks: the sim out of the clients' way). A flag's value may
 * follow it as the next word or after "=".
 *
 * Prints the URL on stdout (one line) once serving. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "sim.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: kinformer-sim [--bind ADDR] [--port N] [--tls-cert FILE --tls-key FILE]\n"
          "                     [--client-ca-file FILE] [--token T] [--seed FILE]\n"
          "                     [--kubeconfig PATH]\n"
          "                     [--history N] [--bookmark-interval MS] [--watch-cache-lists]\n"
          "                     [--controllers=LIST] [--fake-clock] [--pre-encode]\n"
          "                     [--feature-gates=ShardedListAndWatch=true]\n"
          "                     [--authorization-mode AlwaysAllow|RBAC]\n"
          "                     [--nodes N] [--pod-ready-delay-ms MS] [--job-run-ms MS]\n"
          "controllers (default \"*\"; \"none\" for a bare API server):");
  int on;
  const char *name;
  for (size_t i = 0; (name = kin_sim_controller_name(i, &on)); i++)
    fprintf(f, " %s%s", name, on ? "" : " (off by default)");
  fprintf(f, "\n");
}

int main(int argc, char **argv) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  const char *kubeconfig = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(a, "--watch-cache-lists")) {
      cfg.watch_cache_lists = 1;
      continue;
    }
    if (!strcmp(a, "--pre-encode")) {
      cfg.pre_encode = 1;
      continue;
    }
    if (!strcmp(a, "--fake-clock")) {
      cfg.fake_clock = 1;
      continue;
    }
    /* --flag=value */
    char flag[64];
    const char *v;
    const char *eq = strchr(a, '=');
    if (eq && eq - a < (long)sizeof(flag)) {
      memcpy(flag, a, (size_t)(eq - a));
      flag[eq - a] = 0;
      a = flag;
      v = eq + 1;
    } else if (i + 1 >= argc) {
      usage(stderr);
      return 2;
    } else {
      v = argv[++i];
    }
    if (!strcmp(a, "--bind"))
      cfg.bind_address = v;
    else if (!strcmp(a, "--port"))
      cfg.port = (uint16_t)atoi(v);
    else if (!strcmp(a, "--tls-cert"))
      cfg.tls_cert_file = v;
    else if (!strcmp(a, "--tls-key"))
      cfg.tls_key_file = v;
    else if (!strcmp(a, "--client-ca-file"))
      cfg.client_ca_file = v;
    else if (!strcmp(a, "--token"))
      cfg.token = v;
    else if (!strcmp(a, "--seed"))
      cfg.seed_file = v;
    else if (!strcmp(a, "--kubeconfig"))
      kubeconfig = v;
    else if (!strcmp(a, "--history"))
      cfg.watch_history = (size_t)atol(v);
    else if (!strcmp(a, "--bookmark-interval"))
      cfg.bookmark_interval_ms = (uint32_t)atol(v);
    else if (!strcmp(a, "--nodes"))
      cfg.nodes = atoi(v);
    else if (!strcmp(a, "--pod-ready-delay-ms"))
      cfg.pod_ready_delay_ms = (uint32_t)atol(v);
    else if (!strcmp(a, "--job-run-ms"))
      cfg.job_run_ms = (uint32_t)atol(v);
    else if (!strcmp(a, "--controllers")) {
      char bad[128];
      if (kin_sim_controllers_check(v, bad, sizeof(bad))) {
        fprintf(stderr, "kinformer-sim: --controllers: unknown controller '%s'\n", bad);
        usage(stderr);
        return 2;
      }
      cfg.controllers = v;
    } else if (!strcmp(a, "--feature-gates")) {
      char why[256];
      if (kin_sim_feature_gates_check(v, why, sizeof(why))) {
        fprintf(stderr, "kinformer-sim: --feature-gates: %s\n", why);
        return 2;
      }
      cfg.feature_gates = v;
    } else if (!strcmp(a, "--authorization-mode") && (!strcmp(v, "RBAC") || !strcmp(v, "AlwaysAllow")))
      cfg.authorization_mode = v;
    else if (!strcmp(a, "--authorization-mode")) {
      fprintf(stderr, "kinformer-sim: --authorization-mode %s: AlwaysAllow or RBAC\n", v);
      return 2;
    }
    else {
      fprintf(stderr, "kinformer-sim: unknown flag %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  /* Block the stop signals before any server thread exists, so only
   * sigwait below receives them. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  kin_sim *sim = NULL;
  int rc = kin_sim_start(&cfg, &sim);
  if (rc) {
    fprintf(stderr, "kinformer-sim: cannot start: %s\n", kin_strerror(rc));
    return 1;
  }
  if (kubeconfig && kin_sim_write_kubeconfig(sim, kubeconfig)) {
    fprintf(stderr, "kinformer-sim: cannot write %s\n", kubeconfig);
    kin_sim_free(sim);
    return 1;
  }
  printf("%s\n", kin_sim_url(sim));
  fflush(stdout);
  int sig;
  sigwait(&set, &sig);
  kin_sim_free(sim);
  return 0;
}
