/* json_assert.h -- JSON helpers of the sim's unit tests (test_sim_patch.c,
 * test_sim_ssa.c): a jansson value from a literal, and an equality
 * assertion that prints both sides. Header-only: each suite gets its own
 * static copy. */
#ifndef KIN_JSON_ASSERT_H
#define KIN_JSON_ASSERT_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "kin_test.h"

/* Parses the test literal s (any JSON value); fails the test when it is
 * not JSON. The caller owns the reference. */
static inline json_t *J(const char *s) {
  json_error_t e;
  json_t *v = json_loads(s, JSON_DECODE_ANY, &e);
  if (!v) fail_msg("bad test JSON (%s): %s", e.text, s);
  return v;
}

/* Fails the test, printing both sides, when got is not the JSON of want. */
static inline void assert_json(const json_t *got, const char *want) {
  json_t *w = J(want);
  if (!json_equal(got, w)) {
    char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    char *ws = json_dumps(w, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    fprintf(stderr, "got  %s\nwant %s\n", g, ws);
    free(g);
    free(ws);
    json_decref(w);
    fail_msg("JSON differs");
  }
  json_decref(w);
}

#endif
