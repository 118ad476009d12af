/* lcontroller_hook.c -- what the reconcile deadline of a Lua controller
 * needs beyond the core's (lcontroller_int.h): the count hook a worker
 * arms around each reconcile.
 *
 * The core (csrc/core/controller/worker_slot.c) keeps each worker's
 * reconcile slot and the watchdog thread: it sets the deadline
 * (spec.reconcile_timeout), cancels the REST call in flight at it, after a
 * shutdown's timeout (ctl:stop(t) / ctl:shutdown(t)) interrupts every busy
 * worker, and logs the busy-worker warning (spec.busy_warning_after). Lua
 * code between REST calls is stopped here: the hook (every HOOK_COUNT
 * instructions) asks kin_controller_interrupted and raises "reconcile
 * interrupted: ..." when it says so, noting where, which the core's log
 * line names. */
#include <stdio.h>
#include <time.h>

#include "lcontroller_int.h"

uint64_t lctl_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The count hook of a worker state while it reconciles: past the deadline
 * or once the shutdown gave up waiting, raises "reconcile interrupted: ..."
 * (again at every later check, and after ten raises at every instruction,
 * so user code catching it with pcall cannot keep running). */
void lctl_interrupt_hook(lua_State *L, lua_Debug *ar) {
  wslot *s = lkin_ws_user(L);
  if (!s) return;
  int why = kin_controller_interrupted(s->p->c, s->worker);
  if (!why) return;
  if (!s->interrupted) {
    s->interrupted = why;
    if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0)
      snprintf(s->where, sizeof(s->where), " at %s:%d", ar->short_src, ar->currentline);
  }
  if (++s->nraises == 10) lua_sethook(L, lctl_interrupt_hook, LUA_MASKCOUNT, 1);
  lua_pushstring(L, why == KIN_INTERRUPT_SHUTDOWN     ? "reconcile interrupted: the controller is shutting down"
                   : why == KIN_INTERRUPT_LEADERSHIP ? "reconcile interrupted: leadership lost"
                                                     : "reconcile interrupted: reconcile_timeout exceeded");
  lua_error(L);
}
