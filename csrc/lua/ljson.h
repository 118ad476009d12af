/* ljson.h -- the binding's own JSON codec between text and Lua values
 * (csrc/lua/ljson.c). Replaces lua-cjson for Kubernetes objects, because
 * Debian's lua-cjson 2.1.0 decodes every number as a float, encodes
 * numbers with 14 significant digits and encodes an empty table as {}.
 *
 * The mapping:
 *   JSON integer (no fraction, no exponent, fits int64)  <-> Lua integer
 *   other JSON numbers                                   <-> Lua float
 *   string (\uXXXX and surrogate pairs to UTF-8)         <-> Lua string
 *   true / false                                         <-> boolean
 *   null                                  <-> lightuserdata NULL (== cjson.null)
 *   array  -> a sequence carrying the shared array metatable (every decoded
 *             array, so that an array emptied by Lua code still encodes as
 *             []); a table with keys exactly 1..n (n > 0) or carrying that
 *             metatable encodes as an array
 *   object <-> a table with string keys; an empty plain table encodes as {}
 *
 * The array metatable is kept in the registry under LKIN_JSON_ARRAY_MT
 * (made on first use in each state) and exported as core.array_mt, with
 * core.empty_array() making a new empty array. Tables are read raw
 * (metamethods other than the array mark are ignored), except that a lazy
 * view (LKIN_JSON_VIEW_MT) is materialized in place first. Nesting deeper than
 * LKIN_JSON_MAX_DEPTH is refused both ways, so hostile input cannot exhaust
 * the C stack. Both directions are safe to use from any thread on a state
 * that thread owns, and depend on no locale. */
#ifndef LKIN_JSON_H
#define LKIN_JSON_H

#include <stddef.h>

#include <lua.h>

#define LKIN_JSON_MAX_DEPTH 512
#define LKIN_JSON_ARRAY_MT "kinformer.array"
/* The metatable of lazy views of cached objects (lview.h), kept in the
 * registry under this name. The encoder materializes a view (calls its
 * __pairs, which decodes the members not read yet into it) before reading
 * it; the decoder never makes views. */
#define LKIN_JSON_VIEW_MT "kinformer.view"

/* Decodes the JSON text json[0..len) (one value, surrounded by optional
 * whitespace; it need not be NUL-terminated) and pushes it as fresh Lua
 * values. Returns 0 with one value pushed; or pushes nothing and returns
 * KIN_EINVAL (malformed JSON, nesting deeper than LKIN_JSON_MAX_DEPTH) or
 * KIN_ENOMEM (the Lua stack cannot grow). Raises only on Lua memory errors
 * (nothing C-side leaks then: all memory in use belongs to Lua). */
int lkin_json_push(lua_State *L, const char *json, size_t len);

/* The same, also writing why it failed into msg (NUL-terminated, cut to
 * msglen bytes; "invalid JSON at offset 12: expected ':'"). msg is the
 * caller's and is left alone on success; it may be NULL when msglen is 0. */
int lkin_json_push_msg(lua_State *L, const char *json, size_t len, char *msg, size_t msglen);

/* Encodes the value at idx as JSON. Returns 0 with the JSON text pushed as
 * a Lua string; or pushes an error message and returns KIN_EINVAL (a value
 * JSON cannot hold: function, userdata, inf/nan, a table with mixed or
 * non-string keys or holes, a cycle, nesting deeper than
 * LKIN_JSON_MAX_DEPTH; the message names the place, as in "cannot encode
 * table with mixed keys at $.spec.containers[1]", indices counting from 1
 * as Lua does) or KIN_ENOMEM (the Lua stack cannot grow). Exactly one value
 * is pushed either way. Raises only on Lua memory errors. */
int lkin_json_encode(lua_State *L, int idx);

/* Pushes the shared array metatable of L (created on first use). Raises
 * only on memory errors. */
void lkin_json_push_array_mt(lua_State *L);

/* Registers json_decode, json_encode, empty_array, array_mt and null into
 * the module table at the top of the stack. */
void lkin_open_json(lua_State *L);

#endif
