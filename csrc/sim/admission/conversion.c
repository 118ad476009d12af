/* conversion.c -- a CRD's conversion webhook, as apiextensions-apiserver's
 * webhookConverter: the objects not yet at the desired version in one
 * ConversionReview v1 (uid, desiredAPIVersion, objects), the answer
 * checked (uid, result Success, as many objects as sent, each at the
 * desired apiVersion and of the same kind), each converted object's
 * metadata restored from the original but for its labels and annotations
 * (restoreObjectMeta). The webhook is the CRD's in-process registration or
 * its stored spec.conversion (webhook_set.c); the call is call.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "conversion.h"
#include "kin.h"

/* "group/version" of r into buf. */
static void gv_of(const kin__sim_resource *r, char *buf, size_t cap) {
  snprintf(buf, cap, "%s%s%s", r->group, *r->group ? "/" : "", r->version);
}

/* 1 when r is a custom resource version other than its storage one. */
static int other_version(const kin__sim_resource *r) {
  char gv[320];
  gv_of(r, gv, sizeof(gv));
  return r->crd_name && strcmp(gv, r->storage->storage_version);
}

int kin__sim_conversion_applies(kin_sim *sim, const kin__sim_resource *r) {
  if (!sim->admission || !other_version(r)) return 0;
  kin__sim_hook h;
  int found = kin__sim_conversion_hook(sim, r->crd_name, &h);
  if (found == 1) kin__sim_hook_release(sim, &h);
  return found == 1;
}

/* The 500 of a failed conversion of objects of kind at version from:
 * not an API status, so ErrorToAPIStatus's 500 without reason. */
static void conv_error(kin__sim_result *out, const char *from, const char *kind,
                       const char *why) {
  kin__sim_err(out, 500, NULL, NULL, "conversion webhook for %s, Kind=%s failed: %s", from, kind,
               why);
}

/* restoreObjectMeta: conv's metadata becomes orig's, with conv's labels
 * and annotations. */
static void restore_meta(const json_t *orig, json_t *conv) {
  json_t *cmd = json_object_get(conv, "metadata");
  json_t *md = json_deep_copy(json_object_get(orig, "metadata"));
  if (!md) md = json_object();
  static const char *const keep[] = {"labels", "annotations"};
  for (int i = 0; i < 2; i++) {
    json_t *v = json_object_get(cmd, keep[i]);
    if (v)
      json_object_set(md, keep[i], v);
    else
      json_object_del(md, keep[i]);
  }
  json_object_set_new(conv, "metadata", md);
}

/* Converts the objects of objs (in place) to apiVersion to, each now at
 * from: 0, or -1 with the 500 in out. */
