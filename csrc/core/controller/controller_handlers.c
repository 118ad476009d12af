/* controller_handlers.c -- EnqueueRequestForObject, EnqueueRequestForOwner
 * and EnqueueRequestsFromMapFunc as kin_event_handler callbacks behind a
 * predicate (see controller_handlers.h). */
#include "controller_handlers.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller_history.h"
#include "json_tok.h"
#include "kin.h"
#include "log.h"
#include "reconcile.h"
#include "shard_gate.h"

struct kin_enqueue_handler {
  /* Immutable after kin_enqueue_handler_new. */
  kin_workqueue *q;
  kin_enqueue_kind kind;
  char *owner_group, *owner_kind;
  int owner_cluster_scoped, all_owners;
  kin_map_fn map;
  int (*on_start)(void *ud);
  void (*on_stop)(void *ud);
  void *ud;
  kin_predicate *predicate;
  kin_history *history; /* borrowed; NULL: none */
  kin_shard_gate *gate;  /* borrowed; NULL: not sharded */
  kin_indexer *store;    /* the For cache, for the gate's key lookups */

  atomic_uint_least64_t events, filtered, requests;
};

int kin_api_version_group(const char *api_version, char *group, size_t cap) {
  const char *slash = strchr(api_version, '/');
  size_t n = slash ? (size_t)(slash - api_version) : 0;
  if (slash && strchr(slash + 1, '/')) return KIN_EINVAL;
  if (n >= cap) return KIN_EINVAL;
  memcpy(group, api_version, n);
  group[n] = 0;
  return 0;
}

/* What the event being handled was, for the history (NULL hist: none). */
typedef struct {
  kin_enqueue_handler *h;
  kin_hist_cause cause; /* ADD, UPDATE, DELETE or RESYNC */
  const kin_obj *old_obj, *obj;
  int pred;             /* kin_hist_pred */
  const char *pred_name;
  int prio;             /* the requests' priority (workqueue.h) */
} ev_info;

/* Records the event under (ns, name): "what enqueued it". Never fails
 * (a history out of memory loses the entry). */
static void note(const ev_info *ev, const char *ns, const char *name) {
  kin_history *hist = ev->h->history;
  if (!hist) return;
  char key[384];
  if (ns && *ns) snprintf(key, sizeof(key), "%s/%s", ns, name);
  else snprintf(key, sizeof(key), "%s", name);
  kin_hist_entry e;
  memset(&e, 0, sizeof(e));
  e.type = KIN_HIST_EVENT;
  e.pred = (uint8_t)ev->pred;
  const char *rv = kin_obj_resource_version(ev->obj);
  int n;
  static const char *const verbs[] = {"add", "update", "delete", "resync"};
  if (ev->h->kind == KIN_ENQUEUE_REQUEST_FOR_OBJECT) {
    e.cause = (uint8_t)ev->cause;
    n = ev->cause == KIN_CAUSE_UPDATE
            ? snprintf(e.text, sizeof(e.text), "resourceVersion %s -> %s",
                       ev->old_obj ? kin_obj_resource_version(ev->old_obj) : "?", rv)
            : snprintf(e.text, sizeof(e.text), "resourceVersion %s", rv);
  } else {
    e.cause = ev->h->kind == KIN_ENQUEUE_REQUEST_FOR_OWNER ? KIN_CAUSE_OWNER : KIN_CAUSE_MAP;
    const char *kind = kin_obj_kind_name(ev->obj);
    n = snprintf(e.text, sizeof(e.text), "%s of %s %s", verbs[ev->cause],
                 kind && *kind ? kind : "object", kin_obj_key(ev->obj));
  }
  if (ev->pred != KIN_PRED_NONE && n >= 0 && (size_t)n < sizeof(e.text))
    n += snprintf(e.text + n, sizeof(e.text) - (size_t)n, "; predicates: %s %s", ev->pred_name,
                  ev->pred == KIN_PRED_PASSED ? "passed" : "dropped");
  e.truncated = n < 0 || (size_t)n >= sizeof(e.text);
  kin_history_record(hist, key, &e);
}

