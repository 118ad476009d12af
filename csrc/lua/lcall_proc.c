/* lcall_proc.c -- os.execute, io.popen and os.exit of worker states
 * (lcall_proc.h): children in their own process group, killed by one
 * watcher thread at the deadline of the call that started them; os.exit
 * as a graceful stop request. */
#include "lcall_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kin.h"
#include "laux.h"
#include "lcall_limit.h"
#include "log.h"

extern char **environ;

/* ---- the watcher ---------------------------------------------------------- */

/* A child being waited for. On the stack of the thread that waits; linked
 * in `children` from spawn to just before it is reaped (so the watcher
 * never signals a reused pid). Guarded by mu. */
typedef struct child {
  struct child *next;
  pid_t pid;               /* also the process group */
  uint64_t deadline_ns;    /* 0: none */
  const atomic_int *abort; /* NULL: none */
  uint64_t term_ns;        /* when SIGTERM was sent; 0: not yet */
  int why;                 /* LKIN_CL_TIMEOUT or LKIN_CL_ABORT once killed */
  int killed;              /* SIGKILL sent */
} child;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER; /* a child was added */
static child *children;
static int watcher_started;

/* Process-wide: os.exit asked for a graceful stop (and with which code). */
static atomic_int stop_requested;
static atomic_int stop_code;

#define TICK_NS (20 * 1000000ull)

/* Signals every group past its deadline or aborted; mu held. */
static void sweep_locked(uint64_t now) {
  for (child *c = children; c; c = c->next) {
    if (!c->term_ns) {
      int why = 0;
      if (c->abort && atomic_load(c->abort)) why = LKIN_CL_ABORT;
      else if (c->deadline_ns && now >= c->deadline_ns) why = LKIN_CL_TIMEOUT;
      if (why) {
        c->why = why;
        c->term_ns = now;
        kill(-c->pid, SIGTERM);
      }
    } else if (!c->killed && now - c->term_ns >= LKIN_PROC_GRACE_MS * 1000000ull) {
      c->killed = 1;
      kill(-c->pid, SIGKILL);
    }
  }
}

static void *watcher_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  for (;;) {
    while (!children) pthread_cond_wait(&cond, &mu);
    sweep_locked(lkin_mono_ns());
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)TICK_NS;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&cond, &mu, &ts);
  }
  return NULL;
}

/* At a normal exit, no child of a worker outlives the process. */
static void kill_all_at_exit(void) {
  pthread_mutex_lock(&mu);
  for (child *c = children; c; c = c->next) kill(-c->pid, SIGKILL);
  pthread_mutex_unlock(&mu);
}

/* Links c and starts the watcher on first use; mu not held. Returns 0 or
 * a KIN_E* error (the watcher could not start: c is not linked). */
static int watch(child *c) {
  pthread_mutex_lock(&mu);
  if (!watcher_started) {
    pthread_t t;
    sigset_t old;
    lkin_signals_block_all(&old);
    int err = pthread_create(&t, NULL, watcher_main, NULL);
    lkin_signals_restore(&old);
    if (err) {
      pthread_mutex_unlock(&mu);
      return KIN_ENOMEM;
    }
    pthread_detach(t);
    watcher_started = 1;
    atexit(kill_all_at_exit);
  }
  c->next = children;
  children = c;
  pthread_cond_signal(&cond);
  pthread_mutex_unlock(&mu);
  return 0;
}

/* Waits for c's process to end, unlinks c, reaps it. Returns its wait
 * status. */
