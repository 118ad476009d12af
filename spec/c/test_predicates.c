/* test_predicates.c -- port of controller-runtime pkg/predicate
 * predicate_test.go (ResourceVersionChangedPredicate,
 * GenerationChangedPredicate, LabelChangedPredicate,
 * AnnotationChangedPredicate, And/Or/Not, LabelSelectorPredicate), plus
 * the map comparison of labels/annotations and resync updates. */
#include "kin_test.h"

#include <string.h>

#include "kin.h"
#include "predicate.h"

static kin_predicate *pred(const char *name) {
  kin_predicate *p = NULL;
  assert_int_equal(kin_predicate_from_name(name, &p), 0);
  return p;
}

static kin_predicate *selector(const char *s) {
  kin_predicate *p = NULL;
  assert_int_equal(kin_predicate_label_selector(s, &p, NULL, 0), 0);
  return p;
}

/* A pod "biz/baz" with resourceVersion rv and extra metadata members. */
static kin_obj *pod(const char *rv, const char *extra) {
  return kin_test_obj_ext("biz", "baz", rv, NULL, extra);
}

/* Create and delete always pass the "...Changed" predicates, also without
 * an object (controller-runtime's empty events). */
static void assert_non_update_events_pass(kin_predicate *p) {
  assert_int_equal(kin_predicate_create(p, NULL), 1);
  assert_int_equal(kin_predicate_delete(p, NULL), 1);
}

/* The four "Where ..." contexts every "...Changed" predicate shares: a
 * missing old or new object or both fail, as does an unchanged pair; a
 * changed pair passes. */
static void check_changed_predicate(const char *name, kin_obj *a, kin_obj *same_as_a,
                                    kin_obj *changed) {
  kin_predicate *p = pred(name);
  assert_non_update_events_pass(p);
  assert_int_equal(kin_predicate_update(p, NULL, a), 0);
  assert_int_equal(kin_predicate_update(p, a, NULL), 0);
  assert_int_equal(kin_predicate_update(p, NULL, NULL), 0);
  assert_int_equal(kin_predicate_update(p, a, same_as_a), 0);
  assert_int_equal(kin_predicate_update(p, a, changed), 1);
  assert_int_equal(kin_predicate_update(p, changed, a), 1);
  kin_predicate_free(p);
  kin_obj_unref(a);
  kin_obj_unref(same_as_a);
  kin_obj_unref(changed);
}

static void test_predicates_ResourceVersionChangedPredicate(void **state) {
  check_changed_predicate("resource_version_changed", pod("v1", NULL), pod("v1", NULL),
                          pod("v2", NULL));
}

static void test_predicates_GenerationChangedPredicate(void **state) {
  check_changed_predicate("generation_changed", pod("1", "\"generation\":1"),
                          pod("1", "\"generation\":1"), pod("1", "\"generation\":2"));
  /* A status update moves the resourceVersion, not the generation: it is
   * exactly what GenerationChangedPredicate exists to drop. */
  kin_predicate *p = pred("generation_changed");
  kin_obj *a = pod("10", "\"generation\":3"), *b = pod("11", "\"generation\":3");
  assert_int_equal(kin_predicate_update(p, a, b), 0);
  kin_obj_unref(a);
  kin_obj_unref(b);
  kin_predicate_free(p);
}

static void test_predicates_LabelChangedPredicate(void **state) {
  check_changed_predicate("label_changed", pod("1", "\"labels\":{\"foo\":\"bar\"}"),
                          pod("2", "\"labels\":{\"foo\":\"bar\"}"),
                          pod("3", "\"labels\":{\"foo\":\"baz\"}"));
  kin_predicate *p = pred("labels_changed");
  kin_obj *none = pod("1", NULL), *none2 = pod("2", NULL), *empty = pod("3", "\"labels\":{}");
  kin_obj *ab = pod("4", "\"labels\":{\"a\":\"1\",\"b\":\"2\"}");
  kin_obj *ba = pod("5", "\"labels\":{\"b\":\"2\",\"a\":\"1\"}");
  kin_obj *abc = pod("6", "\"labels\":{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\"}");
  kin_obj *a = pod("7", "\"labels\":{\"a\":\"1\"}");
  assert_int_equal(kin_predicate_update(p, none, none2), 0);  /* Where the labels are empty */
  assert_int_equal(kin_predicate_update(p, none, empty), 0);  /* absent equals {} */
  assert_int_equal(kin_predicate_update(p, ab, ba), 0);       /* another key order */
  assert_int_equal(kin_predicate_update(p, ab, abc), 1);      /* Where a new label is added */
  assert_int_equal(kin_predicate_update(p, ab, a), 1);        /* Where a label is removed */
  assert_int_equal(kin_predicate_update(p, none, a), 1);
  kin_obj *objs[] = {none, none2, empty, ab, ba, abc, a};
  for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) kin_obj_unref(objs[i]);
  kin_predicate_free(p);
}

