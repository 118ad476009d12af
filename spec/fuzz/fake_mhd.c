/* fake_mhd.c -- the few libmicrohttpd calls kinformer.sim makes, without
 * sockets or threads, for spec/fuzz/fuzz_sim_request.c: the harness builds
 * a connection (query arguments, headers), calls the sim's access handler
 * (kin__sim_on_request) as MHD would, and reads back the queued response;
 * a streamed response (a watch) is read through its callback. Linked in
 * place of libmicrohttpd. */
#include "fake_mhd.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static struct MHD_Daemon {
  int dummy;
} the_daemon;

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
                                    void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls,
                                    ...) {
  return &the_daemon;
}

void MHD_stop_daemon(struct MHD_Daemon *daemon) {}

MHD_socket MHD_quiesce_daemon(struct MHD_Daemon *daemon) { return MHD_INVALID_SOCKET; }

const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon,
                                                enum MHD_DaemonInfoType info_type, ...) {
  return NULL;
}

/* No TLS session, no socket: the sim sees a plain-HTTP client that has
 * gone (a watch ends once it has nothing more to send). */
const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *c,
                                                        enum MHD_ConnectionInfoType info_type,
                                                        ...) {
  return NULL;
}

static const fake_kv *kvs(struct MHD_Connection *c, enum MHD_ValueKind kind, size_t *n) {
  if (kind == MHD_GET_ARGUMENT_KIND) {
    *n = c->nargs;
    return c->args;
  }
  if (kind == MHD_HEADER_KIND) {
    *n = c->nheaders;
    return c->headers;
  }
  *n = 0;
  return NULL;
}

const char *MHD_lookup_connection_value(struct MHD_Connection *c, enum MHD_ValueKind kind,
                                        const char *key) {
  size_t n;
  const fake_kv *kv = kvs(c, kind, &n);
  for (size_t i = 0; i < n; i++)
    if (kind == MHD_HEADER_KIND ? !strcasecmp(kv[i].key, key) : !strcmp(kv[i].key, key))
      return kv[i].value;
  return NULL;
}

int MHD_get_connection_values(struct MHD_Connection *c, enum MHD_ValueKind kind,
                              MHD_KeyValueIterator iterator, void *iterator_cls) {
  if (!c) return -1;
  size_t n;
  const fake_kv *kv = kvs(c, kind, &n);
  int count = 0;
  for (size_t i = 0; i < n; i++) {
    count++;
    if (iterator && iterator(iterator_cls, kind, kv[i].key, kv[i].value) != MHD_YES) break;
  }
  return count;
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
                                                     enum MHD_ResponseMemoryMode mode) {
  struct MHD_Response *r = calloc(1, sizeof *r);
  if (!r) {
    if (mode == MHD_RESPMEM_MUST_FREE) free(buffer);
    return NULL;
  }
  r->refs = 1;
  r->size = size;
  if (mode == MHD_RESPMEM_MUST_COPY) {
    r->body = malloc(size ? size : 1);
    if (!r->body) {
      free(r);
      return NULL;
    }
    memcpy(r->body, buffer, size);
    r->owned = 1;
  } else {
    r->body = buffer;
    r->owned = mode == MHD_RESPMEM_MUST_FREE;
  }
  return r;
}

struct MHD_Response *MHD_create_response_from_callback(uint64_t size, size_t block_size,
                                                       MHD_ContentReaderCallback crc,
                                                       void *crc_cls,
                                                       MHD_ContentReaderFreeCallback crfc) {
  struct MHD_Response *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->refs = 1;
  r->crc = crc;
  r->crc_cls = crc_cls;
  r->crfc = crfc;
  return r;
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *r, const char *header,
                                        const char *content) {
  return header && content && *header ? MHD_YES : MHD_NO;
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *c, unsigned int status_code,
                                   struct MHD_Response *r) {
  if (!c || !r || c->resp) return MHD_NO;
  r->refs++;
  c->resp = r;
  c->status = status_code;
  return MHD_YES;
}

void MHD_destroy_response(struct MHD_Response *r) {
  if (!r || --r->refs > 0) return;
  if (r->crfc) r->crfc(r->crc_cls);
  if (r->owned) free(r->body);
  free(r);
}
