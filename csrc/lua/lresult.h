/* lresult.h -- the one owner of what a reconciler's outcome means
 * (lresult.c): which value is a terminal error, and how the values a
 * reconcile returned, or the error it raised, map to a kin_result_action
 * (done, requeue, requeue_after, error, terminal error). lcontroller.c
 * uses it in the worker states; lua/kinformer/controller.lua
 * (reconcile_once) and errors.lua (is_terminal) call it through
 * core.reconcile_result and core.is_terminal. */
#ifndef LKIN_RESULT_H
#define LKIN_RESULT_H

#include <lua.h>

#include "reconcile.h"

/* 1 when the value at i is a terminal error: a table whose raw field
 * kinformer_terminal is true. Never raises. */
int lkin_is_terminal(lua_State *L, int i);

/* Pushes a string describing the error value at i: a string or number as
 * is, __tostring, a table's message, err or error field, else
 * "(error object is a <type> value)". Returns it. */
const char *lkin_push_error_text(lua_State *L, int i);

/* Sets out->kind (and out->requeue_after_ns) for the values a reconcile
 * returned: res at r, err at r + 1.
 *   terminal res, or falsy res with a terminal err  TERMINAL_ERROR
 *   nil / false with err nil, or true               DONE
 *   nil / false with err                            ERROR
 *   table {requeue_after = s > 0}                   REQUEUE_AFTER
 *   table {requeue = true}                          REQUEUE
 *   other table                                     DONE
 *   a bad requeue_after, or any other type          ERROR
 * Returns 0, or for the error kinds the index of a pushed string (the
 * error's text); pushes nothing else. */
int lkin_result_of_return(lua_State *L, int r, kin_result_action *out);

/* The same for an error the reconcile raised (the value at i): TERMINAL_ERROR
 * for a terminal error, else ERROR. Returns the index of the pushed text. */
int lkin_result_of_raise(lua_State *L, int i, kin_result_action *out);

/* Registers core.reconcile_result and core.is_terminal in the table at the
 * top of the stack. */
void lkin_open_result(lua_State *L);

#endif