static void test_predicates_AnnotationChangedPredicate(void **state) {
  check_changed_predicate("annotation_changed", pod("1", "\"annotations\":{\"booz\":\"wooz\"}"),
                          pod("2", "\"annotations\":{\"booz\":\"wooz\"}"),
                          pod("3", "\"annotations\":{\"booz\":\"weez\"}"));
  kin_predicate *p = pred("annotations_changed");
  kin_obj *none = pod("1", NULL), *empty = pod("2", "\"annotations\":{}");
  kin_obj *ab = pod("3", "\"annotations\":{\"a\":\"x<y\",\"b\":\"{\\\"k\\\":[1,2]}\"}");
  /* the same map as Go writes it: other order, HTML characters escaped */
  kin_obj *ba = pod("4", "\"annotations\":{\"b\":\"{\\\"k\\\":[1,2]}\",\"a\":\"x\\u003cy\"}");
  kin_obj *a = pod("5", "\"annotations\":{\"a\":\"x<y\"}");
  kin_obj *abc = pod("6", "\"annotations\":{\"a\":\"x<y\",\"b\":\"{\\\"k\\\":[1,2]}\",\"c\":\"\"}");
  assert_int_equal(kin_predicate_update(p, none, empty), 0);
  assert_int_equal(kin_predicate_update(p, ab, ba), 0);
  assert_int_equal(kin_predicate_update(p, ba, ab), 0);
  assert_int_equal(kin_predicate_update(p, ab, a), 1);   /* Where an annotation is removed */
  assert_int_equal(kin_predicate_update(p, ab, abc), 1); /* Where an annotation is added */
  assert_int_equal(kin_predicate_update(p, none, a), 1);
  assert_int_equal(kin_obj_annotations_equal(ab, ba), 1);
  assert_int_equal(kin_obj_annotations_equal(ab, abc), 0);
  kin_obj *objs[] = {none, empty, ab, ba, a, abc};
  for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) kin_obj_unref(objs[i]);
  kin_predicate_free(p);
}

/* The "With a boolean predicate" context: passFuncs / failFuncs are label
 * selectors that match or do not match the object. */
static int all_events(kin_predicate *p, kin_obj *o, int want) {
  return kin_predicate_create(p, o) == want && kin_predicate_update(p, o, o) == want &&
         kin_predicate_delete(p, o) == want;
}

static kin_predicate *combine(kin_predicate_kind kind, kin_predicate *x, kin_predicate *y) {
  kin_predicate *kids[] = {x, y}, *p = NULL;
  assert_int_equal(kin_predicate_combine(kind, kids, y ? 2 : (x ? 1 : 0), &p), 0);
  return p;
}

typedef struct {
  const char *a, *b; /* label selectors of the two children; NULL: no child */
  int want;
} combinator_case;

static void check_combinator(kin_predicate_kind kind, const combinator_case *cases, size_t n) {
  kin_obj *o = kin_test_obj("biz", "baz", "1", "{\"foo\":\"bar\"}");
  for (size_t i = 0; i < n; i++) {
    kin_predicate *p = combine(kind, cases[i].a ? selector(cases[i].a) : NULL,
                               cases[i].b ? selector(cases[i].b) : NULL);
    assert_true(all_events(p, o, cases[i].want));
    kin_predicate_free(p);
  }
  kin_obj_unref(o);
}

static void test_predicates_And(void **state) {
  const combinator_case cases[] = {
      {"foo=bar", "foo=baz", 0}, /* false when one of its predicates returns false */
      {"foo=bar", "foo", 1},     /* true when all of its predicates return true */
      {NULL, NULL, 1},           /* And() of nothing */
  };
  check_combinator(KIN_PREDICATE_AND, cases, 3);
}

static void test_predicates_Or(void **state) {
  const combinator_case cases[] = {
      {"foo=baz", "foo=bar", 1}, /* true when one of its predicates returns true */
      {"foo=baz", "!foo", 0},    /* false when all of its predicates return false */
      {NULL, NULL, 0},           /* Or() of nothing */
  };
  check_combinator(KIN_PREDICATE_OR, cases, 3);
}

