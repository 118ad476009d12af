/* http_list.c -- LIST (k8s.io/apiserver handlers/get.go ListResource and
 * the storage's GetList): selectors, resourceVersion semantics
 * (""/"0": latest, exact with resourceVersionMatch=Exact: the state at that
 * version, rebuilt from the history), limit/continue (ignored for "0"
 * with watch_cache_lists, as the watch cache) with the token shape
 * of storage.EncodeContinue ({"v","rv","start"}, base64url). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "kin.h"

static const char expired_msg[] =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list.";

/* Returns a new token (caller frees) for the list continuing after key. */
static char *encode_continue(long long rv, const char *key) {
  /* start is key + "\0" as etcd's: the first key after key. */
  json_t *t = json_pack("{s:s, s:I, s:s%}", "v", "meta.k8s.io/v1", "rv", (json_int_t)rv,
                        "start", key, strlen(key) + 1);
  char *s = t ? json_dumps(t, JSON_COMPACT) : NULL;
  json_decref(t);
  if (!s) return NULL;
  char *tok = kin__sim_b64url_encode(s, strlen(s));
  free(s);
  return tok;
}

/* Decodes tok into *rv and start (malloc'd, caller frees); -1 with a 400. */
static int decode_continue(const char *tok, long long *rv, char **start, kin__sim_result *out) {
  size_t n;
  char *raw = kin__sim_b64url_decode(tok, &n);
  json_error_t jerr;
  json_t *t = raw ? json_loadb(raw, n, JSON_ALLOW_NUL, &jerr) : NULL;
  free(raw);
  const char *v = kin__sim_jstr(t, "v", NULL);
  const char *st = kin__sim_jstr(t, "start", NULL);
  json_t *jrv = json_object_get(t, "rv");
  if (!t || !v || strcmp(v, "meta.k8s.io/v1") || !st || !json_is_integer(jrv) ||
      json_integer_value(jrv) == 0) {
    kin__sim_err_bad_request(out, "invalid continue token: continue key is not valid: %s",
                             !t ? "invalid character looking for beginning of value"
                                : "incorrect encoded start resourceVersion (version "
                                  "meta.k8s.io/v1)");
    json_decref(t);
    return -1;
  }
  *rv = json_integer_value(jrv);
  *start = strdup(st); /* stops at the trailing NUL: the last key served */
  json_decref(t);
  return 0;
}

static void list_options_invalid(kin__sim_result *out, const char *field, const char *reason,
                                 const char *detail) {
  kin__sim_err_invalid(out, "meta.k8s.io", "ListOptions", "", field, reason, detail);
}

