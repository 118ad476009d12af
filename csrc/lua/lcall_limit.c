/* lcall_limit.c -- user Lua under a time limit and a memory limit
 * (lcall_limit.h): the count hook, the main state's accounting allocator
 * wrapper, and core.limited_call for the Lua side (health checks,
 * on_start). */
#include "lcall_limit.h"

#include <dlfcn.h>
#include <lauxlib.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "kin.h"
#include "laux.h"

/* How often a main-state call looks at the pending signals (a syscall). */
#define SIG_CHECK_NS (20 * 1000000ull)

uint64_t lkin_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int lkin_term_signal_pending(void) {
  sigset_t set;
  if (sigpending(&set) != 0) return 0;
  return sigismember(&set, SIGTERM) == 1 || sigismember(&set, SIGINT) == 1;
}

/* ---- the main state's allocator wrapper -------------------------------- */

/* The accounting of one main state. Never freed: nothing tells this
 * module when lua_close has made the state's last free, and the wrapper
 * must outlive every allocation; a process makes one per main state (a
 * test binary a few hundred). Each is kept on all_accts so it stays
 * reachable (not a leak). Its fields are the main state's thread's. */
typedef struct main_acct {
  lua_Alloc prev;
  void *prev_ud;
  lkin_call_limit_slot slot;
  struct main_acct *next; /* all_accts (all_mu) */
} main_acct;

static pthread_mutex_t all_mu = PTHREAD_MUTEX_INITIALIZER;
static main_acct *all_accts; /* every wrapper made (all_mu) */

static void *main_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  main_acct *m = ud;
  lkin_call_limit *cl = m->slot.cur;
  size_t old = ptr ? osize : 0; /* without ptr, osize is the object's kind */
  if (cl && cl->memory_limit && nsize > old &&
      cl->mem_used + (ptrdiff_t)(nsize - old) > (ptrdiff_t)cl->memory_limit) {
    if (!cl->why) cl->why = LKIN_CL_MEMORY;
    return NULL; /* Lua collects, retries, then raises a memory error */
  }
  void *p = m->prev(m->prev_ud, ptr, osize, nsize);
  if (cl && (p || nsize == 0)) cl->mem_used += (ptrdiff_t)nsize - (ptrdiff_t)old;
  return p;
}

/* The worker states' allocator and slot finder (lkin_call_limit_register). */
static _Atomic(lua_Alloc) ws_alloc;
static lkin_call_limit_slot *(*_Atomic ws_slot)(void *ud);

void lkin_call_limit_register(lua_Alloc f, lkin_call_limit_slot *(*slot)(void *ud)) {
  atomic_store(&ws_slot, slot);
  atomic_store(&ws_alloc, f);
}

/* L's slot: the wrapper's, a worker state's, or NULL. */
static lkin_call_limit_slot *slot_of(lua_State *L) {
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  if (f == main_alloc) return &((main_acct *)ud)->slot;
  if (f && f == atomic_load_explicit(&ws_alloc, memory_order_relaxed))
    return atomic_load_explicit(&ws_slot, memory_order_relaxed)(ud);
  return NULL;
}

/* Returns 1 when this code stays mapped until the process ends: the
 * shared object it is in now pinned (RTLD_NODELETE), or the program
 * itself (a test binary linking the binding statically). */
static int pinned(void) {
  Dl_info info;
  if (!dladdr((void *)main_alloc, &info) || !info.dli_fname) return 0;
  if (dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) return 1;
  char exe[PATH_MAX], *self = realpath(info.dli_fname, NULL);
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  int same = self && n > 0 && (exe[n] = 0, strcmp(exe, self) == 0);
  free(self);
  return same;
}

void lkin_call_limit_wrap_alloc(lua_State *L) {
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  if (f == main_alloc || f == atomic_load(&ws_alloc)) return; /* done, or a worker state */
  /* lua_close unloads this module (package's CLIBS) before its last
   * frees: pin it, so main_alloc outlives the state */
  if (!pinned()) return; /* no accounting: calls run without a memory limit */
  main_acct *m = calloc(1, sizeof(*m));
  if (!m) return;
  m->prev = f;
  m->prev_ud = ud;
  pthread_mutex_lock(&all_mu);
  m->next = all_accts;
  all_accts = m;
  pthread_mutex_unlock(&all_mu);
  lua_setallocf(L, main_alloc, m);
}

/* ---- the hook ------------------------------------------------------------ */

static void fmt_secs(char *buf, size_t len, uint64_t ns) {
  snprintf(buf, len, "%gs", (double)ns / 1e9);
}