static void test_predicates_Not(void **state) {
  kin_obj *o = kin_test_obj("biz", "baz", "1", "{\"foo\":\"bar\"}");
  kin_predicate *p = NULL;
  assert_int_equal(kin_predicate_not(selector("foo=bar"), &p), 0);
  assert_true(all_events(p, o, 0)); /* false when its predicate returns true */
  kin_predicate_free(p);
  assert_int_equal(kin_predicate_not(selector("foo=baz"), &p), 0);
  assert_true(all_events(p, o, 1)); /* true when its predicate returns false */
  kin_predicate_free(p);
  /* Not(GenerationChanged) drops creates, as in controller-runtime */
  assert_int_equal(kin_predicate_not(pred("generation_changed"), &p), 0);
  assert_int_equal(kin_predicate_create(p, o), 0);
  assert_int_equal(kin_predicate_update(p, o, o), 1);
  kin_predicate_free(p);
  assert_int_equal(kin_predicate_not(NULL, &p), KIN_EINVAL);
  kin_obj_unref(o);
}

static void test_predicates_LabelSelectorPredicate(void **state) {
  kin_predicate *p = selector("foo=bar");
  kin_obj *match = kin_test_obj("biz", "baz", "1", "{\"foo\":\"bar\"}");
  kin_obj *other = kin_test_obj("biz", "baz", "2", "{\"foo\":\"baz\"}");
  /* When the Selector does not match the event labels */
  assert_true(all_events(p, other, 0));
  /* When the Selector matches the event labels */
  assert_true(all_events(p, match, 1));
  /* an update is judged by its new object */
  assert_int_equal(kin_predicate_update(p, other, match), 1);
  assert_int_equal(kin_predicate_update(p, match, other), 0);
  assert_int_equal(kin_predicate_create(p, NULL), 0);
  kin_predicate_free(p);
  char err[128] = "";
  assert_int_equal(kin_predicate_label_selector("foo in (", &p, err, sizeof(err)), KIN_EINVAL);
  assert_null(p);
  assert_true(err[0] != 0);
  kin_obj_unref(match);
  kin_obj_unref(other);
}

/* A resync is OnUpdate(obj, obj): the "...Changed" predicates drop it,
 * the others let it through. */
static void test_predicates_ResyncUpdate(void **state) {
  kin_obj *o = kin_test_obj_ext("biz", "baz", "7", "{\"foo\":\"bar\"}",
                                "\"generation\":4,\"annotations\":{\"a\":\"b\"}");
  const char *changed[] = {"resource_version_changed", "generation_changed", "label_changed",
                           "annotation_changed"};
  for (size_t i = 0; i < 4; i++) {
    kin_predicate *p = pred(changed[i]);
    assert_int_equal(kin_predicate_update(p, o, o), 0);
    kin_predicate_free(p);
  }
  assert_int_equal(kin_predicate_update(NULL, o, o), 1);
  kin_predicate *p = selector("foo=bar");
  assert_int_equal(kin_predicate_update(p, o, o), 1);
  p = combine(KIN_PREDICATE_OR, pred("resource_version_changed"), p);
  assert_int_equal(kin_predicate_update(p, o, o), 1);
  kin_predicate_free(p);
  kin_obj_unref(o);
}

static void test_predicates_FromName(void **state) {
  const struct {
    const char *name;
    kin_predicate_kind kind;
  } cases[] = {{"generation_changed", KIN_PREDICATE_GENERATION_CHANGED},
               {"resource_version_changed", KIN_PREDICATE_RESOURCE_VERSION_CHANGED},
               {"label_changed", KIN_PREDICATE_LABEL_CHANGED},
               {"annotation_changed", KIN_PREDICATE_ANNOTATION_CHANGED}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kin_predicate *p = pred(cases[i].name);
    assert_int_equal(kin_predicate_kind_of(p), cases[i].kind);
    kin_predicate_free(p);
  }
  kin_predicate *p = (kin_predicate *)1;
  assert_int_equal(kin_predicate_from_name("generation", &p), KIN_EINVAL);
  assert_null(p);
  assert_int_equal(kin_predicate_new(KIN_PREDICATE_AND, &p), KIN_EINVAL);
  kin_predicate *kids[] = {pred("label_changed")};
  assert_int_equal(kin_predicate_combine(KIN_PREDICATE_NOT, kids, 1, &p), KIN_EINVAL);
}

KIN_SUITE(predicates, cmocka_unit_test(test_predicates_ResourceVersionChangedPredicate),
          cmocka_unit_test(test_predicates_GenerationChangedPredicate),
          cmocka_unit_test(test_predicates_LabelChangedPredicate),
          cmocka_unit_test(test_predicates_AnnotationChangedPredicate),
          cmocka_unit_test(test_predicates_And), cmocka_unit_test(test_predicates_Or),
          cmocka_unit_test(test_predicates_Not),
          cmocka_unit_test(test_predicates_LabelSelectorPredicate),
          cmocka_unit_test(test_predicates_ResyncUpdate),
          cmocka_unit_test(test_predicates_FromName))
