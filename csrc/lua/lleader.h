/* lleader.h -- kinformer.leader_elector (lleader.c): leader election on a
 * Lease (leader_election.h) for a manager, its callbacks run by env:step
 * in the main state. lua/kinformer/leader_election.lua builds on it. */
#ifndef LKIN_LEADER_H
#define LKIN_LEADER_H

#include <lua.h>

#include "leader_election.h"

/* The elector of the kinformer.leader_elector at index i (borrowed: it
 * lives until that userdata is closed), or NULL when the value is not an
 * open one; never raises. For a metrics collector's
 * leader_election_master_status{name} gauge (kin_leader_elector_is_leader,
 * kin_leader_elector_name). */
kin_leader_elector *lkin_leader_elector_of(lua_State *L, int i);

/* Registers the kinformer.leader_elector metatable in L and sets
 * core.leader_elector(env, opts) and core.leader_fence(env) in the module
 * table at the top. */
void lkin_open_leader(lua_State *L);

#endif
