/* lview.c -- lazy views of cached objects (see lview.h). A view is a table
 * with the shared metatable LKIN_JSON_VIEW_MT; its state (a userdata: the
 * JSON span, an index of its members, the kin_obj reference at the root)
 * is found through a weak-keyed side table, so that the view's own keys
 * are only the object's members. The first read of a member scans the
 * span once into the index (offsets only, nothing decoded); each member is
 * then decoded on its first read. The bytes come from the cache, which
 * only holds JSON kin_obj_parse accepted: the scanner trusts them but
 * never reads past the span. */
#include "lview.h"

#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "json_str.h"
#include "kin.h"
#include "kobj.h"
#include "ljson.h"
#include "read_paths.h"

/* registry keys (addresses): the side table, the root state metatable,
 * the view metatable (also under LKIN_JSON_VIEW_MT, for ljson.c) */
static const char SIDE_KEY = 0, ROOT_MT_KEY = 0, VIEW_MT_KEY = 0;

typedef struct {
  size_t k, kn;  /* key body (without its quotes): offset in s, length */
  size_t v, vn;  /* value: offset, length */
  unsigned char esc;   /* the key has escapes */
  unsigned char taken; /* decoded into the table, or assigned by Lua code */
} vmem;

/* User values: 1 the root's state (nested views: keeps the bytes alive),
 * 2 the member index (a userdata of nm vmem). */
typedef struct {
  kin_obj *o;    /* root only: the reference that keeps s alive */
  const char *s; /* '{' ... '}' */
  size_t n;
  vmem *m;  /* NULL until indexed */
  int nm;   /* members */
  int left; /* members not taken */
  /* where reads are recorded (read_paths.h): this view's path, or NULL
   * (not recorded: metadata, inside arrays; a root's is found on its
   * first recorded read) */
  kin_read_node *node;
} vstate;

/* ---- scanning (trusted JSON, bounded by the span) ------------------------ */

static inline const char *skip_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  return p;
}

/* p at a '"': just past the closing quote; *esc set when the body holds
 * a backslash. 16 bytes at a time (json_str.h). */
static inline const char *skip_str(const char *p, const char *end, int *esc) {
  const unsigned char *u = (const unsigned char *)p;
  size_t i = 1, n = (size_t)(end - p);
  for (;;) {
    i = kin__json_str_plain(u, i, n);
    if (i >= n) return end;
    if (u[i] == '"') return p + i + 1;
    if (u[i] == '\\') {
      *esc = 1;
      i += 2;
    } else {
      i++; /* a raw control character: the parser refused those */
    }
  }
}

/* bytes that matter while skipping a container: quote, brackets */
static const unsigned char structural[256] = {['"'] = 1, ['{'] = 2, ['['] = 2, ['}'] = 3, [']'] = 3};

/* p at a value: just past it */
static const char *skip_value(const char *p, const char *end) {
  int esc;
  if (p >= end) return end;
  if (*p == '"') return skip_str(p, end, &esc);
  if (*p == '{' || *p == '[') {
    size_t depth = 0;
    while (p < end) {
      switch (structural[(unsigned char)*p]) {
      case 0: p++; continue;
      case 1: p = skip_str(p, end, &esc); continue;
      case 2: depth++; break;
      case 3:
        if (--depth == 0) return p + 1;
        break;
      }
      p++;
    }
    return end;
  }
  while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' &&
         *p != '\r' && *p != '\t')
    p++;
  return p;
}

/* Scans the members of the object s[0..n) ('{' first). Fills up to cap
 * entries of out; returns how many there are. */
