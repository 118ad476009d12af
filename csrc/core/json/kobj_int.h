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

#endif
