/* strq.c -- ring buffer of strings. */
#include "strq.h"
#include "kin.h"

#include <stdlib.h>
#include <string.h>

void kin__strq_init(kin__strq *q) { memset(q, 0, sizeof(*q)); }

void kin__strq_free(kin__strq *q) {
  char *s;
  while ((s = kin__strq_pop(q))) free(s);
  free(q->v);
  memset(q, 0, sizeof(*q));
}

int kin__strq_push_owned(kin__strq *q, char *s) {
  if (q->len == q->cap) {
    size_t ncap = q->cap ? q->cap * 2 : 64;
    char **nv = malloc(ncap * sizeof(*nv));
    if (!nv) return KIN_ENOMEM;
    for (size_t i = 0; i < q->len; i++) nv[i] = q->v[(q->head + i) % q->cap];
    free(q->v);
    q->v = nv;
    q->cap = ncap;
    q->head = 0;
  }
  q->v[(q->head + q->len) % q->cap] = s;
  q->len++;
  return 0;
}

int kin__strq_push(kin__strq *q, const char *s) {
  char *c = strdup(s);
  if (!c) return KIN_ENOMEM;
  int rc = kin__strq_push_owned(q, c);
  if (rc < 0) free(c);
  return rc;
}

char *kin__strq_pop(kin__strq *q) {
  if (q->len == 0) return NULL;
  char *s = q->v[q->head];
  q->head = (q->head + 1) % q->cap;
  q->len--;
  return s;
}
