/* test_controller_handlers.c -- port of controller-runtime pkg/handler
 * eventhandler_test.go (EnqueueRequestForObject, EnqueueRequestForOwner,
 * EnqueueRequestsFromMapFunc), with the predicates of source.Kind's event
 * handler in front. The handlers are called directly, as the Go tests call
 * instance.Create(evt, q), and the queue is read back in order. */
#include "kin_test.h"

#include <stdio.h>
#include <string.h>

#include "controller_handlers.h"
#include "handler_rec.h"
#include "kin.h"
#include "workqueue.h"

#define REF(name, kind, av, extra)                                                         \
  "{\"apiVersion\":\"" av "\",\"kind\":\"" kind "\",\"name\":\"" name "\",\"uid\":\"u-" name \
  "\"" extra "}"
#define CTL ",\"controller\":true"
#define RS(name, extra) REF(name, "ReplicaSet", "apps/v1", extra)

typedef struct {
  kin_workqueue *q;
  kin_enqueue_handler *h;
  kin_event_handler eh;
} env;

static kin_workqueue *new_queue(void) {
  kin_workqueue_config qc = {.name = "handler-test"};
  kin_workqueue *q = NULL;
  assert_int_equal(kin_workqueue_new(&qc, &q), 0);
  return q;
}

static env setup(kin_handler_config cfg) {
  env e = {.q = new_queue()};
  assert_int_equal(kin_enqueue_handler_new(e.q, &cfg, &e.h), 0);
  e.eh = kin_enqueue_handler_callbacks(e.h);
  return e;
}

static env owner_env(const char *group, const char *kind, int all_owners) {
  kin_handler_config cfg = {.kind = KIN_ENQUEUE_REQUEST_FOR_OWNER, .owner_group = group,
                            .owner_kind = kind, .all_owners = all_owners};
  return setup(cfg);
}

static void teardown(env *e) {
  kin_enqueue_handler_free(e->h);
  kin_workqueue_free(e->q);
}

/* Takes every queued item, in queue order, joined with ','. */
static const char *drain(kin_workqueue *q, char *buf, size_t cap) {
  buf[0] = 0;
  while (kin_workqueue_len(q) > 0) {
    const char *item;
    assert_int_equal(kin_workqueue_get(q, &item), 0);
    size_t used = strlen(buf);
    snprintf(buf + used, cap - used, "%s%s", used ? "," : "", item);
    kin_workqueue_done(q, item);
  }
  return buf;
}

#define ASSERT_QUEUE(q, want)                                                              \
  do {                                                                                     \
    char buf_[512];                                                                        \
    assert_string_equal(drain(q, buf_, sizeof(buf_)), want);                               \
  } while (0)

/* A pod in ns with the given ownerReferences (a JSON array body). */
static kin_obj *pod_owned(const char *ns, const char *name, const char *refs) {
  char extra[1024];
  snprintf(extra, sizeof(extra), "\"ownerReferences\":[%s]", refs ? refs : "");
  return kin_test_obj_ext(ns, name, "1", NULL, refs ? extra : NULL);
}

/* Delivers a delete of o, then of a tombstone (DeletedFinalStateUnknown)
 * holding o: both enqueue want. Drops the caller's reference to o. */
static void delete_events(env *e, kin_obj *o, const char *want) {
  assert_int_equal(e->eh.on_delete(e->eh.ud, o), 0);
  ASSERT_QUEUE(e->q, want);
  kin_obj *t = kin_obj_tombstone(kin_obj_key(o), o);
  assert_non_null(t);
  assert_int_equal(e->eh.on_delete(e->eh.ud, t), 0);
  ASSERT_QUEUE(e->q, want);
  kin_obj_unref(t);
  kin_obj_unref(o);
}

static void create_event(env *e, kin_obj *o) {
  assert_int_equal(e->eh.on_add(e->eh.ud, o, 0), 0);
  kin_obj_unref(o);
}