static int convert(kin_sim *sim, const kin__sim_resource *r, json_t *objs, const char *from,
                   const char *to, kin__sim_result *out) {
  const char *kind = r->kind;
  json_t *send = json_array();
  size_t i;
  json_t *o;
  json_array_foreach(objs, i, o) {
    const char *av = kin__sim_jstr(o, "apiVersion", NULL);
    if (!av || strcmp(av, to)) json_array_append(send, o);
  }
  if (!json_array_size(send)) {
    json_decref(send);
    return 0;
  }
  kin__sim_hook h;
  int found = kin__sim_conversion_hook(sim, r->crd_name, &h);
  if (found != 1) {
    json_decref(send);
    if (found < 0) kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    return found < 0 ? -1 : 0;
  }
  char uid[37];
  kin__sim_uuid(uid);
  json_t *review = json_pack("{s:s, s:s, s:{s:s, s:s, s:O}}", "kind", "ConversionReview",
                             "apiVersion", "apiextensions.k8s.io/v1", "request", "uid", uid,
                             "desiredAPIVersion", to, "objects", send);
  char *body = review ? json_dumps(review, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(review);
  char *ans = NULL, err[2048] = "";
  size_t anslen = 0;
  int rc = body ? kin__sim_hook_call(sim, &h, body, &ans, &anslen, err, sizeof(err)) : -1;
  free(body);
  kin__sim_hook_release(sim, &h);
  json_error_t jerr;
  json_t *resp = rc ? NULL : json_loadb(ans ? ans : "", anslen, 0, &jerr);
  free(ans);
  json_t *res = json_object_get(resp, "response");
  json_t *conv = json_object_get(res, "convertedObjects");
  const char *st = kin__sim_jstr(json_object_get(res, "result"), "status", NULL);
  const char *why = NULL;
  char buf[2100];
  static const char call_prefix[] = "failed to call webhook: ";
  if (rc && !strncmp(err, call_prefix, sizeof(call_prefix) - 1))
    why = err + sizeof(call_prefix) - 1; /* the client's error as it is */
  else if (rc)
    why = err[0] ? err : "out of memory";
  else if (!json_is_object(res))
    why = "no response provided";
  else if (!kin__sim_jstr(res, "uid", NULL) || strcmp(kin__sim_jstr(res, "uid", NULL), uid))
    snprintf(buf, sizeof(buf), "expected response.uid=\"%s\", got \"%s\"", uid,
             kin__sim_jstr(res, "uid", NULL) ? kin__sim_jstr(res, "uid", NULL) : ""),
        why = buf;
  else if (!st || strcmp(st, "Success")) {
    const char *m = kin__sim_jstr(json_object_get(res, "result"), "message", NULL);
    if (m && *m)
      why = m;
    else
      snprintf(buf, sizeof(buf), "response.result.status was '%s', not 'Success'", st ? st : ""),
          why = buf;
  }
  if (why) {
    conv_error(out, from, kind, why);
    json_decref(resp);
    json_decref(send);
    return -1;
  }
  if (json_array_size(conv) != json_array_size(send)) {
    char msg[2400];
    snprintf(msg, sizeof(msg), "conversion webhook for %s, Kind=%s returned %zu objects, expected %zu",
             from, kind, json_array_size(conv), json_array_size(send));
    kin__sim_err(out, 500, NULL, NULL, "%s", msg);
    json_decref(resp);
    json_decref(send);
    return -1;
  }
  size_t k = 0;
  json_array_foreach(objs, i, o) {
    const char *av = kin__sim_jstr(o, "apiVersion", NULL);
    if (av && !strcmp(av, to)) continue;
    json_t *c = json_deep_copy(json_array_get(conv, k++));
    const char *cav = kin__sim_jstr(c, "apiVersion", NULL);
    const char *ck = kin__sim_jstr(c, "kind", NULL);
    if (!json_is_object(c) || !cav || strcmp(cav, to) || !ck || strcmp(ck, kind)) {
      snprintf(buf, sizeof(buf),
               "returned invalid converted object at index %zu: invalid groupVersion or kind "
               "(expected %s, Kind=%s, received %s, Kind=%s)",
               k - 1, to, kind, cav ? cav : "", ck ? ck : "");
      char msg[2400];
      snprintf(msg, sizeof(msg), "conversion webhook for %s, Kind=%s %s", from, kind, buf);
      kin__sim_err(out, 500, NULL, NULL, "%s", msg);
      json_decref(c);
      json_decref(resp);
      json_decref(send);
      return -1;
    }
    restore_meta(o, c);
    json_array_set_new(objs, i, c);
  }
  json_decref(resp);
  json_decref(send);
  return 0;
}

int kin__sim_convert_out(kin_sim *sim, const kin__sim_resource *r, json_t *objs,
                         kin__sim_result *out) {
  char to[320];
  gv_of(r, to, sizeof(to));
  const char *from = r->storage->storage_version;
  /* the read paths show r's apiVersion on stored objects: they are at
   * the storage version */
  size_t i;
  json_t *o;
  json_array_foreach(objs, i, o) {
    json_object_set_new(o, "apiVersion", json_string(from));
  }
  return convert(sim, r, objs, from, to, out);
}

int kin__sim_convert_in(kin_sim *sim, const kin__sim_resource *r, json_t **obj,
                        kin__sim_result *out) {
  char from[320];
  gv_of(r, from, sizeof(from));
  json_object_set_new(*obj, "apiVersion", json_string(from));
  json_object_set_new(*obj, "kind", json_string(r->kind));
  json_t *objs = json_pack("[O]", *obj);
  if (!objs) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    return -1;
  }
  int rc = convert(sim, r, objs, from, r->storage->storage_version, out);
  if (!rc) {
    json_decref(*obj);
    *obj = json_incref(json_array_get(objs, 0));
  }
  json_decref(objs);
  return rc;
}

int kin__sim_convert_watch_lines(kin_sim *sim, const kin__sim_resource *r, kin__buf *buf) {
  json_t *events = json_array(), *objs = json_array();
  char *p = buf->p, *end = buf->p + buf->len;
  while (p && p < end) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    json_error_t jerr;
    json_t *ev = json_loadb(p, n, 0, &jerr);
    p += n + 1;
    if (!ev) continue;
    json_array_append_new(events, ev);
    const char *type = kin__sim_jstr(ev, "type", NULL);
    if (type && strcmp(type, "BOOKMARK") && strcmp(type, "ERROR"))
      json_array_append(objs, json_object_get(ev, "object"));
  }
  kin__sim_result out = {0, NULL};
  int failed = kin__sim_convert_out(sim, r, objs, &out) != 0;
  kin__buf nb = {0};
  size_t i, k = 0;
  json_t *ev;
  if (failed) {
    char *s = json_dumps(out.body, JSON_COMPACT);
    kin__buf_printf(&nb, "{\"type\":\"ERROR\",\"object\":%s}\n", s ? s : "{}");
    free(s);
  } else {
    json_array_foreach(events, i, ev) {
      const char *type = kin__sim_jstr(ev, "type", NULL);
      if (type && strcmp(type, "BOOKMARK") && strcmp(type, "ERROR"))
        json_object_set(ev, "object", json_array_get(objs, k++));
      char *s = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);
      if (s) kin__buf_printf(&nb, "%s\n", s);
      free(s);
    }
  }
  json_decref(out.body);
  json_decref(events);
  json_decref(objs);
  if (nb.oom) {
    kin__buf_free(&nb);
    return 0;
  }
  kin__buf_free(buf);
  *buf = nb;
  return failed;
}
