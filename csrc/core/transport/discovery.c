/* discovery.c -- the RESTMapper: resolves "[group/]version/resource" and
 * apiVersion + kind through the server's discovery documents
 * (/api/v1, /apis/<group>/<version>: APIResourceList). Each group-version is
 * fetched when first needed and fetched again once when a lookup misses,
 * as controller-runtime's lazy mapper reloads a group on a NoKindMatch
 * (a CRD installed after the first lookup is found without a reset). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json_tok.h"
#include "kin.h"
#include "rest_client_int.h"

/* One resource of a group-version; strings are interned in c->strs. */
typedef struct {
  const char *resource, *singular, *kind;
  int namespaced;
} gv_res;

/* A fetched APIResourceList; owned by c->gvs (under c->mu). */
typedef struct {
  const char *group, *version;
  size_t n;
  gv_res *r;
} gv_doc;

/* The interned copy of s (c->mu held): stable for the client's lifetime;
 * NULL on OOM. */
static const char *intern(kin_client *c, const char *s) {
  void **v = kin__hmap_get(&c->strs, s);
  if (v) return *v;
  char *d = strdup(s);
  if (!d) return NULL;
  if (kin__hmap_put(&c->strs, s, d, NULL) < 0) {
    free(d);
    return NULL;
  }
  return d;
}

static void doc_free(gv_doc *d) {
  if (!d) return;
  free(d->r);
  free(d);
}

void kin__discovery_clear(kin_client *c) {
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&c->gvs, &pos))) doc_free(e->val);
  kin__hmap_free(&c->gvs);
  kin__hmap_init(&c->gvs);
}

void kin__discovery_free(kin_client *c) {
  kin__discovery_clear(c);
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&c->strs, &pos))) free(e->val);
  kin__hmap_free(&c->strs);
}

void kin_client_discovery_reset(kin_client *c) {
  pthread_mutex_lock(&c->mu);
  kin__discovery_clear(c);
  pthread_mutex_unlock(&c->mu);
}

/* Interns string token i of j (c->mu held); NULL when absent or on OOM
 * (*oom set then). */
static const char *intern_tok(kin_client *c, const kin__json *j, int i, int *oom) {
  char *s = kin__json_strdup_oom(j, i, oom);
  if (!s) return NULL;
  const char *r = intern(c, s);
  free(s);
  if (!r) *oom = 1;
  return r;
}

/* Builds the document of group/version from an APIResourceList body (c->mu
 * held); subresources ("pods/status") are left out. Returns 0, KIN_EINVAL
 * when the body is not one, KIN_ENOMEM. */
static int doc_parse(kin_client *c, const char *group, const char *version, const char *body,
                     size_t len, gv_doc **out) {
  kin__json j;
  int rc = kin__json_parse(&j, body, len);
  if (rc) return rc;
  int arr = kin__json_get(&j, 0, "resources");
  int n = kin__json_array_size(&j, arr);
  if (n < 0) {
    kin__json_free(&j);
    return KIN_EINVAL;
  }
  gv_doc *d = calloc(1, sizeof *d);
  if (!d || !(d->r = calloc((size_t)n + 1, sizeof *d->r))) {
    free(d);
    kin__json_free(&j);
    return KIN_ENOMEM;
  }
  int oom = 0;
  d->group = intern(c, group);
  d->version = intern(c, version);
  oom = !d->group || !d->version;
  for (int k = 0, i = arr + 1; k < n && !oom; k++, i = kin__json_next(&j, i)) {
    gv_res r = {0};
    r.resource = intern_tok(c, &j, kin__json_get(&j, i, "name"), &oom);
    r.kind = intern_tok(c, &j, kin__json_get(&j, i, "kind"), &oom);
    r.singular = intern_tok(c, &j, kin__json_get(&j, i, "singularName"), &oom);
    r.namespaced = kin__json_true(&j, kin__json_get(&j, i, "namespaced"));
    if (r.resource && r.kind && !strchr(r.resource, '/')) d->r[d->n++] = r;
  }
  kin__json_free(&j);
  if (oom) {
    doc_free(d);
    return KIN_ENOMEM;
  }
  *out = d;
  return 0;
}

/* Fetches group/version's APIResourceList and stores it in the cache,
 * replacing an older one. Returns 0, KIN_ENOENT when the server does not
 * serve that group-version, or the request's error. */
static int doc_fetch(kin_client *c, const char *group, const char *version, const char *key,
                     kin_result *why) {
  char path[512];
  int n = *group ? snprintf(path, sizeof path, "/apis/%s/%s", group, version)
                 : snprintf(path, sizeof path, "/api/%s", version);
  if (n < 0 || (size_t)n >= sizeof path) return KIN_EINVAL;
  kin_client_request req = {.path = path, .idempotent = 1};
  kin_result res;
  int rc = kin_client_do(c, &req, &res);
  if (rc == KIN_ESTATUS && res.code == 404) rc = KIN_ENOENT;
  if (rc == 0) {
    gv_doc *d = NULL;
    pthread_mutex_lock(&c->mu);
    rc = doc_parse(c, group, version, res.body, res.body_len, &d);
    void *old = NULL;
    if (rc == 0 && kin__hmap_put(&c->gvs, key, d, &old) < 0) {
      doc_free(d);
      rc = KIN_ENOMEM;
    }
    doc_free(old);
    pthread_mutex_unlock(&c->mu);
    if (rc == KIN_EINVAL && why) {
      why->code = res.code;
      why->message = strdup("the discovery document is not an APIResourceList");
    }
  } else if (why && rc != KIN_ENOENT) {
    /* The failed request's answer, for the caller's message. */
    why->code = res.code;
    why->reason = res.reason;
    why->message = res.message;
    res.reason = res.message = NULL;
  }
  kin_result_free(&res);
  return rc;
}

