/* lcontroller_reload.c -- ctl:reload([code]) (issue 15): new code for a
 * running controller without losing its cache, queue or per-key backoff.
 *
 * The main thread builds the new templates (the reconciler's: the module
 * name again, or the code given; each map watch given by module name: the
 * module again), checks that they load by opening a state from each on
 * the calling thread, then swaps them in under lctl.mu and bumps lctl.gen.
 * Each worker (and each map watch's listener) compares its state's gen
 * before its next call and rebuilds its state from the current template:
 * a reconcile in flight finishes with the code it started with. Code that
 * fails to load is reported with the loader's message (file:line) and
 * nothing is swapped; a worker whose rebuild fails anyway (the file changed
 * again in between) logs it and keeps its old state.
 *
 * A fresh state has an empty package.loaded, so a module is read from its
 * file again; module-level variables start over. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "lcontroller_int.h"
#include "log.h"

lkin_ws_template *lctl_tmpl(lctl *p) {
  pthread_mutex_lock(&p->mu);
  lkin_ws_template *t = lkin_ws_template_ref(p->tmpl);
  pthread_mutex_unlock(&p->mu);
  return t;
}

lkin_ws_template *lctl_map_tmpl(lmap *m) {
  pthread_mutex_lock(&m->ctl->mu);
  lkin_ws_template *t = lkin_ws_template_ref(m->tmpl);
  pthread_mutex_unlock(&m->ctl->mu);
  return t;
}

/* Opens a state from t labelled label. Returns it, or NULL with the
 * reason logged ("keeping the old code"). */
static lkin_ws *open_logged(lkin_ws_template *t, const char *label) {
  lkin_ws *w = NULL;
  char *err = NULL;
  if (lkin_ws_open(t, label, &w, &err) < 0) {
    kin_log(KIN_LOG_ERROR, "controller", "%s: reload failed, keeping the old code: %s", label,
            err ? err : "not enough memory");
    free(err);
    return NULL;
  }
  return w;
}

void lctl_refresh_worker(lctl *p, int worker) {
  wslot *s = &p->slots[worker];
  unsigned g = atomic_load(&p->gen);
  if (g == s->gen) return;
  s->gen = g;
  char label[256];
  snprintf(label, sizeof(label), "controller %s worker %d", p->name, worker + 1);
  lkin_ws_template *t = lctl_tmpl(p);
  lkin_ws *w = open_logged(t, label);
  lkin_ws_template_unref(t);
  if (!w) return;
  lkin_ws_set_user(w, s);
  lkin_ws_close(p->ws[worker]);
  p->ws[worker] = w;
  atomic_store_explicit(&s->mem, lkin_ws_memory(w), memory_order_relaxed);
}

void lctl_refresh_map(lmap *m) {
  unsigned g = atomic_load(&m->ctl->gen);
  if (g == m->gen) return;
  m->gen = g;
  char label[300];
  snprintf(label, sizeof(label), "controller %s %s", m->ctl->name, m->label);
  lkin_ws_template *t = lctl_map_tmpl(m);
  lkin_ws *w = open_logged(t, label);
  lkin_ws_template_unref(t);
  if (!w) return;
  lkin_ws_close(m->ws);
  m->ws = w;
}

/* Run in a trial state: raises unless the code has a function to call,
 * the code itself or its field named by the light userdata at 1. */
static int check_code(lua_State *L) {
  const char *field = lua_touserdata(L, 1);
  if (lkin_ws_push_function(L, NULL) == 0) return 0;
  lua_pop(L, 1);
  if (lkin_ws_push_function(L, field) == 0) return 0;
  return lua_error(L);
}

/* Opens a trial state from t on this thread and checks its code. Returns
 * 0, or a negative KIN_E* with the reason in *err (caller frees). */
static int try_load(lkin_ws_template *t, const char *label, const char *field, char **err) {
  lkin_ws *w = NULL;
  int rc = lkin_ws_open(t, label, &w, err);
  if (rc < 0) return rc;
  rc = lkin_ws_protect(w, check_code, (void *)field, err);
  lkin_ws_close(w);
  return rc;
}

/* A new template for the same code as t: a module name is captured again
 * (with L's package.path now), functions are shared. Raises on memory
 * errors only. */
static lkin_ws_template *again(lua_State *L, lkin_ws_template *t, const char *what) {
  const char *mod = lkin_ws_template_module(t);
  if (!mod) return lkin_ws_template_ref(t);
  lua_pushstring(L, mod);
  lkin_ws_template *n = lkin_ws_template_new(L, -1, what, lkin_ws_template_memory_limit(t));
  lua_pop(L, 1);
  return n;
}

/* Pushes nil, "controller NAME: reload failed, ...: ERR", "EINVAL|ENOMEM"
 * with the traceback cut off (the loader's first lines name file:line). */
static int push_failure(lua_State *L, lctl *p, const char *what, const char *err, int rc) {
  char *msg = strdup(err ? err : "not enough memory");
  if (msg) {
    char *tb = strstr(msg, "\nstack traceback:");
    if (tb) *tb = 0;
  }
  lua_pushnil(L);
  luaL_gsub(L, msg ? msg : "not enough memory", "\n\t", " ");
  lua_pushfstring(L, "controller \"%s\": reload of the %s failed, the old code keeps running: %s",
                  p->name, what, lua_tostring(L, -1));
  lua_remove(L, -2);
  lua_pushstring(L, rc == KIN_ENOMEM ? "ENOMEM" : "EINVAL");
  free(msg);
  return 3;
}

int lctl_reload(lua_State *L, lctl *p) {
  lua_settop(L, 2);
  /* main thread: the only writer of the templates, reads them unlocked */
  lkin_ws_template *rt;
  if (lua_isnil(L, 2)) rt = again(L, p->tmpl, "reconciler");
  else rt = lkin_ws_template_new(L, 2, "reconciler", lkin_ws_template_memory_limit(p->tmpl));
  lkin_ws_template **mt = calloc(p->nmaps ? p->nmaps : 1, sizeof(*mt));
  if (!mt) {
    lkin_ws_template_unref(rt);
    return luaL_error(L, "not enough memory");
  }
  char label[300], *err = NULL;
  const char *failed = NULL;
  snprintf(label, sizeof(label), "controller %s reload", p->name);
  int rc = try_load(rt, label, "reconcile", &err);
  if (rc < 0) failed = "reconciler";
  for (size_t i = 0; rc == 0 && i < p->nmaps; i++) {
    mt[i] = again(L, p->maps[i]->tmpl, "map function");
    if (mt[i] != p->maps[i]->tmpl && (rc = try_load(mt[i], label, "map", &err)) < 0)
      failed = p->maps[i]->label;
  }
  if (rc < 0) {
    lkin_ws_template_unref(rt);
    for (size_t i = 0; i < p->nmaps; i++) lkin_ws_template_unref(mt[i]);
    free(mt);
    int n = push_failure(L, p, failed, err, rc);
    free(err);
    return n;
  }
  pthread_mutex_lock(&p->mu);
  lkin_ws_template *old = p->tmpl;
  p->tmpl = rt;
  for (size_t i = 0; i < p->nmaps; i++) {
    lkin_ws_template *o = p->maps[i]->tmpl;
    p->maps[i]->tmpl = mt[i];
    mt[i] = o;
  }
  pthread_mutex_unlock(&p->mu);
  atomic_fetch_add(&p->gen, 1);
  lkin_ws_template_unref(old);
  for (size_t i = 0; i < p->nmaps; i++) lkin_ws_template_unref(mt[i]);
  free(mt);
  lua_pushboolean(L, 1);
  return 1;
}
