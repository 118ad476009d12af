/* kin_test_pb.h -- protobuf helpers of the C tests that build wire bytes
 * (kin_test_util.c). */
#ifndef KIN_TEST_PB_H
#define KIN_TEST_PB_H

#include <stddef.h>

#include "buf.h"

/* Appends a protobuf length-delimited field (its tag, varint length and
 * the n bytes at p) to b. */
void kin_test_pb_field(kin__buf *b, int num, const void *p, size_t n);

#endif
