/* fs_watch.h -- a directory watcher for hot reload (issue 15: `kinformer
 * run --watch`): libuv's uv_fs_event (inotify on Linux) on a loop and
 * thread of its own, never the IO thread (io_engine.h). Changes are
 * debounced: the callback gets the set of changed paths once no change
 * was seen for debounce_ms.
 *
 * Directories are watched rather than files: editors that save by writing
 * a new file and renaming it over the old one replace the inode a file
 * watch would follow. The caller filters the paths it cares about.
 *
 * Thread-safety: kin_fs_watch_new and kin_fs_watch_free on the owner's
 * thread; the callback runs on the watcher's thread, never after
 * kin_fs_watch_free returned. */
#ifndef KIN_FS_WATCH_H
#define KIN_FS_WATCH_H

#include <stddef.h>

typedef struct kin_fs_watch kin_fs_watch;

/* Called on the watcher's thread with the changed paths ("dir/name" with
 * dir as given; the directory itself when the event names no file), each
 * once, in the order first seen. The array and strings are the watcher's,
 * valid during the call only. */
typedef void (*kin_fs_watch_cb)(void *ud, const char *const *paths, size_t npaths);

/* Starts watching the ndirs directories (ndirs >= 1). debounce_ms: the
 * quiet time before cb runs (0: at the next loop turn). Returns 0 and the
 * watcher in *out (the caller frees it with kin_fs_watch_free); or
 * KIN_EINVAL (no directory, no cb), KIN_ENOENT (a directory that cannot
 * be watched: missing, not a directory, no permission), KIN_ENOMEM. On
 * failure nothing is left running. The thread inherits the caller's
 * signal mask. */
int kin_fs_watch_new(const char *const *dirs, size_t ndirs, unsigned debounce_ms,
                     kin_fs_watch_cb cb, void *ud, kin_fs_watch **out);

/* Stops the loop, joins its thread (a callback running finishes first)
 * and frees w; changes not yet delivered are dropped. NULL is a no-op.
 * Not from the callback. */
void kin_fs_watch_free(kin_fs_watch *w);

#endif
