/* strq.h -- internal: growable ring buffer of owned strings, the FIFO order of the
 * workqueue and the DeltaFIFO (internal). Not thread-safe. */
#ifndef KIN_STRQ_H
#define KIN_STRQ_H

#include <stddef.h>

typedef struct {
  char **v;
  size_t cap, head, len;
} kin__strq;

void kin__strq_init(kin__strq *q);
/* Frees every string still queued and the buffer. */
void kin__strq_free(kin__strq *q);
/* Appends a copy of s. Returns 0 or KIN_ENOMEM. */
int kin__strq_push(kin__strq *q, const char *s);
/* Appends s itself; the queue takes ownership. Returns 0 or KIN_ENOMEM (s
 * is not freed then). */
int kin__strq_push_owned(kin__strq *q, char *s);
/* Removes the first string and returns it (caller frees), or NULL. */
char *kin__strq_pop(kin__strq *q);
/* Returns the i-th string from the front (borrowed). */
static inline const char *kin__strq_at(const kin__strq *q, size_t i) {
  return q->v[(q->head + i) % q->cap];
}
static inline size_t kin__strq_len(const kin__strq *q) { return q->len; }

#endif
