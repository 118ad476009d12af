/* rest_verbs.c -- the dynamic client (client-go dynamic.ResourceInterface):
 * Get, List, Create, Update, UpdateStatus, Patch and Delete as paths,
 * query parameters and bodies over kin_client_do. Each verb hands its call
 * context (call_ctx.h: deadline, canceler, write observer, leadership
 * fence) to kin_client_do in the request (rest_ctx.c applies it), not
 * through thread-locals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "kobj.h"
#include "rest_client_int.h"

/* Appends "&key=value" (or "?key=value" for the first parameter). */
static void add_q(kin__buf *b, const char *key, const char *val) {
  kin__buf_puts(b, b->p && memchr(b->p, '?', b->len) ? "&" : "?");
  kin__buf_puts(b, key);
  kin__buf_puts(b, "=");
  kin__buf_query_escape(b, val);
}

static void add_q_long(kin__buf *b, const char *key, long v) {
  char n[32];
  snprintf(n, sizeof n, "%ld", v);
  add_q(b, key, n);
}

/* Writes the path of r in ns, then /name and /subresource when given.
 * Returns 0, KIN_EINVAL when it does not fit, KIN_ENOMEM. */
static int build_path(kin__buf *b, const kin_resource *r, const char *ns, const char *name,
                      const char *sub) {
  char p[1024];
  int n = kin_resource_path(r, ns, p, sizeof p);
  if (n < 0) return n;
  kin__buf_add(b, p, (size_t)n);
  if (name) {
    kin__buf_puts(b, "/");
    kin__buf_query_escape(b, name);
  }
  if (sub && *sub) {
    kin__buf_puts(b, "/");
    kin__buf_puts(b, sub);
  }
  return b->oom ? KIN_ENOMEM : 0;
}

/* Sends method to b's path under ctx (NULL: none) and frees b. */
static int do_send(kin_client *c, const kin_call_ctx *ctx, const char *method, kin__buf *b,
                   const char *ctype, const char *body, size_t len, int idempotent,
                   kin_result *out) {
  memset(out, 0, sizeof *out);
  if (b->oom) {
    kin__buf_free(b);
    return KIN_ENOMEM;
  }
  kin_client_request req = {.method = method,
                            .path = b->p,
                            .content_type = ctype,
                            .body = body,
                            .body_len = len,
                            .idempotent = idempotent,
                            .ctx = ctx};
  int rc = kin_client_do(c, &req, out);
  kin__buf_free(b);
  return rc;
}

/* Sets out->message for a call refused before it was sent. */
static int misuse(kin_result *out, const char *msg) {
  memset(out, 0, sizeof *out);
  out->message = strdup(msg);
  return KIN_EINVAL;
}

int kin_client_get(kin_client *c, const kin_call_ctx *ctx, const kin_resource *r, const char *ns,
                   const char *name, kin_result *out) {
  if (!name || !*name) return misuse(out, "get: a resource name is required");
  kin__buf b = {0};
  int rc = build_path(&b, r, ns, name, NULL);
  if (rc) {
    kin__buf_free(&b);
    return misuse(out, "get: path too long");
  }
  return do_send(c, ctx, "GET", &b, NULL, NULL, 0, 1, out);
}

int kin_client_list(kin_client *c, const kin_call_ctx *ctx, const kin_resource *r, const char *ns,
                    const kin_list_opts *o, kin_result *out) {
  kin__buf b = {0};
  if (build_path(&b, r, ns, NULL, NULL)) {
    kin__buf_free(&b);
    return misuse(out, "list: path too long");
  }
  if (o) {
    if (o->label_selector && *o->label_selector) add_q(&b, "labelSelector", o->label_selector);
    if (o->field_selector && *o->field_selector) add_q(&b, "fieldSelector", o->field_selector);
    if (o->resource_version) add_q(&b, "resourceVersion", o->resource_version);
    if (o->resource_version_match) add_q(&b, "resourceVersionMatch", o->resource_version_match);
    if (o->limit > 0) add_q_long(&b, "limit", o->limit);
    if (o->continue_token && *o->continue_token) add_q(&b, "continue", o->continue_token);
    if (o->timeout_seconds > 0) add_q_long(&b, "timeoutSeconds", o->timeout_seconds);
  }
  return do_send(c, ctx, "GET", &b, NULL, NULL, 0, 1, out);
}

/* The query parameters every write takes. */
static void write_q(kin__buf *b, const kin_write_opts *o) {
  if (!o) return;
  if (o->field_manager && *o->field_manager) add_q(b, "fieldManager", o->field_manager);
  if (o->dry_run && *o->dry_run) add_q(b, "dryRun", o->dry_run);
}

/* Parses json for its name, namespace and resourceVersion (the object's
 * reference in *obj, which the caller drops). */
static int read_meta(const char *json, size_t len, kin_obj **obj) {
  *obj = NULL;
  return json ? kin_obj_parse(json, len, obj) : KIN_EINVAL;
}

int kin_client_create(kin_client *c, const kin_call_ctx *ctx, const kin_resource *r,
                      const char *ns, const char *json, size_t len, const kin_write_opts *o,
                      kin_result *out) {
  if (!json) return misuse(out, "create: no object");
  const char *sub = o ? o->subresource : NULL;
  const char *name = sub && *sub ? o->name : NULL; /* the parent's, when known */
  kin_obj *obj = NULL;
  /* A create on a subresource (pods/binding, pods/eviction) names its
   * parent in the body. */
  if (sub && *sub && !name && read_meta(json, len, &obj))
    return misuse(out, "create: a subresource create needs metadata.name in the object");
  kin__buf b = {0};
  int rc = build_path(&b, r, ns, name ? name : obj ? kin_obj_name(obj) : NULL, sub);
  kin_obj_unref(obj);
  if (rc) {
    kin__buf_free(&b);
    return misuse(out, "create: path too long");
  }
  write_q(&b, o);
  return do_send(c, ctx, "POST", &b, "application/json", json, len, 0, out);
}