/* ---- EnqueueRequestForObject ------------------------------------------- */

static env object_env(kin_predicate *p) {
  kin_handler_config cfg = {.kind = KIN_ENQUEUE_REQUEST_FOR_OBJECT, .predicate = p};
  return setup(cfg);
}

static void test_controller_handlers_ForObject_CreateEvent(void **state) {
  env e = object_env(NULL);
  create_event(&e, kin_test_obj("biz", "baz", "1", NULL));
  ASSERT_QUEUE(e.q, "biz/baz");
  /* a cluster-scoped object gives a request without namespace */
  create_event(&e, kin_test_obj(NULL, "node-1", "1", NULL));
  ASSERT_QUEUE(e.q, "node-1");
  teardown(&e);
}

static void test_controller_handlers_ForObject_DeleteEvent(void **state) {
  env e = object_env(NULL);
  delete_events(&e, kin_test_obj("biz", "baz", "1", NULL), "biz/baz");
  /* a tombstone without an object is dropped, as controller-runtime does */
  kin_obj *t = kin_obj_tombstone("biz/gone", NULL);
  log_capture(1);
  assert_int_equal(e.eh.on_delete(e.eh.ud, t), 0);
  assert_int_equal(kin_workqueue_len(e.q), 0);
  assert_true(log_contains("tombstone of biz/gone without a last known state"));
  log_capture(0);
  kin_obj_unref(t);
  teardown(&e);
}

/* "should enqueue a Request with the Name / Namespace of one object in the
 * UpdateEvent": the new one. */
static void test_controller_handlers_ForObject_UpdateEvent(void **state) {
  env e = object_env(NULL);
  kin_obj *old = kin_test_obj("biz", "baz", "1", NULL);
  kin_obj *neu = kin_test_obj("biz2", "baz2", "2", NULL);
  assert_int_equal(e.eh.on_update(e.eh.ud, old, neu), 0);
  ASSERT_QUEUE(e.q, "biz2/baz2");
  kin_obj_unref(old);
  kin_obj_unref(neu);
  teardown(&e);
}

/* ---- EnqueueRequestForOwner -------------------------------------------- */

static void test_controller_handlers_ForOwner_CreateEvent(void **state) {
  env e = owner_env("apps", "ReplicaSet", 0);
  create_event(&e, pod_owned("biz", "baz", RS("foo-parent", CTL)));
  ASSERT_QUEUE(e.q, "biz/foo-parent");
  teardown(&e);
}

static void test_controller_handlers_ForOwner_DeleteEvent(void **state) {
  env e = owner_env("apps", "ReplicaSet", 0);
  delete_events(&e, pod_owned("biz", "baz", RS("foo-parent", CTL)), "biz/foo-parent");
  teardown(&e);
}

/* "should enqueue a Request with the Owners of both objects in the
 * UpdateEvent" */
static void test_controller_handlers_ForOwner_UpdateEvent(void **state) {
  env e = owner_env("apps", "ReplicaSet", 0);
  kin_obj *old = pod_owned("biz", "baz", RS("foo1-parent", CTL));
  kin_obj *neu = pod_owned("biz2", "baz2", RS("foo2-parent", CTL));
  assert_int_equal(e.eh.on_update(e.eh.ud, old, neu), 0);
  ASSERT_QUEUE(e.q, "biz/foo1-parent,biz2/foo2-parent");
  /* an unchanged owner is one request */
  assert_int_equal(e.eh.on_update(e.eh.ud, old, old), 0);
  ASSERT_QUEUE(e.q, "biz/foo1-parent");
  kin_obj_unref(old);
  kin_obj_unref(neu);
  teardown(&e);
}

