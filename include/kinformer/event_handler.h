/* event_handler.h -- the handler side of a shared informer: the callbacks
 * of one handler set (client-go's ResourceEventHandler) and the listener
 * that delivers them (processorListener's public face: resync period,
 * HasSynced, counters). Below shared_informer.h, so that the listener
 * (listener.c) and the processor need not include the informer.
 * layer: cache */
#ifndef KIN_EVENT_HANDLER_H
#define KIN_EVENT_HANDLER_H

#include <stdint.h>

#include "kobj.h"

/* A set of callbacks, all called on the listener's own thread, in order.
 * Objects are borrowed for the duration of the call (take a reference to
 * keep one). on_delete's obj is the last known state or a tombstone. A
 * non-zero return is an error: it is logged with the object's key and only
 * that notification is skipped. on_start runs on the listener thread before
 * the first delivery (returning non-zero aborts the listener: nothing is
 * delivered and on_stop is not called) and on_stop after the last; both
 * may be NULL, as may any callback. */
typedef struct {
  int (*on_add)(void *ud, kin_obj *obj, int is_in_initial_list);
  int (*on_update)(void *ud, kin_obj *old_obj, kin_obj *new_obj);
  int (*on_delete)(void *ud, kin_obj *obj);
  int (*on_start)(void *ud);
  void (*on_stop)(void *ud);
  void *ud;
} kin_event_handler;

typedef struct kin_listener kin_listener;

#define KIN_LISTENER_INITIAL_BUFFER 1024

/* True once the informer has synced and this listener has handled every
 * notification of its initial list (late joiners: the synthetic adds). */
int kin_listener_has_synced(kin_listener *l);
uint64_t kin_listener_resync_period(kin_listener *l);

/* Counters of one listener (for tests, metrics and the CLI). */
typedef struct {
  uint64_t delivered;   /* notifications handed to the handler */
  uint64_t errors;      /* of which the handler failed */
  uint64_t pending;     /* queued or in the handler, not yet delivered */
  uint64_t buffer_cap;  /* current ring buffer capacity */
  uint64_t last_delivered_ns; /* kin_clock_real() time the handler finished the last
                               * batch of notifications (up to 32); 0: none yet */
} kin_listener_stats;
void kin_listener_get_stats(kin_listener *l, kin_listener_stats *st);

#endif
