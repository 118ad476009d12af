/* admission.c -- the admission chain of a write, as kube-apiserver's
 * MutatingAdmissionWebhook then ValidatingAdmissionWebhook plugins
 * (k8s.io/apiserver pkg/admission/plugin/webhook/{mutating,validating}
 * dispatchers): each matching webhook in order, a mutating one's
 * JSONPatch applied to the object the next one gets; a denial, an
 * unsupported dry run or a failed call (under failurePolicy Fail) ends
 * the write with kube-apiserver's Status; warnings are kept for the
 * answer's Warning headers. The store calls it through its hooks
 * (kin__sim_store.admit), never under its lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "base64.h"
#include "call.h"
#include "kin.h"
#include "match.h"
#include "review.h"
#include "sim_patch.h"

/* The request of the write this thread runs (kin__sim_admit_enter). */
static __thread kin__sim_admit_ctx *cur_ctx;

void kin__sim_admit_enter(kin__sim_admit_ctx *c) {
  c->warnings = json_array();
  cur_ctx = c;
}

void kin__sim_admit_leave(void) {
  cur_ctx = NULL;
}

void kin__sim_admit_set_delete_options(const json_t *opts) {
  if (cur_ctx) cur_ctx->delete_options = opts;
}

int kin__sim_admit_pause(int on) {
  if (!cur_ctx) return 0;
  int was = cur_ctx->paused;
  cur_ctx->paused = on;
  return was;
}

/* The store's quick test: a request context on this thread, of this
 * sim, not paused, and a webhook at all. */
static int admit_active(void *ud, const kin__sim_resource *r, int op) {
  (void)r;
  (void)op;
  kin__sim_admit_ctx *c = cur_ctx;
  if (!c || c->paused || c->sim != ud) return 0;
  return kin__sim_admission_any(ud);
}

/* obj (borrowed) as the webhook of version as sees it: a copy with as's
 * apiVersion; NULL for NULL. */
static json_t *at_version(const json_t *obj, const kin__sim_resource *as) {
  if (!obj) return NULL;
  json_t *o = json_deep_copy(obj);
  if (!o) return NULL;
  char av[320];
  snprintf(av, sizeof(av), "%s%s%s", as->group, *as->group ? "/" : "", as->version);
  json_object_set_new(o, "apiVersion", json_string(av));
  return o;
}

/* kube-apiserver's InternalError for a failed webhook call. */
static void internal_error(kin__sim_result *out, const char *msg) {
  json_t *details = json_pack("{s:[{s:s}]}", "causes", "message", msg);
  kin__sim_err(out, 500, "InternalError", details, "Internal error occurred: %s", msg);
}

/* The denial of webhook name (webhookerrors.ToStatusErr): the answer's
 * status with its code (400 when under 400), status Failure and the
 * message prefixed. */
static void denial(kin__sim_result *out, const char *name, const json_t *status) {
  json_t *code = json_object_get(status, "code");
  int c = json_is_integer(code) && json_integer_value(code) >= 400 ? (int)json_integer_value(code)
                                                                  : 400;
  const char *msg = kin__sim_jstr(status, "message", NULL);
  const char *reason = kin__sim_jstr(status, "reason", NULL);
  char text[4096];
  if (msg && *msg)
    snprintf(text, sizeof(text), "admission webhook \"%s\" denied the request: %s", name, msg);
  else if (reason && *reason)
    snprintf(text, sizeof(text), "admission webhook \"%s\" denied the request: %s", name, reason);
  else
    snprintf(text, sizeof(text), "admission webhook \"%s\" denied the request without explanation",
             name);
  json_t *details = json_object_get(status, "details");
  json_decref(out->body);
  out->code = c;
  out->body = kin__sim_status(c, reason && *reason ? reason : NULL, text,
                              json_is_object(details) ? json_deep_copy(details) : NULL);
}

/* Applies a mutating answer's JSONPatch to *o (at the webhook's version):
 * 0, or -1 with kube-apiserver's 500 in out. */
static int apply_patch(const json_t *resp, json_t **o, kin__sim_result *out) {
  const char *p64 = kin__sim_jstr(resp, "patch", NULL);
  if (!p64 || !*p64) return 0;
  unsigned char *raw = NULL;
  size_t n = 0;
  if (kin__base64_decode(p64, strlen(p64), &raw, &n)) {
    internal_error(out, "illegal base64 data in response.patch");
    return -1;
  }
  json_error_t jerr;
  json_t *ops = json_loadb((const char *)raw, n, 0, &jerr);
  free(raw);
  if (!json_is_array(ops)) {
    json_decref(ops);
    internal_error(out, "invalid JSONPatch in response.patch");
    return -1;
  }
  json_t *res = NULL;
  char err[512] = "";
  if (!*o || kin_sim_json_patch(*o, ops, &res, err, sizeof(err)) || !json_is_object(res)) {
    json_decref(ops);
    json_decref(res);
    internal_error(out, err[0] ? err : "the JSONPatch does not apply");
    return -1;
  }
  json_decref(ops);
  json_decref(*o);
  *o = res;
  return 0;
}

/* Calls webhook h for a with *obj (mutating: replaced by the patched
 * object, at r's version). Returns 0 (allowed, or a failed call under
 * Ignore) or -1 with the refusal in out. */