static int add(const ev_info *ev, const char *ns, const char *name) {
  kin_enqueue_handler *h = ev->h;
  note(ev, ns, name); /* first: a worker may reconcile the key at once */
  int rc = kin_request_add_priority(h->q, ns, name, ev->prio);
  if (rc == 0) atomic_fetch_add_explicit(&h->requests, 1, memory_order_relaxed);
  return rc;
}

/* Adds the owner request when the reference's group and kind match the
 * owner type (or only records the event when the predicates dropped it).
 * Returns 0, KIN_EINVAL for an apiVersion that does not parse (the caller
 * stops looking, as controller-runtime does), KIN_ENOMEM. */
static int add_if_owner(const ev_info *ev, const kin_obj *o, const char *api_version,
                        const char *kind, const char *name, const char *uid) {
  kin_enqueue_handler *h = ev->h;
  char group[256];
  if (kin_api_version_group(api_version, group, sizeof(group)) < 0) {
    kin_log(KIN_LOG_ERROR, "handler", "could not parse OwnerReference APIVersion %s of %s",
            api_version, kin_obj_key(o));
    return KIN_EINVAL;
  }
  if (strcmp(kind, h->owner_kind) != 0 || strcmp(group, h->owner_group) != 0) return 0;
  const char *ns = h->owner_cluster_scoped ? NULL : kin_obj_namespace(o);
  if (ev->pred == KIN_PRED_DROPPED) {
    note(ev, ns, name);
    return 0;
  }
  /* the owner's shard: its uid hashed, or its namespace (the object's) */
  if (h->gate && !kin_shard_gate_admits(h->gate, uid, ns)) {
    kin_shard_gate_count(h->gate, 0);
    return 0;
  }
  return add(ev, ns, name);
}

/* Every ownerReference of o, in order (kin_obj keeps only the controller
 * one, so the JSON is read again; this is the rare all-owners mode). */
static int add_all_owners(const ev_info *ev, const kin_obj *o) {
  size_t len = 0;
  const char *js = kin_obj_json(o, &len);
  if (!js) return 0;
  kin__json j;
  int rc = kin__json_parse(&j, js, len);
  if (rc < 0) return rc;
  int refs = kin__json_get(&j, kin__json_get(&j, 0, "metadata"), "ownerReferences");
  int n = kin__json_array_size(&j, refs);
  int i = refs + 1;
  for (int k = 0; k < n && rc == 0; k++, i = kin__json_next(&j, i)) {
    char *av = kin__json_strdup(&j, kin__json_get(&j, i, "apiVersion"));
    char *kd = kin__json_strdup(&j, kin__json_get(&j, i, "kind"));
    char *nm = kin__json_strdup(&j, kin__json_get(&j, i, "name"));
    char *uid = kin__json_strdup(&j, kin__json_get(&j, i, "uid"));
    /* controller-runtime reads a missing field as "" */
    rc = add_if_owner(ev, o, av ? av : "", kd ? kd : "", nm ? nm : "", uid ? uid : "");
    free(av);
    free(kd);
    free(nm);
    free(uid);
  }
  kin__json_free(&j);
  return rc == KIN_EINVAL ? 0 : rc;
}

static int add_owners(const ev_info *ev, const kin_obj *o) {
  if (ev->h->all_owners) return add_all_owners(ev, o);
  const kin_owner_ref *ref = kin_obj_controller_ref(o);
  if (!ref) return 0;
  int rc = add_if_owner(ev, o, ref->api_version, ref->kind, ref->name, ref->uid);
  return rc == KIN_EINVAL ? 0 : rc;
}

static int emit(void *ctx, const char *ns, const char *name) {
  if (!name) return KIN_EINVAL;
  const ev_info *ev = ctx;
  kin_enqueue_handler *h = ev->h;
  if (h->gate) {
    /* a map names keys only: the object in the For cache says whose */
    char key[384];
    if (ns && *ns) snprintf(key, sizeof(key), "%s/%s", ns, name);
    else snprintf(key, sizeof(key), "%s", name);
    if (kin_shard_gate_admits_key(h->gate, h->store, key) != 1) {
      kin_shard_gate_count(h->gate, 0);
      return 0;
    }
  }
  return add(ctx, ns, name);
}

/* Enqueues for o; with the predicates' drop (ev->pred DROPPED) only
 * records the event under the key it would have enqueued (For and Owns;
 * a map function is not called for a dropped event). */
