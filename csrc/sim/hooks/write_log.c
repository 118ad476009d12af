/* write_log.c -- the sim's log of API writes, for replay tests (what an
 * operator under test wrote): every POST, PUT, PATCH and DELETE on an API
 * path that reaches the resource handlers (after authentication and
 * injected request faults) is kept as {"method", "uri" (path and decoded
 * query, as the request hook sees it), "userAgent", "body" (the raw
 * request body, "" when none)}. Off until kin_sim_write_log_start; the
 * array lives in kin__sim_store.write_log under the store lock. */
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "kin.h"

void kin_sim_write_log_start(kin_sim *sim) {
  pthread_mutex_lock(&sim->store.mu);
  if (!sim->store.write_log) sim->store.write_log = json_array();
  pthread_mutex_unlock(&sim->store.mu);
}

char *kin_sim_write_log_take(kin_sim *sim) {
  pthread_mutex_lock(&sim->store.mu);
  json_t *log = sim->store.write_log;
  if (log) sim->store.write_log = json_array();
  pthread_mutex_unlock(&sim->store.mu);
  if (!log) return NULL;
  char *s = json_dumps(log, JSON_COMPACT);
  json_decref(log);
  return s;
}

static enum MHD_Result add_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value) {
  kin__buf *b = cls;
  kin__buf_printf(b, "%c%s=%s", b->p && memchr(b->p, '?', b->len) ? '&' : '?', key,
                  value ? value : "");
  return MHD_YES;
}

/* Appends req to the log when the log is on and req is a write on an API
 * path; a failed allocation drops the entry (the log is best effort). */
void kin__sim_write_log_add(kin__sim_req *req, const char *url) {
  const char *m = req->method;
  if (strcmp(m, "POST") && strcmp(m, "PUT") && strcmp(m, "PATCH") && strcmp(m, "DELETE")) return;
  if (strncmp(url, "/api/", 5) && strncmp(url, "/apis/", 6)) return;
  pthread_mutex_lock(&req->sim->store.mu);
  int on = req->sim->store.write_log != NULL;
  pthread_mutex_unlock(&req->sim->store.mu);
  if (!on) return;
  kin__buf uri = {0};
  kin__buf_puts(&uri, url);
  MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, add_query_arg, &uri);
  const char *ua = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "User-Agent");
  json_t *e = uri.oom ? NULL
                      : json_pack("{s:s, s:s%, s:s, s:s%}", "method", m, "uri", uri.p, uri.len,
                                  "userAgent", ua ? ua : "", "body",
                                  req->body.p ? req->body.p : "", req->body.len);
  kin__buf_free(&uri);
  if (!e) return;
  pthread_mutex_lock(&req->sim->store.mu);
  if (req->sim->store.write_log) json_array_append(req->sim->store.write_log, e);
  pthread_mutex_unlock(&req->sim->store.mu);
  json_decref(e);
}
