/* informer_factory.h -- client-go's SharedInformerFactory (and the
 * dynamic one): one shared informer per (resource, namespace, label
 * selector, field selector, metadata-only) for every consumer of the
 * process, each fed by its own reflector.
 *
 * An informer is reflector -> DeltaFIFO -> informer thread (indexer +
 * processor). By default every object is stripped of
 * metadata.managedFields before it is cached (client-go users do this with
 * a TransformFunc; here it is the default, see keep_managed_fields).
 *
 * Thread-safe: kin_informer_factory.mu guards the informer list and the
 * started/stopped flags; it is never held while a thread is joined. */
#ifndef KIN_INFORMER_FACTORY_H
#define KIN_INFORMER_FACTORY_H

#include <stdint.h>

#include "reflector.h"
#include "rest_client.h"
#include "shared_informer.h"

typedef struct kin_informer_factory kin_informer_factory;

typedef struct {
  kin_client *client;          /* borrowed; must outlive the factory */
  uint64_t default_resync_ns;  /* 0: no resync */
  kin_clock *clock;            /* NULL: real */
  /* Reflector tuning shared by every informer (0: defaults). */
  uint64_t idle_timeout_ns;
  uint64_t backoff_initial_ns;
  uint64_t backoff_max_ns;
  long page_size;
  int content_type;            /* kin_content_type for informers that say AUTO */
} kin_informer_factory_config;

typedef struct {
  const char *resource;        /* "[group/]version/resource", e.g. "apps/v1/deployments" */
  const char *namespace;       /* NULL or "": all namespaces */
  const char *label_selector;
  const char *field_selector;
  /* A shard selector (reflector.h's shard_selector; KEP-5866), part of the
   * identity; kin_reflector_set_shard_selector on the informer's reflector
   * (kin_informer_factory_reflector) changes it later. */
  const char *shard_selector;
  int metadata_only;           /* PartialObjectMetadata */
  int watch_list;              /* WatchList streaming, falling back to LIST */
  int content_type;            /* kin_content_type (reflector.h); 0: the factory's */
  /* Projection: NULL, or a NULL-terminated list of dotted paths
   * ("spec.replicas", "status") the cache keeps, with metadata, apiVersion
   * and kind always kept; everything else is dropped at decode time. Part
   * of the identity (two informers with different lists are two caches);
   * the strings are copied. */
  const char *const *fields;
  int keep_managed_fields;     /* do not drop metadata.managedFields */
  uint64_t resync_ns;          /* 0: the factory's default */
  kin_transform_fn transform;  /* applied after managedFields is dropped; NULL: none */
  void *transform_ud;
  /* The reflector's watch idle timeout (a watch that delivers no byte for
   * this long is re-established; see reflector.h). 0: the factory's
   * idle_timeout_ns. Not part of the identity: the informer keeps the value
   * of the call that created it. */
  uint64_t idle_timeout_ns;
  /* The HTTP/2 connection health check while the informer's watch runs
   * (kin_reflector_config.read_idle_ms / ping_timeout_ms): its connection
   * is checked with the smallest settings of the requests on it, so a
   * tighter setting here also guards the other watches sharing it. 0: the
   * engine's (kin_io_engine_opts). Not part of the identity, like
   * idle_timeout_ns. */
  long read_idle_ms;
  long ping_timeout_ms;
} kin_informer_opts;

/* Creates a factory. Returns 0, KIN_EINVAL without a client, KIN_ENOMEM. */
int kin_informer_factory_new(const kin_informer_factory_config *cfg,
                             kin_informer_factory **out);

/* Returns in *out the informer for opts, creating it on first use (the
 * resource is resolved through discovery then). The informer is owned by
 * the factory. When the factory is already started, a new informer is
 * started at once. Returns 0, KIN_ENOENT (unknown resource; err names it),
 * KIN_ECLOSED after shutdown, or a discovery error. transform and
 * transform_ud are part of the identity only by pointer. */
int kin_informer_factory_informer(kin_informer_factory *f, const kin_informer_opts *opts,
                                  kin_informer **out, char *err, size_t errlen);

/* Starts every informer not yet started (reflector + informer threads).
 * Returns 0 or KIN_ECLOSED after shutdown. */
int kin_informer_factory_start(kin_informer_factory *f);

/* Waits until every started informer has synced, up to timeout_ns.
 * Returns 0, or KIN_ETIMEDOUT with the name of the first unsynced informer
 * ("v1/pods in namespace x") in unsynced, or KIN_ECLOSED. */
int kin_informer_factory_wait_for_cache_sync(kin_informer_factory *f, uint64_t timeout_ns,
                                             char *unsynced, size_t n);

/* Stops every reflector (closing its watch) and informer and joins their
 * threads. Idempotent. */
void kin_informer_factory_shutdown(kin_informer_factory *f);

/* Shuts down and frees every informer. NULL is a no-op. */
void kin_informer_factory_free(kin_informer_factory *f);

/* The reflector feeding inf (borrowed), or NULL when inf is not from f. */
kin_reflector *kin_informer_factory_reflector(kin_informer_factory *f, kin_informer *inf);

/* Transform that removes metadata.managedFields: a new object without it
 * in *out, or a reference to in when it has none. Returns 0 or KIN_ENOMEM. */
int kin_transform_drop_managed_fields(void *ud, kin_obj *in, kin_obj **out);

/* The cache's size now and as it would be with a projection (for
 * `kinformer inspect advise`): objects counted, total JSON bytes of the
 * cached objects, and the total after projecting each onto fields. */
typedef struct {
  size_t objects;
  size_t bytes;
  size_t projected_bytes;
} kin_projection_size;

/* Projects every object cached by inf onto fields (NULL-terminated dotted
 * paths, as kin_informer_opts.fields) without changing the cache, and
 * fills *out. Returns 0, KIN_EINVAL (a bad path; err says which) or
 * KIN_ENOMEM. Takes the indexer's read lock while it lists. */
int kin_informer_projection_size(kin_informer *inf, const char *const *fields,
                                 kin_projection_size *out, char *err, size_t errlen);

/* What `kinformer inspect advise` says of an informer: the projection that
 * keeps what code read of its objects (read_paths.h) and the cache's size
 * now and with it. */
typedef struct {
  char api_version[128], kind[128]; /* of its objects (one looked at) */
  char **fields;                    /* the advised paths (NULL-terminated), or NULL
                                       when nothing was read (or it holds nothing) */
  int reads_all;                    /* whole objects were read: keep everything */
  kin_projection_size size;         /* projected_bytes: with fields (= bytes without) */
} kin_informer_advice;

/* Fills *out for inf. Returns 0 or KIN_ENOMEM; free it with
 * kin_informer_advice_free in both cases. Takes the indexer's read lock
 * while it lists. */
int kin_informer_advise(kin_informer *inf, kin_informer_advice *out);
void kin_informer_advice_free(kin_informer_advice *a);

#endif
