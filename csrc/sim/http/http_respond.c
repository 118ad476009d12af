/* http_respond.c -- the handlers' answers: a body in the encoding the
 * request negotiated (JSON, or protobuf through http_proto.c when the
 * client asked for it and the body is JSON), a JSON value, a result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "kin.h"

enum MHD_Result kin__sim_respond_buf(kin__sim_req *req, int code, kin__buf *buf,
                                     const char *content_type) {
  if (req->proto && !strcmp(content_type, "application/json")) {
    req->proto = 0; /* once: its fallbacks answer in JSON */
    return kin__sim_proto_respond(req, code, buf);
  }
  return kin__sim_send_buf(req, code, buf, content_type);
}

enum MHD_Result kin__sim_respond_json(kin__sim_req *req, int code, json_t *body) {
  kin__buf b = {0};
  char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  if (s) {
    b.p = s;
    b.len = strlen(s);
    b.cap = b.len + 1;
  } else {
    code = 500;
    kin__buf_printf(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                            "\"status\":\"Failure\",\"message\":\"out of memory\",\"code\":500}");
  }
  kin__buf_add(&b, "\n", 1);
  return kin__sim_respond_buf(req, code, &b, "application/json");
}

enum MHD_Result kin__sim_respond_result(kin__sim_req *req, kin__sim_result *r) {
  json_t *body = r->body;
  r->body = NULL;
  return kin__sim_respond_json(req, r->code ? r->code : 500, body);
}
