/* shard_selector.h -- the API server's shard selectors (KEP-5866, alpha in
 * v1.36 behind the ShardedListAndWatch gate): ?shardSelector= on LIST and
 * WATCH keeps the objects whose 64-bit FNV-1a hash of metadata.uid (or
 * metadata.namespace) falls in one of the ranges, written as
 *
 *   shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
 *     || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')
 *
 * Bounds are 16 lowercase hex digits after '0x' (the end may be
 * '0x10000000000000000', 2^64); the start is inclusive, the end exclusive;
 * every range names the same field. Parsing follows k8s.io/apiserver
 * pkg/sharding Parse, with its error wording.
 *
 * Used by kinformer.sim to serve the parameter, by the reflector to filter
 * on the client when a server ignores it, and by the Lua layer to assign
 * keys to replicas. Immutable after parse: any thread may match. */
#ifndef KIN_SHARD_SELECTOR_H
#define KIN_SHARD_SELECTOR_H

#include <stddef.h>
#include <stdint.h>

typedef struct kin_shard_selector kin_shard_selector;

/* The field a selector hashes. */
typedef enum { KIN_SHARD_KEY_UID = 0, KIN_SHARD_KEY_NAMESPACE = 1 } kin_shard_key;

/* Returns the 64-bit FNV-1a hash of len bytes at s (Go's hash/fnv New64a),
 * the hash the API server compares with the ranges. Any thread. */
uint64_t kin_shard_hash(const char *s, size_t len);

/* Parses s. Returns 0 and a new selector in *out (free with
 * kin_shard_selector_free), KIN_EINVAL with the API server's message in
 * err (an empty s is refused too: "empty shard selector is not allowed;
 * ..."), or KIN_ENOMEM. */
int kin_shard_selector_parse(const char *s, kin_shard_selector **out, char *err, size_t errlen);
void kin_shard_selector_free(kin_shard_selector *sel);

/* The field every range of sel hashes. */
kin_shard_key kin_shard_selector_key(const kin_shard_selector *sel);

/* Returns 1 when hash lies in one of sel's ranges, else 0. */
int kin_shard_selector_contains(const kin_shard_selector *sel, uint64_t hash);

/* Returns 1 when an object with this uid and namespace (NULL counts as "",
 * as for a cluster-scoped object's namespace) is selected, else 0. */
int kin_shard_selector_matches(const kin_shard_selector *sel, const char *uid,
                               const char *namespace_);

/* The number of ranges, and range i as inclusive bounds: [*first, *last]
 * (an end of 2^64 gives *last = UINT64_MAX). */
size_t kin_shard_selector_nranges(const kin_shard_selector *sel);
void kin_shard_selector_range(const kin_shard_selector *sel, size_t i, uint64_t *first,
                              uint64_t *last);

/* Writes the canonical string (the server's String(): the ranges in the
 * order given, joined by " || ", bounds as written) into buf like snprintf:
 * at most cap-1 bytes and a NUL when cap > 0. Returns the whole length. */
size_t kin_shard_selector_string(const kin_shard_selector *sel, char *buf, size_t cap);

#endif