/* Looks name (a resource, its singular, or a Kind when is_kind) up in the
 * cached document of key (c->mu held). */
static int doc_find(kin_client *c, const char *key, const char *name, int is_kind,
                    kin_resource *out) {
  void **v = kin__hmap_get(&c->gvs, key);
  if (!v) return KIN_ENOENT;
  const gv_doc *d = *v;
  for (size_t i = 0; i < d->n; i++) {
    const gv_res *r = &d->r[i];
    int hit = is_kind ? !strcmp(r->kind, name)
                      : !strcasecmp(r->resource, name) || (r->singular && !strcasecmp(r->singular, name));
    if (hit) {
      *out = (kin_resource){.group = d->group,
                            .version = d->version,
                            .resource = r->resource,
                            .kind = r->kind,
                            .namespaced = r->namespaced};
      return 0;
    }
  }
  return KIN_ENOENT;
}

/* The deferred-mapper lookup: the cache first, then one fetch of the
 * group-version. */
static int lookup(kin_client *c, const char *group, const char *version, const char *name,
                  int is_kind, kin_resource *out, kin_result *why) {
  if (!*version || !*name || strchr(group, '/') || strchr(version, '/')) return KIN_EINVAL;
  char key[512];
  int n = snprintf(key, sizeof key, "%s%s%s", group, *group ? "/" : "", version);
  if (n < 0 || (size_t)n >= sizeof key) return KIN_EINVAL;
  pthread_mutex_lock(&c->mu);
  int rc = doc_find(c, key, name, is_kind, out);
  pthread_mutex_unlock(&c->mu);
  if (rc == 0) return 0;
  rc = doc_fetch(c, group, version, key, why);
  if (rc == 0) {
    pthread_mutex_lock(&c->mu);
    rc = doc_find(c, key, name, is_kind, out);
    pthread_mutex_unlock(&c->mu);
  }
  if (rc == KIN_ENOENT && why && !why->message) {
    /* As kubectl's "the server doesn't have a resource type". */
    char m[600];
    snprintf(m, sizeof m, "the server doesn't have a %s \"%s\" in %s%s%s", is_kind ? "kind" : "resource type",
             name, group, *group ? "/" : "", version);
    why->message = strdup(m);
  }
  return rc;
}

int kin_client_resource(kin_client *c, const char *name, kin_resource *out) {
  return kin_client_resource_why(c, name, out, NULL);
}

int kin_client_resource_for_kind(kin_client *c, const char *api_version, const char *kind,
                                 kin_resource *out) {
  return kin_client_resource_for_kind_why(c, api_version, kind, out, NULL);
}

/* Sets why's message for a name that cannot be parsed. */
static int bad_name(kin_result *why, const char *what) {
  if (why) why->message = strdup(what);
  return KIN_EINVAL;
}

int kin_client_resource_why(kin_client *c, const char *name, kin_resource *out,
                            kin_result *why) {
  memset(out, 0, sizeof *out);
  if (why) memset(why, 0, sizeof *why);
  if (!c || !name) return KIN_EINVAL;
  char buf[512];
  if (strlen(name) >= sizeof buf) return bad_name(why, "resource name too long");
  strcpy(buf, name);
  char *last = strrchr(buf, '/');
  if (!last) return bad_name(why, "want [group/]version/resource, e.g. v1/pods or apps/v1/deployments");
  *last++ = 0;
  const char *group = "", *version = buf;
  char *slash = strchr(buf, '/');
  if (slash) {
    *slash = 0;
    group = buf;
    version = slash + 1;
  }
  return lookup(c, group, version, last, isupper((unsigned char)*last) != 0, out, why);
}

int kin_client_resource_for_kind_why(kin_client *c, const char *api_version, const char *kind,
                                     kin_resource *out, kin_result *why) {
  memset(out, 0, sizeof *out);
  if (why) memset(why, 0, sizeof *why);
  if (!c || !api_version || !kind) return KIN_EINVAL;
  char buf[512];
  if (strlen(api_version) >= sizeof buf) return bad_name(why, "apiVersion too long");
  strcpy(buf, api_version);
  const char *group = "", *version = buf;
  char *slash = strchr(buf, '/');
  if (slash) {
    *slash = 0;
    group = buf;
    version = slash + 1;
  }
  return lookup(c, group, version, kind, 1, out, why);
}

int kin_resource_path(const kin_resource *r, const char *ns, char *buf, size_t n) {
  if (!r || !r->version || !r->resource || !buf) return KIN_EINVAL;
  int with_ns = r->namespaced && ns && *ns;
  int len = r->group && *r->group
                ? snprintf(buf, n, "/apis/%s/%s%s%s/%s", r->group, r->version,
                           with_ns ? "/namespaces/" : "", with_ns ? ns : "", r->resource)
                : snprintf(buf, n, "/api/%s%s%s/%s", r->version, with_ns ? "/namespaces/" : "",
                           with_ns ? ns : "", r->resource);
  if (len < 0 || (size_t)len >= n) return KIN_EINVAL;
  return len;
}
