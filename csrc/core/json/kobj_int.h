/* kobj_int.h -- what kobj.c finds while parsing for other parts of the
 * core only (internal). */
#ifndef KIN_KOBJ_INT_H
#define KIN_KOBJ_INT_H

#include "kobj.h"

/* The bytes of o's JSON to cut so that its first metadata object loses its
 * first managedFields member and the rest stays valid JSON (the member with
 * one separating comma); {0, 0} when there is none, or for a tombstone.
 * Found by the parse itself, so the default transform (transform.c) cuts
 * without scanning the object again. Thread-safe: o is immutable. */
kin_span kin__obj_managed_fields_cut(const kin_obj *o);

/* Returns in *out a new object: o with the bytes [c.off, c.off + c.len)
 * of its JSON cut out, which must be a whole member (as from
 * kin__obj_managed_fields_cut), so every field and span stays what it was
 * without parsing again. o stays the caller's; 0, KIN_EINVAL (no such
 * range, a tombstone) or KIN_ENOMEM with *out NULL. */
int kin__obj_cut(const kin_obj *o, kin_span c, kin_obj **out);

#endif
