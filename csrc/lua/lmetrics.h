/* lmetrics.h -- the Lua side of the metrics layer (lmetrics.c): user
 * metrics in the process-wide registry (core.metric, kinformer.metrics),
 * the exposition (core.metrics_render) and the manager's HTTP endpoints
 * (core.metrics_server). */
#ifndef LKIN_METRICS_H
#define LKIN_METRICS_H

#include <lua.h>

/* Registers core.metric, core.metrics_render and core.metrics_server (and
 * their metatables) in the table at the top of the stack. */
void lkin_open_metrics(lua_State *L);

#endif
