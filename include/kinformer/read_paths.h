/* read_paths.h -- which paths of cached objects code actually reads, per
 * apiVersion and kind, for `kinformer inspect advise`: the projection
 * (kin_informer_opts.fields) that would keep exactly what was read.
 *
 * The Lua binding's lazy views (csrc/lua/lview.c) record here the first
 * read of each member of each view; a C caller may record too. Paths are
 * nodes of one tree per apiVersion/kind, made on first use and kept for
 * the life of the process (they are few: a key that cannot be a dotted
 * path segment, or more than KIN_READ_PATHS_MAX_NODES nodes of one kind,
 * or a path deeper than KIN_READ_PATHS_MAX_DEPTH, marks the parent read
 * whole instead of making a node). apiVersion, kind and metadata are never
 * recorded: every projection keeps them.
 *
 * Thread-safety: every function is thread-safe. Nodes are only added
 * (under one process-wide lock) and marked (atomically); finding a node
 * that exists takes no lock. The warnings of kin_read_paths_missing keep
 * per node, atomically, the informers that need no further check. */
#ifndef KIN_READ_PATHS_H
#define KIN_READ_PATHS_H

#include <stddef.h>

#include "kobj.h"

#define KIN_READ_PATHS_MAX_NODES 1024
#define KIN_READ_PATHS_MAX_DEPTH 16

/* How a path was read (kin_read_paths_mark). */
#define KIN_READ_SEEN 1  /* its value (or its absence) */
#define KIN_READ_WHOLE 2 /* all of it: iterated, encoded, an array */

typedef struct kin_read_node kin_read_node;

/* The root of the paths read in objects of api_version and kind, made on
 * first use. NULL when out of memory. */
kin_read_node *kin_read_paths_root(const char *api_version, const char *kind);

/* The node of member key[0..n) below node, made on first use. NULL when it
 * cannot be kept apart (see above; node is then marked whole) or out of
 * memory. node NULL: NULL. */
kin_read_node *kin_read_paths_child(kin_read_node *node, const char *key, size_t n);

/* Records that node was read: how is KIN_READ_SEEN or KIN_READ_WHOLE.
 * node NULL: nothing. */
void kin_read_paths_mark(kin_read_node *node, int how);

/* Nonzero when some informer (alive now) has a fields projection (a read may then
 * miss what it dropped: kin_read_paths_missing). Lock-free, cheap. */
int kin_read_paths_projected(void);

/* Tells a projected informer's user that code read what its projection
 * left out: node (a path kin_read_paths_child gave) was read in the view
 * of root, the object as cached, and how is KIN_READ_SEEN (the member was
 * absent) or KIN_READ_WHOLE (iterated or encoded; a root node: the whole
 * object). When root is what a projected informer caches and its
 * projection dropped that path (or keeps only part of what was read
 * whole), a warning is logged, once per path and informer. Cheap when
 * nothing is projected or the path was already decided; otherwise takes
 * projection_warn.c's lock and the informer's indexer read lock. node or
 * root NULL: nothing. */
void kin_read_paths_missing(kin_read_node *node, const kin_obj *root, int how);

/* The advised projection of api_version/kind: in *out a new
 * NULL-terminated array of dotted paths (each path read whole, or read and
 * with nothing read below it), sorted; free it with kin_read_paths_free.
 * Returns 0 (*out NULL when whole objects were read: nothing to drop),
 * KIN_ENOENT (nothing read in objects of that kind; *out NULL) or
 * KIN_ENOMEM. */
int kin_read_paths_advise(const char *api_version, const char *kind, char ***out);

/* Frees an array kin_read_paths_advise made. NULL is a no-op. */
void kin_read_paths_free(char **paths);

#endif