const char *lkin_call_limit_message(const lkin_call_limit *cl, char *buf, size_t len) {
  const char *what = cl->what ? cl->what : "call";
  const char *sp = cl->name ? " " : "", *name = cl->name ? cl->name : "";
  char secs[32];
  switch (cl->why) {
  case LKIN_CL_TIMEOUT:
    fmt_secs(secs, sizeof(secs), cl->timeout_ns);
    snprintf(buf, len, "%s%s%s exceeded its time limit of %s%s%s%s%s", what, sp, name, secs,
             cl->option ? " (option " : "", cl->option ? cl->option : "", cl->option ? ")" : "",
             cl->where);
    return buf;
  case LKIN_CL_ABORT:
    snprintf(buf, len, "%s%s%s interrupted: the manager is stopping%s", what, sp, name, cl->where);
    return buf;
  case LKIN_CL_SIGNAL:
    snprintf(buf, len, "%s%s%s interrupted by SIGTERM/SIGINT: the manager is stopping%s", what,
             sp, name, cl->where);
    return buf;
  case LKIN_CL_MEMORY:
    snprintf(buf, len, "%s%s%s exceeded its memory limit of %zu bytes%s%s%s", what, sp, name,
             cl->memory_limit, cl->mem_option ? " (option " : "",
             cl->mem_option ? cl->mem_option : "", cl->mem_option ? ")" : "");
    return buf;
  default: return NULL;
  }
}

static void hook(lua_State *L, lua_Debug *ar) {
  lkin_call_limit_slot *s = slot_of(L);
  lkin_call_limit *cl = s ? s->cur : NULL;
  if (!cl || !cl->hooked) return;
  if (!cl->why || cl->why == LKIN_CL_MEMORY) {
    int why = 0;
    if (cl->abort && atomic_load_explicit(cl->abort, memory_order_relaxed)) {
      why = LKIN_CL_ABORT;
    } else if (cl->deadline_ns || cl->signals) {
      uint64_t now = lkin_mono_ns();
      if (cl->deadline_ns && now >= cl->deadline_ns) {
        why = LKIN_CL_TIMEOUT;
      } else if (cl->signals && now - cl->sig_checked_ns >= SIG_CHECK_NS) {
        cl->sig_checked_ns = now;
        if (lkin_term_signal_pending()) why = LKIN_CL_SIGNAL;
      }
    }
    if (!why) return;
    cl->why = why;
    if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0)
      snprintf(cl->where, sizeof(cl->where), " at %s:%d", ar->short_src, ar->currentline);
  }
  if (++cl->nraises == 10) lua_sethook(L, hook, LUA_MASKCOUNT, 1);
  char msg[512];
  lua_pushstring(L, lkin_call_limit_message(cl, msg, sizeof(msg)));
  lua_error(L);
}

void lkin_call_limit_begin(lua_State *L, lkin_call_limit *cl) {
  lkin_call_limit_slot *s = slot_of(L);
  cl->why = LKIN_CL_NONE;
  cl->where[0] = 0;
  cl->nraises = 0;
  cl->mem_used = 0;
  cl->sig_checked_ns = 0;
  cl->deadline_ns = cl->timeout_ns ? lkin_mono_ns() + cl->timeout_ns : 0;
  cl->prev = s ? s->cur : NULL;
  if (cl->prev) {
    const lkin_call_limit *p = cl->prev;
    if (p->deadline_ns && (!cl->deadline_ns || p->deadline_ns < cl->deadline_ns)) {
      /* the enclosing call's deadline comes first: it is the one that cuts */
      cl->deadline_ns = p->deadline_ns;
      cl->timeout_ns = p->timeout_ns;
      cl->option = p->option;
    }
    if (!cl->abort) cl->abort = p->abort;
    cl->signals |= p->signals;
  }
  cl->prev_hook = lua_gethook(L);
  cl->prev_mask = lua_gethookmask(L);
  cl->prev_count = lua_gethookcount(L);
  cl->hooked = cl->deadline_ns || cl->abort || cl->signals;
  if (cl->hooked) lua_sethook(L, hook, LUA_MASKCOUNT, LKIN_CALL_LIMIT_COUNT);
  if (s) s->cur = cl;
}

void lkin_call_limit_end(lua_State *L, lkin_call_limit *cl) {
  lkin_call_limit_slot *s = slot_of(L);
  if (s && s->cur == cl) s->cur = cl->prev;
  if (cl->hooked) lua_sethook(L, cl->prev_hook, cl->prev_mask, cl->prev_count);
  if (cl->prev) cl->prev->mem_used += cl->mem_used;
}

