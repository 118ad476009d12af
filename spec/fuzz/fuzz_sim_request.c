/* fuzz_sim_request.c -- libFuzzer harness for kinformer.sim's request
 * handling (csrc/sim: routing, authentication, discovery, the resource
 * handlers, list, watch, the store and patches), in process: the sim is
 * started on spec/fuzz/fake_mhd.c (no socket, no thread) and its access
 * handler is called as libmicrohttpd calls it. The input is one or more
 * requests separated by a line "%%":
 *
 *   METHOD /path?query
 *   Header: value          (any number)
 *                          (blank line)
 *   body
 *
 * A fresh sim serves each input, so an input replays alone. The admin
 * endpoints under /kinformer-sim/ (fault injection, bursts: latency and stalls
 * by design) are not fuzzed. A watch is read to its end with the store
 * marked stopping, so it sends what it has and ends. The request log is
 * on: what it returns for the input's requests must be a JSON array, one
 * entry per request served (whatever bytes the paths and headers hold). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_mhd.h"
#include "http_int.h"
#include "sim.h"
#include "store_int.h"

enum MHD_Result kin__sim_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **con_cls);
void kin__sim_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                           enum MHD_RequestTerminationCode toe);

#define MAX_REQUESTS 16

static volatile size_t sink;

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Decodes %XX (and '+' in a query) in place, as MHD does. */
static void unescape(char *s, int plus) {
  char *w = s;
  for (char *r = s; *r; r++) {
    if (*r == '%' && hexval(r[1]) >= 0 && hexval(r[2]) >= 0) {
      *w++ = (char)(hexval(r[1]) * 16 + hexval(r[2]));
      r += 2;
    } else {
      *w++ = plus && *r == '+' ? ' ' : *r;
    }
  }
  *w = 0;
}

static void parse_query(struct MHD_Connection *c, char *q) {
  while (q && *q && c->nargs < sizeof c->args / sizeof c->args[0]) {
    char *amp = strchr(q, '&');
    if (amp) *amp = 0;
    if (*q) {
      char *eq = strchr(q, '=');
      if (eq) *eq = 0;
      unescape(q, 1);
      if (eq) unescape(eq + 1, 1);
      c->args[c->nargs].key = q;
      c->args[c->nargs].value = eq ? eq + 1 : NULL;
      c->nargs++;
    }
    q = amp ? amp + 1 : NULL;
  }
}

/* Serves one request (text: NUL-terminated, modified in place; body: its
 * bytes, may hold NULs). */
static void serve(kin_sim *sim, char *head, const char *body, size_t body_len) {
  struct MHD_Connection c;
  memset(&c, 0, sizeof c);
  char *line_end = strchr(head, '\n');
  if (line_end) *line_end = 0;
  char *sp = strchr(head, ' ');
  if (!sp) return;
  *sp = 0;
  const char *method = head;
  char *url = sp + 1;
  /* MHD answers a malformed request line itself. */
  if (*url != '/' || !*method) return;
  if (!strncmp(url, "/kinformer-sim/", 15)) return;
  char *q = strchr(url, '?');
  if (q) *q++ = 0;
  parse_query(&c, q);
  unescape(url, 0);
  for (char *h = line_end ? line_end + 1 : NULL; h && *h;) {
    char *nl = strchr(h, '\n');
    if (nl) *nl = 0;
    char *colon = strchr(h, ':');
    if (colon && c.nheaders < sizeof c.headers / sizeof c.headers[0]) {
      *colon = 0;
      char *v = colon + 1;
      while (*v == ' ') v++;
      c.headers[c.nheaders].key = h;
      c.headers[c.nheaders].value = v;
      c.nheaders++;
    }
    h = nl ? nl + 1 : NULL;
  }
  void *con_cls = NULL;
  size_t n = 0;
  if (kin__sim_on_request(sim, &c, url, method, "HTTP/1.1", NULL, &n, &con_cls) != MHD_YES)
    goto done;
  if (body_len) {
    n = body_len;
    if (kin__sim_on_request(sim, &c, url, method, "HTTP/1.1", body, &n, &con_cls) != MHD_YES)
      goto done;
  }
  n = 0;
  kin__sim_on_request(sim, &c, url, method, "HTTP/1.1", NULL, &n, &con_cls);
  struct MHD_Response *r = c.resp;
  if (r && r->crc) {
    /* A watch: what it has now, then the end (the store is stopping). */
    pthread_mutex_lock(&sim->store.mu);
    sim->store.stopping = 1;
    pthread_mutex_unlock(&sim->store.mu);
    static char out[64 * 1024];
    uint64_t pos = 0;
    for (int i = 0; i < 1024; i++) {
      ssize_t got = r->crc(r->crc_cls, pos, out, sizeof out);
      if (got < 0) break;
      pos += (uint64_t)got;
    }
    sink += pos;
    pthread_mutex_lock(&sim->store.mu);
    sim->store.stopping = 0;
    pthread_mutex_unlock(&sim->store.mu);
  } else if (r && r->size) {
    sink += (unsigned char)r->body[r->size - 1];
  }
  sink += c.status;
  MHD_destroy_response(r);
done:
  kin__sim_on_completed(sim, &c, &con_cls, MHD_REQUEST_TERMINATED_COMPLETED_OK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 256 * 1024) return 0;
  char *buf = malloc(size + 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = 0;
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  kin_sim *sim = NULL;
  if (kin_sim_start(&cfg, &sim)) abort();
  kin_sim_request_log_start(sim);
  char *p = buf, *end = buf + size;
  for (int i = 0; i < MAX_REQUESTS && p < end; i++) {
    char *next = memmem(p, (size_t)(end - p), "\n%%\n", 4);
    char *stop = next ? next : end;
    *stop = 0;
    /* The head ends at the first blank line; the body is the rest. */
    char *blank = memmem(p, (size_t)(stop - p), "\n\n", 2);
    const char *body = blank ? blank + 2 : stop;
    if (blank) *blank = 0;
    size_t head_len = strlen(p);
    if (head_len == (size_t)(blank ? blank - p : stop - p)) serve(sim, p, body, (size_t)(stop - body));
    p = next ? next + 4 : end;
  }
  char *log = kin_sim_request_log_take(sim);
  json_error_t jerr;
  json_t *entries = log ? json_loads(log, 0, &jerr) : NULL;
  if (log && !json_is_array(entries)) abort(); /* NULL log: ENOMEM */
  json_decref(entries);
  free(log);
  kin_sim_free(sim);
  free(buf);
  return 0;
}
