/* read_paths.c -- the paths of cached objects that code reads (see
 * read_paths.h). One tree per apiVersion/kind; children in a singly linked
 * list published with release stores, so lookups walk it without the lock
 * and only a new node takes it. */
#include "read_paths.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "projection_warn.h"

struct kin_read_node {
  char *key; /* this member's name (roots: "apiVersion/kind"); immutable */
  size_t keylen;
  int depth;                            /* roots 0 */
  struct kin_read_node *root;           /* its tree's root (a root: itself) */
  struct kin_read_node *parent;         /* NULL for a root; immutable */
  atomic_uint quiet; /* projection_warn.c's slots with nothing more to say here */
  _Atomic(struct kin_read_node *) kids; /* the first child */
  _Atomic(struct kin_read_node *) next; /* the next sibling (roots: the next root) */
  atomic_int flags;                     /* KIN_READ_* */
  atomic_int nodes;                     /* roots: nodes in the tree */
};

/* mu serializes the making of nodes (roots included); reads take no lock. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(kin_read_node *) roots;

/* The node among the list from first named key[0..n), or NULL. */
static kin_read_node *find_in(kin_read_node *first, const char *key, size_t n) {
  for (kin_read_node *c = first; c; c = atomic_load_explicit(&c->next, memory_order_acquire))
    if (c->keylen == n && memcmp(c->key, key, n) == 0) return c;
  return NULL;
}

static kin_read_node *node_new(const char *key, size_t n, int depth, kin_read_node *root,
                               kin_read_node *parent) {
  kin_read_node *c = calloc(1, sizeof(*c));
  if (!c || !(c->key = malloc(n + 1))) {
    free(c);
    return NULL;
  }
  memcpy(c->key, key, n);
  c->key[n] = 0;
  c->keylen = n;
  c->depth = depth;
  c->root = root ? root : c;
  c->parent = parent;
  return c;
}

static void forget_all(unsigned bit);

kin_read_node *kin_read_paths_root(const char *api_version, const char *kind) {
  char id[512];
  size_t a = strlen(api_version ? api_version : ""), k = strlen(kind ? kind : "");
  if (a + k + 2 > sizeof(id)) return NULL;
  memcpy(id, api_version ? api_version : "", a);
  id[a] = '/';
  memcpy(id + a + 1, kind ? kind : "", k + 1);
  size_t n = a + 1 + k;
  kin_read_node *r = find_in(atomic_load_explicit(&roots, memory_order_acquire), id, n);
  if (r) return r;
  pthread_mutex_lock(&mu);
  kin_read_node *first = atomic_load_explicit(&roots, memory_order_acquire);
  if (!first) kin__projection_warn_set_forget(forget_all); /* before any node can be quiet */
  if (!(r = find_in(first, id, n)) && (r = node_new(id, n, 0, NULL, NULL))) {
    atomic_store_explicit(&r->next, first, memory_order_relaxed);
    atomic_store_explicit(&roots, r, memory_order_release);
  }
  pthread_mutex_unlock(&mu);
  return r;
}