static void test_controller_handlers_ForOwner_NoOwnersMatchingGroupAndKind(void **state) {
  for (int all = 0; all <= 1; all++) {
    env e = owner_env("apps", "ReplicaSet", all);
    create_event(&e, pod_owned("biz", "baz",
                               REF("foo1-parent", "ReplicaSet", "extensions/v1", CTL) /* group */
                               "," REF("foo2-parent", "Deployment", "apps/v1", CTL))); /* kind */
    ASSERT_QUEUE(e.q, "");
    teardown(&e);
  }
}

static void test_controller_handlers_ForOwner_MatchingGroupAndKindDifferentVersion(void **state) {
  env e = owner_env("autoscaling", "HorizontalPodAutoscaler", 0);
  create_event(&e, pod_owned("biz", "baz",
                             REF("foo-parent", "HorizontalPodAutoscaler", "autoscaling/v2beta1",
                                 CTL)));
  ASSERT_QUEUE(e.q, "biz/foo-parent");
  teardown(&e);
}

/* "should enqueue a Request for a owner that is cluster scoped" */
static void test_controller_handlers_ForOwner_ClusterScopedOwner(void **state) {
  kin_handler_config cfg = {.kind = KIN_ENQUEUE_REQUEST_FOR_OWNER, .owner_group = "",
                            .owner_kind = "Node", .owner_cluster_scoped = 1};
  env e = setup(cfg);
  create_event(&e, pod_owned("biz", "baz", REF("node-1", "Node", "v1", CTL)));
  ASSERT_QUEUE(e.q, "node-1");
  /* the core group is "", so a Node of another group is not the owner */
  create_event(&e, pod_owned("biz", "baz", REF("node-2", "Node", "example.com/v1", CTL)));
  ASSERT_QUEUE(e.q, "");
  teardown(&e);
}

static void test_controller_handlers_ForOwner_NoOwners(void **state) {
  for (int all = 0; all <= 1; all++) {
    env e = owner_env("apps", "ReplicaSet", all);
    create_event(&e, pod_owned("biz", "baz", NULL));
    create_event(&e, pod_owned("biz", "baz2", ""));
    ASSERT_QUEUE(e.q, "");
    teardown(&e);
  }
}

/* "with the Controller field set to true": only the first controller
 * reference. */
static void test_controller_handlers_ForOwner_OnlyFirstControllerOwner(void **state) {
  env e = owner_env("apps", "ReplicaSet", 0);
  create_event(&e, pod_owned("biz", "baz",
                             RS("foo1-parent", "") "," RS("foo2-parent", CTL) "," RS(
                                 "foo3-parent", "") "," RS("foo4-parent", CTL) "," RS("foo5-parent",
                                                                                      "")));
  ASSERT_QUEUE(e.q, "biz/foo2-parent");
  teardown(&e);
}

static void test_controller_handlers_ForOwner_NoControllerOwners(void **state) {
  env e = owner_env("apps", "ReplicaSet", 0);
  create_event(&e, pod_owned("biz", "baz",
                             RS("foo1-parent", "") "," RS("foo2-parent", ",\"controller\":false")));
  ASSERT_QUEUE(e.q, "");
  teardown(&e);
}

/* "with the Controller field set to false": every matching owner. */
static void test_controller_handlers_ForOwner_AllOwners(void **state) {
  env e = owner_env("apps", "ReplicaSet", 1);
  create_event(&e, pod_owned("biz", "baz",
                             RS("foo1-parent", "") "," REF("dep", "Deployment", "apps/v1", CTL)
                                 "," RS("foo2-parent", CTL) "," RS("foo3-parent", "")));
  ASSERT_QUEUE(e.q, "biz/foo1-parent,biz/foo2-parent,biz/foo3-parent");
  teardown(&e);
}

/* "with an invalid APIVersion in the OwnerReference": nothing for that
 * reference, and (controller-runtime returns there) for those after it. */
