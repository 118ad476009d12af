/* processor.c -- sharedProcessor: listeners in a doubly-linked list under a
 * reader-writer lock. distribute (the informer thread) only reads the list;
 * adding, removing and recomputing the syncing set write it. */
#include "processor.h"
#include "kin.h"

#include <string.h>

int kin__processor_init(kin__processor *p, kin_clock *clock) {
  memset(p, 0, sizeof(*p));
  p->clock = clock ? clock : kin_clock_real();
  int rc = kin__listener_group_init(&p->threads);
  if (rc < 0) return rc;
  rc = pthread_rwlock_init(&p->lock, NULL);
  if (rc != 0) kin__listener_group_destroy(&p->threads);
  return -rc;
}

void kin__processor_destroy(kin__processor *p) {
  kin__processor_stop(p);
  pthread_rwlock_wrlock(&p->lock);
  kin_listener *l = p->head;
  p->head = NULL;
  p->len = 0;
  pthread_rwlock_unlock(&p->lock);
  while (l) {
    kin_listener *next = l->next;
    l->prev = l->next = NULL;
    kin__listener_unref(l);
    l = next;
  }
  pthread_rwlock_destroy(&p->lock);
  kin__listener_group_destroy(&p->threads);
}

int kin__processor_add_listener(kin__processor *p, kin_listener *l) {
  pthread_rwlock_wrlock(&p->lock);
  if (!l->group) l->group = &p->threads; /* before its thread can start */
  if (p->started && !p->stopped) {
    int rc = kin__listener_start(l);
    if (rc < 0) {
      pthread_rwlock_unlock(&p->lock);
      return rc;
    }
  }
  l->syncing = 1;
  l->prev = NULL;
  l->next = p->head;
  if (p->head) p->head->prev = l;
  p->head = l;
  p->len++;
  pthread_rwlock_unlock(&p->lock);
  return 0;
}

/* Returns 1 when l is linked in p; lock held. */
static int linked(kin__processor *p, kin_listener *l) {
  for (kin_listener *it = p->head; it; it = it->next)
    if (it == l) return 1;
  return 0;
}

int kin__processor_remove_listener(kin__processor *p, kin_listener *l) {
  pthread_rwlock_wrlock(&p->lock);
  /* Compare by address before touching l: a stale handle must not be
   * dereferenced. */
  if (!l || !linked(p, l)) {
    pthread_rwlock_unlock(&p->lock);
    return KIN_ENOENT;
  }
  if (l->prev) l->prev->next = l->next;
  else p->head = l->next;
  if (l->next) l->next->prev = l->prev;
  l->prev = l->next = NULL;
  p->len--;
  pthread_rwlock_unlock(&p->lock);
  return 0;
}

int kin__processor_has_listener(kin__processor *p, kin_listener *l) {
  pthread_rwlock_rdlock(&p->lock);
  int r = linked(p, l);
  pthread_rwlock_unlock(&p->lock);
  return r;
}

size_t kin__processor_len(kin__processor *p) {
  pthread_rwlock_rdlock(&p->lock);
  size_t n = p->len;
  pthread_rwlock_unlock(&p->lock);
  return n;
}

int kin__processor_run(kin__processor *p) {
  int first_err = 0;
  pthread_rwlock_wrlock(&p->lock);
  if (!p->stopped) {
    for (kin_listener *l = p->head; l; l = l->next) {
      int rc = kin__listener_start(l);
      if (rc < 0 && first_err == 0) first_err = rc;
    }
    p->started = 1;
  }
  pthread_rwlock_unlock(&p->lock);
  return first_err;
}

void kin__processor_stop(kin__processor *p) {
  kin_listener *todo = NULL;
  pthread_rwlock_wrlock(&p->lock);
  p->stopped = 1;
  /* Take a reference on each so that a concurrent remove cannot free one
   * while it is being joined here; join outside the lock so a handler that
   * calls back into the informer is not blocked by us. */
  for (kin_listener *l = p->head; l; l = l->next) {
    kin__listener_request_stop(l);
    l->stop_next = todo;
    todo = kin__listener_ref(l);
  }
  pthread_rwlock_unlock(&p->lock);
  while (todo) {
    kin_listener *next = todo->stop_next;
    todo->stop_next = NULL;
    kin__listener_stop(todo);
    kin__listener_unref(todo);
    todo = next;
  }
  kin__listener_group_wait(&p->threads);
}

void kin__processor_distribute(kin__processor *p, const kin__note *n, int is_sync) {
  pthread_rwlock_rdlock(&p->lock);
  for (kin_listener *l = p->head; l; l = l->next)
    if (!is_sync || l->syncing) kin__listener_add(l, n);
  pthread_rwlock_unlock(&p->lock);
}

void kin__processor_distribute_n(kin__processor *p, const kin__batch_note *v, size_t n) {
  if (n == 0) return;
  pthread_rwlock_rdlock(&p->lock);
  for (kin_listener *l = p->head; l; l = l->next) kin__listener_add_n(l, v, n, l->syncing);
  pthread_rwlock_unlock(&p->lock);
}

int kin__processor_should_resync(kin__processor *p) {
  int needed = 0;
  pthread_rwlock_wrlock(&p->lock);
  uint64_t now = kin_clock_now(p->clock);
  for (kin_listener *l = p->head; l; l = l->next) {
    l->syncing = kin__listener_should_resync(l, now);
    if (l->syncing) {
      needed = 1;
      kin__listener_determine_next_resync(l, now);
    }
  }
  pthread_rwlock_unlock(&p->lock);
  return needed;
}

void kin__processor_resync_check_period_changed(kin__processor *p, uint64_t check_ns) {
  pthread_rwlock_rdlock(&p->lock);
  for (kin_listener *l = p->head; l; l = l->next)
    kin__listener_set_resync_period(
        l, kin__determine_resync_period(kin__listener_requested_resync_period(l), check_ns));
  pthread_rwlock_unlock(&p->lock);
}
