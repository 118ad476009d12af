/* lreadline.c -- luaopen_kinformer_readline, the line editor of
 * `kinformer repl`: libedit's readline interface in callback mode
 * (rl_callback_handler_install / rl_callback_read_char), so that the REPL
 * keeps pumping the manager while a line is being typed, plus the SIGINT
 * handling that makes Ctrl-C interrupt a running statement rather than the
 * session. Its own module (build/<mode>/kinformer/readline.so, linked with
 * libedit): an operator running in production loads neither.
 *
 * Main thread only: everything here (libedit's state, the completer, the
 * interrupt flags) belongs to the thread that runs the REPL. The SIGINT
 * handler only stores to sig_atomic_t flags and calls lua_sethook, which
 * Lua documents as safe to call from a signal handler. */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>

static volatile sig_atomic_t got_sigint;  /* a SIGINT arrived (at the prompt) */
static volatile sig_atomic_t got_sigterm; /* a SIGTERM arrived: the session ends */
static volatile sig_atomic_t evaluating;  /* a statement runs: interrupt it */
static lua_State *volatile eval_L;        /* the state running it */

static char *line_done;  /* the line the handler received (malloc'd) */
static int line_ready;   /* the handler ran: line_done or EOF (NULL) */
static int installed;    /* the callback handler is installed */
static char *prompt;     /* the installed prompt (malloc'd) */

static lua_State *complete_L; /* the state inside rl.read (for completion) */
static int completer_ref = LUA_NOREF;

/* ---- interrupting a running statement ---------------------------------- */

/* The hook set by the handler: clears itself and raises "interrupted". */
static void interrupt_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted");
}

/* SIGINT: while a statement runs, sets a hook on its state that raises at
 * the next instruction, call or return; otherwise remembers the signal
 * (the prompt clears the line). SIGTERM: the same, and rl.read then
 * reports the end of input. */
static void on_sigint(int sig) {
  if (sig == SIGTERM) got_sigterm = 1;
  got_sigint = 1;
  lua_State *L = eval_L;
  if (evaluating && L) lua_sethook(L, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

/* rl.catch_sigint(): installs the SIGINT and SIGTERM handler (no
 * SA_RESTART: a wait in rl.read returns) and unblocks both in the calling
 * thread only (kinformer's threads block every signal). Returns true. */
static int l_catch_sigint(lua_State *L) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);
  lua_pushboolean(L, 1);
  return 1;
}

/* rl.eval_begin(): until rl.eval_end(), a SIGINT raises "interrupted" in
 * the main Lua state of L. */
static int l_eval_begin(lua_State *L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  eval_L = lua_tothread(L, -1);
  lua_pop(L, 1);
  got_sigint = 0;
  evaluating = 1;
  return 0;
}

/* rl.eval_end() -> boolean: ends what eval_begin started (removing a hook
 * the handler may have set and not yet fired); returns whether a SIGINT
 * arrived meanwhile. */
static int l_eval_end(lua_State *L) {
  evaluating = 0;
  lua_State *m = eval_L;
  if (m && lua_gethook(m) == interrupt_hook) lua_sethook(m, NULL, 0, 0);
  eval_L = NULL;
  lua_pushboolean(L, got_sigint);
  got_sigint = 0;
  return 1;
}

/* rl.terminated() -> boolean: whether a SIGTERM arrived. */
static int l_terminated(lua_State *L) {
  lua_pushboolean(L, got_sigterm);
  return 1;
}

/* rl.interrupted() -> boolean: whether a SIGINT arrived since the last
 * call (or eval_begin); clears it. */
static int l_interrupted(lua_State *L) {
  lua_pushboolean(L, got_sigint);
  got_sigint = 0;
  return 1;
}

/* ---- completion ---------------------------------------------------------- */

static char **matches;  /* candidates of the current completion (malloc'd) */
static size_t nmatches, next_match;

/* The generator rl_completion_matches calls: each candidate once (copies
 * libedit frees), then NULL. */
static char *generate(const char *text, int state) {
  (void)text;
  if (state == 0) next_match = 0;
  if (next_match < nmatches) return strdup(matches[next_match++]);
  return NULL;
}

static void free_matches(void) {
  for (size_t i = 0; i < nmatches; i++) free(matches[i]);
  free(matches);
  matches = NULL;
  nmatches = 0;
}

/* rl_attempted_completion_function: calls the Lua completer with the word
 * before the cursor and the line up to it; returns its candidates in
 * libedit's form, or NULL (no completion; never file names). */
