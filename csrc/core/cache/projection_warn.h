/* projection_warn.h -- internal: the projected informers (kin_informer_opts
 * .fields) whose objects the lazy views check, so that code reading a path
 * the projection dropped is told so, once per path and informer (see
 * read_paths.h, kin_read_paths_missing). */
#ifndef KIN_PROJECTION_WARN_H
#define KIN_PROJECTION_WARN_H

#include <stdatomic.h>

#include "kobj.h"
#include "projection.h"
#include "shared_informer.h"

/* At most this many projected informers at a time are checked (a removed
 * informer's slot is reused once every path node forgot its bit). */
#define KIN__PROJ_WARN_SLOTS 32

/* Registers inf (named name, e.g. "v1/pods") with its projection p; both
 * must outlive the registration (kin__projection_warn_remove). Copies
 * name. Returns 0, or KIN_ENOMEM / KIN_EBUSY (no slot left: no warnings
 * for it, nothing else changes). Takes the registry's lock. */
int kin__projection_warn_add(kin_informer *inf, const kin__projection *p, const char *name);

/* Unregisters inf (before it or its projection is freed). Not registered:
 * a no-op. */
void kin__projection_warn_remove(kin_informer *inf);

/* Slots used so far (the bits a node's quiet set may hold). Lock-free. */
int kin__projection_warn_slots(void);

/* Projected informers registered now (0: nothing to check). Lock-free. */
int kin__projection_warn_live(void);

/* How a path was read, for kin__projection_warn_check. */
#define KIN__PROJ_WARN_ABSENT 1 /* a member found absent */
#define KIN__PROJ_WARN_WHOLE 2  /* a member (or the object) iterated or encoded */

/* Checks the read of path in root (an object a view shows) against the
 * projected informers not in *quiet (bit i: slot i): how is
 * KIN__PROJ_WARN_ABSENT or KIN__PROJ_WARN_WHOLE (path "": the object).
 * Logs a warning when root is the object that informer caches and its
 * projection dropped path (absent) or keeps only part of it (whole). Adds
 * the slots that need no further check for this path (warned, path kept,
 * or gone) into *quiet, under the registry's lock. Takes that lock and,
 * to find the cached object, the informer's indexer read lock. */
void kin__projection_warn_check(const char *path, const kin_obj *root, int how,
                                atomic_uint *quiet);

/* Sets what clears a slot's bit in every path node's quiet set when the
 * slot is reused (read_paths.c gives it when it makes its first node, so
 * that this file does not call it by name); called with the registry's
 * lock held. */
void kin__projection_warn_set_forget(void (*forget)(unsigned bit));

#endif
