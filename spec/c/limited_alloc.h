/* limited_alloc.h -- a lua_Alloc that refuses to go past a byte budget, for
 * the binding's tests that check every allocation failure raises a memory
 * error (never a crash, never a half-pushed value) and leaks nothing.
 * Header-only, like sim_client.h. */
#ifndef KIN_LIMITED_ALLOC_H
#define KIN_LIMITED_ALLOC_H

#include <stdlib.h>

typedef struct {
  size_t used, limit;
} budget;

static __attribute__((unused)) void *limited_alloc(void *ud, void *ptr, size_t osize,
                                                   size_t nsize) {
  budget *b = ud;
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    b->used -= old;
    free(ptr);
    return NULL;
  }
  if (nsize > old && b->used + (nsize - old) > b->limit) return NULL;
  void *q = realloc(ptr, nsize);
  if (q) b->used = b->used - old + nsize;
  return q;
}

#endif
