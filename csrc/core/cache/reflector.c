/* reflector.c -- client-go's Reflector: the ListAndWatch loop, the
 * resourceVersion rules of a relist or a re-watch, and the backoff between
 * rounds (see reflector.h). Lists are in reflector_list.c, the watch stream
 * in reflector_watch.c.
 *
 * One round (ListAndWatch): WatchList or LIST, then watch until the watch
 * cannot resume; between rounds the exponential backoff of client-go's
 * wait.BackoffUntil (sliding: computed after the round). Within a round a
 * watch that ends is re-established from the last RV delivered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_span.h"
#include "kin.h"
#include "log.h"
#include "pb_json.h"
#include "pb_schema.h"
#include "reflector_int.h"
#include "shard_selector.h"

#define LOG "reflector"

/* ---- resourceVersion ------------------------------------------------------ */

void kin__rfl_set_rv_locked(kin_reflector *r, const char *rv) {
  size_t n = strlen(rv);
  if (n + 1 > r->last_rv_cap) {
    char *p = realloc(r->last_rv, n + 1);
    if (!p) return;
    r->last_rv = p;
    r->last_rv_cap = n + 1;
  }
  memcpy(r->last_rv, rv, n + 1);
}

char *kin__rfl_last_rv(kin_reflector *r) {
  pthread_mutex_lock(&r->mu);
  char *s = strdup(r->last_rv);
  pthread_mutex_unlock(&r->mu);
  return s;
}

void kin_reflector_last_sync_rv(kin_reflector *r, char *buf, size_t n) {
  if (!n) return;
  pthread_mutex_lock(&r->mu);
  snprintf(buf, n, "%s", r->last_rv);
  pthread_mutex_unlock(&r->mu);
}

void kin_reflector_get_stats(kin_reflector *r, kin_reflector_stats *st) {
  pthread_mutex_lock(&r->mu);
  *st = r->st;
  pthread_mutex_unlock(&r->mu);
}

/* ---- requests ------------------------------------------------------------- */

void kin__rfl_param(kin__buf *b, const char *name, const char *value) {
  kin__buf_printf(b, "%c%s=", b->p && memchr(b->p, '?', b->len) ? '&' : '?', name);
  kin__buf_query_escape(b, value);
}

void kin__rfl_url(kin_reflector *r, kin__buf *b) {
  kin__buf_puts(b, r->path);
  if (r->label_selector) kin__rfl_param(b, "labelSelector", r->label_selector);
  if (r->field_selector) kin__rfl_param(b, "fieldSelector", r->field_selector);
  if (r->shard_cur_str) kin__rfl_param(b, "shardSelector", r->shard_cur_str);
}

static void copy_span(char *dst, size_t cap, const char *js, const jsmntok_t *t) {
  size_t n = (size_t)(t->end - t->start);
  if (n >= cap) n = cap - 1;
  memcpy(dst, js + t->start, n);
  dst[n] = 0;
}

static void parse_status_json(const char *js, size_t len, kin__rfl_status *st);

/* 1 when the reflector of cfg asks for protobuf first: PROTOBUF, or AUTO
 * (as KIN_CONTENT_TYPE leaves it) for a group-version the protobuf schema
 * has, never for metadata only (PartialObjectMetadata is JSON here). */
static int asks_protobuf(const kin_reflector_config *cfg) {
  int ct = cfg->content_type;
  if (cfg->metadata_only) return 0;
  if (ct == KIN_CONTENT_AUTO) {
    const char *env = getenv("KIN_CONTENT_TYPE");
    if (env && !strcmp(env, "json")) ct = KIN_CONTENT_JSON;
    else if (env && !strcmp(env, "protobuf")) ct = KIN_CONTENT_PROTOBUF;
  }
  if (ct != KIN_CONTENT_AUTO) return ct == KIN_CONTENT_PROTOBUF;
  char av[256];
  const char *g = cfg->resource.group, *v = cfg->resource.version ? cfg->resource.version : "";
  int n = snprintf(av, sizeof av, "%s%s%s", g && *g ? g : "", g && *g ? "/" : "", v);
  return n > 0 && (size_t)n < sizeof av && kin__pb_serves(av, (size_t)n);
}