static int scan_members(const char *s, size_t n, vmem *out, int cap) {
  const char *end = s + n, *p = skip_ws(s + 1, end);
  int nm = 0;
  while (p < end && *p == '"') {
    int esc = 0;
    const char *k = p + 1, *q = skip_str(p, end, &esc);
    const char *kend = q > k ? q - 1 : k;
    p = skip_ws(q, end);
    if (p < end && *p == ':') p++;
    p = skip_ws(p, end);
    const char *v = p;
    p = skip_value(p, end);
    if (nm < cap) {
      vmem *m = &out[nm];
      m->k = (size_t)(k - s);
      m->kn = (size_t)(kend - k);
      m->esc = (unsigned char)esc;
      m->v = (size_t)(v - s);
      m->vn = (size_t)(p - v);
      m->taken = 0;
    }
    nm++;
    p = skip_ws(p, end);
    if (p < end && *p == ',') p = skip_ws(p + 1, end);
  }
  return nm;
}

/* Makes st's member index (st at stack index si). */
static void index_members(lua_State *L, int si, vstate *st) {
  vmem tmp[48]; /* most objects' levels have fewer members: one scan */
  int nm = scan_members(st->s, st->n, tmp, 48);
  vmem *m = lua_newuserdatauv(L, (nm ? (size_t)nm : 1) * sizeof(vmem), 0);
  if (nm <= 48) memcpy(m, tmp, (size_t)nm * sizeof(vmem));
  else scan_members(st->s, st->n, m, nm);
  lua_setiuservalue(L, si, 2);
  st->m = m;
  st->nm = st->left = nm;
}

/* Whether member i's name is k[0..kl). */
static int key_eq(const vstate *st, int i, const char *k, size_t kl) {
  const vmem *m = &st->m[i];
  const char *ks = st->s + m->k;
  if (!m->esc) return m->kn == kl && memcmp(ks, k, kl) == 0;
  if (kl > m->kn) return 0; /* escapes only shrink a key */
  char *buf = malloc(m->kn ? m->kn : 1);
  size_t len;
  int eq = buf && kin__json_unescape(ks, m->kn, buf, &len) == 0 && len == kl &&
           memcmp(buf, k, kl) == 0;
  free(buf);
  return eq;
}

/* The last member named k (duplicates: the last counts, as in ljson's
 * decoder), or -1. */
static int find(const vstate *st, const char *k, size_t kl) {
  for (int i = st->nm - 1; i >= 0; i--)
    if (key_eq(st, i, k, kl)) return i;
  return -1;
}

/* Marks every member named k taken: its JSON value is never read again. */
static void take(vstate *st, const char *k, size_t kl) {
  for (int i = 0; i < st->nm; i++)
    if (!st->m[i].taken && key_eq(st, i, k, kl)) {
      st->m[i].taken = 1;
      st->left--;
    }
}

/* ---- making values --------------------------------------------------------- */

static void push_value(lua_State *L, int root, const char *p, size_t n, int depth,
                       kin_read_node *node);

/* Pushes a new view of the object p[0..n). root: stack index of the root
 * state, or 0 when o is given (a new root). node: where its reads are
 * recorded (NULL: nowhere). */
static void push_view(lua_State *L, int root, kin_obj *o, const char *p, size_t n,
                      kin_read_node *node) {
  luaL_checkstack(L, 6, "view");
  lua_createtable(L, 0, 0);
  vstate *st = lua_newuserdatauv(L, sizeof(*st), 2);
  st->o = NULL;
  st->s = p;
  st->n = n;
  st->m = NULL;
  st->nm = st->left = 0;
  st->node = node;
  if (root) {
    lua_pushvalue(L, root);
    lua_setiuservalue(L, -2, 1);
  } else {
    st->o = kin_obj_ref(o);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &ROOT_MT_KEY);
    lua_setmetatable(L, -2); /* no allocation since the ref: no leak */
  }
  lua_rawgetp(L, LUA_REGISTRYINDEX, &SIDE_KEY);
  lua_pushvalue(L, -3);
  lua_pushvalue(L, -3);
  lua_rawset(L, -3);
  lua_pop(L, 2);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &VIEW_MT_KEY);
  lua_setmetatable(L, -2);
}

/* The array p[0..n): a fresh array whose objects are views (their reads
 * not recorded: an array read is recorded whole). */
