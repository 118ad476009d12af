/* pb_list.c -- the protobuf bodies a reflector reads: a list's items one at
 * a time with its ListMeta, and the frames of a watch stream as JSON watch
 * lines (pb_json.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "pb_json.h"
#include "pb_schema.h"

/* Reads the length-delimited value at *p. */
static int read_len(const uint8_t **p, const uint8_t *end, const uint8_t **s, size_t *n) {
  uint64_t len;
  if (kin__pb_varint(p, end, &len) || len > (uint64_t)(end - *p)) return -1;
  *s = *p;
  *n = (size_t)len;
  *p += len;
  return 0;
}

/* The index of m's field with JSON name json, or -1. */
static int field_named(const kin__pb_msg *m, const char *json) {
  for (int i = 0; i < m->nfields; i++)
    if (!strcmp(m->fields[i].json, json)) return i;
  return -1;
}

static char *dup_n(const uint8_t *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = 0;
  }
  return d;
}

/* Reads ListMeta's resourceVersion, continue and remainingItemCount. */
static int list_meta(const kin__pb_msg *lm, const uint8_t *p, size_t n, kin__pb_list_meta *meta) {
  int frv = field_named(lm, "resourceVersion"), fco = field_named(lm, "continue"),
      frem = field_named(lm, "remainingItemCount");
  const uint8_t *end = p + n;
  while (p < end) {
    uint64_t key;
    if (kin__pb_varint(&p, end, &key)) return KIN_EINVAL;
    uint32_t num = (uint32_t)(key >> 3);
    int wt = (int)(key & 7);
    if (wt == 2 && ((frv >= 0 && num == lm->fields[frv].num) || (fco >= 0 && num == lm->fields[fco].num))) {
      const uint8_t *s;
      size_t len;
      if (read_len(&p, end, &s, &len)) return KIN_EINVAL;
      char **dst = frv >= 0 && num == lm->fields[frv].num ? &meta->resource_version : &meta->cont;
      free(*dst);
      if (!(*dst = dup_n(s, len))) return KIN_ENOMEM;
    } else if (wt == 0 && frem >= 0 && num == lm->fields[frem].num) {
      uint64_t v;
      if (kin__pb_varint(&p, end, &v)) return KIN_EINVAL;
      meta->remaining = (long long)v;
    } else if (kin__pb_skip(&p, end, wt)) {
      return KIN_EINVAL;
    }
  }
  return 0;
}

int kin__pb_list(const uint8_t *p, size_t n, kin__pb_item_fn fn, void *ud, kin__pb_list_meta *meta,
                 char *err, size_t cap) {
  memset(meta, 0, sizeof(*meta));
  meta->remaining = -1;
  kin__pb_unknown u;
  int rc = kin__pb_envelope(p, n, &u, err, cap);
  if (rc) return rc;
  snprintf(meta->kind, sizeof(meta->kind), "%s", u.kind);
  snprintf(meta->api_version, sizeof(meta->api_version), "%s", u.api_version);
  int msg = kin__pb_root_msg(u.api_version, u.kind);
  size_t kl = strlen(u.kind);
  if (msg < 0 || kl < 5 || strcmp(u.kind + kl - 4, "List")) {
    snprintf(err, cap, "a protobuf %s %s is not a list of a built-in kind", u.api_version,
             u.kind[0] ? u.kind : "(no kind)");
    return KIN_EINVAL;
  }
  const kin__pb_msg *m = &kin__pb_msgs[msg];
  int fmeta = field_named(m, "metadata"), fitems = field_named(m, "items");
  if (fmeta < 0 || fitems < 0 || m->fields[fitems].kind != KIN__PB_MESSAGE) {
    snprintf(err, cap, "%s is not a list message", m->name);
    return KIN_EINVAL;
  }
  const uint8_t *q = u.raw ? u.raw : (const uint8_t *)"", *end = q + u.raw_len;
  kin__buf item = {0};
  size_t index = 0;
  rc = 0;
  while (!rc && q < end) {
    uint64_t key;
    const uint8_t *s;
    size_t len;
    if (kin__pb_varint(&q, end, &key)) {
      rc = KIN_EINVAL;
      snprintf(err, cap, "unexpected EOF in %s", m->name);
      break;
    }
    uint32_t num = (uint32_t)(key >> 3);
    int wt = (int)(key & 7);
    if (wt == 2 && (num == m->fields[fitems].num || num == m->fields[fmeta].num)) {
      if (read_len(&q, end, &s, &len)) {
        rc = KIN_EINVAL;
        snprintf(err, cap, "unexpected EOF in %s", m->name);
        break;
      }
      if (num == m->fields[fmeta].num) {
        rc = list_meta(&kin__pb_msgs[m->fields[fmeta].msg], s, len, meta);
        if (rc == KIN_EINVAL) snprintf(err, cap, "unexpected EOF in the ListMeta of %s", m->name);
        continue;
      }
      item.len = 0;
      char e[256];
      rc = kin__pb_json(m->fields[fitems].msg, s, len, &item, e, sizeof e);
      if (rc) {
        snprintf(err, cap, "item %zu of %s: %s", index, u.kind, e);
        break;
      }
      rc = fn(ud, item.p, item.len, index++);
    } else if (kin__pb_skip(&q, end, wt)) {
      rc = KIN_EINVAL;
      snprintf(err, cap, "unexpected EOF in %s", m->name);
    }
  }
  kin__buf_free(&item);
  if (!rc && (!meta->resource_version || !meta->cont)) {
    if (!meta->resource_version) meta->resource_version = dup_n((const uint8_t *)"", 0);
    if (!meta->cont) meta->cont = dup_n((const uint8_t *)"", 0);
    if (!meta->resource_version || !meta->cont) rc = KIN_ENOMEM;
  }
  return rc;
}