static int call_one(kin_sim *sim, kin__sim_admit_ctx *c, const kin__sim_hook *h,
                    const kin__sim_admit_attrs *a, kin__sim_resource *as, json_t **obj,
                    kin__sim_result *out) {
  if (c->dry_run && !h->no_side_effects) {
    kin__sim_err_bad_request(out, "admission webhook \"%s\" does not support dry run", h->name);
    return -1;
  }
  json_t *o = at_version(*obj, as), *old = at_version(a->old, as);
  char uid[37];
  char *body = kin__sim_review_request(c, a, as, o, old, uid);
  json_decref(old);
  char *ans = NULL;
  size_t anslen = 0;
  char err[2048], msg[2200];
  json_t *resp = NULL;
  int rc = body ? kin__sim_hook_call(sim, h, body, &ans, &anslen, err, sizeof(err))
                : (snprintf(err, sizeof(err), "failed to call webhook: out of memory"), -1);
  free(body);
  if (!rc) rc = kin__sim_review_response(ans, anslen, uid, &resp, err, sizeof(err));
  free(ans);
  if (!rc && json_is_true(json_object_get(resp, "allowed")) && kin__sim_jstr(resp, "patch", NULL)) {
    const char *pt = kin__sim_jstr(resp, "patchType", NULL);
    if (!h->mutating)
      rc = -1, snprintf(err, sizeof(err),
                        "received invalid webhook response: validating webhook may not return "
                        "response.patch");
    else if (!pt)
      rc = -1, snprintf(err, sizeof(err),
                        "received invalid webhook response: webhook returned response.patch but "
                        "not response.patchType");
    else if (strcmp(pt, "JSONPatch"))
      rc = -1, snprintf(err, sizeof(err),
                        "received invalid webhook response: webhook returned invalid "
                        "response.patchType of \"%s\"",
                        pt);
  }
  if (rc) {
    json_decref(resp);
    json_decref(o);
    if (h->ignore) return 0;
    snprintf(msg, sizeof(msg), "failed calling webhook \"%s\": %s", h->name, err);
    internal_error(out, msg);
    return -1;
  }
  size_t i;
  json_t *w;
  json_array_foreach(json_object_get(resp, "warnings"), i, w) {
    if (json_is_string(w) && c->warnings) json_array_append(c->warnings, w);
  }
  if (!json_is_true(json_object_get(resp, "allowed"))) {
    denial(out, h->name, json_object_get(resp, "status"));
    json_decref(resp);
    json_decref(o);
    return -1;
  }
  if (h->mutating && !*obj && kin__sim_jstr(resp, "patch", NULL) &&
      *kin__sim_jstr(resp, "patch", NULL)) {
    snprintf(msg, sizeof(msg),
             "admission webhook \"%s\" attempted to modify the object, which is not supported "
             "for this operation",
             h->name);
    internal_error(out, msg);
    json_decref(resp);
    json_decref(o);
    return -1;
  }
  if (h->mutating && *obj && kin__sim_jstr(resp, "patch", NULL)) {
    if (apply_patch(resp, &o, out)) {
      json_decref(resp);
      json_decref(o);
      return -1;
    }
    json_t *back = at_version(o, a->r);
    json_decref(o);
    o = NULL;
    if (!back) {
      json_decref(resp);
      kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
      return -1;
    }
    json_decref(*obj);
    *obj = back;
  }
  json_decref(o);
  json_decref(resp);
  return 0;
}

/* The store's hook: runs a's stage of the chain on *obj. */
static int admit(void *ud, const kin__sim_admit_attrs *a, json_t **obj, kin__sim_result *out) {
  kin_sim *sim = ud;
  kin__sim_admit_ctx *c = cur_ctx;
  if (!c || c->paused || c->sim != sim) return 0;
  kin__sim_hookset *set = kin__sim_hookset_get(sim);
  if (!set) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    return -1;
  }
  int rc = 0;
  /* the object each IfNeeded mutating webhook left (reinvocation) */
  json_t **seen = a->stage == KIN__SIM_ADMIT_MUTATE && *obj ? calloc(set->n, sizeof(*seen)) : NULL;
  for (size_t i = 0; i < set->n && !rc; i++) {
    const kin__sim_hook *h = &set->h[i];
    if (h->mutating != (a->stage == KIN__SIM_ADMIT_MUTATE)) continue;
    kin__sim_resource *as = NULL;
    if (!kin__sim_hook_matches(sim, h, a, c->subresource, *obj, &as)) continue;
    rc = call_one(sim, c, h, a, as, obj, out);
    if (!rc && seen && h->reinvoke) seen[i] = json_deep_copy(*obj);
  }
  /* reinvocationPolicy IfNeeded: called once more, in order, when a later
   * webhook changed the object it had admitted (one extra round) */
  for (size_t i = 0; seen && i < set->n && !rc; i++) {
    kin__sim_resource *as = NULL;
    if (!seen[i] || json_equal(seen[i], *obj) ||
        !kin__sim_hook_matches(sim, &set->h[i], a, c->subresource, *obj, &as))
      continue;
    rc = call_one(sim, c, &set->h[i], a, as, obj, out);
  }
  for (size_t i = 0; seen && i < set->n; i++) json_decref(seen[i]);
  free(seen);
  kin__sim_hookset_put(sim, set);
  return rc;
}

int kin__sim_admission_init(kin_sim *sim) {
  sim->admission = kin__sim_webhook_state_new();
  if (!sim->admission) return KIN_ENOMEM;
  sim->store.admit_active = admit_active;
  sim->store.admit = admit;
  sim->store.admit_ud = sim;
  return 0;
}

void kin__sim_admission_free(kin_sim *sim) {
  kin__sim_webhook_state_free(sim->admission);
  sim->admission = NULL;
}