static void push_array(lua_State *L, int root, const char *p, size_t n, int depth) {
  const char *end = p + n, *q = skip_ws(p + 1, end);
  luaL_checkstack(L, 4, "view");
  lua_createtable(L, 0, 0);
  lkin_json_push_array_mt(L);
  lua_setmetatable(L, -2);
  for (lua_Integer i = 1; q < end && *q != ']'; i++) {
    const char *e = skip_value(q, end);
    push_value(L, root, q, (size_t)(e - q), depth + 1, NULL);
    lua_rawseti(L, -2, i);
    q = skip_ws(e, end);
    if (q < end && *q == ',') q = skip_ws(q + 1, end);
  }
}

/* Pushes the value p[0..n) as ljson would decode it, objects as views
 * whose reads are recorded under node (an array is recorded read whole). */
static void push_value(lua_State *L, int root, const char *p, size_t n, int depth,
                       kin_read_node *node) {
  if (depth > LKIN_JSON_MAX_DEPTH) luaL_error(L, "decode: nesting deeper than 512");
  switch (*p) {
  case '{': push_view(L, root, NULL, p, n, node); return;
  case '[':
    kin_read_paths_mark(node, KIN_READ_WHOLE);
    push_array(L, root, p, n, depth);
    return;
  case '"':
    if (n >= 2 && !memchr(p + 1, '\\', n - 2)) {
      lua_pushlstring(L, p + 1, n - 2);
      return;
    }
    break; /* escapes: ljson's decoder, the one rule */
  case 't': lua_pushboolean(L, 1); return;
  case 'f': lua_pushboolean(L, 0); return;
  case 'n': lua_pushlightuserdata(L, NULL); return;
  }
  char msg[160];
  if (lkin_json_push_msg(L, p, n, msg, sizeof(msg)) < 0) luaL_error(L, "decode: %s", msg);
}

/* Pushes the root state of the state at si. */
static void push_root(lua_State *L, int si) {
  if (lua_getiuservalue(L, si, 1) == LUA_TNIL) {
    lua_pop(L, 1);
    lua_pushvalue(L, si);
  }
}

static void push_key(lua_State *L, const vstate *st, int i) {
  const vmem *m = &st->m[i];
  if (!m->esc) lua_pushlstring(L, st->s + m->k, m->kn);
  else push_value(L, 0, st->s + m->k - 1, m->kn + 2, 0, NULL);
}

/* Where the reads of st are recorded: a root's tree (found on first use
 * from its object's apiVersion and kind), a nested view's node, or NULL. */
static kin_read_node *view_node(vstate *st) {
  if (!st->node && st->o)
    st->node = kin_read_paths_root(kin_obj_api_version(st->o), kin_obj_kind_name(st->o));
  return st->node;
}

/* The node of member k[0..kl) of st, or NULL: a root's apiVersion, kind
 * and metadata are kept by every projection, so not recorded. */
static kin_read_node *member_node(vstate *st, const char *k, size_t kl) {
  if (st->o && ((kl == 8 && !memcmp(k, "metadata", 8)) || (kl == 4 && !memcmp(k, "kind", 4)) ||
                (kl == 10 && !memcmp(k, "apiVersion", 10))))
    return NULL;
  kin_read_node *n = view_node(st);
  return n ? kin_read_paths_child(n, k, kl) : NULL;
}

/* The object of the root of the state at si (kept alive by that state),
 * for kin_read_paths_missing. */
static const kin_obj *root_obj(lua_State *L, int si) {
  push_root(L, si);
  const vstate *r = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return r ? r->o : NULL;
}

/* The view at t (absolute) has become a plain table: drop the metatable
 * and the state (side table at si). */
static void finish(lua_State *L, int t, int side) {
  lua_pushnil(L);
  lua_setmetatable(L, t);
  lua_pushvalue(L, t);
  lua_pushnil(L);
  lua_rawset(L, side);
}

/* Pushes the state of the table at t (absolute) from the side table at
 * side; NULL (nil pushed) when t is not a view. */
