/* le_record.h -- internal to leaderelection/: client-go's
 * LeaderElectionRecord (a Lease's spec) and its JSON, for
 * leader_election.c. Plain functions on the caller's data: no state, no
 * lock; each may be called from any thread. */
#ifndef KIN_LE_RECORD_H
#define KIN_LE_RECORD_H

#include <stddef.h>

#include "buf.h"
#include "kobj.h"

/* The Lease's spec as client-go's LeaderElectionRecord. Strings owned. */
typedef struct {
  char *holder;       /* "" when none */
  long long duration; /* leaseDurationSeconds */
  char *acquire, *renew;
  long long transitions;
} kin__le_record;

/* Frees r's strings and zeroes it. */
void kin__le_record_free(kin__le_record *r);

/* Deep-copies src into *dst (freed first). Returns 0 or KIN_ENOMEM (dst
 * then empty). */
int kin__le_record_copy(kin__le_record *dst, const kin__le_record *src);

/* 1 when a and b are the same record (client-go compares the records'
 * JSON; the times are compared here at the precision written). */
int kin__le_record_equal(const kin__le_record *a, const kin__le_record *b);

/* Writes the wall-clock time as a MicroTime ("2006-01-02T15:04:05.000000Z")
 * into buf (at least 32 bytes). Informational only: expiry never reads it. */
void kin__le_micro_time_now(char *buf, size_t n);

/* Appends s as a JSON string (quoted, escaped) to b (b->oom on failure). */
void kin__le_add_json_string(kin__buf *b, const char *s);

/* Appends r as a LeaseSpec (client-go's LeaderElectionRecordToLeaseSpec). */
void kin__le_add_spec(kin__buf *b, const kin__le_record *r);

/* Reads the record out of a Lease into *out (the caller frees it with
 * kin__le_record_free; client-go's LeaseSpecToLeaderElectionRecord: absent
 * fields are zero). Returns 0, KIN_EINVAL, KIN_ENOMEM (out then empty). */
int kin__le_lease_record(const kin_obj *lease, kin__le_record *out);

#endif