static void test_controller_handlers_ForOwner_InvalidAPIVersion(void **state) {
  log_capture(1);
  for (int all = 0; all <= 1; all++) {
    env e = owner_env("apps", "ReplicaSet", all);
    create_event(&e, pod_owned("biz", "baz",
                               REF("foo1-parent", "ReplicaSet", "apps/v1/fail", CTL)));
    ASSERT_QUEUE(e.q, "");
    teardown(&e);
  }
  assert_true(log_contains("could not parse OwnerReference APIVersion apps/v1/fail of biz/baz"));
  env e = owner_env("apps", "ReplicaSet", 1);
  create_event(&e, pod_owned("biz", "baz",
                             RS("ok-parent", "") "," REF("bad", "ReplicaSet", "a/b/c", "")
                                 "," RS("late-parent", "")));
  ASSERT_QUEUE(e.q, "biz/ok-parent");
  teardown(&e);
  log_capture(0);
}

static void test_controller_handlers_ParseGroupVersion(void **state) {
  char g[32];
  assert_int_equal(kin_api_version_group("apps/v1", g, sizeof(g)), 0);
  assert_string_equal(g, "apps");
  assert_int_equal(kin_api_version_group("v1", g, sizeof(g)), 0);
  assert_string_equal(g, "");
  assert_int_equal(kin_api_version_group("", g, sizeof(g)), 0);
  assert_string_equal(g, "");
  assert_int_equal(kin_api_version_group("apps/v1/fail", g, sizeof(g)), KIN_EINVAL);
  assert_int_equal(kin_api_version_group("averyveryverylonggroup.example.com/v1", g, 8),
                   KIN_EINVAL);
}

/* ---- EnqueueRequestsFromMapFunc ---------------------------------------- */

/* Maps an object to "<ns>/<name>-mapped" and to the cluster-scoped
 * "<name>-cluster"; fails for objects named "bad" after one request. */
static int map_fn(void *ud, kin_obj *o, kin_request_emit_fn emit, void *ctx) {
  char name[128];
  int *calls = ud;
  (*calls)++;
  snprintf(name, sizeof(name), "%s-mapped", kin_obj_name(o));
  int rc = emit(ctx, kin_obj_namespace(o), name);
  if (strcmp(kin_obj_name(o), "bad") == 0) return KIN_EINVAL;
  snprintf(name, sizeof(name), "%s-cluster", kin_obj_name(o));
  return rc < 0 ? rc : emit(ctx, NULL, name);
}

static env map_env(int *calls) {
  kin_handler_config cfg = {.kind = KIN_ENQUEUE_REQUESTS_FROM_MAP_FUNC, .map = map_fn, .ud = calls};
  return setup(cfg);
}

static void test_controller_handlers_MapFunc_CreateEvent(void **state) {
  int calls = 0;
  env e = map_env(&calls);
  create_event(&e, kin_test_obj("biz", "baz", "1", NULL));
  ASSERT_QUEUE(e.q, "biz/baz-mapped,baz-cluster");
  assert_int_equal(calls, 1);
  teardown(&e);
}

static void test_controller_handlers_MapFunc_DeleteEvent(void **state) {
  int calls = 0;
  env e = map_env(&calls);
  delete_events(&e, kin_test_obj("biz", "baz", "1", NULL), "biz/baz-mapped,baz-cluster");
  assert_int_equal(calls, 2);
  teardown(&e);
}

/* "should enqueue a Request with the function applied to both objects in
 * the UpdateEvent" */
static void test_controller_handlers_MapFunc_UpdateEvent(void **state) {
  int calls = 0;
  env e = map_env(&calls);
  kin_obj *old = kin_test_obj("biz", "baz", "1", NULL);
  kin_obj *neu = kin_test_obj("biz2", "baz2", "2", NULL);
  assert_int_equal(e.eh.on_update(e.eh.ud, old, neu), 0);
  ASSERT_QUEUE(e.q, "biz/baz-mapped,baz-cluster,biz2/baz2-mapped,baz2-cluster");
  assert_int_equal(calls, 2);
  kin_obj_unref(old);
  kin_obj_unref(neu);
  teardown(&e);
}

