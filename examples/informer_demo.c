/* informer_demo.c -- the in-memory informer stack end to end (make run).
 *
 * Reads a file of "TYPE <json>" lines: LIST lines are gathered into one
 * Replace (the reflector's initial list), then ADDED / MODIFIED / DELETED
 * lines feed the DeltaFIFO as watch events would. A handler enqueues each
 * changed key into a rate-limited workqueue; two worker threads reconcile
 * keys by reading the cache. An object labelled fail-once=true fails its
 * first reconcile, to show the rate-limited retry. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "indexer.h"
#include "kin.h"
#include "kobj.h"
#include "shared_informer.h"
#include "workqueue.h"

static kin_workqueue *queue;
static kin_informer *informer;
static atomic_int reconciles, failures, retried_ok;

static int on_add(void *ud, kin_obj *o, int initial) {
  printf("event  add    %-28s rv=%-4s%s\n", kin_obj_key(o), kin_obj_resource_version(o),
         initial ? " (initial list)" : "");
  kin_workqueue_add(queue, kin_obj_key(o));
  return 0;
}

static int on_update(void *ud, kin_obj *old, kin_obj *o) {
  printf("event  update %-28s rv=%s -> %s\n", kin_obj_key(o), kin_obj_resource_version(old),
         kin_obj_resource_version(o));
  kin_workqueue_add(queue, kin_obj_key(o));
  return 0;
}

static int on_delete(void *ud, kin_obj *o) {
  printf("event  delete %-28s%s\n", kin_obj_key(o), kin_obj_is_tombstone(o) ? " (tombstone)" : "");
  kin_workqueue_add(queue, kin_obj_key(o));
  return 0;
}

/* Reconcile: level-based, reads the current state from the cache. */
static int reconcile(const char *key) {
  kin_obj *o = kin_indexer_get(kin_informer_indexer(informer), key);
  atomic_fetch_add(&reconciles, 1);
  if (!o) {
    printf("worker reconcile %-26s gone: clean up\n", key);
    return 0;
  }
  const char *f = kin_obj_label(o, "fail-once");
  int fail = f && strcmp(f, "true") == 0 && kin_workqueue_num_requeues(queue, key) == 0;
  printf("worker reconcile %-26s rv=%s generation=%lld%s\n", key, kin_obj_resource_version(o),
         (long long)kin_obj_generation(o), fail ? " -> error, retry with backoff" : "");
  kin_obj_unref(o);
  return fail ? -1 : 0;
}

static void *worker(void *arg) {
  const char *key;
  while (kin_workqueue_get(queue, &key) == 0) {
    if (reconcile(key) < 0) {
      atomic_fetch_add(&failures, 1);
      kin_workqueue_add_rate_limited(queue, key);
    } else {
      if (kin_workqueue_num_requeues(queue, key) > 0) {
        printf("worker %-33s succeeded after %d retry(ies)\n", key,
               kin_workqueue_num_requeues(queue, key));
        atomic_fetch_add(&retried_ok, 1);
      }
      kin_workqueue_forget(queue, key);
    }
    kin_workqueue_done(queue, key);
  }
  return NULL;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "examples/informer_demo.events";
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "informer_demo: cannot open %s\n", path);
    return 1;
  }
  kin_workqueue_config qc = {.name = "demo",
                             .rate_limiter = kin_default_controller_rate_limiter_new(NULL)};
  kin_informer_config ic = {.name = "v1/configmaps"};
  if (kin_workqueue_new(&qc, &queue) < 0 || kin_informer_new(&ic, &informer) < 0) return 1;
  kin_event_handler h = {.on_add = on_add, .on_update = on_update, .on_delete = on_delete};
  kin_listener *l;
  kin_informer_add_handler(informer, &h, 0, &l);
  kin_informer_run(informer);
  pthread_t w[2];
  for (int i = 0; i < 2; i++) pthread_create(&w[i], NULL, worker, NULL);

  kin_delta_fifo *fifo = kin_informer_fifo(informer);
  kin_obj *list[256];
  size_t nlist = 0;
  int listed = 0, lineno = 0, bad = 0;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, f)) > 0) {
    lineno++;
    if (line[0] == '#' || line[0] == '\n') continue;
    char *sp = strchr(line, ' ');
    if (!sp) continue;
    *sp = 0;
    kin_obj *o;
    int rc = kin_obj_parse(sp + 1, (size_t)(len - (sp + 1 - line)), &o);
    if (rc < 0) {
      /* bad input is reported with its position and skipped, never fatal */
      fprintf(stderr, "%s:%d: skipping %s event: %s\n", path, lineno, line, kin_strerror(rc));
      bad++;
      continue;
    }
    if (strcmp(line, "LIST") == 0 && nlist < 256) {
      list[nlist++] = o;
      continue;
    }
    if (!listed) {
      kin_delta_fifo_replace(fifo, list, nlist, NULL);
      for (size_t i = 0; i < nlist; i++) kin_obj_unref(list[i]);
      listed = 1;
      if (kin_informer_wait_for_cache_sync(informer, 10 * KIN_NSEC_PER_SEC) == 0)
        printf("synced: %zu objects in cache\n", kin_indexer_len(kin_informer_indexer(informer)));
    }
    if (strcmp(line, "ADDED") == 0) kin_delta_fifo_add(fifo, o);
    else if (strcmp(line, "MODIFIED") == 0) kin_delta_fifo_update(fifo, o);
    else if (strcmp(line, "DELETED") == 0) kin_delta_fifo_delete(fifo, o);
    kin_obj_unref(o);
  }
  free(line);
  fclose(f);

  /* let the informer and workers settle (every failed key retried and
   * succeeded), then drain and stop; give up after 2 s */
  for (int i = 0; i < 400; i++) {
    kin_listener_stats st;
    kin_listener_get_stats(l, &st);
    kin_workqueue_metrics m;
    kin_workqueue_get_metrics(queue, &m);
    if (kin_delta_fifo_len(fifo) == 0 && st.pending == 0 && m.depth == 0 &&
        m.unfinished_work_seconds == 0 && atomic_load(&retried_ok) == atomic_load(&failures))
      break;
    struct timespec ts = {0, 5 * 1000000L};
    nanosleep(&ts, NULL);
  }
  kin_workqueue_shutdown_with_drain(queue);
  for (int i = 0; i < 2; i++) pthread_join(w[i], NULL);
  kin_informer_stop(informer);

  kin_indexer *idx = kin_informer_indexer(informer);
  char **ns;
  size_t nns;
  kin_indexer_list_index_func_values(idx, KIN_INDEX_NAMESPACE, &ns, &nns);
  printf("\ncache: %zu objects\n", kin_indexer_len(idx));
  for (size_t i = 0; i < nns; i++) {
    char **keys;
    size_t nk;
    kin_indexer_index_keys(idx, KIN_INDEX_NAMESPACE, ns[i], &keys, &nk);
    printf("  namespace %-10s %zu object(s)\n", ns[i], nk);
    kin_str_list_free(keys, nk);
  }
  kin_str_list_free(ns, nns);
  kin_workqueue_metrics m;
  kin_workqueue_get_metrics(queue, &m);
  printf("workqueue: adds=%llu retries=%llu reconciles=%d failures=%d malformed lines=%d\n",
         (unsigned long long)m.adds_total, (unsigned long long)m.retries_total,
         atomic_load(&reconciles), atomic_load(&failures), bad);
  kin_informer_free(informer);
  kin_workqueue_free(queue);
  return 0;
}
