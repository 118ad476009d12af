/* lwebhook.h -- kinformer.webhook_server (lwebhook.c): a manager's webhook
 * server (webhook.h) whose hooks run Lua handlers in pools of worker
 * states (worker_state.h), made by core.webhook_server{...}. */
#ifndef LKIN_WEBHOOK_H
#define LKIN_WEBHOOK_H

#include <lua.h>

/* Registers the kinformer.webhook_server metatable in L and
 * core.webhook_server into the module table at the top of the stack. */
void lkin_open_webhook(lua_State *L);

#endif