static void test_controller_handlers_MapFunc_Error(void **state) {
  int calls = 0;
  env e = map_env(&calls);
  kin_obj *o = kin_test_obj("biz", "bad", "1", NULL);
  /* the error reaches the listener, which logs it; what was emitted stays */
  assert_int_equal(e.eh.on_add(e.eh.ud, o, 0), KIN_EINVAL);
  ASSERT_QUEUE(e.q, "biz/bad-mapped");
  kin_obj_unref(o);
  teardown(&e);
}

/* ---- predicates in front of the handler -------------------------------- */

static void test_controller_handlers_PredicatesFilterBeforeEnqueue(void **state) {
  kin_predicate *p = NULL;
  assert_int_equal(kin_predicate_from_name("generation_changed", &p), 0);
  env e = object_env(p);
  kin_obj *g1 = kin_test_obj_ext("biz", "baz", "1", NULL, "\"generation\":1");
  kin_obj *g1b = kin_test_obj_ext("biz", "baz", "2", NULL, "\"generation\":1");
  kin_obj *g2 = kin_test_obj_ext("biz", "baz", "3", NULL, "\"generation\":2");
  assert_int_equal(e.eh.on_add(e.eh.ud, g1, 1), 0); /* create passes */
  ASSERT_QUEUE(e.q, "biz/baz");
  assert_int_equal(e.eh.on_update(e.eh.ud, g1, g1b), 0); /* status-only update */
  ASSERT_QUEUE(e.q, "");
  assert_int_equal(e.eh.on_update(e.eh.ud, g1b, g2), 0);
  ASSERT_QUEUE(e.q, "biz/baz");
  assert_int_equal(e.eh.on_delete(e.eh.ud, g2), 0); /* delete passes */
  ASSERT_QUEUE(e.q, "biz/baz");
  kin_enqueue_handler_stats st;
  kin_enqueue_handler_get_stats(e.h, &st);
  assert_int_equal(st.events, 4);
  assert_int_equal(st.filtered, 1);
  assert_int_equal(st.requests, 3);
  kin_obj_unref(g1);
  kin_obj_unref(g1b);
  kin_obj_unref(g2);
  teardown(&e);
}

/* A resync (OnUpdate(obj, obj)) enqueues without predicates and is dropped
 * by ResourceVersionChangedPredicate. */
static void test_controller_handlers_ResyncUpdate(void **state) {
  kin_obj *o = pod_owned("biz", "baz", RS("foo-parent", CTL));
  env e = object_env(NULL);
  assert_int_equal(e.eh.on_update(e.eh.ud, o, o), 0);
  ASSERT_QUEUE(e.q, "biz/baz");
  teardown(&e);
  kin_predicate *p = NULL;
  assert_int_equal(kin_predicate_from_name("resource_version_changed", &p), 0);
  kin_handler_config cfg = {.kind = KIN_ENQUEUE_REQUEST_FOR_OWNER, .owner_group = "apps",
                            .owner_kind = "ReplicaSet", .predicate = p};
  e = setup(cfg);
  assert_int_equal(e.eh.on_update(e.eh.ud, o, o), 0);
  ASSERT_QUEUE(e.q, "");
  kin_obj_unref(o);
  teardown(&e);
}

/* Predicates of a delete see the tombstone's last known state. */
static void test_controller_handlers_DeletePredicateSeesLastState(void **state) {
  kin_obj *o = kin_test_obj("biz", "baz", "1", "{\"app\":\"web\"}");
  kin_obj *t = kin_obj_tombstone("biz/baz", o);
  const char *sels[] = {"app=web", "app=db"};
  const char *want[] = {"biz/baz", ""};
  for (int i = 0; i < 2; i++) {
    kin_predicate *p = NULL;
    assert_int_equal(kin_predicate_label_selector(sels[i], &p, NULL, 0), 0);
    env e = object_env(p);
    assert_int_equal(e.eh.on_delete(e.eh.ud, t), 0);
    ASSERT_QUEUE(e.q, want[i]);
    teardown(&e);
  }
  kin_obj_unref(t);
  kin_obj_unref(o);
}