int kin_client_update(kin_client *c, const kin_call_ctx *ctx, const kin_resource *r,
                      const char *ns, const char *json, size_t len, const kin_write_opts *o,
                      kin_result *out) {
  kin_obj *obj = NULL;
  const char *name = o ? o->name : NULL, *rv = o ? o->resource_version : NULL;
  if (!name) {
    if (read_meta(json, len, &obj)) return misuse(out, "update: the object has no metadata.name");
    name = kin_obj_name(obj);
    rv = kin_obj_resource_version(obj);
  }
  kin__buf b = {0};
  int rc = build_path(&b, r, ns, name, o ? o->subresource : NULL);
  /* An update that carries a resourceVersion is a compare-and-swap, so
   * sending it twice cannot overwrite anything: it may be retried. */
  int idempotent = rv && *rv;
  kin_obj_unref(obj);
  if (rc) {
    kin__buf_free(&b);
    return misuse(out, "update: path too long");
  }
  write_q(&b, o);
  return do_send(c, ctx, "PUT", &b, "application/json", json, len, idempotent, out);
}

int kin_client_update_status(kin_client *c, const kin_call_ctx *ctx, const kin_resource *r,
                             const char *ns, const char *json, size_t len, kin_result *out) {
  kin_write_opts o = {.subresource = "status"};
  return kin_client_update(c, ctx, r, ns, json, len, &o, out);
}

static const char *patch_content_type(kin_patch_type t) {
  switch (t) {
  case KIN_PATCH_MERGE: return "application/merge-patch+json";
  case KIN_PATCH_JSON: return "application/json-patch+json";
  case KIN_PATCH_STRATEGIC: return "application/strategic-merge-patch+json";
  case KIN_PATCH_APPLY: return "application/apply-patch+yaml";
  }
  return NULL;
}

int kin_client_patch(kin_client *c, const kin_call_ctx *ctx, const kin_resource *r,
                     const char *ns, const char *name, kin_patch_type type, const char *patch,
                     size_t len, const kin_write_opts *o, kin_result *out) {
  const char *ct = patch_content_type(type);
  if (!ct) return misuse(out, "patch: unknown patch type");
  if (!name || !*name) return misuse(out, "patch: a resource name is required");
  if (!patch) return misuse(out, "patch: no patch");
  if (type == KIN_PATCH_APPLY && (!o || !o->field_manager || !*o->field_manager))
    return misuse(out, "patch: server-side apply requires a field manager");
  kin__buf b = {0};
  if (build_path(&b, r, ns, name, o ? o->subresource : NULL)) {
    kin__buf_free(&b);
    return misuse(out, "patch: path too long");
  }
  write_q(&b, o);
  /* force is only meaningful (and only accepted) for apply patches. */
  if (type == KIN_PATCH_APPLY && o->force) add_q(&b, "force", "true");
  return do_send(c, ctx, "PATCH", &b, ct, patch, len, 0, out);
}

/* The DeleteOptions body for o (client-go metav1.DeleteOptions). */
static void delete_body(kin__buf *b, const kin_delete_opts *o) {
  kin__buf_puts(b, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\"");
  if (o) {
    if (o->propagation_policy && *o->propagation_policy) {
      kin__buf_puts(b, ",\"propagationPolicy\":");
      kin__buf_json_str(b, o->propagation_policy);
    }
    if (o->has_grace_period)
      kin__buf_printf(b, ",\"gracePeriodSeconds\":%ld", o->grace_period_seconds);
    if (o->precondition_uid || o->precondition_rv) {
      kin__buf_puts(b, ",\"preconditions\":{");
      if (o->precondition_uid) {
        kin__buf_puts(b, "\"uid\":");
        kin__buf_json_str(b, o->precondition_uid);
      }
      if (o->precondition_rv) {
        kin__buf_puts(b, o->precondition_uid ? ",\"resourceVersion\":" : "\"resourceVersion\":");
        kin__buf_json_str(b, o->precondition_rv);
      }
      kin__buf_puts(b, "}");
    }
    if (o->dry_run && *o->dry_run) {
      kin__buf_puts(b, ",\"dryRun\":[");
      kin__buf_json_str(b, o->dry_run);
      kin__buf_puts(b, "]");
    }
  }
  kin__buf_puts(b, "}");
}

int kin_client_delete(kin_client *c, const kin_call_ctx *ctx, const kin_resource *r,
                      const char *ns, const char *name, const kin_delete_opts *o,
                      kin_result *out) {
  if (!name || !*name) return misuse(out, "delete: a resource name is required");
  kin__buf b = {0}, body = {0};
  if (build_path(&b, r, ns, name, NULL)) {
    kin__buf_free(&b);
    return misuse(out, "delete: path too long");
  }
  /* kube-apiserver reads DeleteOptions from the body when there is one;
   * dryRun also goes in the query for servers that only read it there
   * (kinformer.sim). */
  if (o && o->dry_run && *o->dry_run) add_q(&b, "dryRun", o->dry_run);
  delete_body(&body, o);
  if (body.oom) {
    kin__buf_free(&b);
    kin__buf_free(&body);
    return KIN_ENOMEM;
  }
  int rc = do_send(c, ctx, "DELETE", &b, "application/json", body.p, body.len, 1, out);
  kin__buf_free(&body);
  return rc;
}
