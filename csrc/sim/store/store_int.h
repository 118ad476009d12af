/* store_int.h -- the store of kinformer.sim, as its other folders see it:
 * the registry, the objects, the watch history and the server's state.
 *
 * The names follow kube-apiserver: the registry of served resources
 * (discovery's APIResource), the generic registry store (storage of one
 * group/resource, as k8s.io/apiserver pkg/registry/generic/registry), the
 * watch cache (bounded history of events), Status errors
 * (k8s.io/apimachinery pkg/api/errors) and the HTTP handlers
 * (k8s.io/apiserver pkg/endpoints/handlers). */
#ifndef KIN_SIM_STORE_INT_H
#define KIN_SIM_STORE_INT_H

#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "hmap.h"
#include "sim.h"
#include "sim_util.h"
#include "status.h"

/* One committed version of an object: its key and its compact JSON (with
 * metadata.resourceVersion inside, kind/apiVersion/metadata first) in one
 * allocation, the header followed by "key\0raw\0". The bytes are the
 * canonical form: lists and watches copy them as they are, and a request
 * that needs the tree parses them (kin__sim_obj_json) and frees the tree
 * when done, so a stored object costs about its JSON size. Immutable once
 * committed; shared by the storage map and the history events that
 * mention it, freed when refs drops to 0. Guarded by kin__sim_store.mu
 * (refs included). */
typedef struct kin__sim_obj {
  uint64_t rv;
  int refs;
  size_t rawlen;
  const char *key;  /* "ns/name" or "name", inside data */
  const char *raw;  /* compact JSON, NUL-terminated, inside data */
  /* With kin__sim_store.pre_encode: the object's protobuf body (`k8s\0` +
   * runtime.Unknown, as a GET answers it) made once at commit, and where
   * its message lies inside it (a list item's bytes); NULL when off or
   * when the kind has no protobuf form. Owned by the object. */
  unsigned char *pb;
  size_t pblen, pb_msg_off, pb_msg_len;
  char data[];
} kin__sim_obj;

/* Objects of one group/resource, shared by every served version of it
 * (as a CRD's versions share one etcd prefix). Guarded by the store lock. */
typedef struct kin__sim_storage {
  char *group;
  char *resource;  /* plural */
  char *kind;
  char *storage_version; /* apiVersion written into stored objects */
  int namespaced;
  int has_status;
  int crd;         /* generation ignores only metadata and status */
  /* What bumps metadata.generation of a built-in (registry_builtins.c):
   * NULL none (and no generation), "spec", "webhooks", "template",
   * "spec+annotations" (Deployments), "*" (all but metadata, labels
   * included: EndpointSlices), "" (1 at create, never bumped). */
  const char *gen_field;
  int create_on_update; /* a PUT of a missing object creates it (built-ins) */
  int served;      /* 0 once its CRD is deleted */
  kin__hmap objects;      /* key -> kin__sim_obj* */
  kin__sim_obj **sorted;  /* objects sorted by key; rebuilt when dirty */
  size_t nsorted;
  int sorted_dirty;
} kin__sim_storage;

/* A served group/version/resource, as discovery describes it. */
typedef struct kin__sim_resource {
  char *group, *version, *resource, *kind, *list_kind, *singular;
  int namespaced;
  int has_status;
  int has_scale;        /* serves {name}/scale (autoscaling/v1 Scale) */
  int review;           /* create-only, nothing stored (review.c) */
  const char *const *verbs;
  char **own_verbs;     /* verbs when they belong to the entry (built-ins), else NULL */
  json_t *categories;   /* array or NULL */
  json_t *unserved_subs; /* subresources kube-apiserver serves and the sim not (array or NULL) */
  char *storage_version_hash; /* the real server's (built-ins), or NULL */
  json_t *short_names;  /* array or NULL */
  char *crd_name;       /* the CRD that serves it, or NULL for built-ins */
  json_t *printer_columns; /* the CRD version's additionalPrinterColumns or NULL */
  int removed;          /* its CRD was deleted: no longer served */
  kin__sim_storage *storage;
  /* Conversion to and from the storage's form when this version's
   * objects differ from it in more than apiVersion (Events:
   * convert/convert.h); NULL for every other resource, whose stored bytes
   * are served as they are. Each returns a new tree and borrows its
   * argument; convert_out NULL on ENOMEM, convert_in NULL with the
   * decoder's 400 in err (code set) or err untouched on ENOMEM.
   * convert_in also canonicalizes what a write of the storage's own
   * version stores. */
  json_t *(*convert_out)(const json_t *stored);
  json_t *(*convert_in)(const json_t *served, kin__sim_result *err);
  /* The strategy's Validate (old NULL) / ValidateUpdate on the stored
   * form, or NULL: 0, or -1 with a 422 in out. Runs under the store lock.
   * With one, a create's name is checked there (not by validation.c). */
  int (*validate)(const struct kin__sim_resource *r, const json_t *obj, const json_t *old,
                  kin__sim_result *out);
} kin__sim_resource;

