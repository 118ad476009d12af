/* lshard.h -- the sharding primitives of kinformer.core (lshard.c) that
 * lua/kinformer/sharding.lua builds on: the env's shard gate, shard
 * selectors and their hash. */
#ifndef LKIN_SHARD_H
#define LKIN_SHARD_H

#include <lua.h>

/* Sets core.shard_gate, core.shard_gate_stats, core.shard_hash and
 * core.shard_selector in the module table at the top. */
void lkin_open_shard(lua_State *L);

#endif
