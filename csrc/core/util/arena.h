/* arena.h -- internal: blocks of memory for short-lived records that come
 * in bursts (the DeltaFIFO's queued keys during an initial list), carved
 * from 256 KiB chunks mapped from the system. A chunk goes back to the
 * system (munmap) as soon as the last block carved from it is freed and
 * no more are carved from it, so a backlog of a hundred thousand records
 * leaves no free holes among the long-lived objects malloc placed beside
 * them (glibc only gives back the top of an arena; the holes would stay in
 * the RSS until a malloc_trim). A block larger than a chunk's room is
 * mapped on its own.
 *
 * kin__arena_alloc needs the owner's lock (one caller at a time);
 * kin__arena_block_free may run on any thread, without it: each chunk
 * counts its live blocks atomically, and whoever drops the count to zero
 * unmaps it. A chunk none of whose blocks is live is carved again from
 * its start, so a steady trickle of records maps nothing. */
#ifndef KIN_ARENA_H
#define KIN_ARENA_H

#include <stddef.h>

typedef struct kin__arena_chunk kin__arena_chunk;

typedef struct {
  kin__arena_chunk *cur; /* the chunk blocks are carved from, or NULL */
  size_t used;           /* bytes of cur carved so far */
} kin__arena;

/* An empty arena; maps nothing until the first alloc. */
void kin__arena_init(kin__arena *a);
/* Releases the arena's hold on its current chunk; blocks still live keep
 * their chunk until they are freed. */
void kin__arena_release(kin__arena *a);
/* Returns a block of n bytes (16-aligned, not cleared), or NULL when the system
 * refuses memory. The caller's lock guards a. */
void *kin__arena_alloc(kin__arena *a, size_t n);
/* Frees a block from kin__arena_alloc (NULL: nothing). Thread-safe. */
void kin__arena_block_free(void *p);

#endif
