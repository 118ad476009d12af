/* status.c -- Status objects with the codes, reasons and messages of
 * k8s.io/apimachinery/pkg/api/errors (NewNotFound, NewAlreadyExists,
 * NewConflict, NewBadRequest, NewInvalid, NewResourceExpired). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "status.h"

/* Returns a new Status (caller decrefs); steals details (may be NULL). */
json_t *kin__sim_status(int code, const char *reason, const char *message, json_t *details) {
  json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:s}", "kind", "Status", "apiVersion", "v1",
                         "metadata", "status", code < 400 ? "Success" : "Failure", "message",
                         message ? message : "");
  if (!st) {
    json_decref(details);
    return NULL;
  }
  if (reason && *reason) json_object_set_new(st, "reason", json_string(reason));
  if (details) json_object_set_new(st, "details", details);
  /* kube-apiserver's success Status (a delete) leaves code and message
   * empty, and both are omitempty */
  if (code >= 400)
    json_object_set_new(st, "code", json_integer(code));
  else if (!message || !*message)
    json_object_del(st, "message");
  return st;
}

/* Replaces r's body (released) with a new Status; steals details. */
void kin__sim_err(kin__sim_result *r, int code, const char *reason, json_t *details,
                  const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  json_decref(r->body);
  r->code = code;
  r->body = kin__sim_status(code, reason, msg, details);
}

/* The qualified resource of messages: "configmaps" or "deployments.apps". */
static void qualified(char *buf, size_t cap, const char *group, const char *resource) {
  if (group && *group)
    snprintf(buf, cap, "%s.%s", resource, group);
  else
    snprintf(buf, cap, "%s", resource);
}

/* Returns new details {name, group?, kind} (caller owns); kind holds the
 * resource or kind the message names, as the server's. */
static json_t *details(const char *group, const char *kind, const char *name) {
  json_t *d = json_object();
  if (name && *name) json_object_set_new(d, "name", json_string(name));
  if (group && *group) json_object_set_new(d, "group", json_string(group));
  json_object_set_new(d, "kind", json_string(kind));
  return d;
}

void kin__sim_err_not_found(kin__sim_result *r, const char *group, const char *resource,
                            const char *name) {
  char q[256];
  qualified(q, sizeof(q), group, resource);
  kin__sim_err(r, 404, "NotFound", details(group, resource, name), "%s \"%s\" not found", q,
               name);
}

void kin__sim_err_already_exists(kin__sim_result *r, const char *group, const char *resource,
                                 const char *name) {
  char q[256];
  qualified(q, sizeof(q), group, resource);
  kin__sim_err(r, 409, "AlreadyExists", details(group, resource, name),
               "%s \"%s\" already exists", q, name);
}

void kin__sim_err_conflict(kin__sim_result *r, const char *group, const char *kind_or_res,
                           const char *name, const char *why) {
  char q[256];
  qualified(q, sizeof(q), group, kind_or_res);
  kin__sim_err(r, 409, "Conflict", details(group, kind_or_res, name),
               "Operation cannot be fulfilled on %s \"%s\": %s", q, name, why);
}

void kin__sim_err_bad_request(kin__sim_result *r, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  kin__sim_err(r, 400, "BadRequest", NULL, "%s", msg);
}

void kin__sim_err_invalid(kin__sim_result *r, const char *group, const char *kind,
                          const char *name, const char *field, const char *cause_reason,
                          const char *detail) {
  char q[256];
  qualified(q, sizeof(q), group, kind);
  json_t *d = details(group, kind, name);
  json_object_set_new(d, "causes",
                      json_pack("[{s:s, s:s, s:s}]", "reason", cause_reason, "message", detail,
                                "field", field));
  kin__sim_err(r, 422, "Invalid", d, "%s \"%s\" is invalid: %s: %s", q, name ? name : "",
               field, detail);
}

void kin__sim_err_expired(kin__sim_result *r, const char *message) {
  kin__sim_err(r, 410, "Expired", NULL, "%s", message);
}