enum { KIN__SIM_ADDED = 1, KIN__SIM_MODIFIED, KIN__SIM_DELETED };

/* One entry of the watch history: the new object (or the last state for
 * DELETED) and the previous one, both shared with the storage map (a
 * reference each, no copy): a watcher writes the event line around the
 * object's stored bytes. */
typedef struct {
  int type;
  kin__sim_storage *st;
  uint64_t rv;
  kin__sim_obj *obj;
  kin__sim_obj *prev; /* NULL for ADDED */
} kin__sim_event;

/* The admission chain as the write paths see it (admission/admission.h
 * implements it; the store calls it through kin__sim_store.admit, never
 * under mu). stage: mutating webhooks, then validating ones; op: the
 * operation; obj: the object at r's version (NULL for DELETE); old: the
 * stored one at r's version (NULL for CREATE). */
enum { KIN__SIM_ADMIT_MUTATE = 1, KIN__SIM_ADMIT_VALIDATE = 2 };
enum { KIN__SIM_OP_CREATE = 1, KIN__SIM_OP_UPDATE = 2, KIN__SIM_OP_DELETE = 3 };
typedef struct {
  int stage, op;
  struct kin__sim_resource *r;
  const char *ns, *name;
  const json_t *old;
} kin__sim_admit_attrs;

/* Injected faults (faults.c), guarded by kin__sim_store.mu. Watches
 * remember the generations they have seen; a bump applies the fault once
 * to every watch open at that moment. */
typedef struct {
  unsigned drop_gen;      /* close every open watch abruptly */
  unsigned cut_gen;       /* cut each watch inside its next event, then close */
  unsigned malformed_gen; /* send each watch one line that is not JSON */
  uint64_t stall_until;   /* CLOCK_MONOTONIC ns: watches send nothing until then */
  int fail_code;          /* answer the next fail_count requests with it */
  unsigned fail_count;
  uint32_t latency_ms;    /* delay before every request */
  kin_sim_request_hook hook; /* observer of every request, called without mu */
  void *hook_ud;
} kin__sim_faults;

/* The whole state of a server. mu guards every field below it; cond is
 * broadcast after each commit and on stop (watchers wait on it). */
typedef struct kin__sim_store {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  uint64_t rv;                 /* last resourceVersion issued */
  kin__sim_resource **res;     /* the registry */
  size_t nres, capres;
  kin__sim_storage **storages; /* never freed before the store */
  size_t nst, capst;
  kin__sim_event *hist;        /* ring */
  size_t hcap, hstart, hlen;
  uint64_t floor;              /* every event with rv > floor is retained */
  int stopping;
  uint32_t bookmark_interval_ms;
  kin__sim_faults faults;
  json_t *write_log;           /* recorded API writes (write_log.c); NULL: off */
  /* Called under mu after each commit (the controller manager's feed,
   * controllers/ctl_manager.c); NULL: none. It may take references. */
  void (*commit_hook)(void *ud, int type, kin__sim_storage *st, kin__sim_obj *obj,
                      kin__sim_obj *prev);
  void *commit_hook_ud;
  /* kin_sim_config.pre_encode: encodes a committed object (a built-in's,
   * borrowed) to its protobuf body in *pb (malloc'd) and sets where the
   * message lies; 0, or nonzero to keep none (the object is then encoded
   * per request). Set once at start (server.c, which may use proto/);
   * NULL: off. Called under mu. */
  int (*pre_encode)(const json_t *obj, unsigned char **pb, size_t *len, size_t *msg_off,
                    size_t *msg_len);
  /* The admission chain (admission/): admit_active says whether a write
   * of r by op must run it (0: the write takes the plain path, with no
   * webhook call); admit runs one stage on *obj (mutating stages may
   * replace it) and returns 0, or -1 with the refusal in out. Both are
   * called without mu. Set once at start; NULL: none. */
  int (*admit_active)(void *ud, const struct kin__sim_resource *r, int op);
  int (*admit)(void *ud, const kin__sim_admit_attrs *a, json_t **obj, kin__sim_result *out);
  void *admit_ud;
} kin__sim_store;