static char **attempt(const char *text, int start, int end) {
  (void)start;
  rl_attempted_completion_over = 1;
  lua_State *L = complete_L;
  if (!L || completer_ref == LUA_NOREF) return NULL;
  lua_rawgeti(L, LUA_REGISTRYINDEX, completer_ref);
  lua_pushstring(L, text);
  lua_pushlstring(L, rl_line_buffer, (size_t)end);
  if (lua_pcall(L, 2, 1, 0) != LUA_OK || !lua_istable(L, -1)) {
    lua_pop(L, 1);
    return NULL;
  }
  free_matches();
  lua_Integer n = luaL_len(L, -1);
  matches = calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
  for (lua_Integer i = 1; matches && i <= n; i++) {
    lua_rawgeti(L, -1, i);
    const char *s = lua_tostring(L, -1);
    if (s) matches[nmatches++] = strdup(s);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (nmatches == 0) return NULL;
  rl_completion_append_character = '\0';
  return rl_completion_matches(text, generate);
}

/* rl.set_completer(fn): fn(word, line_before_cursor) -> array of the
 * words that may replace word. */
static int l_set_completer(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  luaL_unref(L, LUA_REGISTRYINDEX, completer_ref);
  lua_pushvalue(L, 1);
  completer_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

/* ---- the prompt -------------------------------------------------------- */

/* The callback handler: keeps the line (NULL at end of input). */
static void on_line(char *line) {
  free(line_done);
  line_done = line;
  line_ready = 1;
  /* libedit calls it with the terminal still in line-editing mode: the
   * handler is removed so that what the statement prints is cooked */
  rl_callback_handler_remove();
  installed = 0;
}

static void install(void) {
  rl_callback_handler_install(prompt ? prompt : "> ", on_line);
  installed = 1;
}

/* rl.prompt(text): shows the prompt and starts reading a line (text
 * becomes the prompt; a line being typed is dropped). */
static int l_prompt(lua_State *L) {
  const char *p = luaL_checkstring(L, 1);
  char *copy = strdup(p);
  if (!copy) return luaL_error(L, "out of memory");
  free(prompt);
  prompt = copy;
  if (installed) rl_callback_handler_remove();
  install();
  return 0;
}

/* rl.hide(): erases the prompt's line (before printing above it) and
 * leaves the terminal as it was before the prompt; rl.prompt (or
 * rl.show) shows it again. */
static int l_hide(lua_State *L) {
  (void)L;
  if (installed) {
    rl_callback_handler_remove();
    installed = 0;
  }
  fputs("\r\033[K", stdout);
  fflush(stdout);
  return 0;
}

/* rl.show(): shows the prompt again after rl.hide (the line typed so far
 * is dropped: call it only when rl.line() is empty). */
static int l_show(lua_State *L) {
  (void)L;
  if (!installed) install();
  return 0;
}

/* rl.line() -> the text typed so far at the prompt. */
static int l_line(lua_State *L) {
  if (installed && rl_line_buffer)
    lua_pushlstring(L, rl_line_buffer, (size_t)rl_end);
  else
    lua_pushliteral(L, "");
  return 1;
}

/* rl.read(timeout) -> line | false | nil, "interrupt" | nil: waits up to
 * timeout seconds (default 0) for input at the prompt and feeds what came
 * to libedit. Returns the line when one was entered (the prompt is then
 * gone: call rl.prompt for the next), false at end of input (Ctrl-D, a
 * hang-up, SIGTERM), nil,
 * "interrupt" when Ctrl-C was pressed (the line is dropped, a fresh prompt
 * shown), nil when the time passed. */
static int l_read(lua_State *L) {
  double timeout = luaL_optnumber(L, 1, 0);
  if (!installed) install();
  struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
  int ms = timeout > 0 ? (int)(timeout * 1000) : 0;
  complete_L = L;
  for (;;) {
    if (got_sigterm) {
      complete_L = NULL;
      lua_pushboolean(L, 0);
      return 1;
    }
    if (got_sigint) {
      got_sigint = 0;
      /* "^C" after the text typed (the cursor is there while editing),
       * then the line is dropped and a fresh prompt shown below */
      fputs("^C", stdout);
      fflush(stdout);
      rl_callback_handler_remove();
      installed = 0;
      fputs("\n", stdout);
      fflush(stdout);
      install();
      lua_pushnil(L);
      lua_pushliteral(L, "interrupt");
      return 2;
    }
    int r = poll(&pfd, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (!(pfd.revents & POLLIN)) { /* hung up or closed: end of input */
      complete_L = NULL;
      lua_pushboolean(L, 0);
      return 1;
    }
    line_ready = 0;
    rl_callback_read_char();
    if (line_ready) {
      complete_L = NULL;
      if (!line_done) {
        lua_pushboolean(L, 0);
        return 1;
      }
      lua_pushstring(L, line_done);
      free(line_done);
      line_done = NULL;
      return 1;
    }
    ms = 0; /* drain what is already there, then return */
  }
  complete_L = NULL;
  lua_pushnil(L);
  return 1;
}

/* rl.add_history(line): adds line to the history (Up/Down). */
static int l_add_history(lua_State *L) {
  add_history(luaL_checkstring(L, 1));
  return 0;
}

/* rl.close(): removes the prompt and restores the terminal. */
static int l_close(lua_State *L) {
  (void)L;
  if (installed) rl_callback_handler_remove();
  installed = 0;
  return 0;
}

/* rl.isatty(fd) -> boolean (fd 0 by default). */
static int l_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_optinteger(L, 1, 0)));
  return 1;
}

static const luaL_Reg funcs[] = {
    {"prompt", l_prompt},       {"read", l_read},
    {"hide", l_hide},           {"show", l_show},
    {"line", l_line},           {"add_history", l_add_history},
    {"set_completer", l_set_completer},
    {"catch_sigint", l_catch_sigint},
    {"eval_begin", l_eval_begin}, {"eval_end", l_eval_end},
    {"interrupted", l_interrupted},
    {"terminated", l_terminated},
    {"close", l_close},         {"isatty", l_isatty},
    {NULL, NULL},
};

/* require "kinformer.readline" -> the module table. Sets libedit up once:
 * no signal handling of its own (rl.catch_sigint does it), words break at
 * spaces and operators but not at . and : (so "mgr:con" is one word). */
int luaopen_kinformer_readline(lua_State *L) {
  static char breaks[] = " \t\n\"'`@$><=;|&{(),+-*/%^~#[]}";
  rl_readline_name = "kinformer";
  rl_catch_signals = 0;
  rl_basic_word_break_characters = breaks;
  rl_completer_word_break_characters = breaks;
  rl_attempted_completion_function = attempt;
  using_history();
  luaL_newlib(L, funcs);
  return 1;
}
