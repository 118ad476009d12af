/* fuzz_proto.c -- libFuzzer harness for the sim's protobuf transcoder
 * (csrc/sim/proto/proto_decode.c, proto_encode.c, proto_envelope.c). The input
 * is <selector><bytes>: an even selector reads the bytes as an enveloped
 * body (`k8s\0` + runtime.Unknown), an odd one as the bare message number
 * selector/2 of the schema. Whatever decodes must encode again (or be
 * refused with an error), and decoding that encoding must give the same
 * JSON: the JSON form is a fixed point of the round trip. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "proto_int.h"

static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 256 * 1024) return 0;
  char err[512];
  int enveloped = !(data[0] & 1);
  int msg = (data[0] >> 1) % kin__pb_nmsgs;
  json_t *v;
  kin__sim_pb_type tm;
  if (enveloped)
    v = kin__sim_pb_unwrap(data + 1, size - 1, -1, &tm, err, sizeof(err));
  else
    v = kin__sim_pb_decode(msg, data + 1, size - 1, err, sizeof(err));
  if (!v) {
    sink += strlen(err);
    return 0;
  }
  kin__buf b = {0};
  int rc = enveloped ? kin__sim_pb_wrap(v, NULL, NULL, &b, err, sizeof(err))
                     : kin__sim_pb_encode(msg, v, &b, err, sizeof(err));
  if (rc == 0) {
    json_t *again = enveloped ? kin__sim_pb_unwrap((const uint8_t *)b.p, b.len, -1, &tm, err,
                                                   sizeof(err))
                              : kin__sim_pb_decode(msg, (const uint8_t *)b.p, b.len, err,
                                                   sizeof(err));
    if (!again || !json_equal(v, again)) abort();
    json_decref(again);
  } else if (rc != KIN_EINVAL) {
    abort();
  }
  kin__buf_free(&b);
  json_decref(v);
  return 0;
}
