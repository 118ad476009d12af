/* ring_buffer.h -- internal: the unbounded growing ring buffer of notifications that
 * sits between the informer thread and one listener thread (k8s.io/utils
 * buffer.RingGrowing): it starts at a fixed capacity and doubles whenever a
 * write finds it full, so the writer never blocks and order is preserved.
 *
 * Not thread-safe: the listener guards its ring with its own mutex. */
#ifndef KIN_RING_BUFFER_H
#define KIN_RING_BUFFER_H

#include <stddef.h>

#include "kobj.h"

typedef enum { KIN__NOTE_ADD = 1, KIN__NOTE_UPDATE, KIN__NOTE_DELETE } kin__note_type;

/* One notification (client-go's addNotification / updateNotification /
 * deleteNotification). The note owns one reference to each non-NULL
 * object. add: new_obj; update: old_obj and new_obj; delete: old_obj (the
 * last state or a tombstone). */
typedef struct {
  kin__note_type type;
  int is_in_initial_list; /* add only */
  kin_obj *old_obj;
  kin_obj *new_obj;
} kin__note;

/* Drops the note's object references. */
void kin__note_release(kin__note *n);

typedef struct {
  kin__note *v;
  size_t cap, head, len;
} kin__ring;

/* Allocates initial_cap slots (at least 1). Returns 0 or KIN_ENOMEM. */
int kin__ring_init(kin__ring *r, size_t initial_cap);
/* Releases every note still queued and the slots. */
void kin__ring_free(kin__ring *r);
/* Appends *n, taking over its references; doubles the capacity when full.
 * Returns 0, or KIN_ENOMEM with the ring unchanged and *n still the
 * caller's. */
int kin__ring_write(kin__ring *r, const kin__note *n);
/* Moves the oldest note (and its references) into *out. Returns 1, or 0
 * when the ring is empty. */
int kin__ring_read(kin__ring *r, kin__note *out);

static inline size_t kin__ring_len(const kin__ring *r) { return r->len; }
static inline size_t kin__ring_cap(const kin__ring *r) { return r->cap; }

#endif
