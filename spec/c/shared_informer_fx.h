/* shared_informer_fx.h -- fixture of the shared informer specs
 * (test_shared_informer*.c): an informer on a fake clock fed through its
 * DeltaFIFO directly (Replace = a relist, add/update/delete = watch events),
 * recorders (handler_rec.h) as handlers, and a barrier: a marker object is
 * added and deleted, and once a listener saw the marker's delete it has been
 * handed everything queued before. Header-only (static inline), like
 * reflector_fx.h. */
#ifndef KIN_SHARED_INFORMER_FX_H
#define KIN_SHARED_INFORMER_FX_H

#include "kin_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "delta_fifo.h"
#include "indexer.h"
#include "kin.h"
#include "kobj.h"
#include "shared_informer.h"

#include "handler_rec.h"

#define SEC KIN_NSEC_PER_SEC
#define T0 (1000 * SEC)

static inline kin_informer *new_informer(kin_clock *clk, uint64_t resync) {
  kin_informer_config cfg = {.clock = clk, .default_resync_ns = resync, .name = "test/pods"};
  kin_informer *inf = NULL;
  assert_int_equal(kin_informer_new(&cfg, &inf), 0);
  assert_non_null(inf);
  return inf;
}

static inline kin_listener *add_rec(kin_informer *inf, rec *r, uint64_t resync) {
  kin_event_handler h = handler_for(r);
  kin_listener *l = NULL;
  assert_int_equal(kin_informer_add_handler(inf, &h, resync, &l), 0);
  assert_non_null(l);
  return l;
}

static inline void fifo_op(kin_informer *inf, char op, const char *name, const char *rv) {
  kin_obj *o = mk(name, rv);
  kin_delta_fifo *f = kin_informer_fifo(inf);
  int rc = op == 'a' ? kin_delta_fifo_add(f, o)
           : op == 'u' ? kin_delta_fifo_update(f, o) : kin_delta_fifo_delete(f, o);
  assert_int_equal(rc, 0);
  kin_obj_unref(o);
}

/* Relist: spec is "name:rv,name:rv". */
static inline void relist(kin_informer *inf, const char *spec) {
  kin_obj *objs[32];
  size_t n = 0;
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", spec);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *c = strchr(tok, ':');
    *c = 0;
    objs[n++] = mk(tok, c + 1);
  }
  assert_int_equal(kin_delta_fifo_replace(kin_informer_fifo(inf), objs, n, "100"), 0);
  for (size_t i = 0; i < n; i++) kin_obj_unref(objs[i]);
}

static __attribute__((unused)) int marker_seq;

/* Adds and deletes a fresh marker object and waits until every recorder in
 * rs has seen the delete: everything distributed before has been handed to
 * their handlers. */
static inline void barrier(kin_informer *inf, rec **rs, int n) {
  char name[32], want[64];
  snprintf(name, sizeof(name), "marker%d", ++marker_seq);
  fifo_op(inf, 'a', name, "1");
  fifo_op(inf, 'd', name, "1");
  snprintf(want, sizeof(want), "delete ns/%s 1", name);
  for (int i = 0; i < n; i++) KIN_EVENTUALLY(rec_has(rs[i], want), 10000);
}

/* Waits until the resync thread sleeps on the fake clock. */
static inline void wait_resync_idle(kin_clock *clk) { KIN_EVENTUALLY(kin_fake_clock_waiters(clk) == 1, 5000); }

static __attribute__((unused)) char dump_buf[8192];
#define DUMP(r, from) rec_dump((r), (from), "marker", dump_buf, sizeof(dump_buf))

static inline uint64_t stat_pending(kin_listener *l) {
  kin_listener_stats st;
  kin_listener_get_stats(l, &st);
  return st.pending;
}

static inline const char *cached_rv(kin_informer *inf, const char *key, char *buf) {
  kin_obj *o = kin_indexer_get(kin_informer_indexer(inf), key);
  if (!o) return "absent";
  snprintf(buf, 32, "%s", kin_obj_resource_version(o));
  kin_obj_unref(o);
  return buf;
}

#endif
