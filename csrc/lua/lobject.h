/* lobject.h -- kinformer.object (lobject.c): a cached Kubernetes object
 * (kin_obj) as userdata. */
#ifndef LKIN_OBJECT_H
#define LKIN_OBJECT_H

#include <lua.h>

struct kin_obj;

/* Pushes a new kinformer.object userdata holding its own reference. */
void lkin_push_object(lua_State *L, struct kin_obj *o);
/* Returns 1 when the value at i is a kinformer.object, with its object
 * (borrowed; NULL once closed) in *o; 0 otherwise. Never raises. */
int lkin_test_object(lua_State *L, int i, struct kin_obj **o);

/* Registers the kinformer.object metatable in L and core.object and
 * core.tombstone into the module table at the top of the stack. */
void lkin_open_object(lua_State *L);

#endif