static int wait_child(child *c) {
  siginfo_t info;
  while (waitid(P_PID, (id_t)c->pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  pthread_mutex_lock(&mu);
  for (child **pp = &children; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  pthread_mutex_unlock(&mu);
  int status = 0;
  while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

/* ---- spawning -------------------------------------------------------------- */

/* Starts "/bin/sh -c cmd" in a new process group with the default signal
 * mask and dispositions; with fd_child >= 0 dup'd onto target_fd (0 or 1).
 * Returns 0 with the pid in *pid, or an errno value. */
static int spawn_sh(const char *cmd, int fd_child, int target_fd, pid_t *pid) {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_init(&fa);
  sigset_t none, def;
  sigemptyset(&none);
  sigemptyset(&def);
  sigaddset(&def, SIGINT);
  sigaddset(&def, SIGTERM);
  sigaddset(&def, SIGPIPE);
  sigaddset(&def, SIGQUIT);
  sigaddset(&def, SIGHUP);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &def);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  if (fd_child >= 0) posix_spawn_file_actions_adddup2(&fa, fd_child, target_fd);
  char *argv[] = {(char *)"sh", (char *)"-c", (char *)cmd, NULL};
  int err = posix_spawn(pid, "/bin/sh", &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return err;
}

/* Fills c from the call in force for L. Raises the call's error when its
 * deadline already passed. */
static void child_init(lua_State *L, child *c) {
  memset(c, 0, sizeof(*c));
  const char *what;
  lkin_call_limit_current(L, &c->deadline_ns, &c->abort, &what);
}

/* Raises the error of a call whose child was killed at its deadline or
 * by a shutdown (`fn`: "os.execute", "io.popen"). */
static int raise_killed(lua_State *L, const child *c, const char *fn) {
  lkin_call_limit *cl = lkin_call_limit_active(L);
  char msg[512];
  if (cl && cl->what && !strcmp(cl->what, "reconcile") && !cl->name) {
    /* the reconcile's own deadline (lkin_call_limit_set) */
    return luaL_error(L, "reconcile interrupted: %s; %s's command was killed (process group %d)",
                      c->why == LKIN_CL_ABORT ? "the controller is shutting down"
                                              : "reconcile_timeout exceeded",
                      fn, (int)c->pid);
  }
  if (cl) {
    cl->why = c->why;
    lkin_call_limit_message(cl, msg, sizeof(msg));
  } else {
    snprintf(msg, sizeof(msg), "call interrupted");
  }
  return luaL_error(L, "%s; %s's command was killed (process group %d)", msg, fn, (int)c->pid);
}

/* Raises at once when the call in force is already past its deadline or
 * aborted (no child is started then). */
static void check_before(lua_State *L, const child *c, const char *fn) {
  child k = *c;
  if (c->abort && atomic_load(c->abort)) k.why = LKIN_CL_ABORT;
  else if (c->deadline_ns && lkin_mono_ns() >= c->deadline_ns) k.why = LKIN_CL_TIMEOUT;
  else return;
  k.pid = 0;
  raise_killed(L, &k, fn);
}

/* os.execute([cmd]): as the standard one, in its own process group and
 * killed at the deadline of the call (then raises). */
/* Flushes stdout and stderr before a child writes to them, so lines keep
 * their order. Not fflush(NULL): that locks every open stream, and another
 * thread blocked reading an io.popen stream holds its lock until the read
 * returns, so the worker would wait past its deadline. */
static void flush_std(void) {
  fflush(stdout);
  fflush(stderr);
}

static int w_execute(lua_State *L) {
  const char *cmd = luaL_optstring(L, 1, NULL);
  if (!cmd) {
    lua_pushboolean(L, access("/bin/sh", X_OK) == 0);
    return 1;
  }
  child c;
  child_init(L, &c);
  check_before(L, &c, "os.execute");
  flush_std();
  int err = spawn_sh(cmd, -1, -1, &c.pid);
  if (err) {
    errno = err;
    return luaL_fileresult(L, 0, cmd);
  }
  if (watch(&c) < 0) {
    kill(-c.pid, SIGKILL);
    waitpid(c.pid, NULL, 0);
    return luaL_error(L, "os.execute: cannot start the child watcher");
  }
  int status = wait_child(&c);
  if (c.why) return raise_killed(L, &c, "os.execute");
  errno = 0;
  return luaL_execresult(L, status);
}

/* ---- io.popen ---------------------------------------------------------------- */

/* liolib's stream with the child: luaL_Stream first, as liolib reads it. */
typedef struct {
  luaL_Stream s;
  child c;
  int linked;
} pstream;

static int p_close(lua_State *L) {
  pstream *p = (pstream *)luaL_checkudata(L, 1, LUA_FILEHANDLE);
  fclose(p->s.f);
  if (!p->linked) return luaL_execresult(L, -1);
  p->linked = 0;
  int status = wait_child(&p->c);
  if (p->c.why) return raise_killed(L, &p->c, "io.popen");
  errno = 0;
  return luaL_execresult(L, status);
}

/* io.popen(cmd [, mode]): as the standard one (mode "r" or "w"), the child
 * in its own process group, killed at the deadline of the call that
 * started it: reads then see EOF, close raises. Close it within the call
 * (a handle kept past it is no longer watched for that call's deadline
 * but still killed at it). */
static int w_popen(lua_State *L) {
  const char *cmd = luaL_checkstring(L, 1);
  const char *mode = luaL_optstring(L, 2, "r");
  luaL_argcheck(L, (mode[0] == 'r' || mode[0] == 'w') && mode[1] == 0, 2, "invalid mode");
  pstream *p = lua_newuserdatauv(L, sizeof(*p), 0);
  p->s.f = NULL;
  p->s.closef = NULL; /* a closed file until the stream is open */
  p->linked = 0;
  luaL_setmetatable(L, LUA_FILEHANDLE);
  child_init(L, &p->c);
  check_before(L, &p->c, "io.popen");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) return luaL_fileresult(L, 0, cmd);
  int reading = mode[0] == 'r';
  int mine = reading ? fds[0] : fds[1], theirs = reading ? fds[1] : fds[0];
  flush_std();
  int err = spawn_sh(cmd, theirs, reading ? 1 : 0, &p->c.pid);
  close(theirs);
  if (err) {
    close(mine);
    errno = err;
    return luaL_fileresult(L, 0, cmd);
  }
  FILE *f = fdopen(mine, mode);
  if (!f || watch(&p->c) < 0) {
    if (f) fclose(f);
    else close(mine);
    kill(-p->c.pid, SIGKILL);
    waitpid(p->c.pid, NULL, 0);
    return luaL_error(L, "io.popen: not enough memory");
  }
  p->linked = 1;
  p->s.f = f;
  p->s.closef = p_close;
  return 1;
}

/* ---- os.exit ----------------------------------------------------------------- */

int lkin_proc_stop_requested(int *code) {
  if (!atomic_load(&stop_requested)) return 0;
  *code = atomic_load(&stop_code);
  return 1;
}

/* os.exit([code]) in a worker state: a graceful stop request (see the
 * header); raises. */
static int w_exit(lua_State *L) {
  int code = lua_isboolean(L, 1) ? (lua_toboolean(L, 1) ? 0 : 1)
                                 : (int)luaL_optinteger(L, 1, 0);
  char where[200] = "?";
  lua_Debug ar;
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar))
    snprintf(where, sizeof(where), "%s:%d", ar.short_src, ar.currentline);
  const char *what = NULL;
  lkin_call_limit *cl = lkin_call_limit_active(L);
  if (cl) what = cl->name ? cl->name : cl->what;
  int first = !atomic_exchange(&stop_requested, 1);
  if (first) atomic_store(&stop_code, code);
  kin_log(KIN_LOG_WARN, "worker",
          "os.exit(%d) called at %s (in %s): a worker state does not end the process; "
          "stopping the manager gracefully (Lease released)%s",
          code, where, what ? what : "a worker state", first ? "" : " (already requested)");
  return luaL_error(L, "os.exit(%d) called: the manager is stopping", code);
}

void lkin_proc_install(lua_State *L) {
  if (lua_getglobal(L, "os") == LUA_TTABLE) {
    lua_pushcfunction(L, w_execute);
    lua_setfield(L, -2, "execute");
    lua_pushcfunction(L, w_exit);
    lua_setfield(L, -2, "exit");
  }
  lua_pop(L, 1);
  if (lua_getglobal(L, "io") == LUA_TTABLE) {
    lua_pushcfunction(L, w_popen);
    lua_setfield(L, -2, "popen");
  }
  lua_pop(L, 1);
}

/* core.stop_requested([clear]) -> code | nil: a worker called
 * os.exit(code); clear = true forgets the request (mgr:run does before it
 * starts: a request is for the run in progress). */
static int l_stop_requested(lua_State *L) {
  int code;
  if (lkin_proc_stop_requested(&code)) lua_pushinteger(L, code);
  else lua_pushnil(L);
  if (lua_toboolean(L, 1)) atomic_store(&stop_requested, 0);
  return 1;
}

void lkin_open_proc(lua_State *L) {
  lua_pushcfunction(L, l_stop_requested);
  lua_setfield(L, -2, "stop_requested");
}