/* The request log (request_log.c): the entries since the last take as
 * compact JSON objects, comma-separated, after a "[" (no "]": the take
 * adds it). mu guards every field; a leaf, never held with the store's
 * lock or any other. */
typedef struct {
  pthread_mutex_t mu;
  int on;          /* kin_sim_request_log_start was called */
  size_t limit;    /* entries kept between two takes */
  size_t n;        /* entries in buf */
  uint64_t dropped; /* requests not kept since the last take (limit, ENOMEM) */
  kin__buf buf;
} kin__sim_request_log;

/* A named user's bearer token (kin_sim_add_token; http_auth.c). */
typedef struct {
  char *user, *token;
} kin__sim_token;

struct kin__simctl;

struct kin_sim {
  kin__sim_store store;
  struct kin__simctl *ctl;  /* the controller manager, NULL when none runs;
                               set at start, cleared by kin_sim_stop under stop_mu */
  int nodes;                     /* kin_sim_config.nodes (immutable) */
  uint32_t pod_ready_delay_ms;   /* kin_sim_config.pod_ready_delay_ms (immutable) */
  uint32_t job_run_ms;           /* kin_sim_config.job_run_ms (immutable) */
  kin__sim_request_log request_log;
  pthread_mutex_t tokens_mu; /* guards tokens, ntokens, captokens (a leaf) */
  kin__sim_token *tokens;
  size_t ntokens, captokens;
  struct MHD_Daemon *daemon;
  char url[128];
  uint16_t port;
  int tls;
  int watch_cache_lists;    /* kin_sim_config.watch_cache_lists */
  int gate_sharded;         /* feature gate ShardedListAndWatch (immutable after start) */
  char *token;              /* kin_sim_config.token (user "kinformer-sim") or NULL */
  char *tls_cert, *tls_key; /* PEM contents */
  char *client_ca;          /* PEM contents of the client CA bundle or NULL */
  pthread_mutex_t stop_mu;  /* serializes kin_sim_stop */
  int stopped;              /* guarded by stop_mu */
  struct sockaddr_in sa;    /* bound address (kin_sim_restart binds it again) */
  int authz_rbac;           /* authorization_mode "RBAC"; immutable after start */
  struct kin__sim_rbac *rbac; /* the compiled RBAC policy (csrc/sim/auth/policy.c);
                                guarded by store.mu */
  struct kin__sim_admission *admission; /* webhooks (csrc/sim/admission/); its own lock */
};

/* ---- registry.c ---- */
/* Adds a served resource (its strings copied; short_names and categories
 * stolen); returns it (owned by the store) or NULL on ENOMEM. */
kin__sim_resource *kin__sim_registry_add(kin__sim_store *s, const char *group,
                                         const char *version, const char *resource,
                                         const char *singular, const char *kind,
                                         const char *list_kind, int namespaced, int has_status,
                                         json_t *short_names, json_t *categories,
                                         const char *crd_name, kin__sim_storage *st);
/* A new storage of group/resource owned by the store, objects written as
 * group/version; NULL on ENOMEM. */
kin__sim_storage *kin__sim_registry_storage_new(kin__sim_store *s, const char *group,
                                                const char *resource, const char *kind,
                                                const char *version, int namespaced,
                                                int has_status, int crd);
/* 1 when a built-in resource is served at group/version. */
int kin__sim_registry_builtin_gv(kin__sim_store *s, const char *group, const char *version);
/* 1 when kube-apiserver serves subresource sub of r and the sim does not. */
int kin__sim_registry_real_sub(const kin__sim_resource *r, const char *sub);
/* ---- registry_builtins.c ---- */
/* Registers every built-in resource of kube-apiserver from the embedded
 * discovery capture (csrc/sim/discovery/discovery.json); 0, KIN_ENOMEM or
 * KIN_EINVAL (a malformed capture). */
