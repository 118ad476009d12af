/* fake_mhd.h -- the connection and response of spec/fuzz/fake_mhd.c (a
 * stand-in for libmicrohttpd in the sim's fuzz harness). */
#ifndef KIN_FUZZ_FAKE_MHD_H
#define KIN_FUZZ_FAKE_MHD_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  char *key, *value;
} fake_kv;

struct MHD_Response {
  int refs;
  char *body; /* a buffer response */
  size_t size;
  int owned;
  MHD_ContentReaderCallback crc; /* a streamed response */
  void *crc_cls;
  MHD_ContentReaderFreeCallback crfc;
};

struct MHD_Connection {
  fake_kv args[32], headers[16];
  size_t nargs, nheaders;
  struct MHD_Response *resp; /* queued by MHD_queue_response */
  unsigned status;
};

#endif