void kin__rfl_parse_status(const char *js, size_t len, kin__rfl_status *st) {
  char *pbjs = NULL;
  size_t pblen = len;
  if (js && kin__pb_is_enveloped(js, len) && (pbjs = malloc(len))) {
    /* a Status in protobuf: read its JSON */
    memcpy(pbjs, js, len);
    kin__pb_body_to_json(&pbjs, &pblen, NULL);
    if (kin__pb_is_enveloped(pbjs, pblen)) pblen = 0; /* unreadable */
    js = pbjs;
    len = pblen;
  }
  parse_status_json(js, len, st);
  free(pbjs);
}

/* kin__rfl_parse_status of a JSON body. */
static void parse_status_json(const char *js, size_t len, kin__rfl_status *st) {
  jsmntok_t *t;
  int n = js && len ? kin__span_tokenize(js, len, &t) : KIN_EINVAL;
  if (n < 0) return;
  int v;
  if ((v = kin__span_get(js, t, n, 0, "code")) >= 0 && t[v].type == JSMN_PRIMITIVE)
    st->code = strtol(js + t[v].start, NULL, 10);
  if ((v = kin__span_get(js, t, n, 0, "reason")) >= 0 && t[v].type == JSMN_STRING)
    copy_span(st->reason, sizeof(st->reason), js, &t[v]);
  if ((v = kin__span_get(js, t, n, 0, "message")) >= 0 && t[v].type == JSMN_STRING)
    copy_span(st->message, sizeof(st->message), js, &t[v]);
  int d = kin__span_get(js, t, n, 0, "details");
  if ((v = kin__span_get(js, t, n, d, "retryAfterSeconds")) >= 0 && t[v].type == JSMN_PRIMITIVE &&
      !st->retry_after_ns)
    st->retry_after_ns = (uint64_t)strtoul(js + t[v].start, NULL, 10) * KIN_NSEC_PER_SEC;
  /* client-go's isTooLargeResourceVersionError: the cause, or (older
   * servers) a Timeout whose cause or message says so. */
  int causes = kin__span_get(js, t, n, d, "causes");
  if (causes >= 0 && t[causes].type == JSMN_ARRAY) {
    int i = causes + 1;
    for (int k = 0; k < t[causes].size && i < n; k++) {
      int cr = kin__span_get(js, t, n, i, "reason"), cm = kin__span_get(js, t, n, i, "message");
      if ((cr >= 0 && kin__span_is(js, &t[cr], "ResourceVersionTooLarge")) ||
          (cm >= 0 && !strcmp(st->reason, "Timeout") &&
           kin__span_is(js, &t[cm], "Too large resource version")))
        st->too_large = 1;
      i = kin__span_skip(t, n, i);
    }
  }
  if (!strcmp(st->reason, "Timeout") && strstr(st->message, "Too large resource version"))
    st->too_large = 1;
  free(t);
}

int kin__rfl_is_expired(const kin__rfl_status *st) {
  return st->code == 410 || !strcmp(st->reason, "Expired") || !strcmp(st->reason, "Gone");
}

/* ---- waiting -------------------------------------------------------------- */

int kin__rfl_stopping(kin_reflector *r) {
  pthread_mutex_lock(&r->mu);
  int s = r->stopping;
  pthread_mutex_unlock(&r->mu);
  return s;
}

int kin__rfl_sleep(kin_reflector *r, uint64_t d) {
  pthread_mutex_lock(&r->mu);
  r->st.backoffs++;
  r->st.last_backoff_ns = d;
  uint64_t now = kin_clock_now(r->clock);
  uint64_t deadline = d > UINT64_MAX - now ? UINT64_MAX - 1 : now + d;
  while (!r->stopping && kin_clock_now(r->clock) < deadline)
    kin_clock_wait(r->clock, &r->cond, &r->mu, deadline);
  int stopping = r->stopping;
  pthread_mutex_unlock(&r->mu);
  return stopping ? KIN_ECANCELED : 0;
}

/* The next backoff of the round, stretched to a Retry-After. */
static int backoff(kin_reflector *r, uint64_t retry_after_ns) {
  uint64_t d = kin_backoff_manager_next(&r->backoff);
  return kin__rfl_sleep(r, d > retry_after_ns ? d : retry_after_ns);
}

/* ---- ListAndWatch --------------------------------------------------------- */

