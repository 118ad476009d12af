/* projection_warn.c -- telling code that reads what a projection dropped
 * (see projection_warn.h). A fixed table of projected informers; the check
 * runs only for reads the views find absent (or iterate), and each answer
 * is kept per path node by the caller (read_paths.c), so a path is looked
 * at once per informer. */
#include "projection_warn.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "indexer.h"
#include "kin.h"
#include "log.h"

typedef struct {
  kin_informer *inf;          /* NULL: removed */
  const kin__projection *p;   /* the informer's, borrowed */
  char *name;                 /* owned */
} slot;

/* mu guards slots (set and cleared under it, so a check holding mu never
 * sees a freed informer) and the nodes' quiet bits' meaning (a bit is set
 * and forgotten under it). nslots (slots ever used) only grows. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void (*forget_fn)(unsigned bit); /* guarded by mu */

void kin__projection_warn_set_forget(void (*forget)(unsigned bit)) {
  pthread_mutex_lock(&mu);
  forget_fn = forget;
  pthread_mutex_unlock(&mu);
}
static slot slots[KIN__PROJ_WARN_SLOTS];
static atomic_int nslots;
static atomic_int live; /* slots with an informer: 0, nothing to check */

int kin__projection_warn_add(kin_informer *inf, const kin__projection *p, const char *name) {
  /* "v1/pods (fields a,b)": the name alone is also the unprojected one's */
  size_t kl = kin__projection_key(p, NULL, 0), nl = strlen(name ? name : "?");
  char *nm = malloc(nl + kl + 12);
  if (!nm) return KIN_ENOMEM;
  memcpy(nm, name ? name : "?", nl);
  memcpy(nm + nl, " (fields ", 9);
  kin__projection_key(p, nm + nl + 9, kl + 1);
  if (kl) kl--; /* the key's trailing ',' */
  memcpy(nm + nl + 9 + kl, ")", 2);
  pthread_mutex_lock(&mu);
  int n = atomic_load_explicit(&nslots, memory_order_relaxed), i = 0;
  while (i < n && slots[i].inf) i++;
  if (i == KIN__PROJ_WARN_SLOTS) {
    pthread_mutex_unlock(&mu);
    free(nm);
    return KIN_EBUSY;
  }
  if (i < n) { /* reused: what the nodes knew of the last one goes */
    if (forget_fn) forget_fn(1u << i);
    free(slots[i].name);
  }
  slots[i] = (slot){inf, p, nm};
  atomic_fetch_add_explicit(&live, 1, memory_order_release);
  if (i == n) atomic_store_explicit(&nslots, n + 1, memory_order_release);
  pthread_mutex_unlock(&mu);
  return 0;
}

void kin__projection_warn_remove(kin_informer *inf) {
  pthread_mutex_lock(&mu);
  int n = atomic_load_explicit(&nslots, memory_order_relaxed);
  for (int i = 0; i < n; i++)
    if (slots[i].inf == inf) {
      atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
      slots[i].inf = NULL;
      slots[i].p = NULL;
    }
  pthread_mutex_unlock(&mu);
}

int kin__projection_warn_slots(void) {
  return atomic_load_explicit(&nslots, memory_order_acquire);
}

int kin__projection_warn_live(void) { return atomic_load_explicit(&live, memory_order_acquire); }

/* Whether root is the object inf caches under its key. mu held. */
static int cached_by(kin_informer *inf, const kin_obj *root) {
  const char *key = kin_obj_key(root);
  if (!key || !*key) return 0;
  kin_obj *c = kin_indexer_get(kin_informer_indexer(inf), key);
  int same = c == root;
  kin_obj_unref(c);
  return same;
}

void kin__projection_warn_check(const char *path, const kin_obj *root, int how,
                                atomic_uint *quiet_set) {
  unsigned done = 0;
  pthread_mutex_lock(&mu);
  unsigned quiet = atomic_load_explicit(quiet_set, memory_order_relaxed);
  int n = atomic_load_explicit(&nslots, memory_order_relaxed);
  for (int i = 0; i < n; i++) {
    unsigned bit = 1u << i;
    if (quiet & bit) continue;
    slot *s = &slots[i];
    if (!s->inf) {
      done |= bit;
      continue;
    }
    int rel = kin__projection_relation(s->p, path);
    if (rel == KIN__PROJ_KEPT) {
      done |= bit;
      continue;
    }
    /* absent under a path kept in part, or iterating a dropped path (not
     * in this informer's objects): nothing to say, maybe later */
    if ((how == KIN__PROJ_WARN_ABSENT) != (rel == KIN__PROJ_DROPPED)) continue;
    if (!cached_by(s->inf, root)) continue;
    if (how == KIN__PROJ_WARN_ABSENT)
      kin_log(KIN_LOG_WARN, "projection",
              "informer %s: code read %s, which its fields projection dropped (it reads as "
              "absent); add \"%s\" to the informer's fields, or see `kinformer inspect advise`",
              s->name, path, path);
    else if (*path)
      kin_log(KIN_LOG_WARN, "projection",
              "informer %s: code read all of %s (pairs, encoding), of which its fields projection "
              "keeps only part; add \"%s\" to the informer's fields, or see `kinformer inspect "
              "advise`",
              s->name, path, path);
    else
      kin_log(KIN_LOG_WARN, "projection",
              "informer %s: code read whole objects (pairs, encoding, an update sending one "
              "back), of which its fields projection keeps only part; drop fields or read "
              "members by name, see `kinformer inspect advise`",
              s->name);
    done |= bit;
  }
  if (done) atomic_fetch_or_explicit(quiet_set, done, memory_order_relaxed);
  pthread_mutex_unlock(&mu);
}
