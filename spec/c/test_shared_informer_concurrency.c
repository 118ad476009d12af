/* test_shared_informer_concurrency.c -- kin_informer under concurrency:
 * handlers added and removed from many threads while events flow, and
 * client-go's TestHammerController (controller_test.go): every listener's
 * view stays consistent while producers add, update and delete. Fixture:
 * shared_informer_fx.h. */
#include "shared_informer_fx.h"

static int count_event(void *ud) {
  atomic_fetch_add((atomic_long *)ud, 1);
  return 0;
}
static int cnt_add(void *ud, kin_obj *o, int i) { return count_event(ud); }
static int cnt_update(void *ud, kin_obj *a, kin_obj *b) { return count_event(ud); }
static int cnt_delete(void *ud, kin_obj *o) { return count_event(ud); }

typedef struct {
  kin_informer *inf;
  atomic_long *events;
  unsigned seed;
  int saw_closed, failures, adds, removes;
} abuser;

/* Adds and removes handlers at random until the informer refuses them,
 * then removes what it still holds. */
static void *abuse_thread(void *arg) {
  abuser *a = arg;
  kin_listener *held[16];
  int n = 0;
  kin_event_handler h = {cnt_add, cnt_update, cnt_delete, NULL, NULL, a->events};
  for (;;) {
    if (n < 16 && (n == 0 || rand_r(&a->seed) % 2 == 0)) {
      kin_listener *l = NULL;
      int rc = kin_informer_add_handler(a->inf, &h, 1 * SEC, &l);
      if (rc == KIN_ECLOSED) {
        a->saw_closed = 1;
        break;
      }
      if (rc != 0) a->failures++;
      else held[n++] = l, a->adds++;
    } else {
      int i = (int)(rand_r(&a->seed) % (unsigned)n);
      if (kin_informer_remove_handler(a->inf, held[i]) != 0) a->failures++;
      a->removes++;
      held[i] = held[--n];
    }
  }
  while (n > 0) {
    if (kin_informer_remove_handler(a->inf, held[--n]) != 0) a->failures++;
    a->removes++;
  }
  return NULL;
}

/* TestSharedInformerHandlerAbuse: threads keep adding and removing
 * handlers while events flow and while the informer stops; run under
 * TSan. Afterwards every add was matched by a successful remove. */
static void test_shared_informer_HandlerAbuse(void **state) {
  (void)state;
  log_capture(1);
  kin_informer *inf = new_informer(NULL, 1 * SEC);
  atomic_long events;
  atomic_init(&events, 0);
  assert_int_equal(kin_informer_run(inf), 0);
  enum { NT = 4 };
  abuser ab[NT];
  pthread_t t[NT];
  for (int i = 0; i < NT; i++) {
    ab[i] = (abuser){.inf = inf, .events = &events, .seed = 17u + (unsigned)i};
    pthread_create(&t[i], NULL, abuse_thread, &ab[i]);
  }
  unsigned seed = 5;
  int present[40] = {0};
  for (int i = 0; i < 3000; i++) {
    int k = (int)(rand_r(&seed) % 40);
    char name[16], rv[16];
    snprintf(name, sizeof(name), "pod%d", k);
    snprintf(rv, sizeof(rv), "%d", i + 1);
    if (!present[k]) fifo_op(inf, 'a', name, rv), present[k] = 1;
    else if (rand_r(&seed) % 3) fifo_op(inf, 'u', name, rv);
    else fifo_op(inf, 'd', name, rv), present[k] = 0;
  }
  /* On a loaded machine the abusers may not have run yet: the stop must
   * come while they are active, so wait until some handler got an event
   * (a late handler gets synthetic adds for the cache). */
  KIN_EVENTUALLY(atomic_load(&events) > 0, 10000);
  kin_informer_stop(inf);
  int adds = 0;
  for (int i = 0; i < NT; i++) {
    pthread_join(t[i], NULL);
    assert_true(ab[i].saw_closed);
    assert_int_equal(ab[i].failures, 0);
    assert_int_equal(ab[i].adds, ab[i].removes);
    adds += ab[i].adds;
  }
  assert_true(adds > 0);
  assert_true(atomic_load(&events) > 0);
  kin_informer_free(inf);
  log_capture(0);
}

