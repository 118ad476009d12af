/* http_server.c -- the libmicrohttpd side: one thread per connection (a
 * watch may block its thread), request bodies up to 3 MiB, authentication
 * (http_auth.c), authorization (csrc/sim/auth/ under RBAC), routing to
 * discovery or the resource handlers, and the
 * request log of every answer (request_log.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"

/* Per-request state, freed when MHD reports completion. */
void kin__sim_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                           enum MHD_RequestTerminationCode toe) {
  kin__sim_req *req = *con_cls;
  if (!req) return;
  free(req->body.p);
  json_decref(req->warnings);
  free(req);
  *con_cls = NULL;
}

/* Answers req: authentication, impersonation, the admin endpoints, injected faults,
 * authorization, then discovery, OpenAPI or the resource handlers; MHD_YES, or MHD_NO to close
 * the connection. */
static enum MHD_Result route(kin__sim_req *req, const char *url) {
  kin__sim_result out = {0, NULL};
  if (!kin__sim_authenticate(req, url)) {
    kin__sim_err(&out, 401, "Unauthorized", NULL, "Unauthorized");
    return kin__sim_respond_result(req, &out);
  }
  enum MHD_Result ret;
  if (kin__sim_impersonate(req, &ret)) return ret;
  if (kin__sim_handle_faults(req, url, &ret)) return ret;
  if (kin__sim_handle_burst(req, url, &ret)) return ret;
  if (kin__sim_apply_request_faults(req, url, &ret)) return ret;
  if (kin__sim_authz_request(req, url, &ret)) return ret;
  kin__sim_write_log_add(req, url);
  if (kin__sim_handle_discovery(req, url, &ret)) return ret;
  if (kin__sim_handle_openapi(req, url, &ret)) return ret;
  kin__sim_request_info ri;
  int rc = kin__sim_request_info_parse(url, &ri);
  if (rc == 0) return kin__sim_handle_resource(req, &ri);
  kin__buf b = {0};
  kin__buf_add(&b, "404 page not found\n", 19);
  return kin__sim_respond_buf(req, 404, &b, "text/plain; charset=utf-8");
}

/* The request hook, the answer, then the request log (which reads the
 * status the answer queued): the entry is in the log before the client
 * can read the answer. */
static enum MHD_Result dispatch(kin__sim_req *req, const char *url) {
  kin__sim_call_request_hook(req, url);
  enum MHD_Result ret = route(req, url);
  kin__sim_request_log_add(req, url);
  return ret;
}

enum MHD_Result kin__sim_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **con_cls) {
  kin__sim_req *req = *con_cls;
  if (!req) {
    req = calloc(1, sizeof(*req));
    if (!req) return MHD_NO;
    req->sim = cls;
    req->conn = conn;
    req->method = method;
    *con_cls = req;
    return MHD_YES;
  }
  if (*upload_data_size) {
    /* Past the limit the rest is read and dropped, then answered 413. */
    if (!req->too_large && req->body.len + *upload_data_size <= KIN__SIM_MAX_BODY) {
      if (kin__buf_add(&req->body, upload_data, *upload_data_size)) return MHD_NO;
    } else {
      req->too_large = 1;
    }
    *upload_data_size = 0;
    return MHD_YES;
  }
  return dispatch(req, url);
}
