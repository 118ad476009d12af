/* fuzz_label_selector.c -- libFuzzer harness for the label selector parser
 * (csrc/core/cache/label_selector.c): the input is a selector string; a
 * selector that parses is matched against a few label sets, and its
 * canonical string must parse again to the same string. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "label_selector.h"

static volatile size_t sink;

/* Label sets as "k=v" pairs, NULL-terminated. */
static const char *const sets[][6] = {
    {NULL},
    {"app", "web", "tier", "1", NULL},
    {"x", "", "y", "10", NULL},
    {"example.com/name", "a.b_c-d", "in", "notin", NULL},
};

static const char *get(void *ud, const char *key) {
  const char *const *kv = ud;
  for (; kv[0]; kv += 2)
    if (!strcmp(kv[0], key)) return kv[1];
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = 0;
  char err[256];
  kin_label_selector *sel = NULL;
  if (kin_label_selector_parse(s, &sel, err, sizeof err) == 0) {
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
      sink += (size_t)kin_label_selector_matches(sel, get, (void *)sets[i]);
    sink += (size_t)kin_label_selector_empty(sel);
    size_t need = kin_label_selector_string(sel, NULL, 0);
    char *c1 = malloc(need + 1);
    if (c1) {
      kin_label_selector_string(sel, c1, need + 1);
      kin_label_selector *again = NULL;
      char err2[256];
      if (kin_label_selector_parse(c1, &again, err2, sizeof err2) != 0) {
        fprintf(stderr, "canonical form \"%s\" of \"%s\" does not parse: %s\n", c1, s, err2);
        abort();
      }
      size_t need2 = kin_label_selector_string(again, NULL, 0);
      char *c2 = malloc(need2 + 1);
      if (c2) {
        kin_label_selector_string(again, c2, need2 + 1);
        if (strcmp(c1, c2)) {
          fprintf(stderr, "canonical form of \"%s\" is \"%s\", then \"%s\"\n", s, c1, c2);
          abort();
        }
        free(c2);
      }
      kin_label_selector_free(again);
      free(c1);
    }
    kin_label_selector_free(sel);
  } else {
    sink += strlen(err);
  }
  free(s);
  return 0;
}
