/* http_proto_pre.c -- protobuf answers from pre-encoded objects
 * (kinformer-sim --pre-encode, kin_sim_config.pre_encode): a LIST's items
 * and watch events copied from the bytes each object got at its commit
 * (kin__sim_obj.pb) instead of transcoding the JSON answer per request.
 * What goes out is byte for byte what http_proto.c's transcoder writes;
 * only the work per request differs. Callers hold the store lock where an
 * object is read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "kin.h"
#include "proto_int.h"

#define PB_TYPE "application/vnd.kubernetes.protobuf"

int kin__sim_proto_list_item(kin__buf *items, const kin__sim_resource *r, const kin__sim_obj *o,
                             int as_stored) {
  if (as_stored && o->pb)
    return kin__sim_pb_put_bytes(items, 2, o->pb + o->pb_msg_off, o->pb_msg_len);
  /* Not kept, or kept at another version: encoded now, as the transcoder
   * would (the item's JSON at r's version, then its message). */
  kin__buf j = {0};
  int rc = kin__sim_append_obj(&j, r, o);
  json_error_t jerr;
  json_t *v = rc ? NULL : json_loadb(j.p ? j.p : "", j.len, JSON_ALLOW_NUL, &jerr);
  kin__buf_free(&j);
  char av[320], err[256];
  kin__sim_api_version(r, av, sizeof(av));
  int msg = kin__pb_root_msg(av, r->kind);
  kin__buf m = {0};
  if (!v || msg < 0)
    rc = rc ? rc : KIN_EINVAL;
  else
    rc = kin__sim_pb_encode(msg, v, &m, err, sizeof(err));
  json_decref(v);
  if (!rc) rc = kin__sim_pb_put_bytes(items, 2, m.p ? m.p : "", m.len);
  kin__buf_free(&m);
  return rc;
}

enum MHD_Result kin__sim_proto_respond_list(kin__sim_req *req, kin__buf *head, kin__buf *items) {
  json_error_t jerr;
  json_t *list = json_loadb(head->p ? head->p : "", head->len, 0, &jerr);
  const char *av = kin__sim_jstr(list, "apiVersion", NULL);
  const char *kind = kin__sim_jstr(list, "kind", NULL);
  int msg = av && kind ? kin__pb_root_msg(av, kind) : -1;
  kin__buf raw = {0}, pb = {0};
  char err[256];
  /* The list message without items (field 2, absent when empty), then the
   * items' fields: the order gogo-protobuf writes. */
  int rc = msg < 0 ? KIN_EINVAL : kin__sim_pb_encode(msg, list, &raw, err, sizeof(err));
  if (!rc && items->len) rc = kin__buf_add(&raw, items->p, items->len);
  if (!rc) rc = kin__sim_pb_wrap_raw(av, kind, raw.p, raw.len, &pb);
  json_decref(list);
  kin__buf_free(&raw);
  kin__buf_free(items);
  kin__buf_free(head);
  if (rc) {
    kin__buf_free(&pb);
    kin__sim_result out = {0, NULL};
    req->proto = 0;
    kin__sim_err(&out, 500, "InternalError", NULL, "encoding the list failed: %s",
                 kin_strerror(rc));
    return kin__sim_respond_result(req, &out);
  }
  return kin__sim_send_buf(req, 200, &pb, PB_TYPE);
}

/* Bytes of the varint of v. */
static size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

int kin__sim_proto_watch_event(kin__buf *buf, const char *type, const kin__sim_obj *o) {
  /* metav1.WatchEvent {type = 1, object = 2: RawExtension {raw = 1}}, the
   * raw bytes being the object's whole body, envelope included; written in
   * place, lengths first. */
  size_t tlen = strlen(type);
  size_t ext = 1 + varint_size(o->pblen) + o->pblen;
  size_t ev = 1 + varint_size(tlen) + tlen + 1 + varint_size(ext) + ext;
  unsigned char len[4] = {(unsigned char)(ev >> 24), (unsigned char)(ev >> 16),
                          (unsigned char)(ev >> 8), (unsigned char)ev};
  int rc = kin__buf_add(buf, (const char *)len, 4);
  if (!rc) rc = kin__sim_pb_put_bytes(buf, 1, type, tlen);
  if (!rc) rc = kin__sim_pb_put_tag(buf, 2, 2);
  if (!rc) rc = kin__sim_pb_put_varint(buf, ext);
  if (!rc) rc = kin__sim_pb_put_bytes(buf, 1, o->pb, o->pblen);
  return rc;
}