/* ---- hammer ------------------------------------------------------------- */

enum { HP = 4, HK = 16, HOPS = 400 };

/* What one listener believes, rebuilt from its notifications; every
 * impossible transition is a violation. */
typedef struct {
  pthread_mutex_t mu; /* guards the fields below */
  int present[HP][HK];
  long rv[HP][HK];
  int violations;
  long events;
  char last_violation[160];
} view;

static int parse_key(const char *key, int *p, int *k) {
  return sscanf(key, "ns/h%d_%d", p, k) == 2 && *p >= 0 && *p < HP && *k >= 0 && *k < HK;
}

static void violation(view *v, const char *what, const char *key) {
  v->violations++;
  snprintf(v->last_violation, sizeof(v->last_violation), "%s %s", what, key);
}

static int v_add(void *ud, kin_obj *o, int initial) {
  view *v = ud;
  int p, k;
  if (!parse_key(kin_obj_key(o), &p, &k)) return 0; /* the marker */
  pthread_mutex_lock(&v->mu);
  v->events++;
  if (v->present[p][k]) violation(v, "add of present", kin_obj_key(o));
  v->present[p][k] = 1;
  v->rv[p][k] = atol(kin_obj_resource_version(o));
  pthread_mutex_unlock(&v->mu);
  return 0;
}

static int v_update(void *ud, kin_obj *old, kin_obj *o) {
  view *v = ud;
  int p, k;
  if (!parse_key(kin_obj_key(o), &p, &k)) return 0;
  long orv = atol(kin_obj_resource_version(old)), nrv = atol(kin_obj_resource_version(o));
  pthread_mutex_lock(&v->mu);
  v->events++;
  if (!v->present[p][k]) violation(v, "update of absent", kin_obj_key(o));
  else if (v->rv[p][k] != orv) violation(v, "update from a state not seen", kin_obj_key(o));
  if (nrv < orv) violation(v, "update going back", kin_obj_key(o));
  v->rv[p][k] = nrv;
  pthread_mutex_unlock(&v->mu);
  return 0;
}

static int v_delete(void *ud, kin_obj *o) {
  view *v = ud;
  int p, k;
  if (!parse_key(kin_obj_key(o), &p, &k)) return 0;
  pthread_mutex_lock(&v->mu);
  v->events++;
  if (!v->present[p][k]) violation(v, "delete of absent", kin_obj_key(o));
  v->present[p][k] = 0;
  pthread_mutex_unlock(&v->mu);
  return 0;
}

typedef struct {
  kin_informer *inf;
  int id;
  int present[HK];
  long rv[HK];
  atomic_int *done;
} hammer_producer;

/* Random add/update/delete of its own keys; the resourceVersion of a key
 * grows with each operation, as on a real server. */
static void *hammer_thread(void *arg) {
  hammer_producer *h = arg;
  unsigned seed = 1234u + (unsigned)h->id;
  kin_delta_fifo *f = kin_informer_fifo(h->inf);
  for (int i = 0; i < HOPS; i++) {
    int k = (int)(rand_r(&seed) % HK);
    char json[200];
    long rv = ++h->rv[k];
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"h%d_%d\",\"namespace\":\"ns\",\"resourceVersion\":\"%ld\"}}",
             h->id, k, rv);
    kin_obj *o = NULL;
    if (kin_obj_parse(json, strlen(json), &o) != 0) continue;
    if (!h->present[k]) {
      kin_delta_fifo_add(f, o);
      h->present[k] = 1;
    } else if (rand_r(&seed) % 4) {
      kin_delta_fifo_update(f, o);
    } else {
      kin_delta_fifo_delete(f, o);
      h->present[k] = 0;
    }
    kin_obj_unref(o);
  }
  atomic_fetch_add(h->done, 1);
  return NULL;
}

/* TestHammerController: producers race through the FIFO while the
 * informer runs, resyncs tick and a handler joins late. At the end the
 * cache equals the producers' final state, and every listener saw, per
 * key, a consistent sequence (add only when absent, update from the state
 * it last saw, delete only when present) ending in that same state. */
