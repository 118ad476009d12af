/* http_util.c -- buffers, responses and query access for the handlers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "kin.h"

int kin__sim_buf_add(kin__sim_buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 4096;
    while (nc < b->len + n + 1) nc *= 2;
    char *p = realloc(b->p, nc);
    if (!p) return KIN_ENOMEM;
    b->p = p;
    b->cap = nc;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
  return 0;
}

int kin__sim_buf_printf(kin__sim_buf *b, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  if (n < 0) return KIN_EINVAL;
  if ((size_t)n < sizeof(tmp)) return kin__sim_buf_add(b, tmp, (size_t)n);
  char *big = malloc((size_t)n + 1);
  if (!big) return KIN_ENOMEM;
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  int rc = kin__sim_buf_add(b, big, (size_t)n);
  free(big);
  return rc;
}

const char *kin__sim_query(kin__sim_req *req, const char *name) {
  return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

enum MHD_Result kin__sim_respond_buf(kin__sim_req *req, int code, kin__sim_buf *buf,
                                     const char *content_type) {
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(buf->len, buf->p ? buf->p : (char *)"", buf->p ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  buf->p = NULL;
  buf->len = buf->cap = 0;
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", content_type);
  MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
  enum MHD_Result ret = MHD_queue_response(req->conn, (unsigned)code, resp);
  MHD_destroy_response(resp);
  return ret;
}

enum MHD_Result kin__sim_respond_json(kin__sim_req *req, int code, json_t *body) {
  kin__sim_buf b = {0};
  char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  if (s) {
    b.p = s;
    b.len = strlen(s);
    b.cap = b.len + 1;
  } else {
    code = 500;
    kin__sim_buf_printf(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                            "\"status\":\"Failure\",\"message\":\"out of memory\",\"code\":500}");
  }
  kin__sim_buf_add(&b, "\n", 1);
  return kin__sim_respond_buf(req, code, &b, "application/json");
}

enum MHD_Result kin__sim_respond_result(kin__sim_req *req, kin__sim_result *r) {
  json_t *body = r->body;
  r->body = NULL;
  return kin__sim_respond_json(req, r->code ? r->code : 500, body);
}

void kin__sim_api_version(const kin__sim_resource *r, char *buf, size_t cap) {
  if (*r->group)
    snprintf(buf, cap, "%s/%s", r->group, r->version);
  else
    snprintf(buf, cap, "%s", r->version);
}

int kin__sim_append_obj(kin__sim_buf *b, const kin__sim_resource *r, const kin__sim_obj *o) {
  char av[320];
  kin__sim_api_version(r, av, sizeof(av));
  if (!strcmp(av, r->storage->storage_version)) return kin__sim_buf_add(b, o->raw, o->rawlen);
  json_t *copy = json_copy(o->obj);
  if (!copy) return KIN_ENOMEM;
  json_object_set_new(copy, "apiVersion", json_string(av));
  char *s = json_dumps(copy, JSON_COMPACT);
  json_decref(copy);
  if (!s) return KIN_ENOMEM;
  int rc = kin__sim_buf_add(b, s, strlen(s));
  free(s);
  return rc;
}
