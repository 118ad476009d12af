/* pb_json.h -- internal: protobuf bodies of kube-apiserver read as the
 * JSON the cache holds (kobj.h). The decoder writes JSON text straight
 * into a buffer, in the shape Go's json.Marshal gives the unmarshalled
 * struct (fields in Go struct order, map keys sorted, omitempty and
 * pointers as the Go types say, Time/Quantity/IntOrString/RawExtension in
 * their JSON forms), so the object the cache keeps and the views read is
 * the same whichever encoding came. No Jansson: one table-driven walk over
 * the schema (pb_schema.h), nothing allocated per field.
 *
 * Every call is reentrant (no shared state). Errors: KIN_EINVAL with a
 * message in err (malformed wire data, a wrong wire type, a string that is
 * not UTF-8 is replaced as Go does, not an error), KIN_ENOMEM. On failure
 * out may hold a partial value: the caller drops it. */
#ifndef KIN_PB_JSON_H
#define KIN_PB_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "pb_envelope.h"

/* Appends to out the JSON of the n bytes at p read as message msg (an
 * index of kin__pb_msgs). 0, KIN_EINVAL (err), KIN_ENOMEM. */
int kin__pb_json(int msg, const uint8_t *p, size_t n, kin__buf *out, char *err, size_t cap);

/* Appends the JSON of an enveloped object (a Status, an object of a watch
 * event) with "kind" and "apiVersion" first, as the server's JSON has
 * them. 0, KIN_EINVAL (err: also a kind the schema does not have),
 * KIN_ENOMEM. */
int kin__pb_object_json(const uint8_t *p, size_t n, kin__buf *out, char *err, size_t cap);

/* When *body (malloc'd, *len bytes) is an enveloped object (an error
 * Status asked for in protobuf), replaces it by its JSON and, when
 * content_type is not NULL, *content_type (malloc'd) by
 * "application/json", so readers of JSON errors read it. A body that is no
 * envelope, or one that cannot be read, is left as it is (and described by
 * its type where it is reported). */
void kin__pb_body_to_json(char **body, size_t *len, char **content_type);

/* A list's items, one at a time: the item's JSON (without kind and
 * apiVersion, as in a JSON list) and its index. Returns 0 to go on, or an
 * error that stops the read and is returned by kin__pb_list. */
typedef int (*kin__pb_item_fn)(void *ud, const char *json, size_t len, size_t index);

/* What a list says besides its items. */
typedef struct {
  char kind[256], api_version[256]; /* the list's ("ConfigMapList", "v1") */
  char *resource_version;           /* malloc'd ("" when absent); the caller frees */
  char *cont;                       /* malloc'd continue token ("" when absent) */
  long long remaining;              /* remainingItemCount, -1 when absent */
  int shard_info;                   /* ListMeta.shardInfo (field 5) is present */
} kin__pb_list_meta;

/* Reads an enveloped list body (n bytes at p): each item to fn, then the
 * list's metadata into *meta (its strings the caller's to free, also on
 * failure). 0, fn's error, KIN_EINVAL (err: not a list of a kind the
 * schema has, malformed), KIN_ENOMEM. */
int kin__pb_list(const uint8_t *p, size_t n, kin__pb_item_fn fn, void *ud, kin__pb_list_meta *meta,
                 char *err, size_t cap);

/* A list body read as it arrives (the reflector's LIST pages), so the
 * items are read while the rest comes and only the bytes of the item being
 * read are held: kin__pb_list's reading, fed piece by piece. A body not in
 * gogo-protobuf's field order (TypeMeta, then raw) is held whole and read
 * at the end. Not thread-safe: one reader per body. */
typedef struct {
  int phase;              /* 0 the head, 1 the list's fields, 2 after them, 3 held whole */
  kin__buf held;          /* the bytes not yet read, from off */
  size_t off;
  size_t raw_left;        /* phase 1: bytes of the list message still to read */
  int msg, fmeta, fitems; /* the list's message and its two fields */
  kin__pb_list_meta meta; /* kind and api_version from phase 1 on; all at the end */
  kin__pb_item_fn fn;
  void *ud;
  kin__buf item;          /* the item's JSON, reused */
  size_t index;
  char err[256];          /* why it failed */
} kin__pb_list_stream;

/* Sets s up to give each item to fn. */
void kin__pb_list_stream_init(kin__pb_list_stream *s, kin__pb_item_fn fn, void *ud);
/* Reads n more bytes of the body: the items now complete go to fn. 0, fn's
 * error, KIN_EINVAL (s->err), KIN_ENOMEM. */
int kin__pb_list_stream_feed(kin__pb_list_stream *s, const void *p, size_t n);
/* The body has ended: reads what is left and completes s->meta. 0, fn's
 * error, KIN_EINVAL (s->err: truncated, malformed, not a list), KIN_ENOMEM. */
int kin__pb_list_stream_finish(kin__pb_list_stream *s);
/* Frees what s holds, s->meta's strings included (take them first). */
void kin__pb_list_stream_free(kin__pb_list_stream *s);

/* Appends the JSON watch line {"type":T,"object":O}\n of one frame of a
 * protobuf watch stream (a metav1.WatchEvent, its object enveloped), so
 * the JSON watch decoder (watch_decoder.h) reads it like any other line.
 * 0, KIN_EINVAL (err), KIN_ENOMEM. */
int kin__pb_watch_event_json(const uint8_t *p, size_t n, kin__buf *out, char *err, size_t cap);

#endif
