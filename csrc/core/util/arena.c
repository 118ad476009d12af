/* arena.c -- see arena.h. Each block is preceded by a 16-byte header
 * naming its chunk; a chunk starts with its live count, which holds one
 * extra unit while the chunk is an arena's current one. */
#include "arena.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define CHUNK_SIZE ((size_t)256 << 10)
#define ALIGN 16

struct kin__arena_chunk {
  atomic_size_t live; /* blocks not yet freed, +1 while current */
  size_t size;        /* bytes mapped */
};

typedef struct {
  kin__arena_chunk *chunk;
  size_t pad_;
} block_hdr;

#define CHUNK_HDR ((sizeof(kin__arena_chunk) + ALIGN - 1) / ALIGN * ALIGN)

/* Maps a chunk of size bytes with a live count of live; NULL on failure. */
static kin__arena_chunk *chunk_map(size_t size, size_t live) {
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  kin__arena_chunk *c = p;
  atomic_init(&c->live, live);
  c->size = size;
  return c;
}

/* Drops one unit of c's count; unmaps c when it was the last. */
static void chunk_put(kin__arena_chunk *c) {
  if (atomic_fetch_sub_explicit(&c->live, 1, memory_order_acq_rel) == 1) munmap(c, c->size);
}

void kin__arena_init(kin__arena *a) {
  a->cur = NULL;
  a->used = 0;
}

void kin__arena_release(kin__arena *a) {
  if (a->cur) chunk_put(a->cur);
  kin__arena_init(a);
}

void *kin__arena_alloc(kin__arena *a, size_t n) {
  size_t need = sizeof(block_hdr) + (n + ALIGN - 1) / ALIGN * ALIGN;
  block_hdr *h;
  if (need > CHUNK_SIZE - CHUNK_HDR) { /* a block of its own */
    kin__arena_chunk *c = chunk_map(CHUNK_HDR + need, 1);
    if (!c) return NULL;
    h = (block_hdr *)(void *)((char *)c + CHUNK_HDR);
    h->chunk = c;
    return h + 1;
  }
  /* Only the arena's hold left: nothing carved from cur is live (frees
   * only decrement, and only this caller carves), so start it afresh. */
  if (a->cur && atomic_load_explicit(&a->cur->live, memory_order_acquire) == 1)
    a->used = CHUNK_HDR;
  if (!a->cur || a->used + need > CHUNK_SIZE) {
    kin__arena_chunk *c = chunk_map(CHUNK_SIZE, 1);
    if (!c) return NULL;
    kin__arena_release(a);
    a->cur = c;
    a->used = CHUNK_HDR;
  }
  h = (block_hdr *)(void *)((char *)a->cur + a->used);
  a->used += need;
  atomic_fetch_add_explicit(&a->cur->live, 1, memory_order_relaxed);
  h->chunk = a->cur;
  return h + 1;
}

void kin__arena_block_free(void *p) {
  if (!p) return;
  block_hdr *h = (block_hdr *)p - 1;
  chunk_put(h->chunk);
}
