/* fs_watch.c -- fs_watch.h: uv_fs_event handles on a private loop run by
 * a private thread; a uv_timer debounces; a uv_async stops the loop.
 *
 * Everything below the struct is touched by the watcher's thread only,
 * except stop (uv_async_send is thread-safe) and the setup in
 * kin_fs_watch_new, which runs before the thread starts. */
#include "fs_watch.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "kin.h"

struct kin_fs_watch {
  uv_loop_t loop;
  uv_async_t stop;
  uv_timer_t timer;
  uv_fs_event_t *ev; /* one per directory; nev started */
  size_t nev;
  char **dirs;       /* copies, ndirs */
  size_t ndirs;
  uv_thread_t thread;
  kin_fs_watch_cb cb;
  void *ud;
  unsigned debounce_ms;
  char **pending;    /* changed paths not yet delivered (loop thread) */
  size_t npending, cap;
};

static void free_pending(kin_fs_watch *w) {
  for (size_t i = 0; i < w->npending; i++) free(w->pending[i]);
  w->npending = 0;
}

/* The debounce timer: delivers the pending set. */
static void on_timer(uv_timer_t *t) {
  kin_fs_watch *w = t->data;
  if (w->npending) w->cb(w->ud, (const char *const *)w->pending, w->npending);
  free_pending(w);
}

/* Adds path (dir/name) to the pending set unless it is there. Out of
 * memory: the change is dropped (a later one is seen). */
static void note(kin_fs_watch *w, const char *dir, const char *name) {
  size_t n = strlen(dir) + (name ? strlen(name) + 1 : 0) + 1;
  char *p = malloc(n);
  if (!p) return;
  strcpy(p, dir);
  if (name) {
    strcat(p, "/");
    strcat(p, name);
  }
  for (size_t i = 0; i < w->npending; i++) {
    if (strcmp(w->pending[i], p) == 0) {
      free(p);
      return;
    }
  }
  if (w->npending == w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 8;
    char **np = realloc(w->pending, cap * sizeof(*np));
    if (!np) {
      free(p);
      return;
    }
    w->pending = np;
    w->cap = cap;
  }
  w->pending[w->npending++] = p;
}

static void on_event(uv_fs_event_t *h, const char *name, int events, int status) {
  (void)events;
  kin_fs_watch *w = h->loop->data;
  if (status < 0) return;
  note(w, h->data, name && *name ? name : NULL);
  uv_timer_start(&w->timer, on_timer, w->debounce_ms, 0);
}

static void close_all(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void on_stop(uv_async_t *a) { uv_walk(a->loop, close_all, NULL); }

static void run(void *arg) {
  kin_fs_watch *w = arg;
  uv_run(&w->loop, UV_RUN_DEFAULT);
}

/* Frees w after its loop ended (or never ran: handles closed here). */
static void destroy(kin_fs_watch *w) {
  uv_walk(&w->loop, close_all, NULL);
  uv_run(&w->loop, UV_RUN_DEFAULT); /* the close callbacks */
  uv_loop_close(&w->loop);
  free_pending(w);
  free(w->pending);
  for (size_t i = 0; i < w->ndirs; i++) free(w->dirs[i]);
  free(w->dirs);
  free(w->ev);
  free(w);
}

int kin_fs_watch_new(const char *const *dirs, size_t ndirs, unsigned debounce_ms,
                     kin_fs_watch_cb cb, void *ud, kin_fs_watch **out) {
  *out = NULL;
  if (!dirs || !ndirs || !cb) return KIN_EINVAL;
  kin_fs_watch *w = calloc(1, sizeof(*w));
  if (!w) return KIN_ENOMEM;
  if (uv_loop_init(&w->loop)) {
    free(w);
    return KIN_ENOMEM;
  }
  w->loop.data = w;
  w->cb = cb;
  w->ud = ud;
  w->debounce_ms = debounce_ms;
  int rc = KIN_ENOMEM;
  if (!(w->dirs = calloc(ndirs, sizeof(*w->dirs))) || !(w->ev = calloc(ndirs, sizeof(*w->ev))))
    goto fail;
  if (uv_async_init(&w->loop, &w->stop, on_stop) || uv_timer_init(&w->loop, &w->timer)) goto fail;
  w->timer.data = w;
  for (; w->ndirs < ndirs; w->ndirs++) {
    if (!(w->dirs[w->ndirs] = strdup(dirs[w->ndirs]))) goto fail;
  }
  for (; w->nev < ndirs; w->nev++) {
    uv_fs_event_t *h = &w->ev[w->nev];
    if (uv_fs_event_init(&w->loop, h)) goto fail;
    h->data = w->dirs[w->nev];
    int e = uv_fs_event_start(h, on_event, w->dirs[w->nev], 0);
    if (e) {
      rc = e == UV_ENOMEM ? KIN_ENOMEM : KIN_ENOENT;
      w->nev++; /* initialised: closed by destroy */
      goto fail;
    }
  }
  if (uv_thread_create(&w->thread, run, w)) goto fail;
  *out = w;
  return 0;
fail:
  destroy(w);
  return rc;
}

void kin_fs_watch_free(kin_fs_watch *w) {
  if (!w) return;
  uv_async_send(&w->stop);
  uv_thread_join(&w->thread);
  destroy(w);
}