static int hook_calls;
static int hook_start(void *ud) {
  hook_calls += 1;
  return *(int *)ud;
}
static void hook_stop(void *ud) { hook_calls += 10; }

static void test_controller_handlers_HooksAndConfig(void **state) {
  int start_rc = 7;
  hook_calls = 0;
  kin_handler_config cfg = {.kind = KIN_ENQUEUE_REQUEST_FOR_OBJECT, .on_start = hook_start,
                            .on_stop = hook_stop, .ud = &start_rc};
  env e = setup(cfg);
  assert_int_equal(e.eh.on_start(e.eh.ud), 7);
  e.eh.on_stop(e.eh.ud);
  assert_int_equal(hook_calls, 11);
  teardown(&e);

  kin_workqueue *q = new_queue();
  kin_enqueue_handler *h = NULL;
  kin_handler_config bad_owner = {.kind = KIN_ENQUEUE_REQUEST_FOR_OWNER, .owner_group = "apps"};
  assert_int_equal(kin_enqueue_handler_new(q, &bad_owner, &h), KIN_EINVAL);
  kin_predicate *p = NULL;
  assert_int_equal(kin_predicate_from_name("label_changed", &p), 0);
  kin_handler_config bad_map = {.kind = KIN_ENQUEUE_REQUESTS_FROM_MAP_FUNC, .predicate = p};
  assert_int_equal(kin_enqueue_handler_new(q, &bad_map, &h), KIN_EINVAL); /* frees p */
  assert_null(h);
  kin_workqueue_free(q);
}

KIN_SUITE(controller_handlers, cmocka_unit_test(test_controller_handlers_ForObject_CreateEvent),
          cmocka_unit_test(test_controller_handlers_ForObject_DeleteEvent),
          cmocka_unit_test(test_controller_handlers_ForObject_UpdateEvent),
          cmocka_unit_test(test_controller_handlers_ForOwner_CreateEvent),
          cmocka_unit_test(test_controller_handlers_ForOwner_DeleteEvent),
          cmocka_unit_test(test_controller_handlers_ForOwner_UpdateEvent),
          cmocka_unit_test(test_controller_handlers_ForOwner_NoOwnersMatchingGroupAndKind),
          cmocka_unit_test(test_controller_handlers_ForOwner_MatchingGroupAndKindDifferentVersion),
          cmocka_unit_test(test_controller_handlers_ForOwner_ClusterScopedOwner),
          cmocka_unit_test(test_controller_handlers_ForOwner_NoOwners),
          cmocka_unit_test(test_controller_handlers_ForOwner_OnlyFirstControllerOwner),
          cmocka_unit_test(test_controller_handlers_ForOwner_NoControllerOwners),
          cmocka_unit_test(test_controller_handlers_ForOwner_AllOwners),
          cmocka_unit_test(test_controller_handlers_ForOwner_InvalidAPIVersion),
          cmocka_unit_test(test_controller_handlers_ParseGroupVersion),
          cmocka_unit_test(test_controller_handlers_MapFunc_CreateEvent),
          cmocka_unit_test(test_controller_handlers_MapFunc_DeleteEvent),
          cmocka_unit_test(test_controller_handlers_MapFunc_UpdateEvent),
          cmocka_unit_test(test_controller_handlers_MapFunc_Error),
          cmocka_unit_test(test_controller_handlers_PredicatesFilterBeforeEnqueue),
          cmocka_unit_test(test_controller_handlers_ResyncUpdate),
          cmocka_unit_test(test_controller_handlers_DeletePredicateSeesLastState),
          cmocka_unit_test(test_controller_handlers_HooksAndConfig))