/* Index of the first object with key > start (start NULL: 0). */
static size_t first_after(kin__sim_obj **arr, size_t n, const char *start) {
  if (!start) return 0;
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (strcmp(arr[mid]->key, start) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

enum MHD_Result kin__sim_handle_list(kin__sim_req *req, kin__sim_resource *r,
                                     kin__sim_request_info *ri) {
  kin__sim_result out = {0, NULL};
  kin__sim_store *s = &req->sim->store;
  const char *rvq = kin__sim_query(req, "resourceVersion");
  const char *match = kin__sim_query(req, "resourceVersionMatch");
  const char *cont = kin__sim_query(req, "continue");
  const char *limq = kin__sim_query(req, "limit");
  if (rvq && !*rvq) rvq = NULL;
  if (match && !*match) match = NULL;
  if (cont && !*cont) cont = NULL;
  long long limit = 0;
  if (limq && *limq) {
    char *lend;
    errno = 0;
    limit = strtoll(limq, &lend, 10);
    if (*lend || errno) { /* the query decoder's strconv.ParseInt error */
      kin__sim_err(&out, 400, "BadRequest", NULL, "strconv.ParseInt: parsing \"%s\": %s", limq,
                   errno ? "value out of range" : "invalid syntax");
      return kin__sim_respond_result(req, &out);
    }
  }
  if (limit < 0) limit = 0;
  unsigned long long want_rv = 0;
  if (rvq) {
    char *end;
    errno = 0;
    want_rv = strtoull(rvq, &end, 10);
    if (*end || errno) {
      kin__sim_err(&out, 400, "BadRequest", NULL,
                   "invalid resource version: resourceVersion: Invalid value: \"%s\": "
                   "strconv.ParseUint: parsing \"%s\": invalid syntax", rvq, rvq);
      return kin__sim_respond_result(req, &out);
    }
  }
  if (match && !rvq) {
    list_options_invalid(&out, "resourceVersionMatch", "FieldValueForbidden",
                         "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is "
                         "provided");
    return kin__sim_respond_result(req, &out);
  }
  if (match && strcmp(match, "Exact") && strcmp(match, "NotOlderThan")) {
    char d[512];
    snprintf(d, sizeof(d), "Unsupported value: \"%s\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
             match);
    list_options_invalid(&out, "resourceVersionMatch", "FieldValueNotSupported", d);
    return kin__sim_respond_result(req, &out);
  }
  int exact = match && !strcmp(match, "Exact");
  if (exact && want_rv == 0) {
    list_options_invalid(&out, "resourceVersionMatch", "FieldValueForbidden",
                         "Forbidden: resourceVersionMatch \"exact\" is forbidden for "
                         "resourceVersion \"0\"");
    return kin__sim_respond_result(req, &out);
  }
  if (cont && rvq && want_rv != 0) {
    kin__sim_err_bad_request(&out, "specifying resource version is not allowed when using continue");
    return kin__sim_respond_result(req, &out);
  }
  /* With watch_cache_lists, resourceVersion "0" is served whole, as
   * kube-apiserver's watch cache does (it ignores limit there; checked
   * against v1.36.3): one page, no continue token. */
  if (req->sim->watch_cache_lists && rvq && want_rv == 0 && !cont) limit = 0;
  long long cont_rv = 0;
  char *start = NULL;
  if (cont && decode_continue(cont, &cont_rv, &start, &out))
    return kin__sim_respond_result(req, &out);
  kin__sim_selector sel;
  if (kin__sim_selector_parse(req, r, &sel, &out)) {
    free(start);
    return kin__sim_respond_result(req, &out);
  }
  const char *ns = r->namespaced && ri->ns[0] ? ri->ns : NULL;
  /* --pre-encode: the items' kept protobuf messages, copied as they are
   * (not for conversions, which only custom resources have). */
  int pre = req->proto && s->pre_encode && !r->crd_name && !r->convert_out;
  kin__buf b = {0}, pbitems = {0};
  pthread_mutex_lock(&s->mu);
  uint64_t snap_rv = s->rv;
  if (cont_rv > 0) {
    snap_rv = (uint64_t)cont_rv;
  } else if (rvq && want_rv > s->rv) {
    json_t *d = json_pack("{s:[{s:s, s:s}], s:i}", "causes", "reason", "ResourceVersionTooLarge",
                          "message", "Too large resource version", "retryAfterSeconds", 1);
    kin__sim_err(&out, 504, "Timeout", d, "Timeout: Too large resource version: %llu, current: %llu",
                 want_rv, (unsigned long long)s->rv);
  } else if (exact) {
    snap_rv = want_rv;
  }
  size_t n = 0;
  int too_old = 0;
  kin__sim_obj **arr = NULL;
  if (!out.body) arr = kin__sim_store_snapshot(s, r->storage, snap_rv, &n, &too_old);
  if (too_old && cont) {
    kin__sim_err_expired(&out, expired_msg);
    char *tok = encode_continue(-1, start);
    if (tok) json_object_set_new(json_object_get(out.body, "metadata"), "continue", json_string(tok));
    free(tok);
  } else if (too_old) {
    kin__sim_err_expired(&out, "The resourceVersion for the provided list is too old.");
  }
  if (!out.body) {
    char av[320];
    kin__sim_api_version(r, av, sizeof(av));
    kin__buf items = {0};
    char builtin_prefix[400];
    size_t builtin_prefix_len = 0;
    if (!r->crd_name)
      builtin_prefix_len = (size_t)snprintf(builtin_prefix, sizeof(builtin_prefix),
                                            "{\"kind\":\"%s\",\"apiVersion\":\"%s\",", r->kind, av);
    size_t i = first_after(arr, n, start), count = 0;
    const char *last = NULL;
    int more = 0;
    size_t remaining = 0;
    for (; i < n; i++) {
      kin__sim_obj *o = arr[i];
      if (ns) {
        size_t nl = strlen(ns);
        if (strncmp(o->key, ns, nl) || o->key[nl] != '/') continue;
      }
      if (!kin__sim_selector_matches_obj(&sel, o)) continue;
      if (limit && count == (size_t)limit) {
        more = 1;
        remaining++;
        if (!kin__sim_selector_empty(&sel)) break;
        continue;
      }
      int as_stored = builtin_prefix_len && o->rawlen > builtin_prefix_len &&
                      !memcmp(o->raw, builtin_prefix, builtin_prefix_len);
      if (pre) {
        if (kin__sim_proto_list_item(&pbitems, r, o, as_stored)) pbitems.oom = 1;
      } else if (r->convert_out) {
        if (count) kin__buf_add(&items, ",", 1);
        kin__sim_append_converted(&items, r, o, 0);
      } else if (as_stored) {
        /* Built-in list items carry no kind/apiVersion, as the server's. */
        if (count) kin__buf_add(&items, ",", 1);
        kin__buf_add(&items, "{", 1);
        kin__buf_add(&items, o->raw + builtin_prefix_len, o->rawlen - builtin_prefix_len);
      } else {
        if (count) kin__buf_add(&items, ",", 1);
        kin__sim_append_obj(&items, r, o);
      }
      last = o->key;
      count++;
    }
    kin__buf_printf(&b, "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{"
                        "\"resourceVersion\":\"%llu\"", r->list_kind, av,
                        (unsigned long long)snap_rv);
    if (more && last) {
      /* A token from an inconsistent continuation keeps serving "latest". */
      char *tok = encode_continue(cont_rv < 0 ? -1 : (long long)snap_rv, last);
      if (tok) kin__buf_printf(&b, ",\"continue\":\"%s\"", tok);
      free(tok);
      if (kin__sim_selector_empty(&sel))
        kin__buf_printf(&b, ",\"remainingItemCount\":%zu", remaining);
    }
    kin__sim_selector_shard_info(&sel, &b); /* SetShardInfoOnList */
    if (pre) {
      /* the list without items; they follow as fields (http_proto_pre.c) */
      kin__buf_add(&b, "}}", 2);
      free(items.p);
      if (pbitems.oom) kin__sim_err(&out, 500, "InternalError", NULL, "out of memory");
    } else {
      kin__buf_add(&b, "},\"items\":[", 11);
      /* The header goes in front of the items in their own buffer: a list
       * of a million objects is not copied a second time. */
      size_t ilen = items.len;
      if (!b.oom && !kin__buf_add(&items, b.p, b.len) && !kin__buf_add(&items, "]}\n", 3)) {
        memmove(items.p + b.len, items.p, ilen);
        memcpy(items.p, b.p, b.len);
        free(b.p);
        b = items;
      } else {
        free(items.p);
        kin__sim_err(&out, 500, "InternalError", NULL, "out of memory");
      }
    }
  }
  pthread_mutex_unlock(&s->mu);
  free(arr);
  free(start);
  kin__sim_selector_free(&sel);
  if (out.body) {
    free(b.p);
    free(pbitems.p);
    return kin__sim_respond_result(req, &out);
  }
  if (pre) return kin__sim_proto_respond_list(req, &b, &pbitems);
  if (kin__sim_conversion_applies(req->sim, r)) {
    /* the items through the CRD's conversion webhook, in one review */
    json_error_t jerr;
    json_t *list = json_loadb(b.p, b.len, 0, &jerr);
    free(b.p);
    b = (kin__buf){0};
    if (!list) return MHD_NO;
    if (kin__sim_convert_out(req->sim, r, json_object_get(list, "items"), &out)) {
      json_decref(list);
      return kin__sim_respond_result(req, &out);
    }
    char *txt = json_dumps(list, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(list);
    if (!txt || kin__buf_add(&b, txt, strlen(txt))) {
      free(txt);
      return MHD_NO;
    }
    free(txt);
  }
  if (kin__sim_table_accept(MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Accept"))) {
    /* Table output: the List parsed back (kubectl's lists are small). */
    json_error_t jerr;
    json_t *list = json_loadb(b.p, b.len, 0, &jerr);
    free(b.p);
    if (!list) return MHD_NO;
    enum MHD_Result ret;
    kin__sim_table_respond(req, r, list, 1, &ret);
    json_decref(list);
    return ret;
  }
  return kin__sim_respond_buf(req, 200, &b, "application/json");
}
