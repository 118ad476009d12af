/* le_record.c -- the LeaderElectionRecord of le_record.h: copies,
 * comparison, MicroTime, the Lease spec's JSON both ways. */
#include "le_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json_span.h"
#include "json_str.h"
#include "kin.h"

/* Frees r's strings and zeroes it. */
void kin__le_record_free(kin__le_record *r) {
  free(r->holder);
  free(r->acquire);
  free(r->renew);
  memset(r, 0, sizeof(*r));
}

/* Deep-copies src into *dst (freed first). Returns 0 or KIN_ENOMEM (dst
 * then empty). */
int kin__le_record_copy(kin__le_record *dst, const kin__le_record *src) {
  kin__le_record r = {strdup(src->holder ? src->holder : ""), src->duration,
                 strdup(src->acquire ? src->acquire : ""), strdup(src->renew ? src->renew : ""),
                 src->transitions};
  kin__le_record_free(dst);
  if (!r.holder || !r.acquire || !r.renew) {
    kin__le_record_free(&r);
    return KIN_ENOMEM;
  }
  *dst = r;
  return 0;
}

/* 1 when a and b are the same record (client-go compares the records'
 * JSON; the times are compared here at the precision written). */
int kin__le_record_equal(const kin__le_record *a, const kin__le_record *b) {
  return a->duration == b->duration && a->transitions == b->transitions &&
         !strcmp(a->holder ? a->holder : "", b->holder ? b->holder : "") &&
         !strcmp(a->acquire ? a->acquire : "", b->acquire ? b->acquire : "") &&
         !strcmp(a->renew ? a->renew : "", b->renew ? b->renew : "");
}

/* ---- times ----------------------------------------------------------------- */

/* Writes the wall-clock time as a MicroTime ("2006-01-02T15:04:05.000000Z")
 * into buf (at least 32 bytes). Informational only: expiry never reads it. */
void kin__le_micro_time_now(char *buf, size_t n) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char base[24];
  strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, n, "%.19s.%06dZ", base, (int)(ts.tv_nsec / 1000) % 1000000);
}

/* ---- the Lease as JSON ----------------------------------------------------- */

/* Appends s as a JSON string (quoted, escaped) to b. */
void kin__le_add_json_string(kin__buf *b, const char *s) {
  kin__buf_add(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') kin__buf_printf(b, "\\%c", *p);
    else if (*p < 0x20) kin__buf_printf(b, "\\u%04x", *p);
    else kin__buf_add(b, (const char *)p, 1);
  }
  kin__buf_add(b, "\"", 1);
}

/* Appends r as a LeaseSpec (client-go's LeaderElectionRecordToLeaseSpec). */
void kin__le_add_spec(kin__buf *b, const kin__le_record *r) {
  kin__buf_puts(b, "{\"holderIdentity\":");
  kin__le_add_json_string(b, r->holder);
  kin__buf_printf(b, ",\"leaseDurationSeconds\":%lld,\"acquireTime\":", r->duration);
  kin__le_add_json_string(b, r->acquire);
  kin__buf_puts(b, ",\"renewTime\":");
  kin__le_add_json_string(b, r->renew);
  kin__buf_printf(b, ",\"leaseTransitions\":%lld}", r->transitions);
}

/* A string member's unescaped copy, "" when absent or null; NULL on OOM. */
static char *member_string(const char *js, const jsmntok_t *t, int n, int obj, const char *key) {
  int v = kin__span_get(js, t, n, obj, key);
  if (v < 0 || t[v].type != JSMN_STRING) return strdup("");
  char *out = NULL;
  size_t len;
  if (kin__json_unescape_dup(js + t[v].start, (size_t)(t[v].end - t[v].start), &out, &len) < 0)
    return strdup("");
  return out;
}

static long long member_int(const char *js, const jsmntok_t *t, int n, int obj, const char *key) {
  int v = kin__span_get(js, t, n, obj, key);
  if (v < 0 || t[v].type != JSMN_PRIMITIVE) return 0;
  return strtoll(js + t[v].start, NULL, 10);
}

/* Reads the record out of a Lease (client-go's LeaseSpecToLeaderElectionRecord:
 * absent fields are zero). Returns 0, KIN_EINVAL, KIN_ENOMEM. */
int kin__le_lease_record(const kin_obj *lease, kin__le_record *out) {
  memset(out, 0, sizeof(*out));
  size_t len;
  const char *js = kin_obj_json(lease, &len);
  kin_span sp = kin_obj_spec_span(lease);
  if (sp.len == 0) return kin__le_record_copy(out, &(kin__le_record){0});
  jsmntok_t *t;
  int n = kin__span_tokenize(js + sp.off, sp.len, &t);
  if (n < 0) return n;
  const char *s = js + sp.off;
  out->holder = member_string(s, t, n, 0, "holderIdentity");
  out->acquire = member_string(s, t, n, 0, "acquireTime");
  out->renew = member_string(s, t, n, 0, "renewTime");
  out->duration = member_int(s, t, n, 0, "leaseDurationSeconds");
  out->transitions = member_int(s, t, n, 0, "leaseTransitions");
  free(t);
  if (!out->holder || !out->acquire || !out->renew) {
    kin__le_record_free(out);
    return KIN_ENOMEM;
  }
  return 0;
}
