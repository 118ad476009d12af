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

/* A list's kind (without "List") and apiVersion, for its items. Both are
 * plain text: no quote, backslash or control character. */
#define KIN_LIST_KIND_MAX 63
typedef struct {
  const char *kind, *av;
  size_t kind_len, av_len; /* kind_len 0: none */
} kin__list_kind;

/* kin_obj_parse of one item of a list. An item with no kind of its own
 * gets la's: the stored JSON starts {"kind":K,"apiVersion":A,... as the
 * dynamic client's UnstructuredList gives its items (the item's own
 * apiVersion, if any, comes later and wins). No copy of the item is made
 * for this: the scan reads the item, the block gets both. la NULL (or
 * longer than KIN_LIST_KIND_MAX) is kin_obj_parse. Same errors. */
int kin__obj_parse_item(const char *json, size_t len, const kin__list_kind *la, kin_obj **out);

#endif
