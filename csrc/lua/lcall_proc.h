/* lcall_proc.h -- os.execute, io.popen and os.exit of worker states
 * (issue 24), which must not outlive their call or end the process
 * abruptly.
 *
 * In a worker state (transforms, handlers, map functions, reconcilers)
 *  - os.execute(cmd) and io.popen(cmd [, "r"|"w"]) run "/bin/sh -c cmd" in
 *    a process group of its own, with the default signal mask and
 *    dispositions. A watcher thread (one per process, started on first
 *    use) kills the group at the deadline of the call in force
 *    (lcall_limit.h: a limited call's, or the reconcile's
 *    lkin_call_limit_set) or once its abort flag is set (a shutdown that
 *    gave up waiting): SIGTERM, then SIGKILL after LKIN_PROC_GRACE_MS.
 *    os.execute then raises the call's timeout error instead of returning;
 *    a popen'd file reads EOF, and its close raises. Groups still running
 *    when the process exits normally get SIGKILL.
 *  - os.exit([code]) does not end the process: it logs a line naming the
 *    caller (file:line), asks the manager for a graceful stop
 *    (lkin_proc_stop_requested, polled by mgr:run: its normal shutdown,
 *    Lease released) and raises in the calling state so the worker
 *    returns.
 * The main state keeps the standard functions. */
#ifndef LKIN_CALL_PROC_H
#define LKIN_CALL_PROC_H

#include <lua.h>

/* SIGTERM to SIGKILL. */
#define LKIN_PROC_GRACE_MS 500

/* Replaces os.execute, io.popen and os.exit in L (a worker state being
 * built; its standard libraries open). Raises on memory errors. */
void lkin_proc_install(lua_State *L);

/* Returns 1 and the code os.exit asked for in *code once a worker called
 * os.exit; 0 before. Any thread. */
int lkin_proc_stop_requested(int *code);

/* Registers core.stop_requested() -> code | nil in the table at the top. */
void lkin_open_proc(lua_State *L);

#endif