/* client-go's watchList: a WatchList stream from the last RV ("" when it
 * is unavailable) until its initial state is in. Returns 0 and the open
 * watch in *out, KIN_ECANCELED on stop, or an error (the caller falls back
 * to LIST). */
static int watch_list(kin_reflector *r, kin__rfl_watch **out) {
  *out = NULL;
  for (;;) {
    if (kin__rfl_stopping(r)) return KIN_ECANCELED;
    pthread_mutex_lock(&r->mu);
    char *rv = strdup(r->rv_unavailable ? "" : r->last_rv);
    pthread_mutex_unlock(&r->mu);
    if (!rv) return KIN_ENOMEM;
    kin__rfl_watch *w;
    int rc = kin__rfl_watch_start(r, rv, 1, &w);
    free(rv);
    if (rc) return rc;
    kin__rfl_status st;
    kin__rfl_outcome o = kin__rfl_watch_wait(r, w, 1, &st);
    if (o == KIN__RFL_INITIAL) {
      *out = w;
      return 0;
    }
    kin__rfl_watch_free(r, w);
    switch (o) {
    case KIN__RFL_STOPPED:
    case KIN__RFL_RESHARD:
      return KIN_ECANCELED;
    case KIN__RFL_RETRY:
      kin_log(KIN_LOG_INFO, LOG, "%s: watch-list got %ld - backing off", r->name, st.code);
      if (backoff(r, st.retry_after_ns)) return KIN_ECANCELED;
      continue;
    case KIN__RFL_EXPIRED:
      /* The RV is gone: stream the most recent state instead. */
      pthread_mutex_lock(&r->mu);
      r->rv_unavailable = 1;
      r->st.relists_expired++;
      pthread_mutex_unlock(&r->mu);
      continue;
    default:
      if (st.too_large) {
        pthread_mutex_lock(&r->mu);
        r->rv_unavailable = 1;
        r->st.relists_expired++;
        pthread_mutex_unlock(&r->mu);
        continue;
      }
      kin_log(KIN_LOG_WARN, LOG,
              "%s: the watch-list request ended without its initial state (%ld %s%s%s), falling "
              "back to LIST", r->name, st.code, st.reason, st.message[0] ? ": " : "", st.message);
      return KIN_EIO;
    }
  }
}

/* client-go's Reflector.watch: watches from the last RV until the watch
 * cannot be resumed; w is an already open watch (after a WatchList) or
 * NULL. Returns when the round is over. */
static void watch_loop(kin_reflector *r, kin__rfl_watch *w) {
  char *lost_at = NULL; /* last RV when the previous watch lost an event */
  int auth_retried = 0;
  for (;;) {
    if (!w) {
      if (kin__rfl_stopping(r) || kin__rfl_reshard_pending(r)) break;
      char *rv = kin__rfl_last_rv(r);
      int rc = rv ? kin__rfl_watch_start(r, rv, 0, &w) : KIN_ENOMEM;
      free(rv);
      if (rc) {
        kin_log(KIN_LOG_WARN, LOG, "%s: cannot start a watch: %s", r->name, kin_strerror(rc));
        break;
      }
    }
    kin__rfl_status st;
    kin__rfl_outcome o = kin__rfl_watch_wait(r, w, 0, &st);
    kin__rfl_watch_free(r, w);
    w = NULL;
    if (o == KIN__RFL_RESHARD) break; /* the round ends: list the new ranges */
    if (o == KIN__RFL_ENDED) continue;
    if (o == KIN__RFL_LOST) {
      /* Resume right after the last event delivered; when that is where
       * the previous loss happened too, the server keeps sending something
       * we cannot read: back off rather than spin. */
      char *rv = kin__rfl_last_rv(r);
      int again = rv && lost_at && !strcmp(rv, lost_at);
      free(lost_at);
      lost_at = rv;
      if (again && backoff(r, 0)) break;
      continue;
    }
    if (o == KIN__RFL_RETRY) {
      kin_log(KIN_LOG_INFO, LOG, "%s: watch got %s - backing off", r->name,
              st.code ? st.reason : st.refused ? "connection refused" : st.message);
      if (backoff(r, st.retry_after_ns)) break;
      continue;
    }
    if (o == KIN__RFL_UNAUTHORIZED && !auth_retried) {
      auth_retried = 1;
      kin_client_auth_failed(r->client);
      continue;
    }
    if (o == KIN__RFL_EXPIRED) {
      /* The watch cannot resume: relist at the last RV, which a LIST serves
       * (not older than), as client-go does. */
      kin_log(KIN_LOG_INFO, LOG, "%s: watch closed with %ld %s: %s - relisting", r->name, st.code,
              st.reason, st.message);
      pthread_mutex_lock(&r->mu);
      r->st.relists_expired++;
      pthread_mutex_unlock(&r->mu);
    } else if (o == KIN__RFL_SHORT) {
      kin_log(KIN_LOG_WARN, LOG,
              "%s: very short watch: unexpected watch close - watch lasted less than a second and "
              "no items received", r->name);
    } else if (o != KIN__RFL_STOPPED && st.code) {
      kin_log(KIN_LOG_WARN, LOG, "%s: watch ended with: %ld %s%s%s", r->name, st.code, st.reason,
              st.message[0] ? ": " : "", st.message);
    } else if (o != KIN__RFL_STOPPED) { /* no answer: the transport error says why */
      kin_log(KIN_LOG_WARN, LOG, "%s: watch ended with: %s", r->name,
              st.message[0] ? st.message : "the connection closed without an answer");
    }
    break;
  }
  free(lost_at);
}

