/* admin.c -- the registry of informers and controllers shown by the admin
 * endpoint, and its JSON answers (see admin.h). */
#include "admin.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "controller_history.h"
#include "indexer.h"
#include "informer_factory.h"
#include "kin.h"
#include "workqueue.h"

#define MAX_QUEUE_ITEMS 500
#define MAX_INFLIGHT 256

typedef struct {
  int id;
  char *name;           /* informers */
  kin_informer *inf;    /* or NULL */
  kin_controller *ctl;  /* or NULL */
} reg_entry;

/* The registry: mu guards every field. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static reg_entry *entries;
static size_t nentries, capentries;
static int next_id = 1;
static char *shards_doc; /* /shards (kin_admin_set_shards) or NULL */

static int add_entry(reg_entry e) {
  pthread_mutex_lock(&mu);
  if (nentries == capentries) {
    size_t cap = capentries ? capentries * 2 : 16;
    reg_entry *v = realloc(entries, cap * sizeof(*v));
    if (!v) {
      pthread_mutex_unlock(&mu);
      free(e.name);
      return KIN_ENOMEM;
    }
    entries = v;
    capentries = cap;
  }
  e.id = next_id++;
  entries[nentries++] = e;
  pthread_mutex_unlock(&mu);
  return e.id;
}

int kin_admin_add_informer(const char *name, kin_informer *inf) {
  char *n = strdup(name ? name : "");
  if (!n) return KIN_ENOMEM;
  return add_entry((reg_entry){0, n, inf, NULL});
}

int kin_admin_set_shards(const char *json) {
  char *d = json ? strdup(json) : NULL;
  if (json && !d) return KIN_ENOMEM;
  pthread_mutex_lock(&mu);
  free(shards_doc);
  shards_doc = d;
  pthread_mutex_unlock(&mu);
  return 0;
}

int kin_admin_add_controller(kin_controller *c) {
  return add_entry((reg_entry){0, NULL, NULL, c});
}

void kin_admin_remove(int id) {
  if (id <= 0) return;
  pthread_mutex_lock(&mu);
  for (size_t i = 0; i < nentries; i++) {
    if (entries[i].id != id) continue;
    free(entries[i].name);
    memmove(&entries[i], &entries[i + 1], (nentries - i - 1) * sizeof(*entries));
    nentries--;
    break;
  }
  pthread_mutex_unlock(&mu);
}

/* ---- JSON ------------------------------------------------------------------- */

static void json_str(kin__buf *b, const char *s) {
  kin__buf_puts(b, "\"");
  for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
    if (*p == '"' || *p == '\\') kin__buf_printf(b, "\\%c", *p);
    else if (*p < 0x20) kin__buf_printf(b, "\\u%04x", *p);
    else kin__buf_add(b, (const char *)p, 1);
  }
  kin__buf_puts(b, "\"");
}

static double secs(uint64_t ns) { return (double)ns / 1e9; }

static uint64_t wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Under mu. */
static void render_caches(kin__buf *b) {
  kin__buf_puts(b, "{\"caches\":[");
  int first = 1;
  for (size_t i = 0; i < nentries; i++) {
    if (!entries[i].inf) continue;
    kin__buf_puts(b, first ? "{\"name\":" : ",{\"name\":");
    first = 0;
    json_str(b, entries[i].name);
    kin__buf_printf(b, ",\"objects\":%zu,\"synced\":%s}",
                    kin_indexer_len(kin_informer_indexer(entries[i].inf)),
                    kin_informer_has_synced(entries[i].inf) ? "true" : "false");
  }
  kin__buf_puts(b, "]}");
}

/* Under mu: per informer, the projection that keeps what code read of its
 * objects and the cache's JSON bytes per object now and with it. */
