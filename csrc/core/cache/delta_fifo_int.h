/* delta_fifo_int.h -- internal: what the reflector asks of the DeltaFIFO
 * beyond client-go's interface, so that a relist does not hold two caches.
 *
 * A relist (a LIST, or a WatchList's initial events) mostly returns objects
 * the store already holds at the same resourceVersion. The reflector hands
 * each listed object to kin__delta_fifo_prepare as soon as it is parsed:
 * an object the store holds at the same uid and resourceVersion is swapped
 * for the stored one (one copy in memory instead of two), any other goes
 * through the transform there and then (so the untransformed object, with
 * its managedFields, is freed at once). The prepared objects then go to
 * kin__delta_fifo_replace_prepared, which queues them without transforming
 * again. An object the store holds went through the transform when it
 * entered, and a resourceVersion names one state of one object, so the
 * result is what transforming the listed copy would give (for a transform
 * that depends only on its input). */
#ifndef KIN_DELTA_FIFO_INT_H
#define KIN_DELTA_FIFO_INT_H

#include "delta_fifo.h"

/* Replaces each of the n owned references in objs by the reference to
 * queue for it: the stored object for an unchanged one, else the
 * transform's result (the listed object's reference is released). Returns
 * 0, or the transform's error with every slot still holding one owned
 * reference (the failing one its listed object). Takes the FIFO's lock
 * once for the n objects. Thread-safe. */
int kin__delta_fifo_prepare(kin_delta_fifo *f, kin_obj **objs, size_t n);

/* kin_delta_fifo_replace for objects that came from kin__delta_fifo_prepare
 * (borrowed): the same deltas, without the transform. Thread-safe. */
int kin__delta_fifo_replace_prepared(kin_delta_fifo *f, kin_obj *const *objs, size_t n,
                                     const char *resource_version);

/* kin__delta_fifo_replace_prepared that queues nothing for a listed object
 * the store holds unchanged (prepare kept the stored one) when nothing is
 * queued for its key: a re-list for new shard ranges (reflector_shard.c)
 * tells handlers what entered and what left, not the objects that stayed
 * (client-go's Replace would redeliver those as resyncs to every handler
 * still in its syncing set, i.e. every handler without a resync period).
 * Thread-safe. */
int kin__delta_fifo_replace_changed(kin_delta_fifo *f, kin_obj *const *objs, size_t n,
                                    const char *resource_version);

/* kin__delta_fifo_replace_prepared for a WatchList's initial events as
 * they came (prepared, in arrival order): a key given more than once is
 * listed once, in its first place, with its last object, as the temporary
 * store of client-go's watchList keeps it. Thread-safe. */
int kin__delta_fifo_replace_collected(kin_delta_fifo *f, kin_obj *const *objs, size_t n,
                                      const char *resource_version);

#endif