/* One ListAndWatch round. */
static void list_and_watch(kin_reflector *r) {
  kin__rfl_watch *w = NULL;
  /* the ranges this round asks for and keeps (a change ends the round) */
  pthread_mutex_lock(&r->mu);
  if (r->reshard) r->st.shard_relists++;
  r->reshard_round = r->reshard;
  r->reshard = 0;
  pthread_mutex_unlock(&r->mu);
  kin__rfl_shard_refresh(r);
  int need_list = !r->watch_list;
  if (r->watch_list) {
    int rc = watch_list(r, &w);
    if (rc == KIN_ECANCELED) return;
    need_list = rc != 0;
  }
  if (need_list && kin__rfl_list(r)) return;
  watch_loop(r, w);
}

static void *reflector_main(void *arg) {
  kin_reflector *r = arg;
  kin_log(KIN_LOG_DEBUG, LOG, "%s: starting", r->name);
  while (!kin__rfl_stopping(r)) {
    list_and_watch(r);
    if (kin__rfl_stopping(r)) break;
    if (kin__rfl_reshard_pending(r)) continue; /* new ranges: list them at once */
    if (backoff(r, 0)) break;
  }
  kin_log(KIN_LOG_DEBUG, LOG, "%s: stopped", r->name);
  return NULL;
}

/* ---- lifecycle ------------------------------------------------------------ */

static char *dup_opt(const char *s, int *oom) {
  if (!s || !*s) return NULL;
  char *d = strdup(s);
  if (!d) *oom = 1;
  return d;
}

/* Frees r and the strings it owns. */
static void free_fields(kin_reflector *r) {
  kin_io_canceler_destroy(&r->list_cancel);
  free(r->last_rv);
  free(r->path);
  free(r->label_selector);
  free(r->field_selector);
  free(r->shard);
  free(r->shard_cur_str);
  kin_shard_selector_free(r->shard_cur);
  free(r->name);
  free(r);
}

/* Builds a stopped reflector in *out (the caller frees it with
 * kin_reflector_free); every string of cfg is copied. Nothing is leaked on
 * failure. */
