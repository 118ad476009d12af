/* test_fs_watch.c -- fs_watch.h: changes in a watched directory reach the
 * callback on the watcher's thread (debounced into sets of paths); a file
 * replaced by rename (how editors save) is seen; a missing directory is
 * refused; free joins and stops deliveries. */
#include "kin_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_watch.h"
#include "kin.h"

typedef struct {
  pthread_mutex_t mu;
  char seen[16][512]; /* distinct paths delivered */
  int nseen;
  int calls;
  pthread_t thread;   /* the thread of the last call */
} rec;

static void on_change(void *ud, const char *const *paths, size_t n) {
  rec *r = ud;
  pthread_mutex_lock(&r->mu);
  r->calls++;
  r->thread = pthread_self();
  for (size_t i = 0; i < n; i++) {
    int dup = 0;
    for (int j = 0; j < r->nseen; j++) dup |= strcmp(r->seen[j], paths[i]) == 0;
    if (!dup && r->nseen < 16) snprintf(r->seen[r->nseen++], sizeof(r->seen[0]), "%s", paths[i]);
  }
  pthread_mutex_unlock(&r->mu);
}

static int saw(rec *r, const char *path) {
  pthread_mutex_lock(&r->mu);
  int hit = 0;
  for (int j = 0; j < r->nseen; j++) hit |= strcmp(r->seen[j], path) == 0;
  pthread_mutex_unlock(&r->mu);
  return hit;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_fs_watch_sees_writes_and_renames(void **state) {
  (void)state;
  char dir[] = "/tmp/kin_fs_watch_XXXXXX";
  assert_non_null(mkdtemp(dir));
  rec r = {.mu = PTHREAD_MUTEX_INITIALIZER};
  const char *dirs[] = {dir};
  kin_fs_watch *w = NULL;
  assert_int_equal(kin_fs_watch_new(dirs, 1, 20, on_change, &r, &w), 0);
  char a[600], b[600], tmp[600];
  snprintf(a, sizeof a, "%s/a.lua", dir);
  snprintf(b, sizeof b, "%s/b.lua", dir);
  snprintf(tmp, sizeof tmp, "%s/.b.lua.swp", dir);
  write_file(a, "return 1\n");
  KIN_EVENTUALLY(saw(&r, a), 5000);
  /* saved the editor's way: a new file renamed over the old name */
  write_file(tmp, "return 2\n");
  assert_int_equal(rename(tmp, b), 0);
  KIN_EVENTUALLY(saw(&r, b), 5000);
  pthread_mutex_lock(&r.mu);
  assert_false(pthread_equal(r.thread, pthread_self())); /* the watcher's thread */
  assert_true(r.calls >= 1);
  pthread_mutex_unlock(&r.mu);
  kin_fs_watch_free(w);
  /* freed: nothing is delivered any more */
  pthread_mutex_lock(&r.mu);
  int calls = r.calls;
  pthread_mutex_unlock(&r.mu);
  write_file(a, "return 3\n");
  kin_test_sleep_ms(50);
  pthread_mutex_lock(&r.mu);
  assert_int_equal(r.calls, calls);
  pthread_mutex_unlock(&r.mu);
  unlink(a);
  unlink(b);
  rmdir(dir);
}

static void test_fs_watch_refuses_bad_arguments(void **state) {
  (void)state;
  rec r = {.mu = PTHREAD_MUTEX_INITIALIZER};
  kin_fs_watch *w = (kin_fs_watch *)&r;
  const char *missing[] = {"/tmp", "/nonexistent/kin_fs_watch"};
  assert_int_equal(kin_fs_watch_new(missing, 2, 10, on_change, &r, &w), KIN_ENOENT);
  assert_null(w);
  const char *tmp[] = {"/tmp"};
  assert_int_equal(kin_fs_watch_new(tmp, 0, 10, on_change, &r, &w), KIN_EINVAL);
  assert_int_equal(kin_fs_watch_new(tmp, 1, 10, NULL, &r, &w), KIN_EINVAL);
  kin_fs_watch_free(NULL);
}

KIN_SUITE(fs_watch, cmocka_unit_test(test_fs_watch_sees_writes_and_renames),
          cmocka_unit_test(test_fs_watch_refuses_bad_arguments))