static int render_advise(kin__buf *b) {
  kin__buf_puts(b, "{\"advise\":[");
  int first = 1, rc = 0;
  for (size_t i = 0; i < nentries && !rc; i++) {
    if (!entries[i].inf) continue;
    kin_informer_advice a;
    rc = kin_informer_advise(entries[i].inf, &a);
    if (!rc) {
      kin__buf_puts(b, first ? "{\"informer\":" : ",{\"informer\":");
      first = 0;
      json_str(b, entries[i].name);
      kin__buf_puts(b, ",\"api_version\":");
      json_str(b, a.api_version);
      kin__buf_puts(b, ",\"kind\":");
      json_str(b, a.kind);
      size_t n = a.size.objects;
      kin__buf_printf(b, ",\"objects\":%zu,\"bytes_per_object\":%.1f,"
                         "\"advised_bytes_per_object\":%.1f,\"fields\":",
                      n, n ? (double)a.size.bytes / (double)n : 0.0,
                      n ? (double)a.size.projected_bytes / (double)n : 0.0);
      if (!a.fields) {
        kin__buf_puts(b, a.reads_all ? "null,\"reads_all\":true" : "null");
      } else {
        kin__buf_puts(b, "[");
        for (char **f = a.fields; *f; f++) {
          if (f != a.fields) kin__buf_puts(b, ",");
          json_str(b, *f);
        }
        kin__buf_puts(b, "]");
      }
      kin__buf_puts(b, "}");
    }
    kin_informer_advice_free(&a);
  }
  kin__buf_puts(b, "]}");
  return rc;
}

static const char *state_name(kin_wq_state s) {
  return s == KIN_WQ_READY ? "ready" : s == KIN_WQ_PROCESSING ? "processing" : "waiting";
}

/* Under mu. */
static int render_queues(kin__buf *b) {
  kin__buf_puts(b, "{\"queues\":[");
  int first = 1;
  for (size_t i = 0; i < nentries; i++) {
    kin_controller *c = entries[i].ctl;
    if (!c) continue;
    kin_workqueue *q = kin_controller_queue(c);
    kin_wq_item *v;
    size_t n;
    if (kin_workqueue_snapshot(q, MAX_QUEUE_ITEMS + 1, &v, &n) < 0) return KIN_ENOMEM;
    kin__buf_puts(b, first ? "{\"controller\":" : ",{\"controller\":");
    first = 0;
    json_str(b, kin_controller_name(c));
    kin__buf_printf(b, ",\"depth\":%d,\"truncated\":%s,\"items\":[", kin_workqueue_len(q),
                    n > MAX_QUEUE_ITEMS ? "true" : "false");
    for (size_t k = 0; k < n && k < MAX_QUEUE_ITEMS; k++) {
      kin__buf_puts(b, k ? ",{\"key\":" : "{\"key\":");
      json_str(b, v[k].key);
      kin__buf_printf(b, ",\"state\":\"%s\",\"due_in\":%.3f,\"processing_for\":%.3f,\"requeues\":%d}",
                      state_name(v[k].state), secs(v[k].due_in_ns), secs(v[k].since_ns),
                      v[k].requeues);
    }
    kin__buf_puts(b, "]}");
    kin_workqueue_snapshot_free(v, n);
  }
  kin__buf_puts(b, "]}");
  return 0;
}

/* Under mu. */
static int render_inflight(kin__buf *b) {
  kin_inflight *v = malloc(MAX_INFLIGHT * sizeof(*v));
  if (!v) return KIN_ENOMEM;
  uint64_t now = wall_now();
  kin__buf_puts(b, "{\"inflight\":[");
  int first = 1;
  for (size_t i = 0; i < nentries; i++) {
    kin_controller *c = entries[i].ctl;
    if (!c) continue;
    int n = kin_controller_inflight(c, v, MAX_INFLIGHT);
    for (int k = 0; k < n; k++) {
      kin__buf_puts(b, first ? "{\"controller\":" : ",{\"controller\":");
      first = 0;
      json_str(b, kin_controller_name(c));
      kin__buf_puts(b, ",\"key\":");
      json_str(b, v[k].key);
      kin__buf_printf(b, ",\"worker\":%d,\"seconds\":%.3f}", v[k].worker + 1,
                      now > v[k].start_wall_ns ? secs(now - v[k].start_wall_ns) : 0.0);
    }
  }
  kin__buf_puts(b, "]}");
  free(v);
  return 0;
}