int kin_reflector_new(const kin_reflector_config *cfg, kin_reflector **out) {
  *out = NULL;
  if (!cfg || !cfg->client || !cfg->fifo || !cfg->resource.resource || !cfg->resource.version)
    return KIN_EINVAL;
  char path[1024];
  int plen = kin_resource_path(&cfg->resource, cfg->namespace, path, sizeof(path));
  if (plen < 0) return KIN_EINVAL;
  kin_reflector *r = calloc(1, sizeof(*r));
  if (!r) return KIN_ENOMEM;
  if (kin_io_canceler_init(&r->list_cancel)) {
    free(r);
    return KIN_ENOMEM;
  }
  int oom = 0;
  r->client = cfg->client;
  r->fifo = cfg->fifo;
  r->clock = cfg->clock ? cfg->clock : kin_clock_real();
  r->path = dup_opt(path, &oom);
  r->label_selector = dup_opt(cfg->label_selector, &oom);
  r->field_selector = dup_opt(cfg->field_selector, &oom);
  r->st.shard_server_filtered = -1;
  if (cfg->shard_selector && *cfg->shard_selector) {
    kin_shard_selector *sel;
    char err[256];
    if (kin_shard_selector_parse(cfg->shard_selector, &sel, err, sizeof(err)) < 0) {
      kin_log(KIN_LOG_ERROR, LOG, "%s: shard selector: %s", cfg->name ? cfg->name : "reflector", err);
      free_fields(r);
      return KIN_EINVAL;
    }
    kin_shard_selector_free(sel);
    r->shard = dup_opt(cfg->shard_selector, &oom);
    r->shard_gen = 1;
  }
  if (cfg->name && *cfg->name) {
    r->name = dup_opt(cfg->name, &oom);
  } else {
    char nm[512];
    snprintf(nm, sizeof(nm), "%s%s%s/%s", cfg->resource.group ? cfg->resource.group : "",
             cfg->resource.group && *cfg->resource.group ? "/" : "", cfg->resource.version,
             cfg->resource.resource);
    r->name = dup_opt(nm, &oom);
  }
  r->metadata_only = cfg->metadata_only;
  r->watch_list = cfg->watch_list;
  r->proto = asks_protobuf(cfg);
  r->page_size = cfg->page_size;
  r->max_pages = cfg->max_pages > 0 ? cfg->max_pages : KIN_REFLECTOR_MAX_PAGES;
  r->idle_ns = cfg->idle_timeout_ns ? cfg->idle_timeout_ns : KIN_REFLECTOR_IDLE_TIMEOUT_NS;
  r->read_idle_ms = cfg->read_idle_ms;
  r->ping_ms = cfg->ping_timeout_ms;
  r->queue_max = cfg->queue_max_bytes ? cfg->queue_max_bytes : KIN_REFLECTOR_QUEUE_MAX_BYTES;
  kin_backoff_manager_init(
      &r->backoff, cfg->backoff_initial_ns ? cfg->backoff_initial_ns : KIN_REFLECTOR_BACKOFF_INITIAL_NS,
      cfg->backoff_max_ns ? cfg->backoff_max_ns : KIN_REFLECTOR_BACKOFF_MAX_NS,
      KIN_REFLECTOR_BACKOFF_RESET_NS, 2.0, 1.0, r->clock);
  r->last_rv = calloc(1, 16);
  r->last_rv_cap = 16;
  if (oom || !r->last_rv || !r->path) goto fail;
  if (pthread_mutex_init(&r->mu, NULL)) goto fail;
  if (kin_cond_init(&r->cond)) {
    pthread_mutex_destroy(&r->mu);
    goto fail;
  }
  if (kin_clock_subscribe(r->clock, &r->cond, &r->mu)) {
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->mu);
    goto fail;
  }
  *out = r;
  return 0;
fail:
  free_fields(r);
  return KIN_ENOMEM;
}

int kin_reflector_run(kin_reflector *r) {
  pthread_mutex_lock(&r->mu);
  if (r->started || r->stopping) {
    pthread_mutex_unlock(&r->mu);
    return KIN_EBUSY;
  }
  int rc = pthread_create(&r->thread, NULL, reflector_main, r);
  if (rc == 0) r->started = 1;
  pthread_mutex_unlock(&r->mu);
  return rc ? KIN_ENOMEM : 0;
}

void kin_reflector_stop(kin_reflector *r) {
  pthread_mutex_lock(&r->mu);
  r->stopping = 1;
  pthread_cond_broadcast(&r->cond);
  int join = r->started && !r->joined;
  r->joined = 1;
  pthread_mutex_unlock(&r->mu);
  /* The thread cancels its own watch when it sees stopping: it alone
   * holds the handle. A LIST page in flight is cancelled here. */
  kin_io_canceler_fire(&r->list_cancel);
  if (join) pthread_join(r->thread, NULL);
}

void kin_reflector_free(kin_reflector *r) {
  if (!r) return;
  kin_reflector_stop(r);
  kin_clock_unsubscribe(r->clock, &r->cond);
  pthread_cond_destroy(&r->cond);
  pthread_mutex_destroy(&r->mu);
  free_fields(r);
}