static vstate *get_state(lua_State *L, int t, int side) {
  lua_pushvalue(L, t);
  return lua_rawget(L, side) == LUA_TUSERDATA ? lua_touserdata(L, -1) : NULL;
}

/* Decodes the members of the view at t not taken yet into it and drops
 * the metatable (one level). */
static void materialize1(lua_State *L, int t, int side) {
  int top = lua_gettop(L);
  vstate *st = get_state(L, t, side);
  if (!st) {
    lua_settop(L, top);
    return;
  }
  int si = lua_gettop(L);
  if (!st->m) index_members(L, si, st);
  kin_read_paths_mark(view_node(st), KIN_READ_WHOLE); /* read whole: pairs, encode */
  if (kin_read_paths_projected()) /* of a projected object: was all of it kept? */
    kin_read_paths_missing(view_node(st), root_obj(L, si), KIN_READ_WHOLE);
  push_root(L, si);
  int root = lua_gettop(L);
  for (int i = 0; i < st->nm && st->left > 0; i++) {
    vmem *m = &st->m[i];
    if (m->taken) continue;
    push_key(L, st, i);
    push_value(L, root, st->s + m->v, m->vn, 1, NULL);
    lua_rawset(L, t); /* in member order: of duplicates the last stays */
    m->taken = 1;
    st->left--;
  }
  finish(L, t, side);
  lua_settop(L, top);
}

/* ---- metamethods (upvalue 1: the side table) ------------------------------- */

static int v_index(lua_State *L) {
  if (lua_type(L, 2) != LUA_TSTRING) return 0;
  lua_settop(L, 2);
  vstate *st = get_state(L, 1, lua_upvalueindex(1)); /* 3 */
  if (!st) return 0;
  if (!st->m) index_members(L, 3, st);
  size_t kl;
  const char *k = lua_tolstring(L, 2, &kl);
  int i = find(st, k, kl);
  if (i >= 0 && st->m[i].taken) return 0; /* deleted by Lua code */
  /* the first read of a member (absent too: a projection must keep it
   * should it come) is recorded */
  kin_read_node *node = member_node(st, k, kl);
  kin_read_paths_mark(node, KIN_READ_SEEN);
  if (i < 0) {
    /* absent: dropped by a projection? (told once per path, informer) */
    if (node && kin_read_paths_projected())
      kin_read_paths_missing(node, root_obj(L, 3), KIN_READ_SEEN);
    return 0;
  }
  push_root(L, 3);
  push_value(L, 4, st->s + st->m[i].v, st->m[i].vn, 1, node); /* 5 */
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 5);
  lua_rawset(L, 1);
  take(st, k, kl);
  /* all taken: a plain table from now on, unless a projection may have
   * dropped what is read next (absent reads must still reach v_index) */
  if (st->left == 0 && !kin_read_paths_projected()) finish(L, 1, lua_upvalueindex(1));
  lua_settop(L, 5);
  return 1;
}

/* t[k] = v for a k not in the table: the JSON's member k (if any) is
 * replaced or deleted for good. */
static int v_newindex(lua_State *L) {
  lua_settop(L, 3);
  if (lua_type(L, 2) == LUA_TSTRING) {
    vstate *st = get_state(L, 1, lua_upvalueindex(1));
    if (st) {
      if (!st->m) index_members(L, 4, st);
      size_t kl;
      const char *k = lua_tolstring(L, 2, &kl);
      take(st, k, kl);
    }
    lua_settop(L, 3);
  }
  lua_rawset(L, 1);
  return 0;
}

static int v_next(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);
  if (lua_next(L, 1)) return 2;
  lua_pushnil(L);
  return 1;
}