int kin__sim_registry_init_builtins(kin__sim_store *s);
/* The capture, NUL-terminated (generated by tools/embed-discovery.sh). */
extern const unsigned char kin__sim_discovery_json[];
extern const size_t kin__sim_discovery_json_len;
/* Finds the resource served at group/version/resource; NULL when none. */
kin__sim_resource *kin__sim_registry_find(kin__sim_store *s, const char *group,
                                          const char *version, const char *resource);
/* Finds the storage of group/resource (any version); NULL when none. */
kin__sim_storage *kin__sim_registry_storage(kin__sim_store *s, const char *group,
                                            const char *resource);
/* Registers every served version of a CRD object (borrowed). */
int kin__sim_registry_add_crd(kin__sim_store *s, const json_t *crd);
/* Unserves the CRD's resources; returns their storage (or NULL). */
kin__sim_storage *kin__sim_registry_remove_crd(kin__sim_store *s, const char *crd_name);
void kin__sim_registry_free(kin__sim_store *s);

/* ---- store.c (generic registry Store) ---- */
/* Sets up an empty store (no resource registered: the caller then calls
 * kin__sim_registry_init_builtins). Returns 0 or KIN_ENOMEM; free it with
 * kin__sim_store_free either way. */
int kin__sim_store_init(kin__sim_store *s, size_t history, uint32_t bookmark_ms);
/* Frees the history and the lock; the registry (and every stored object)
 * must be freed first, by kin__sim_registry_free. */
void kin__sim_store_free(kin__sim_store *s);
void kin__sim_obj_unref(kin__sim_obj *o);
/* Sorted snapshot of a storage at resourceVersion rv (0: now), filtered by
 * namespace (NULL: all). Returns a malloc'd array of borrowed object
 * pointers valid while the lock is held, or NULL with *n = 0. Caller holds
 * mu. Returns KIN_EINVAL (via *too_old) when rv predates the history. */
kin__sim_obj **kin__sim_store_snapshot(kin__sim_store *s, kin__sim_storage *st, uint64_t rv,
                                       size_t *n, int *too_old);

/* The write paths. obj is borrowed (copied); result gets the stored
 * object (code 200/201) or a Status. Each takes mu itself. dry_run
 * (?dryRun=All) answers as the write would, and changes nothing. */
void kin__sim_store_create(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                           const json_t *obj, int dry_run, kin__sim_result *out);
void kin__sim_store_get(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                        const char *name, kin__sim_result *out);

/* Computes the new object from the current one for update and patch;
 * returns a new value or NULL with *err set. Runs under mu. */
typedef json_t *(*kin__sim_update_fn)(void *ud, const json_t *cur, kin__sim_result *err);
/* What an update writes (its status_only argument): the object, its
 * status subresource, or a namespace's finalize subresource
 * (spec.finalizers and metadata; the namespace goes once both its
 * finalizer lists are empty after its deletion). */
enum { KIN__SIM_UPDATE_MAIN = 0, KIN__SIM_UPDATE_STATUS = 1, KIN__SIM_UPDATE_FINALIZE = 2 };
void kin__sim_store_update(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                           const char *name, int status_only, kin__sim_update_fn fn, void *ud,
                           int dry_run, kin__sim_result *out);
/* opts: the DeleteOptions (borrowed, NULL: none): preconditions,
 * propagationPolicy, orphanDependents (gc_delete.h). */
void kin__sim_store_delete(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                           const char *name, const json_t *opts, int dry_run,
                           kin__sim_result *out);
/* Deletes every object of r in ns (NULL: all) that match selects, each
 * as kin__sim_store_delete with opts. */
typedef int (*kin__sim_match_fn)(void *ud, const json_t *obj);
void kin__sim_store_delete_collection(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                                      kin__sim_match_fn match, void *ud, const json_t *opts,
                                      int dry_run, kin__sim_result *out);
kin__sim_obj *kin__sim_obj_new(json_t *obj, uint64_t rv, const char *key);
/* Parses o's stored bytes: a new tree the caller decrefs, or NULL on
 * ENOMEM. Needs no lock (o is immutable) but the caller must hold a
 * reference or mu. */
json_t *kin__sim_obj_json(const kin__sim_obj *o);
/* The value of member name of the top-level object in o's bytes, parsed
 * alone (new reference; NULL when absent or on ENOMEM): metadata without
 * parsing data or spec. */
json_t *kin__sim_obj_member(const kin__sim_obj *o, const char *name);
/* Finds member name (nlen bytes) of the JSON object in [p, end), as
 * jansson's compact dump writes it: returns the first byte of its value
 * and sets *vend past it; NULL when absent or malformed. */