static int enqueue_for(const ev_info *ev, kin_obj *o) {
  kin_enqueue_handler *h = ev->h;
  switch (h->kind) {
  case KIN_ENQUEUE_REQUEST_FOR_OBJECT:
    if (ev->pred == KIN_PRED_DROPPED) {
      note(ev, kin_obj_namespace(o), kin_obj_name(o));
      return 0;
    }
    if (h->gate) {
      int in = kin_shard_gate_admits(h->gate, kin_obj_uid(o), kin_obj_namespace(o));
      /* a delete of an object this replica no longer owns: it left the
       * cache with its range; a request still queued for it is not ours */
      if (!in && ev->cause == KIN_CAUSE_DELETE) kin_shard_gate_moved(h->gate, kin_obj_key(o), 1);
      else if (in) kin_shard_gate_moved(h->gate, kin_obj_key(o), 0);
      if (!in) {
        kin_shard_gate_count(h->gate, 0);
        return 0;
      }
    }
    return add(ev, kin_obj_namespace(o), kin_obj_name(o));
  case KIN_ENQUEUE_REQUEST_FOR_OWNER:
    return add_owners(ev, o);
  default:
    if (ev->pred == KIN_PRED_DROPPED) return 0;
    return h->map(h->ud, o, emit, (void *)ev);
  }
}

static int filtered(kin_enqueue_handler *h) {
  atomic_fetch_add_explicit(&h->filtered, 1, memory_order_relaxed);
  return 0;
}

static void count_event(kin_enqueue_handler *h) {
  atomic_fetch_add_explicit(&h->events, 1, memory_order_relaxed);
}

/* The predicates' verdict on the event; with a history, also which one
 * decided it (ev->pred, ev->pred_name in name). */
static int judge(ev_info *ev, kin_predicate_event pe, char *name, size_t cap) {
  kin_enqueue_handler *h = ev->h;
  if (!h->predicate) return 1;
  int v;
  if (h->history) {
    v = kin_predicate_explain(h->predicate, pe, ev->old_obj, ev->obj, name, cap);
    ev->pred = v ? KIN_PRED_PASSED : KIN_PRED_DROPPED;
    ev->pred_name = name;
  } else {
    v = pe == KIN_PREDICATE_EV_CREATE   ? kin_predicate_create(h->predicate, ev->obj)
        : pe == KIN_PREDICATE_EV_UPDATE ? kin_predicate_update(h->predicate, ev->old_obj, ev->obj)
                                        : kin_predicate_delete(h->predicate, ev->obj);
  }
  return v;
}

static int on_add(void *ud, kin_obj *obj, int is_in_initial_list) {
  kin_enqueue_handler *h = ud;
  char pname[48];
  /* controller-runtime's LowPriorityWhenUnchanged: the initial list waits
   * behind fresh events */
  ev_info ev = {h, KIN_CAUSE_ADD, NULL, obj, KIN_PRED_NONE, "",
                is_in_initial_list ? KIN_PRIORITY_LOW : KIN_PRIORITY_NORMAL};
  count_event(h);
  if (!judge(&ev, KIN_PREDICATE_EV_CREATE, pname, sizeof(pname))) {
    if (h->history) enqueue_for(&ev, obj);
    return filtered(h);
  }
  return enqueue_for(&ev, obj);
}

static int on_update(void *ud, kin_obj *old_obj, kin_obj *new_obj) {
  kin_enqueue_handler *h = ud;
  char pname[48];
  int resync = old_obj == new_obj || (old_obj && strcmp(kin_obj_resource_version(old_obj),
                                                        kin_obj_resource_version(new_obj)) == 0);
  ev_info ev = {h, resync ? KIN_CAUSE_RESYNC : KIN_CAUSE_UPDATE, old_obj, new_obj, KIN_PRED_NONE,
                "", resync ? KIN_PRIORITY_LOW : KIN_PRIORITY_NORMAL};
  count_event(h);
  if (!judge(&ev, KIN_PREDICATE_EV_UPDATE, pname, sizeof(pname))) {
    if (h->history) enqueue_for(&ev, new_obj);
    return filtered(h);
  }
  if (h->kind == KIN_ENQUEUE_REQUEST_FOR_OBJECT) return enqueue_for(&ev, new_obj);
  /* Owners and map results of both versions: an object that changed owner
   * must wake the old owner too. */
  int rc = enqueue_for(&ev, old_obj);
  int rc2 = enqueue_for(&ev, new_obj);
  return rc < 0 ? rc : rc2;
}

