/* http_util.c -- query access, sending a body as it is, the pieces of a
 * list or watch body, and request bodies, for the handlers. Answers that
 * negotiate their encoding are http_respond.c's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_int.h"
#include "kin.h"

const char *kin__sim_query(kin__sim_req *req, const char *name) {
  return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

int kin__sim_query_bool(const char *v) {
  if (!v) return 0;
  return !(!strcmp(v, "0") || !strcasecmp(v, "f") || !strcasecmp(v, "false") ||
           !strcasecmp(v, "n") || !strcasecmp(v, "no"));
}

enum MHD_Result kin__sim_queue_response(kin__sim_req *req, unsigned code,
                                        struct MHD_Response *resp) {
  if (req->warning[0]) {
    /* RFC 7234 299 warning: client-go hands it to its warning handler,
     * kubectl prints it as "Warning: ..." */
    char w[400];
    snprintf(w, sizeof(w), "299 - \"%s\"", req->warning);
    MHD_add_response_header(resp, "Warning", w);
  }
  size_t i;
  json_t *v;
  json_array_foreach(req->warnings, i, v) {
    /* warning.AddWarning's header: 299, the agent "-", the text quoted */
    char w[1100];
    kin__buf q = {0};
    for (const char *c = json_string_value(v); c && *c && q.len < 1000; c++) {
      if (*c == '"' || *c == '\\') kin__buf_add(&q, "\\", 1);
      kin__buf_add(&q, c, 1);
    }
    snprintf(w, sizeof(w), "299 - \"%.*s\"", (int)q.len, q.p ? q.p : "");
    kin__buf_free(&q);
    MHD_add_response_header(resp, "Warning", w);
  }
  enum MHD_Result ret = MHD_queue_response(req->conn, code, resp);
  if (ret == MHD_YES) req->code = (int)code;
  return ret;
}

enum MHD_Result kin__sim_send_buf(kin__sim_req *req, int code, kin__buf *buf,
                                  const char *content_type) {
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(buf->len, buf->p ? buf->p : (char *)"", buf->p ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  buf->p = NULL;
  buf->len = buf->cap = 0;
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", content_type);
  MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
  enum MHD_Result ret = kin__sim_queue_response(req, (unsigned)code, resp);
  MHD_destroy_response(resp);
  return ret;
}

void kin__sim_api_version(const kin__sim_resource *r, char *buf, size_t cap) {
  if (*r->group)
    snprintf(buf, cap, "%s/%s", r->group, r->version);
  else
    snprintf(buf, cap, "%s", r->version);
}

int kin__sim_append_converted(kin__buf *b, const kin__sim_resource *r, const kin__sim_obj *o,
                              int with_type) {
  json_t *stored = kin__sim_obj_json(o);
  json_t *v = stored ? r->convert_out(stored) : NULL;
  json_decref(stored);
  if (!v) return KIN_ENOMEM;
  if (!with_type) {
    json_object_del(v, "kind");
    json_object_del(v, "apiVersion");
  }
  char *s = json_dumps(v, JSON_COMPACT);
  json_decref(v);
  if (!s) return KIN_ENOMEM;
  int rc = kin__buf_add(b, s, strlen(s));
  free(s);
  return rc;
}

int kin__sim_append_obj(kin__buf *b, const kin__sim_resource *r, const kin__sim_obj *o) {
  if (r->convert_out) return kin__sim_append_converted(b, r, o, 1);
  char av[320];
  kin__sim_api_version(r, av, sizeof(av));
  if (!strcmp(av, r->storage->storage_version)) return kin__buf_add(b, o->raw, o->rawlen);
  json_t *copy = kin__sim_obj_json(o);
  if (!copy) return KIN_ENOMEM;
  json_object_set_new(copy, "apiVersion", json_string(av));
  char *s = json_dumps(copy, JSON_COMPACT);
  json_decref(copy);
  if (!s) return KIN_ENOMEM;
  int rc = kin__buf_add(b, s, strlen(s));
  free(s);
  return rc;
}

json_t *kin__sim_post_json(kin__sim_req *req) {
  if (strcmp(req->method, "POST")) return NULL;
  json_error_t jerr;
  return json_loadb(req->body.p ? req->body.p : "", req->body.len, 0, &jerr);
}