static void test_shared_informer_HammerController(void **state) {
  (void)state;
  kin_clock *clk = kin_fake_clock_new(T0);
  kin_informer *inf = new_informer(clk, 1 * SEC);
  view views[3];
  kin_listener *ls[3];
  memset(views, 0, sizeof(views));
  for (int i = 0; i < 3; i++) pthread_mutex_init(&views[i].mu, NULL);
  kin_event_handler h0 = {v_add, v_update, v_delete, NULL, NULL, &views[0]};
  kin_event_handler h1 = {v_add, v_update, v_delete, NULL, NULL, &views[1]};
  kin_event_handler h2 = {v_add, v_update, v_delete, NULL, NULL, &views[2]};
  assert_int_equal(kin_informer_add_handler(inf, &h0, 0, &ls[0]), 0);
  assert_int_equal(kin_informer_add_handler(inf, &h1, 1 * SEC, &ls[1]), 0);
  assert_int_equal(kin_informer_run(inf), 0);

  atomic_int done;
  atomic_init(&done, 0);
  hammer_producer prod[HP];
  pthread_t t[HP];
  for (int i = 0; i < HP; i++) {
    memset(&prod[i], 0, sizeof(prod[i]));
    prod[i].inf = inf;
    prod[i].id = i;
    prod[i].done = &done;
    pthread_create(&t[i], NULL, hammer_thread, &prod[i]);
  }
  /* Resync ticks while producing; the late handler joins midway. */
  int joined = 0, steps = 0;
  while (atomic_load(&done) < HP || !joined || steps < 3) {
    if (kin_fake_clock_waiters(clk) == 1) {
      kin_fake_clock_step(clk, 1 * SEC);
      steps++;
    }
    if (!joined && (steps >= 3 || atomic_load(&done) == HP)) {
      assert_int_equal(kin_informer_add_handler(inf, &h2, 1 * SEC, &ls[2]), 0);
      joined = 1;
    }
    kin_test_sleep_ms(1);
  }
  for (int i = 0; i < HP; i++) pthread_join(t[i], NULL);
  wait_resync_idle(clk);

  /* Marker barrier, with a handler that only watches for it. */
  rec *mr = rec_new();
  add_rec(inf, mr, 0);
  barrier(inf, (rec *[]){mr}, 1);
  /* mr was added after every event: the others have been handed them all
   * once their queues are empty. */
  for (int i = 0; i < 3; i++) {
    KIN_EVENTUALLY(stat_pending(ls[i]) == 0, 10000);
    assert_true(kin_listener_has_synced(ls[i]));
  }

  kin_indexer *idx = kin_informer_indexer(inf);
  size_t present = 0;
  for (int p = 0; p < HP; p++)
    for (int k = 0; k < HK; k++) {
      char key[32];
      snprintf(key, sizeof(key), "ns/h%d_%d", p, k);
      kin_obj *o = kin_indexer_get(idx, key);
      assert_int_equal(o != NULL, prod[p].present[k]);
      if (o) {
        present++;
        assert_int_equal(atol(kin_obj_resource_version(o)), prod[p].rv[k]);
        kin_obj_unref(o);
      }
      for (int i = 0; i < 3; i++) {
        pthread_mutex_lock(&views[i].mu);
        int vp = views[i].present[p][k];
        long vrv = views[i].rv[p][k];
        pthread_mutex_unlock(&views[i].mu);
        assert_int_equal(vp, prod[p].present[k]);
        if (vp) assert_int_equal(vrv, prod[p].rv[k]);
      }
    }
  assert_int_equal(kin_indexer_len(idx), present);
  for (int i = 0; i < 3; i++) {
    pthread_mutex_lock(&views[i].mu);
    int viol = views[i].violations;
    char last[160];
    snprintf(last, sizeof(last), "%s", views[i].last_violation);
    long ev = views[i].events;
    pthread_mutex_unlock(&views[i].mu);
    if (viol) fail_msg("listener %d: %d violations, last: %s", i, viol, last);
    assert_true(ev > 0);
  }
  assert_true(steps > 0);
  kin_informer_free(inf);
  for (int i = 0; i < 3; i++) pthread_mutex_destroy(&views[i].mu);
  rec_free(mr);
  kin_fake_clock_free(clk);
}

KIN_SUITE(shared_informer_concurrency,
          cmocka_unit_test(test_shared_informer_HandlerAbuse),
          cmocka_unit_test(test_shared_informer_HammerController))