static void render_entry(kin__buf *b, const kin_hist_entry *e) {
  static const char *const types[] = {"event", "reconcile", "write", "denial"};
  kin__buf_printf(b, "{\"type\":\"%s\",\"time\":%.3f", types[e->type <= 3 ? e->type : 0],
                  secs(e->wall_ns));
  if (e->type == KIN_HIST_EVENT) {
    kin__buf_printf(b, ",\"cause\":\"%s\",\"enqueued\":%s", kin_hist_cause_name(e->cause),
                    e->pred == KIN_PRED_DROPPED ? "false" : "true");
    if (e->pred != KIN_PRED_NONE)
      kin__buf_printf(b, ",\"predicates\":\"%s\"",
                      e->pred == KIN_PRED_DROPPED ? "dropped" : "passed");
    if (e->cause == KIN_CAUSE_REQUEUE_AFTER) kin__buf_printf(b, ",\"after\":%.3f", secs(e->dur_ns));
  } else if (e->type == KIN_HIST_RECONCILE) {
    kin__buf_printf(b, ",\"number\":%u,\"worker\":%d,\"duration\":%.6f,\"result\":\"%s\",\"writes\":%u",
                    (unsigned)e->seq, e->worker + 1, secs(e->dur_ns),
                    kin_hist_result_name(e->cause), (unsigned)e->code);
  } else {
    kin__buf_printf(b, ",\"number\":%u,\"code\":%u", (unsigned)e->seq, (unsigned)e->code);
  }
  kin__buf_puts(b, ",\"text\":");
  json_str(b, e->text);
  kin__buf_puts(b, "}");
}

/* Under mu. */
static int render_why(kin__buf *b, const char *key, const char *controller) {
  kin__buf_puts(b, "{\"key\":");
  json_str(b, key);
  kin__buf_puts(b, ",\"why\":[");
  int first = 1;
  char line[1600];
  for (size_t i = 0; i < nentries; i++) {
    kin_controller *c = entries[i].ctl;
    if (!c || (controller && *controller && strcmp(controller, kin_controller_name(c)) != 0))
      continue;
    kin_hist_entry *v;
    size_t n;
    if (kin_history_get(kin_controller_history(c), key, &v, &n) < 0) return KIN_ENOMEM;
    if (n == 0) continue;
    kin__buf_puts(b, first ? "{\"controller\":" : ",{\"controller\":");
    first = 0;
    json_str(b, kin_controller_name(c));
    kin__buf_puts(b, ",\"lines\":[");
    int fl = 1;
    for (size_t k = 0; k < n;) {
      size_t next = kin_hist_format(v, n, k, line, sizeof(line));
      for (char *s = line, *nl; *s; s = nl ? nl + 1 : s + strlen(s)) {
        nl = strchr(s, '\n');
        if (nl) *nl = 0;
        kin__buf_puts(b, fl ? "" : ",");
        fl = 0;
        json_str(b, s);
        if (!nl) break;
      }
      k = next;
    }
    kin__buf_puts(b, "],\"entries\":[");
    for (size_t k = 0; k < n; k++) {
      if (k) kin__buf_puts(b, ",");
      render_entry(b, &v[k]);
    }
    kin__buf_puts(b, "]}");
    free(v);
  }
  kin__buf_puts(b, "]}");
  return 0;
}

int kin_admin_render(const char *path, const char *key, const char *controller, char **body,
                     size_t *len) {
  kin__buf b = {0};
  int status = 200, rc = 0;
  pthread_mutex_lock(&mu);
  if (strcmp(path, "/caches") == 0) {
    render_caches(&b);
  } else if (strcmp(path, "/queues") == 0) {
    rc = render_queues(&b);
  } else if (strcmp(path, "/inflight") == 0) {
    rc = render_inflight(&b);
  } else if (strcmp(path, "/advise") == 0) {
    rc = render_advise(&b);
  } else if (strcmp(path, "/shards") == 0) {
    kin__buf_puts(&b, shards_doc ? shards_doc : "{\"sharding\":null}");
  } else if (strcmp(path, "/why") == 0) {
    if (key && *key) {
      rc = render_why(&b, key, controller);
    } else {
      status = 400;
      kin__buf_puts(&b, "{\"error\":\"why needs ?key=namespace/name\"}");
    }
  } else if (strcmp(path, "/") == 0) {
    kin__buf_puts(&b, "{\"endpoints\":[\"/caches\",\"/queues\",\"/inflight\",\"/advise\",\"/shards\","
                      "\"/why?key=\"]}");
  } else {
    status = 404;
    kin__buf_puts(&b, "{\"error\":\"not found\"}");
  }
  pthread_mutex_unlock(&mu);
  if (rc < 0 || b.oom) {
    kin__buf_free(&b);
    *body = NULL;
    *len = 0;
    return 500;
  }
  kin__buf_puts(&b, "\n");
  *len = b.len;
  *body = b.p;
  return status;
}
