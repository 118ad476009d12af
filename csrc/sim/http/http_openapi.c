/* http_openapi.c -- OpenAPI v3 as kube-apiserver serves it
 * (k8s.io/kube-openapi handler3): the index /openapi/v3, whose entries
 * point at /openapi/v3/<api/v1 | apis/g/v>?hash=<SHA-512 of the document>,
 * and one document per served group-version.
 *
 * The built-in group-versions' documents are kube-apiserver's own
 * (csrc/sim/openapi/, gzip-compressed; captured by `make sim-openapi`: the paths of
 * the sim's resources and the schemas they reach), compiled in by
 * tools/embed-openapi.sh with their hashes, and each inflated the first
 * time it is asked for (kept until exit). `kubectl explain`
 * reads their components.schemas; kubectl apply reads the PATCH
 * operations' fieldValidation parameter (queryParamVerifierV3).
 *
 * A CRD's group-version gets a document built at request time: one PATCH
 * operation per resource (and its scale subresource) carrying the GVK and
 * fieldValidation, and, as kube-apiserver's CRD builder, the served
 * version's openAPIV3Schema under components.schemas as
 * <reversed group>.<version>.<Kind> with apiVersion, kind and metadata
 * (a plain object here, not ObjectMeta's schema) added. */
#include <gnutls/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "http_int.h"

/* One document ready to serve: its JSON and the hash the index names. */
typedef struct {
  const char *gv;
  char *json;
  size_t len;
  char hash[129];
} doc;

/* kin__sim_openapi_docs with their hashes; each json inflated on first
 * use (builtin_json), then kept until exit. builtin_mu guards the json
 * and len members (a leaf lock, taken with or without the store's). */
static doc *builtin;
static size_t nbuiltin;
static pthread_mutex_t builtin_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_modified[64];
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

/* The upper-case hex SHA-512 of p, as handler3 computes its ETag. */
static void hash_of(const char *p, size_t n, char out[129]) {
  unsigned char d[64];
  out[0] = 0;
  if (gnutls_hash_fast(GNUTLS_DIG_SHA512, p, n, d) < 0) return;
  for (int i = 0; i < 64; i++) snprintf(out + 2 * i, 3, "%02X", d[i]);
}

/* Returns the gunzipped bytes (NUL-terminated, caller frees) or NULL. */
static char *gunzip(const unsigned char *gz, size_t len, size_t *n) {
  z_stream z;
  memset(&z, 0, sizeof(z));
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return NULL;
  size_t cap = len * 8 + 1, used = 0;
  char *out = malloc(cap);
  z.next_in = (unsigned char *)gz;
  z.avail_in = (uInt)len;
  int rc = Z_OK;
  while (out && rc == Z_OK) {
    if (cap - used < 2) {
      char *p = realloc(out, cap * 2);
      if (!p) break;
      out = p;
      cap *= 2;
    }
    z.next_out = (unsigned char *)out + used;
    z.avail_out = (uInt)(cap - used - 1);
    rc = inflate(&z, Z_NO_FLUSH);
    used = cap - 1 - z.avail_out;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) {
    free(out);
    return NULL;
  }
  out[used] = 0;
  *n = used;
  return out;
}