/* pairs(view): the members not read yet are decoded first */
static int v_pairs(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  materialize1(L, 1, lua_upvalueindex(1));
  lua_pushcfunction(L, v_next);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

static int root_gc(lua_State *L) {
  vstate *st = lua_touserdata(L, 1);
  kin_obj_unref(st->o);
  st->o = NULL;
  return 0;
}

/* Makes the side table, the view metatable and the root state metatable
 * of L on first use. */
static void ensure_init(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &SIDE_KEY) == LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  lua_createtable(L, 0, 0); /* the side table, weak keys */
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  /* no __name: tostring(view) reads "table: 0x...", as before views */
  lua_createtable(L, 0, 3);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, LKIN_JSON_VIEW_MT);
  static const luaL_Reg mm[] = {{"__index", v_index},
                                {"__newindex", v_newindex},
                                {"__pairs", v_pairs},
                                {NULL, NULL}};
  lua_pushvalue(L, -2);
  luaL_setfuncs(L, mm, 1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &VIEW_MT_KEY);
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, root_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushliteral(L, "kinformer.view.state");
  lua_setfield(L, -2, "__name");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &ROOT_MT_KEY);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &SIDE_KEY); /* last: marks the state ready */
}

/* ---- the API ----------------------------------------------------------------- */

void lkin_view_push(lua_State *L, kin_obj *o) {
  size_t n;
  const char *j = kin_obj_json(o, &n);
  const char *end = j ? j + n : NULL, *p = j ? skip_ws(j, end) : NULL;
  while (end && end > p && (end[-1] == ' ' || end[-1] == '\n' || end[-1] == '\r' || end[-1] == '\t'))
    end--;
  if (!p || p == end || *p != '{') { /* not an object: decode it as before */
    char msg[160];
    if (lkin_json_push_msg(L, j ? j : "null", j ? n : 4, msg, sizeof(msg)) < 0)
      luaL_error(L, "decode %s: %s", kin_obj_key(o), msg);
    return;
  }
  ensure_init(L);
  push_view(L, 0, o, p, (size_t)(end - p), NULL);
}

int lkin_view_is(lua_State *L, int i) {
  if (!lua_getmetatable(L, i)) return 0;
  luaL_getmetatable(L, LKIN_JSON_VIEW_MT);
  int is = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return is;
}

/* Materializes the tables reachable from the table at t (absolute);
 * seen (absolute) holds the tables done. Views deeper than
 * LKIN_JSON_MAX_DEPTH tables stay views (the C stack is bounded). */
static void materialize_deep(lua_State *L, int t, int seen, int side, int depth) {
  if (depth > LKIN_JSON_MAX_DEPTH) return; /* no JSON nests deeper: a Lua structure */
  lua_pushvalue(L, t);
  if (lua_rawget(L, seen) != LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  lua_pushvalue(L, t);
  lua_pushboolean(L, 1);
  lua_rawset(L, seen);
  materialize1(L, t, side);
  luaL_checkstack(L, 4, "materialize");
  lua_pushnil(L);
  while (lua_next(L, t)) {
    if (lua_type(L, -1) == LUA_TTABLE) materialize_deep(L, lua_gettop(L), seen, side, depth + 1);
    lua_pop(L, 1);
  }
}

void lkin_view_materialize(lua_State *L, int i) {
  i = lua_absindex(L, i);
  if (lua_type(L, i) != LUA_TTABLE) return;
  ensure_init(L);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &SIDE_KEY);
  lua_createtable(L, 0, 0);
  materialize_deep(L, i, lua_gettop(L), lua_gettop(L) - 1, 0);
  lua_pop(L, 2);
}

/* core.materialize(v) -> v, with every view in it decoded into a plain
 * table (in place) */
static int l_materialize(lua_State *L) {
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  lkin_view_materialize(L, 1);
  return 1;
}

/* core.is_view(v) -> whether v is a view not materialized yet */
static int l_is_view(lua_State *L) {
  luaL_checkany(L, 1);
  lua_pushboolean(L, lua_type(L, 1) == LUA_TTABLE && lkin_view_is(L, 1));
  return 1;
}

void lkin_open_view(lua_State *L) {
  lua_pushcfunction(L, l_materialize);
  lua_setfield(L, -2, "materialize");
  lua_pushcfunction(L, l_is_view);
  lua_setfield(L, -2, "is_view");
}
