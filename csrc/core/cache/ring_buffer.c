/* ring_buffer.c -- growing ring of notifications (buffer.RingGrowing). */
#include "ring_buffer.h"
#include "kin.h"

#include <stdlib.h>
#include <string.h>

void kin__note_release(kin__note *n) {
  kin_obj_unref(n->old_obj);
  kin_obj_unref(n->new_obj);
  n->old_obj = n->new_obj = NULL;
}

int kin__ring_init(kin__ring *r, size_t initial_cap) {
  memset(r, 0, sizeof(*r));
  if (initial_cap == 0) initial_cap = 1;
  r->v = malloc(initial_cap * sizeof(*r->v));
  if (!r->v) return KIN_ENOMEM;
  r->cap = initial_cap;
  return 0;
}

void kin__ring_free(kin__ring *r) {
  kin__note n;
  while (kin__ring_read(r, &n)) kin__note_release(&n);
  free(r->v);
  memset(r, 0, sizeof(*r));
}

int kin__ring_write(kin__ring *r, const kin__note *n) {
  if (r->len == r->cap) {
    /* Unroll the wrapped contents into the front of a buffer twice the
     * size, so reading resumes at index 0 in the same order. */
    size_t ncap = r->cap * 2;
    if (ncap < r->cap) return KIN_ENOMEM;
    kin__note *nv = malloc(ncap * sizeof(*nv));
    if (!nv) return KIN_ENOMEM;
    size_t first = r->cap - r->head;
    if (first > r->len) first = r->len;
    memcpy(nv, r->v + r->head, first * sizeof(*nv));
    memcpy(nv + first, r->v, (r->len - first) * sizeof(*nv));
    free(r->v);
    r->v = nv;
    r->cap = ncap;
    r->head = 0;
  }
  r->v[(r->head + r->len) % r->cap] = *n;
  r->len++;
  return 0;
}

int kin__ring_read(kin__ring *r, kin__note *out) {
  if (r->len == 0) return 0;
  *out = r->v[r->head];
  r->head = (r->head + 1) % r->cap;
  r->len--;
  return 1;
}