static int on_delete(void *ud, kin_obj *obj) {
  kin_enqueue_handler *h = ud;
  char pname[48];
  count_event(h);
  if (kin_obj_is_tombstone(obj)) {
    kin_obj *last = kin_obj_last_state(obj);
    if (!last) {
      kin_log(KIN_LOG_WARN, "handler", "tombstone of %s without a last known state: dropped",
              kin_obj_key(obj));
      return 0;
    }
    obj = last;
  }
  ev_info ev = {h, KIN_CAUSE_DELETE, NULL, obj, KIN_PRED_NONE, "", KIN_PRIORITY_NORMAL};
  if (!judge(&ev, KIN_PREDICATE_EV_DELETE, pname, sizeof(pname))) {
    if (h->history) enqueue_for(&ev, obj);
    return filtered(h);
  }
  return enqueue_for(&ev, obj);
}

static int on_start(void *ud) {
  kin_enqueue_handler *h = ud;
  return h->on_start ? h->on_start(h->ud) : 0;
}

static void on_stop(void *ud) {
  kin_enqueue_handler *h = ud;
  if (h->on_stop) h->on_stop(h->ud);
}

int kin_enqueue_handler_new(kin_workqueue *q, const kin_handler_config *cfg,
                            kin_enqueue_handler **out) {
  *out = NULL;
  int valid = q && cfg->kind <= KIN_ENQUEUE_REQUESTS_FROM_MAP_FUNC;
  if (cfg->kind == KIN_ENQUEUE_REQUEST_FOR_OWNER) valid = valid && cfg->owner_kind && *cfg->owner_kind;
  if (cfg->kind == KIN_ENQUEUE_REQUESTS_FROM_MAP_FUNC) valid = valid && cfg->map;
  if (!valid) {
    kin_predicate_free(cfg->predicate);
    return KIN_EINVAL;
  }
  kin_enqueue_handler *h = calloc(1, sizeof(*h));
  if (h) {
    h->owner_group = strdup(cfg->owner_group ? cfg->owner_group : "");
    h->owner_kind = strdup(cfg->owner_kind ? cfg->owner_kind : "");
  }
  if (!h || !h->owner_group || !h->owner_kind) {
    if (h) {
      free(h->owner_group);
      free(h->owner_kind);
    }
    free(h);
    kin_predicate_free(cfg->predicate);
    return KIN_ENOMEM;
  }
  h->q = q;
  h->kind = cfg->kind;
  h->owner_cluster_scoped = cfg->owner_cluster_scoped;
  h->all_owners = cfg->all_owners;
  h->map = cfg->map;
  h->on_start = cfg->on_start;
  h->on_stop = cfg->on_stop;
  h->ud = cfg->ud;
  h->predicate = cfg->predicate;
  h->history = cfg->history;
  h->gate = cfg->shard_gate;
  h->store = cfg->shard_store;
  atomic_init(&h->events, 0);
  atomic_init(&h->filtered, 0);
  atomic_init(&h->requests, 0);
  *out = h;
  return 0;
}

void kin_enqueue_handler_free(kin_enqueue_handler *h) {
  if (!h) return;
  kin_predicate_free(h->predicate);
  free(h->owner_group);
  free(h->owner_kind);
  free(h);
}

kin_event_handler kin_enqueue_handler_callbacks(kin_enqueue_handler *h) {
  kin_event_handler eh = {on_add, on_update, on_delete, on_start, on_stop, h};
  return eh;
}

void kin_enqueue_handler_get_stats(kin_enqueue_handler *h, kin_enqueue_handler_stats *st) {
  st->events = atomic_load_explicit(&h->events, memory_order_relaxed);
  st->filtered = atomic_load_explicit(&h->filtered, memory_order_relaxed);
  st->requests = atomic_load_explicit(&h->requests, memory_order_relaxed);
}