kin_read_node *kin_read_paths_child(kin_read_node *node, const char *key, size_t n) {
  if (!node) return NULL;
  kin_read_node *c = find_in(atomic_load_explicit(&node->kids, memory_order_acquire), key, n);
  if (c) return c;
  /* a key no dotted path can name, or a tree grown too far: the parent
   * is kept whole */
  if (!n || memchr(key, '.', n) || node->depth + 1 > KIN_READ_PATHS_MAX_DEPTH ||
      atomic_load_explicit(&node->root->nodes, memory_order_relaxed) >= KIN_READ_PATHS_MAX_NODES) {
    kin_read_paths_mark(node, KIN_READ_WHOLE);
    return NULL;
  }
  pthread_mutex_lock(&mu);
  kin_read_node *first = atomic_load_explicit(&node->kids, memory_order_acquire);
  if (!(c = find_in(first, key, n)) && (c = node_new(key, n, node->depth + 1, node->root, node))) {
    atomic_store_explicit(&c->next, first, memory_order_relaxed);
    atomic_store_explicit(&node->kids, c, memory_order_release);
    atomic_fetch_add_explicit(&node->root->nodes, 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&mu);
  return c;
}

void kin_read_paths_mark(kin_read_node *node, int how) {
  if (!node || (atomic_load_explicit(&node->flags, memory_order_relaxed) & how) == how) return;
  atomic_fetch_or_explicit(&node->flags, how, memory_order_relaxed);
}

int kin_read_paths_projected(void) { return kin__projection_warn_live() > 0; }

void kin_read_paths_missing(kin_read_node *node, const kin_obj *root, int how) {
  int n = kin__projection_warn_slots();
  if (!node || !root || !kin__projection_warn_live()) return;
  unsigned all = n >= 32 ? ~0u : (1u << n) - 1;
  unsigned quiet = atomic_load_explicit(&node->quiet, memory_order_relaxed);
  if ((quiet & all) == all) return;
  /* the dotted path, from the node up (depth is capped: it fits) */
  char path[KIN_READ_PATHS_MAX_DEPTH * 256];
  size_t len = 0;
  for (kin_read_node *c = node; c->parent; c = c->parent) len += c->keylen + (len ? 1 : 0);
  if (len >= sizeof(path)) return;
  path[len] = 0;
  size_t at = len;
  for (kin_read_node *c = node; c->parent; c = c->parent) {
    if (at < len) path[--at] = '.';
    at -= c->keylen;
    memcpy(path + at, c->key, c->keylen);
  }
  kin__projection_warn_check(path, root,
                             how == KIN_READ_WHOLE ? KIN__PROJ_WARN_WHOLE : KIN__PROJ_WARN_ABSENT,
                             &node->quiet);
}

static void forget_below(kin_read_node *c, unsigned bit) {
  for (; c; c = atomic_load_explicit(&c->next, memory_order_acquire)) {
    atomic_fetch_and_explicit(&c->quiet, ~bit, memory_order_relaxed);
    forget_below(atomic_load_explicit(&c->kids, memory_order_acquire), bit);
  }
}

/* projection_warn.c's slot bit is free again: cleared everywhere. */
static void forget_all(unsigned bit) {
  forget_below(atomic_load_explicit(&roots, memory_order_acquire), bit);
}

typedef struct {
  char **v;
  size_t n, cap;
  int oom;
} paths;

static void add_path(paths *p, const char *s, size_t n) {
  if (p->oom) return;
  if (p->n + 2 > p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 16;
    char **v = realloc(p->v, cap * sizeof(*v));
    if (!v) {
      p->oom = 1;
      return;
    }
    p->v = v;
    p->cap = cap;
  }
  char *d = malloc(n + 1);
  if (!d) {
    p->oom = 1;
    return;
  }
  memcpy(d, s, n);
  d[n] = 0;
  p->v[p->n++] = d;
}

/* The length of the longest dotted path from c down (c's key included). */
static size_t longest(kin_read_node *c) {
  size_t best = 0;
  for (kin_read_node *k = atomic_load_explicit(&c->kids, memory_order_acquire); k;
       k = atomic_load_explicit(&k->next, memory_order_acquire)) {
    size_t l = longest(k);
    if (l > best) best = l;
  }
  return c->keylen + (best ? 1 + best : 0);
}

/* Adds the advised paths at and below c, whose dotted path is
 * path[0..len); path has room bytes (a child made after the sizing that
 * does not fit leaves its parent whole). */
static void walk(paths *p, kin_read_node *c, char *path, size_t len, size_t room) {
  kin_read_node *kids = atomic_load_explicit(&c->kids, memory_order_acquire);
  int flags = atomic_load_explicit(&c->flags, memory_order_relaxed);
  int fits = 1;
  for (kin_read_node *k = kids; k; k = atomic_load_explicit(&k->next, memory_order_acquire))
    if (len + 1 + longest(k) > room) fits = 0;
  if ((flags & KIN_READ_WHOLE) || !kids || !fits) {
    add_path(p, path, len);
    return;
  }
  for (kin_read_node *k = kids; k; k = atomic_load_explicit(&k->next, memory_order_acquire)) {
    path[len] = '.';
    memcpy(path + len + 1, k->key, k->keylen);
    walk(p, k, path, len + 1 + k->keylen, room);
  }
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int kin_read_paths_advise(const char *api_version, const char *kind, char ***out) {
  *out = NULL;
  kin_read_node *r = kin_read_paths_root(api_version, kind);
  if (!r) return KIN_ENOMEM;
  if (atomic_load_explicit(&r->flags, memory_order_relaxed) & KIN_READ_WHOLE) return 0;
  kin_read_node *kids = atomic_load_explicit(&r->kids, memory_order_acquire);
  if (!kids) return KIN_ENOENT;
  paths p = {0};
  size_t room = 0;
  for (kin_read_node *k = kids; k; k = atomic_load_explicit(&k->next, memory_order_acquire)) {
    size_t l = longest(k);
    if (l > room) room = l;
  }
  /* a node made after this sizing that does not fit leaves its parent
   * whole (walk) */
  char *path = malloc(room + 1);
  if (!path) return KIN_ENOMEM;
  for (kin_read_node *k = kids; k; k = atomic_load_explicit(&k->next, memory_order_acquire)) {
    if (k->keylen > room) continue; /* made after the sizing: next time */
    memcpy(path, k->key, k->keylen);
    walk(&p, k, path, k->keylen, room);
  }
  free(path);
  if (p.oom) {
    for (size_t i = 0; i < p.n; i++) free(p.v[i]);
    free(p.v);
    return KIN_ENOMEM;
  }
  qsort(p.v, p.n, sizeof(*p.v), by_name);
  p.v[p.n] = NULL;
  *out = p.v;
  return 0;
}

void kin_read_paths_free(char **v) {
  if (!v) return;
  for (char **q = v; *q; q++) free(*q);
  free(v);
}