int kin__pb_watch_event_json(const uint8_t *p, size_t n, kin__buf *out, char *err, size_t cap) {
  const uint8_t *end = p + n, *type = NULL, *obj = NULL;
  size_t type_len = 0, obj_len = 0;
  err[0] = 0;
  /* metav1.WatchEvent: type = 1, object = 2 (a RawExtension: raw = 1) */
  while (p < end) {
    uint64_t key;
    const uint8_t *s;
    size_t len;
    if (kin__pb_varint(&p, end, &key)) goto eof;
    if ((key & 7) != 2) {
      if (kin__pb_skip(&p, end, (int)(key & 7))) goto eof;
      continue;
    }
    if (read_len(&p, end, &s, &len)) goto eof;
    if ((key >> 3) == 1) {
      type = s;
      type_len = len;
    } else if ((key >> 3) == 2) {
      const uint8_t *r = s, *rend = s + len;
      while (r < rend) {
        uint64_t rk;
        const uint8_t *rs;
        size_t rl;
        if (kin__pb_varint(&r, rend, &rk)) goto eof;
        if ((rk & 7) != 2) {
          if (kin__pb_skip(&r, rend, (int)(rk & 7))) goto eof;
          continue;
        }
        if (read_len(&r, rend, &rs, &rl)) goto eof;
        if ((rk >> 3) == 1) {
          obj = rs;
          obj_len = rl;
        }
      }
    }
  }
  if (!type || !type_len) {
    snprintf(err, cap, "a watch event frame without a type");
    return KIN_EINVAL;
  }
  for (size_t i = 0; i < type_len; i++)
    if (type[i] < 'A' || type[i] > 'Z') {
      snprintf(err, cap, "a watch event frame with a bad type");
      return KIN_EINVAL;
    }
  if (kin__buf_add(out, "{\"type\":\"", 9) || kin__buf_add(out, (const char *)type, type_len) ||
      kin__buf_add(out, "\",\"object\":", 11))
    return KIN_ENOMEM;
  if (!obj || !obj_len) {
    if (kin__buf_add(out, "null", 4)) return KIN_ENOMEM;
  } else if (kin__pb_is_enveloped(obj, obj_len)) {
    int rc = kin__pb_object_json(obj, obj_len, out, err, cap);
    if (rc) return rc;
  } else {
    /* a server may embed JSON (the object's own encoding): as it is */
    if (kin__buf_add(out, (const char *)obj, obj_len)) return KIN_ENOMEM;
  }
  return kin__buf_add(out, "}\n", 2) ? KIN_ENOMEM : 0;
eof:
  snprintf(err, cap, "unexpected EOF in a watch event frame");
  return KIN_EINVAL;
}
