/* levent.h -- kinformer.event_recorder (levent.c): Kubernetes Events
 * from any Lua state of a manager, through the manager's one C recorder
 * (lkin_env_events, event_recorder.h). */
#ifndef LKIN_EVENT_H
#define LKIN_EVENT_H

#include <lua.h>

#include "event_recorder.h"
#include "lenv_core.h"

/* Pushes a kinformer.event_recorder of component (copied) over e's
 * recorder, holding a new reference on e (env:event_recorder in lenv.c).
 * Returns the number of values pushed: 1, or 3 (nil, msg, code) when out
 * of memory. */
int lkin_push_event_recorder(lua_State *L, lkin_env *e, const char *component);

/* Reads the manager option events = {instance=, queue_size=, api=} of the
 * option table at t (0: none) into *out (instance borrowed from the
 * table); raises on misuse, so call it before allocating anything. */
void lkin_event_read_opts(lua_State *L, int t, kin_event_recorder_opts *out);

/* Registers the kinformer.event_recorder metatable in L. */
void lkin_open_event(lua_State *L);

#endif