void lkin_call_limit_set(lua_State *L, uint64_t deadline_ns, const atomic_int *abort) {
  lkin_call_limit_slot *s = slot_of(L);
  if (!s) return;
  s->fixed.deadline_ns = deadline_ns;
  s->fixed.abort = abort;
  s->fixed.what = "reconcile";
  s->fixed.option = "reconcile_timeout";
  s->fixed.why = LKIN_CL_NONE;
}

lkin_call_limit *lkin_call_limit_active(lua_State *L) {
  lkin_call_limit_slot *s = slot_of(L);
  return s ? (s->cur ? s->cur : &s->fixed) : NULL;
}

int lkin_call_limit_current(lua_State *L, uint64_t *deadline_ns, const atomic_int **abort,
                            const char **what) {
  lkin_call_limit_slot *s = slot_of(L);
  const lkin_call_limit *cl = s ? (s->cur ? s->cur : &s->fixed) : NULL;
  *deadline_ns = cl ? cl->deadline_ns : 0;
  *abort = cl ? cl->abort : NULL;
  if (what) *what = cl && cl->what ? cl->what : "call";
  return *deadline_ns || *abort;
}

/* ---- core.limited_call --------------------------------------------------- */

/* Message handler: the error's text with a traceback. */
static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* core.limited_call(opts, fn, ...) -> true, results... | false, msg, code
 * Calls fn(...) in the calling state under opts.timeout (seconds, 0 or
 * absent: none) and opts.memory_limit (bytes of net growth; main state
 * only), opts.signals (true: a pending SIGINT/SIGTERM interrupts it).
 * opts.what, opts.name, opts.option, opts.memory_option name the call in
 * the message. code: "ETIMEDOUT" (time limit), "ECANCELED" (signal or
 * abort), "ENOMEM" (memory limit or out of memory), "ELUA" (fn raised;
 * msg has a traceback). Raises only on misuse. */
static int l_limited_call(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checkany(L, 2);
  static const char *const known[] = {"what", "name", "option", "memory_option", "timeout",
                                      "memory_limit", "signals", NULL};
  lkin_opt_check_keys(L, 1, known, "limited_call");
  lkin_call_limit cl = {0};
  cl.what = lkin_opt_string(L, 1, "what");
  cl.name = lkin_opt_string(L, 1, "name");
  cl.option = lkin_opt_string(L, 1, "option");
  cl.mem_option = lkin_opt_string(L, 1, "memory_option");
  uint64_t ns = lkin_opt_ns(L, 1, "timeout", 0);
  cl.timeout_ns = ns == KIN_FOREVER ? 0 : ns;
  lua_Number mem = lkin_opt_number(L, 1, "memory_limit", 0);
  luaL_argcheck(L, mem >= 0, 1, "option 'memory_limit' must be >= 0");
  cl.memory_limit = mem >= 9e18 ? 0 : (size_t)mem;
  cl.signals = lkin_opt_bool(L, 1, "signals");
  int nargs = lua_gettop(L) - 2;
  lkin_call_limit_begin(L, &cl);
  lua_pushcfunction(L, traceback);
  lua_insert(L, 2);
  int st = lua_pcall(L, nargs, LUA_MULTRET, 2);
  lua_remove(L, 2);
  lkin_call_limit_end(L, &cl);
  if (st == LUA_OK) {
    int nres = lua_gettop(L) - 1;
    lua_pushboolean(L, 1);
    lua_replace(L, 1);
    return nres + 1;
  }
  char msg[512];
  lua_pushboolean(L, 0);
  if (lkin_call_limit_message(&cl, msg, sizeof(msg))) lua_pushstring(L, msg);
  else lua_pushvalue(L, -2);
  const char *code = st == LUA_ERRMEM ? "ENOMEM" : "ELUA";
  if (cl.why == LKIN_CL_TIMEOUT) code = "ETIMEDOUT";
  else if (cl.why == LKIN_CL_ABORT || cl.why == LKIN_CL_SIGNAL) code = "ECANCELED";
  else if (cl.why == LKIN_CL_MEMORY) code = "ENOMEM";
  lua_pushstring(L, code);
  return 3;
}

/* core.term_signal_pending() -> boolean: SIGINT or SIGTERM waits to be
 * taken (mgr:run's loop takes it). */
static int l_term_signal_pending(lua_State *L) {
  lua_pushboolean(L, lkin_term_signal_pending());
  return 1;
}

void lkin_open_call_limit(lua_State *L) {
  lua_pushcfunction(L, l_limited_call);
  lua_setfield(L, -2, "limited_call");
  lua_pushcfunction(L, l_term_signal_pending);
  lua_setfield(L, -2, "term_signal_pending");
}
