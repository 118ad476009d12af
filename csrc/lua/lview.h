/* lview.h -- lazy views of cached objects (csrc/lua/lview.c): what
 * handlers, listers, map functions and transforms get instead of a table
 * decoded up front.
 *
 * A view is a plain Lua table (type() is "table") carrying the shared
 * metatable LKIN_JSON_VIEW_MT (ljson.h). It holds a reference to the
 * kin_obj whose JSON it reads (in a weak-keyed side table of the state),
 * and decodes a member on its first read: scalars as ljson decodes them,
 * objects as views in turn, arrays as fresh arrays (carrying the array
 * metatable) whose object elements are views. A decoded member is stored
 * in the table (rawset), so the second read is a plain table read, and a
 * change made by Lua code stays in that one table: the cache never
 * changes, and another view of the same object does not see it.
 *
 * Assigning a member (also nil, to delete it) goes through __newindex, so
 * the JSON's value never comes back. pairs() (__pairs), ljson's encoder
 * and lkin_view_materialize decode the members not read yet, then drop the
 * metatable: the table is then an ordinary decoded object. next() and
 * rawget() see only the members read so far (materialize first). JSON
 * members with the same name: the last one counts, as in ljson's decoder. */
#ifndef LKIN_VIEW_H
#define LKIN_VIEW_H

#include <lua.h>

struct kin_obj;

/* Pushes a new view of o's JSON (an object: '{...}'; o is validated JSON,
 * as everything the cache holds). Takes its own reference to o. Raises
 * only on memory errors. */
void lkin_view_push(lua_State *L, struct kin_obj *o);

/* Whether the value at i is a view not materialized yet. */
int lkin_view_is(lua_State *L, int i);

/* Decodes what the view at i has not decoded yet into it and drops the
 * view metatable; deep: also views reachable through its members. Other
 * values are left alone (tables are walked for views inside). Raises only
 * on memory errors. */
void lkin_view_materialize(lua_State *L, int i);

/* Registers core.materialize and core.is_view into the module table at the
 * top of the stack. */
void lkin_open_view(lua_State *L);

#endif
