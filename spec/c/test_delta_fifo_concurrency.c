/* test_delta_fifo_concurrency.c -- a multi-producer/one-consumer hammer on
 * the DeltaFIFO, with a resyncing thread. Fixture: delta_fifo_fx.h. */
#include "delta_fifo_fx.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

enum { HAMMER_PRODUCERS = 4, HAMMER_KEYS = 40, HAMMER_ROUNDS = 15 };

typedef struct {
  kin_delta_fifo *f;
  int id;
} hammer_producer;

/* Each producer owns its keys: Add, Updates with rising rv, then deletes
 * the even keys with rv ROUNDS+1. */
static void *hammer_produce(void *arg) {
  hammer_producer *h = arg;
  char name[32];
  for (int r = 0; r < HAMMER_ROUNDS; r++) {
    for (int j = 0; j < HAMMER_KEYS; j++) {
      snprintf(name, sizeof(name), "p%d-k%02d", h->id, j);
      kin_obj *o = mk_raw(name, r + 1);
      int rc = r == 0 ? kin_delta_fifo_add(h->f, o) : kin_delta_fifo_update(h->f, o);
      kin_obj_unref(o);
      if (rc != 0) return (void *)1;
    }
  }
  for (int j = 0; j < HAMMER_KEYS; j += 2) {
    snprintf(name, sizeof(name), "p%d-k%02d", h->id, j);
    kin_obj *o = mk_raw(name, HAMMER_ROUNDS + 1);
    int rc = kin_delta_fifo_delete(h->f, o);
    kin_obj_unref(o);
    if (rc != 0) return (void *)1;
  }
  return NULL;
}

typedef struct {
  kin_delta_fifo *f;
  atomic_int *stop;
  int resyncs;
} hammer_resyncer;

static void *hammer_resync(void *arg) {
  hammer_resyncer *h = arg;
  /* at least one resync even if the producers finish first */
  do {
    if (kin_delta_fifo_resync(h->f) != 0) return (void *)1;
    h->resyncs++;
    sched_yield();
  } while (!atomic_load(h->stop));
  return NULL;
}

/* The consumer is the informer: it applies deltas to knownObjects inside
 * process (under the FIFO lock), and checks that every key's versions only
 * move forward, a Sync carrying exactly the state it last applied. */
typedef struct {
  kin_delta_fifo *f;
  known_set *known;
  kin__hmap last;   /* key -> last applied rv (as intptr_t) */
  long violations;
  long deltas, syncs;
} hammer_consumer;

static int hammer_process(void *ud, const char *key, const kin_deltas *d, int initial) {
  hammer_consumer *c = ud;
  for (size_t i = 0; i < d->len; i++) {
    kin_obj *o = d->v[i].obj;
    int rv = rv_of(o);
    void **slot = kin__hmap_get(&c->last, key);
    int last = slot ? (int)(intptr_t)*slot : 0;
    c->deltas++;
    if (strcmp(kin_obj_key(o), key) != 0) c->violations++;
    if (d->v[i].type == KIN_DELTA_SYNC) {
      c->syncs++;
      if (rv != last) c->violations++;
    } else if (rv <= last) {
      c->violations++;
    }
    if (d->v[i].type == KIN_DELTA_DELETED) {
      known_del(c->known, key);
    } else {
      void *old = NULL;
      kin__hmap_put(&c->known->m, key, kin_obj_ref(o), &old);
      kin_obj_unref(old);
    }
    kin__hmap_put(&c->last, key, (void *)(intptr_t)rv, NULL);
  }
  return 0;
}

static void *hammer_consume(void *arg) {
  hammer_consumer *c = arg;
  int rc;
  while ((rc = kin_delta_fifo_pop(c->f, hammer_process, c)) == 0) {
  }
  return rc == KIN_ECLOSED ? NULL : (void *)1;
}


static void test_delta_fifo_ConcurrentProducersOneConsumer(void **state) {
  (void)state;
  known_set k;
  known_init(&k, NULL);
  kin_delta_fifo *f = new_fifo(&k);
  atomic_int stop = 0;
  hammer_consumer c = {.f = f, .known = &k};
  kin__hmap_init(&c.last);
  hammer_resyncer rs = {f, &stop, 0};
  hammer_producer hp[HAMMER_PRODUCERS];
  pthread_t tp[HAMMER_PRODUCERS], tc, tr;
  assert_int_equal(pthread_create(&tc, NULL, hammer_consume, &c), 0);
  assert_int_equal(pthread_create(&tr, NULL, hammer_resync, &rs), 0);
  for (int i = 0; i < HAMMER_PRODUCERS; i++) {
    hp[i] = (hammer_producer){f, i};
    assert_int_equal(pthread_create(&tp[i], NULL, hammer_produce, &hp[i]), 0);
  }
  void *ret;
  for (int i = 0; i < HAMMER_PRODUCERS; i++) {
    pthread_join(tp[i], &ret);
    assert_null(ret);
  }
  atomic_store(&stop, 1);
  pthread_join(tr, &ret);
  assert_null(ret);
  kin_delta_fifo_close(f);
  pthread_join(tc, &ret);
  assert_null(ret);

  assert_int_equal(c.violations, 0);
  assert_true(rs.resyncs > 0);
  assert_int_equal(kin_delta_fifo_len(f), 0);
  /* The consumer ends with exactly the producers' final state. */
  assert_int_equal(kin__hmap_len(&k.m), HAMMER_PRODUCERS * HAMMER_KEYS / 2);
  for (int i = 0; i < HAMMER_PRODUCERS; i++) {
    for (int j = 0; j < HAMMER_KEYS; j++) {
      char name[32];
      snprintf(name, sizeof(name), "p%d-k%02d", i, j);
      void **v = kin__hmap_get(&k.m, name);
      if (j % 2 == 0) {
        assert_null(v);
      } else {
        assert_non_null(v);
        assert_int_equal(rv_of(*v), HAMMER_ROUNDS);
      }
    }
  }
  kin__hmap_free(&c.last);
  kin_delta_fifo_free(f);
  known_free(&k);
}
KIN_SUITE(delta_fifo_concurrency,
          cmocka_unit_test(test_delta_fifo_ConcurrentProducersOneConsumer))
