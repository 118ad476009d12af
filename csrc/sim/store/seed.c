/* seed.c -- objects created at start from a seed file: a JSON array, a
 * List ({"items": [...]}) or one JSON object per line. A seed is state
 * restored from storage rather than a client's create (store/restore.c),
 * so an object keeps the uid, creationTimestamp, resourceVersion,
 * generation and status it is given (a create resets them, as the real
 * strategies do). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "store_int.h"

/* Puts one seed object (kin__sim_restore_locked: its uid, timestamps,
 * resourceVersion, generation and status kept when given; a second object
 * of the same name replaces the first). Returns 0 or KIN_EINVAL / KIN_ENOMEM.
 * Caller holds mu. */
static int seed_one(kin__sim_store *s, const json_t *obj) {
  return kin__sim_restore_locked(s, obj, 0, NULL, NULL, 0);
}

/* Seeds one object per line from f, each parsed, created and freed before
 * the next is read, so no more than one seed tree is alive at a time.
 * Returns 0, KIN_EINVAL (a line that is not JSON or an object not
 * served; the start fails, so what was seeded before does not matter).
 * Caller holds mu. */
static int seed_lines(kin__sim_store *s, FILE *f) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int rc = 0;
  while (!rc && (n = getline(&line, &cap, f)) > 0) {
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '\n' || *p == 0 || *p == '#') continue;
    json_error_t jerr;
    json_t *o = json_loadb(line, (size_t)n, 0, &jerr);
    rc = o ? seed_one(s, o) : KIN_EINVAL;
    json_decref(o);
  }
  free(line);
  return rc;
}

int kin__sim_store_seed(kin__sim_store *s, const char *path) {
  json_error_t jerr;
  json_t *doc = json_load_file(path, 0, &jerr);
  json_t *items = NULL;
  if (doc) {
    items = json_is_array(doc) ? json_incref(doc) : json_incref(json_object_get(doc, "items"));
    if (!items) items = json_pack("[O]", doc);
    json_decref(doc);
    if (!items) return KIN_EINVAL;
  }
  FILE *f = NULL;
  if (!items && !(f = fopen(path, "r"))) return KIN_EINVAL;
  int rc = 0;
  pthread_mutex_lock(&s->mu);
  if (items) {
    size_t i;
    json_t *o;
    json_array_foreach(items, i, o) {
      if ((rc = seed_one(s, o))) break;
    }
  } else {
    rc = seed_lines(s, f); /* one object per line */
  }
  pthread_mutex_unlock(&s->mu);
  json_decref(items);
  if (f) fclose(f);
  /* A big seed leaves the freed parse trees and serializations in the
   * heap: hand what is free back to the system, so the sim's RSS is the
   * objects it holds. */
  malloc_trim(0);
  return rc;
}