const char *kin__sim_raw_member(const char *p, const char *end, const char *name, size_t nlen,
                                const char **vend);
/* Type names of events: "ADDED", "MODIFIED", "DELETED". */
const char *kin__sim_event_type_name(int type);
int kin__sim_history_append(kin__sim_store *s, int type, kin__sim_storage *st, kin__sim_obj *obj,
                            kin__sim_obj *prev);
/* Forgets the whole history (as an etcd compaction at the current rv). */
void kin__sim_store_compact(kin__sim_store *s);
/* Finds the resource whose apiVersion and kind match; NULL when none. */
kin__sim_resource *kin__sim_registry_find_kind(kin__sim_store *s, const char *api_version,
                                               const char *kind);
extern const char *const *kin__sim_verbs_status;
/* ---- store_object.c (caller holds mu) ---- */
void kin__sim_key_of(char *buf, size_t cap, int namespaced, const char *ns, const char *name);
kin__sim_obj *kin__sim_lookup(kin__sim_storage *st, const char *ns, const char *name);
/* 1 when key ("ns/name") is in namespace ns. */
int kin__sim_key_in_namespace(const char *key, const char *ns);
int kin__sim_tracks_generation(const kin__sim_storage *st);
/* Commits obj (stolen) under the next resourceVersion as an event of type
 * replacing prev; returns the stored object (borrowed) or NULL (ENOMEM). */
kin__sim_obj *kin__sim_commit(kin__sim_store *s, kin__sim_storage *st, int type, json_t *obj,
                              const char *key, kin__sim_obj *prev);
/* Sets out to code and a copy of o. */
void kin__sim_result_obj(kin__sim_result *out, int code, const kin__sim_obj *o);
int kin__sim_finalizers_empty(const json_t *obj);
/* stored (borrowed) as admission webhooks see it, at r's version: a new
 * tree, or NULL on ENOMEM (any lock or none). */
json_t *kin__sim_view_of(const kin__sim_resource *r, const json_t *stored);
/* store_create.c / store_delete.c, caller holds mu. */
void kin__sim_create_locked(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                            const json_t *in, int dry_run, kin__sim_result *out);
void kin__sim_delete_locked(kin__sim_store *s, kin__sim_storage *st, kin__sim_obj *cur);
/* The create for restored state (store/restore.c): as kin__sim_create_locked
 * without dry run, but the object's uid, creationTimestamp, generation,
 * deletion fields and status are kept when it has them. Caller holds mu. */
void kin__sim_create_keep_locked(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                                 const json_t *in, kin__sim_result *out);
/* ---- store/restore.c (caller holds mu) ---- */
/* Puts in (borrowed) as restored state, kin_sim_put's rules (sim.h).
 * Returns 0 and the resourceVersion committed last in *rv (0: nothing
 * changed; rv may be NULL), or KIN_EINVAL (not a served kind, a bad name;
 * the reason in msg) or KIN_ENOMEM; nothing is changed on failure but a
 * namespace made for the object. */
int kin__sim_restore_locked(kin__sim_store *s, const json_t *in, int deleted, uint64_t *rv,
                            char *msg, size_t msgcap);
/* The storage of core v1 namespaces (registry.c). */
kin__sim_storage *kin__sim_namespaces_storage(kin__sim_store *s);

/* Loads seed objects from a file; returns 0 or KIN_EINVAL. */
int kin__sim_store_seed(kin__sim_store *s, const char *path);

/* ---- validation_update.c ---- */
/* 0 when obj may replace old (immutable fields of built-ins), else fills
 * out with the server's 422 and returns -1. Caller holds mu. */
int kin__sim_validate_update(const kin__sim_resource *r, const char *name, const json_t *old,
                             const json_t *obj, kin__sim_result *out);

/* ---- defaults.c ---- */
/* Applies the defaults the sim reproduces for st's kind (Jobs, CronJobs)
 * to obj, whose metadata has its name and uid; caller holds mu. */
void kin__sim_defaults_create(const kin__sim_storage *st, json_t *obj);

/* ---- validation.c ---- */
/* 0 when name is valid for the resource, else fills out with 422. */
int kin__sim_validate_name(kin__sim_resource *r, const char *name, kin__sim_result *out);

#endif