static void builtin_load(void) {
  size_t n = 0;
  while (kin__sim_openapi_docs[n].gv) n++;
  builtin = calloc(n ? n : 1, sizeof(*builtin));
  if (!builtin) return;
  for (size_t i = 0; i < n; i++) {
    const kin__sim_openapi_doc *d = &kin__sim_openapi_docs[i];
    doc *b = &builtin[nbuiltin++];
    b->gv = d->gv;
    snprintf(b->hash, sizeof(b->hash), "%s", d->hash);
  }
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(last_modified, sizeof(last_modified), "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* The built-in document of gv (its json possibly not inflated yet), or
 * NULL. */
static doc *builtin_find(const char *gv) {
  pthread_once(&builtin_once, builtin_load);
  for (size_t i = 0; i < nbuiltin; i++)
    if (!strcmp(builtin[i].gv, gv)) return &builtin[i];
  return NULL;
}

/* Inflates d's JSON on first use; returns it (kept until exit) and sets
 * *len, or NULL when out of memory. */
static const char *builtin_json(doc *d, size_t *len) {
  pthread_mutex_lock(&builtin_mu);
  if (!d->json) {
    size_t i = (size_t)(d - builtin);
    d->json = gunzip(kin__sim_openapi_docs[i].gz, kin__sim_openapi_docs[i].len, &d->len);
  }
  const char *j = d->json;
  *len = d->len;
  pthread_mutex_unlock(&builtin_mu);
  return j;
}

const char *kin__sim_openapi_builtin(const char *gv, size_t *len) {
  doc *d = builtin_find(gv);
  return d ? builtin_json(d, len) : NULL;
}

static void gv_key(const kin__sim_resource *r, char *key, size_t cap) {
  if (*r->group)
    snprintf(key, cap, "apis/%s/%s", r->group, r->version);
  else
    snprintf(key, cap, "api/%s", r->version);
}

static json_t *patch_op(const char *group, const char *version, const char *kind) {
  return json_pack("{s:{s:{s:s, s:s, s:s}, s:s, s:[{s:s, s:s, s:{s:s}}], s:{}}}", "patch",
                   "x-kubernetes-group-version-kind", "group", group, "version", version,
                   "kind", kind, "x-kubernetes-action", "patch", "parameters", "name",
                   "fieldValidation", "in", "query", "schema", "type", "string", "responses");
}

/* The CRD version's openAPIV3Schema as kube-apiserver's builder publishes
 * it (new reference), or NULL when the CRD has none. */
static json_t *crd_schema(kin__sim_store *s, const kin__sim_resource *r) {
  kin__sim_storage *st = kin__sim_registry_storage(s, "apiextensions.k8s.io",
                                                   "customresourcedefinitions");
  void **slot = st ? kin__hmap_get(&st->objects, r->crd_name) : NULL;
  if (!slot) return NULL;
  json_t *crd = kin__sim_obj_json(*slot);
  json_t *versions = json_object_get(json_object_get(crd, "spec"), "versions");
  size_t i;
  json_t *v;
  json_array_foreach(versions, i, v) {
    if (strcmp(kin__sim_jstr(v, "name", NULL) ? kin__sim_jstr(v, "name", NULL) : "",
               r->version))
      continue;
    json_t *sch = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
    if (!json_is_object(sch)) break;
    sch = json_deep_copy(sch);
    json_t *props = json_object_get(sch, "properties");
    if (!json_is_object(props)) {
      props = json_object();
      json_object_set_new(sch, "properties", props);
    }
    json_object_set_new(
        props, "apiVersion",
        json_pack("{s:s, s:s}", "description",
                  "APIVersion defines the versioned schema of this representation of an "
                  "object. Servers should convert recognized schemas to the latest internal "
                  "value, and may reject unrecognized values. More info: "
                  "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                  "api-conventions.md#resources",
                  "type", "string"));
    json_object_set_new(
        props, "kind",
        json_pack("{s:s, s:s}", "description",
                  "Kind is a string value representing the REST resource this object "
                  "represents. Servers may infer this from the endpoint the client submits "
                  "requests to. Cannot be updated. In CamelCase. More info: "
                  "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                  "api-conventions.md#types-kinds",
                  "type", "string"));
    json_object_set_new(
        props, "metadata",
        json_pack("{s:s, s:s}", "description",
                  "Standard object's metadata. More info: "
                  "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                  "api-conventions.md#metadata",
                  "type", "object"));
    json_object_set_new(sch, "x-kubernetes-group-version-kind",
                        json_pack("[{s:s, s:s, s:s}]", "group", r->group, "version",
                                  r->version, "kind", r->kind));
    json_decref(crd);
    return sch;
  }
  json_decref(crd);
  return NULL;
}

/* "example.com" -> "com.example" */
static void reverse_group(const char *g, char *out, size_t cap) {
  size_t n = 0;
  out[0] = 0;
  const char *end = g + strlen(g);
  while (end > g) {
    const char *dot = end;
    while (dot > g && dot[-1] != '.') dot--;
    int w = snprintf(out + n, cap - n, "%s%.*s", n ? "." : "", (int)(end - dot), dot);
    if (w < 0 || (size_t)w >= cap - n) return;
    n += (size_t)w;
    end = dot > g ? dot - 1 : g;
  }
}

/* Builds the document of a group-version without shipped data (a CRD's);
 * returns 0 and fills d (d->json malloc'd), or -1 when gv is not served.
 * Caller holds the store lock. */
static int gv_doc(kin__sim_store *s, const char *key, doc *d) {
  json_t *paths = json_object(), *schemas = json_object();
  char k[340];
  for (size_t i = 0; i < s->nres; i++) {
    kin__sim_resource *r = s->res[i];
    if (r->removed) continue;
    gv_key(r, k, sizeof(k));
    if (strcmp(k, key)) continue;
    char p[600], sp[620];
    snprintf(p, sizeof(p), "/%s%s/%s/{name}", key, r->namespaced ? "/namespaces/{namespace}" : "",
             r->resource);
    json_object_set_new(paths, p, patch_op(r->group, r->version, r->kind));
    if (r->has_scale) { /* .../{name}/scale speaks autoscaling/v1 Scale */
      snprintf(sp, sizeof(sp), "%s/scale", p);
      json_object_set_new(paths, sp, patch_op("autoscaling", "v1", "Scale"));
    }
    json_t *sch = r->crd_name ? crd_schema(s, r) : NULL;
    if (sch) {
      char rg[300], name[600];
      reverse_group(r->group, rg, sizeof(rg));
      snprintf(name, sizeof(name), "%s.%s.%s", rg, r->version, r->kind);
      json_object_set_new(schemas, name, sch);
    }
  }
  if (!json_object_size(paths)) {
    json_decref(paths);
    json_decref(schemas);
    return -1;
  }
  json_t *body = json_pack("{s:s, s:{s:s, s:s}, s:o, s:{s:o}}", "openapi", "3.0.0", "info",
                           "title", "Kubernetes CRD Swagger", "version", "v0.1.0", "paths",
                           paths, "components", "schemas", schemas);
  d->json = body ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  d->len = d->json ? strlen(d->json) : 0;
  if (d->json) hash_of(d->json, d->len, d->hash);
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The index: {"paths":{"<gv>":{"serverRelativeURL":"/openapi/v3/<gv>?hash=H"}}},
 * keys sorted. Caller holds the store lock. */
static void index_doc(kin__sim_store *s, kin__buf *b) {
  char **keys = calloc(s->nres ? s->nres : 1, sizeof(*keys));
  size_t nk = 0;
  for (size_t i = 0; keys && i < s->nres; i++) {
    if (s->res[i]->removed) continue;
    char k[340];
    gv_key(s->res[i], k, sizeof(k));
    int dup = 0;
    for (size_t j = 0; j < nk && !dup; j++) dup = !strcmp(keys[j], k);
    if (!dup && (keys[nk] = strdup(k))) nk++;
  }
  qsort(keys, nk, sizeof(*keys), cmp_str);
  kin__buf_add(b, "{\"paths\":{", 10);
  for (size_t i = 0; i < nk; i++) {
    const doc *d = builtin_find(keys[i]);
    doc crd = {0};
    if (!d && !gv_doc(s, keys[i], &crd)) d = &crd;
    kin__buf_printf(b, "%s\"%s\":{\"serverRelativeURL\":\"/openapi/v3/%s?hash=%s\"}",
                    i ? "," : "", keys[i], keys[i], d ? d->hash : "");
    free(crd.json);
    free(keys[i]);
  }
  kin__buf_add(b, "}}", 2);
  free(keys);
}

/* Queues a response with handler3's headers. json: the body (len bytes,
 * owned when own), NULL for none; hash: the ETag's value or NULL;
 * immutable: the request named the current hash. */
static enum MHD_Result respond(kin__sim_req *req, int code, const char *json, size_t len,
                               int own, const char *content_type, const char *hash,
                               int immutable, const char *location) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      json ? len : 0, json ? (void *)json : (void *)"",
      json && own ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  if (!resp) {
    if (own) free((void *)json);
    return MHD_NO;
  }
  if (content_type) MHD_add_response_header(resp, "Content-Type", content_type);
  if (immutable) {
    char exp[64];
    time_t t = time(NULL) + 365 * 24 * 3600;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(exp, sizeof(exp), "%a, %d %b %Y %H:%M:%S UTC", &tm);
    MHD_add_response_header(resp, "Cache-Control", "public, immutable");
    MHD_add_response_header(resp, "Expires", exp);
  } else {
    MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
  }
  if (hash) {
    char etag[140];
    snprintf(etag, sizeof(etag), "\"%s\"", hash);
    MHD_add_response_header(resp, "ETag", etag);
    MHD_add_response_header(resp, "Vary", "Accept");
    if (code == 200 || code == 304) MHD_add_response_header(resp, "Last-Modified", last_modified);
  }
  if (location) MHD_add_response_header(resp, "Location", location);
  enum MHD_Result ret = kin__sim_queue_response(req, (unsigned)code, resp);
  MHD_destroy_response(resp);
  return ret;
}

int kin__sim_handle_openapi(kin__sim_req *req, const char *url, enum MHD_Result *ret) {
  if (strncmp(url, "/openapi/", 9)) return 0;
  pthread_once(&builtin_once, builtin_load);
  kin__sim_store *s = &req->sim->store;
  if (!strcmp(url, "/openapi/v3")) {
    kin__buf b = {0};
    pthread_mutex_lock(&s->mu);
    index_doc(s, &b);
    pthread_mutex_unlock(&s->mu);
    /* handler3 writes the index without a Content-Type: Go's sniffing
     * names it text/plain */
    *ret = respond(req, 200, b.p, b.len, 1, "text/plain; charset=utf-8", NULL, 0, NULL);
    return 1;
  }
  const char *key = strncmp(url, "/openapi/v3/", 12) ? NULL : url + 12;
  doc d = {0};
  int own = 0, found = 0;
  if (key) {
    pthread_mutex_lock(&s->mu);
    char k[340];
    for (size_t i = 0; i < s->nres && !found; i++) {
      if (s->res[i]->removed) continue;
      gv_key(s->res[i], k, sizeof(k));
      found = !strcmp(k, key);
    }
    doc *b = found ? builtin_find(key) : NULL;
    if (b) {
      d = *b;
      d.json = (char *)builtin_json(b, &d.len);
    }
    else if (found && !gv_doc(s, key, &d))
      own = 1;
    pthread_mutex_unlock(&s->mu);
  }
  if (!found || !d.json) {
    if (own) free(d.json);
    *ret = respond(req, found ? 500 : 404, NULL, 0, 0, NULL, NULL, 0, NULL);
    return 1;
  }
  const char *want = kin__sim_query(req, "hash");
  const char *inm =
      MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
  char etag[140];
  snprintf(etag, sizeof(etag), "\"%s\"", d.hash);
  int immutable = want && !strcmp(want, d.hash);
  if (want && !immutable) {
    /* a stale hash: redirect to the current one */
    char loc[512];
    snprintf(loc, sizeof(loc), "/openapi/v3/%s?hash=%s", key, d.hash);
    *ret = respond(req, 301, NULL, 0, 0, "application/json", d.hash, 0, loc);
  } else if (inm && !strcmp(inm, etag)) {
    *ret = respond(req, 304, NULL, 0, 0, NULL, d.hash, immutable, NULL);
  } else {
    *ret = respond(req, 200, d.json, d.len, own, "application/json", d.hash, immutable, NULL);
    own = 0;
  }
  if (own) free(d.json);
  return 1;
}
