/* pb_list.c -- the protobuf bodies a reflector reads: a list's items one at
 * a time with its ListMeta, and the frames of a watch stream as JSON watch
 * lines (pb_json.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "pb_json.h"
#include "pb_schema.h"

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
      if (kin__pb_read_len(&p, end, &s, &len)) return KIN_EINVAL;
      char **dst = frv >= 0 && num == lm->fields[frv].num ? &meta->resource_version : &meta->cont;
      free(*dst);
      if (!(*dst = dup_n(s, len))) return KIN_ENOMEM;
    } else if (wt == 2 && num == 5) {
      /* shardInfo (KEP-5866, v1.36; the schema may predate it): present */
      const uint8_t *s;
      size_t len;
      if (kin__pb_read_len(&p, end, &s, &len)) return KIN_EINVAL;
      meta->shard_info = 1;
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

/* One field of list message m (the ListMeta or an item, by num; s, len its
 * bytes): the ListMeta into *meta, an item's JSON (in *item, reused) to fn
 * with *index, which advances. 0, fn's error, KIN_EINVAL or KIN_ENOMEM
 * with err. */
static int list_field(const kin__pb_msg *m, int fmeta, int fitems, uint32_t num, const uint8_t *s,
                      size_t len, kin__pb_list_meta *meta, kin__buf *item, size_t *index,
                      kin__pb_item_fn fn, void *ud, char *err, size_t cap) {
  if (num == m->fields[fmeta].num) {
    int rc = list_meta(&kin__pb_msgs[m->fields[fmeta].msg], s, len, meta);
    if (rc == KIN_EINVAL) snprintf(err, cap, "unexpected EOF in the ListMeta of %s", m->name);
    return rc;
  }
  item->len = 0;
  char e[256];
  int rc = kin__pb_json(m->fields[fitems].msg, s, len, item, e, sizeof e);
  if (rc) {
    snprintf(err, cap, "item %zu of %s: %s", *index, meta->kind, e);
    return rc;
  }
  return fn(ud, item->p, item->len, (*index)++);
}

/* The list message of an envelope of api_version and kind, and its
 * metadata and items fields; -1 with err when it is not a list the schema
 * has. */
static int list_msg(const char *api_version, const char *kind, int *fmeta, int *fitems, char *err,
                    size_t cap) {
  int msg = kin__pb_root_msg(api_version, kind);
  size_t kl = strlen(kind);
  if (msg < 0 || kl < 5 || strcmp(kind + kl - 4, "List")) {
    snprintf(err, cap, "a protobuf %s %s is not a list of a built-in kind", api_version,
             kind[0] ? kind : "(no kind)");
    return -1;
  }
  const kin__pb_msg *m = &kin__pb_msgs[msg];
  *fmeta = field_named(m, "metadata");
  *fitems = field_named(m, "items");
  if (*fmeta < 0 || *fitems < 0 || m->fields[*fitems].kind != KIN__PB_MESSAGE) {
    snprintf(err, cap, "%s is not a list message", m->name);
    return -1;
  }
  return msg;
}

/* Gives meta's absent strings their "" (a list without ListMeta). */
static int meta_defaults(kin__pb_list_meta *meta) {
  if (!meta->resource_version) meta->resource_version = dup_n((const uint8_t *)"", 0);
  if (!meta->cont) meta->cont = dup_n((const uint8_t *)"", 0);
  return meta->resource_version && meta->cont ? 0 : KIN_ENOMEM;
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
  int fmeta, fitems, msg = list_msg(u.api_version, u.kind, &fmeta, &fitems, err, cap);
  if (msg < 0) return KIN_EINVAL;
  const kin__pb_msg *m = &kin__pb_msgs[msg];
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
      if (kin__pb_read_len(&q, end, &s, &len)) {
        rc = KIN_EINVAL;
        snprintf(err, cap, "unexpected EOF in %s", m->name);
        break;
      }
      rc = list_field(m, fmeta, fitems, num, s, len, meta, &item, &index, fn, ud, err, cap);
    } else if (kin__pb_skip(&q, end, wt)) {
      rc = KIN_EINVAL;
      snprintf(err, cap, "unexpected EOF in %s", m->name);
    }
  }
  kin__buf_free(&item);
  if (!rc) rc = meta_defaults(meta);
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
    if (kin__pb_read_len(&p, end, &s, &len)) goto eof;
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
        if (kin__pb_read_len(&r, rend, &rs, &rl)) goto eof;
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

/* The streaming reader: a LIST body read as it arrives (below). */

void kin__pb_list_stream_init(kin__pb_list_stream *s, kin__pb_item_fn fn, void *ud) {
  memset(s, 0, sizeof(*s));
  s->meta.remaining = -1;
  s->fn = fn;
  s->ud = ud;
}

void kin__pb_list_stream_free(kin__pb_list_stream *s) {
  kin__buf_free(&s->held);
  kin__buf_free(&s->item);
  free(s->meta.resource_version);
  free(s->meta.cont);
  s->meta.resource_version = s->meta.cont = NULL;
}

/* A wire read that failed at p (end the bytes held): 1 when more bytes may
 * complete it (the value runs to the end), 0 when it is malformed. A
 * varint is at most 10 bytes. */
static int may_complete(const uint8_t *p, const uint8_t *end, int complete) {
  return !complete && end - p < 10;
}

/* Reads the envelope's head when it is all here: the magic, TypeMeta, and
 * the key and length of raw. 1 read (phase 1 next), 0 wait for more, -1
 * error (s->err), 2 not in gogo's order (the body is held whole). */
static int stream_head(kin__pb_list_stream *s, int complete) {
  const uint8_t *b = (const uint8_t *)s->held.p + s->off, *end = (const uint8_t *)s->held.p + s->held.len;
  const uint8_t *q = b + 4;
  uint64_t key, len;
  if (end - b < 5) return complete ? 2 : 0;
  if (kin__pb_varint(&q, end, &key)) return may_complete(q, end, complete) ? 0 : 2;
  if (key != (1u << 3 | 2)) return 2;
  if (kin__pb_varint(&q, end, &len)) return may_complete(q, end, complete) ? 0 : 2;
  if (len > (uint64_t)(end - q)) return complete ? 2 : 0;
  q += len;
  kin__pb_unknown u;
  if (kin__pb_envelope(b, (size_t)(q - b), &u, s->err, sizeof(s->err))) return -1;
  if (q == end) return complete ? 2 : 0;
  if (kin__pb_varint(&q, end, &key)) return may_complete(q, end, complete) ? 0 : 2;
  if (key != (2u << 3 | 2)) return 2;
  if (kin__pb_varint(&q, end, &len)) return may_complete(q, end, complete) ? 0 : 2;
  snprintf(s->meta.kind, sizeof(s->meta.kind), "%s", u.kind);
  snprintf(s->meta.api_version, sizeof(s->meta.api_version), "%s", u.api_version);
  s->msg = list_msg(u.api_version, u.kind, &s->fmeta, &s->fitems, s->err, sizeof(s->err));
  if (s->msg < 0) return -1;
  s->raw_left = len;
  s->off = (size_t)(q - (const uint8_t *)s->held.p);
  return 1;
}

/* Reads what is here of the list message's fields. 0 (wait or done with
 * phase 1), or an error (s->err). */
static int stream_fields(kin__pb_list_stream *s, int complete) {
  const kin__pb_msg *m = &kin__pb_msgs[s->msg];
  while (s->raw_left) {
    const uint8_t *b = (const uint8_t *)s->held.p + s->off, *q = b;
    size_t here = s->held.len - s->off;
    const uint8_t *end = b + (here < s->raw_left ? here : s->raw_left);
    int all = here >= s->raw_left; /* the whole rest of the message is here */
    uint64_t key, len;
    if (b == end) return 0;
    if (kin__pb_varint(&q, end, &key)) {
      if (!all && may_complete(q, end, complete)) return 0;
      goto eof;
    }
    uint32_t num = (uint32_t)(key >> 3);
    int wt = (int)(key & 7);
    if (wt == 2 && (num == m->fields[s->fitems].num || num == m->fields[s->fmeta].num)) {
      if (kin__pb_varint(&q, end, &len)) {
        if (!all && may_complete(q, end, complete)) return 0;
        goto eof;
      }
      if (len > (uint64_t)(end - q)) {
        if (!all && !complete) return 0;
        goto eof;
      }
      int rc = list_field(m, s->fmeta, s->fitems, num, q, (size_t)len, &s->meta, &s->item,
                          &s->index, s->fn, s->ud, s->err, sizeof(s->err));
      if (rc) return rc;
      q += len;
    } else if (kin__pb_skip(&q, end, wt)) {
      if (!all && !complete) return 0;
      goto eof;
    }
    size_t used = (size_t)(q - b);
    s->off += used;
    s->raw_left -= used;
  }
  return 0;
eof:
  snprintf(s->err, sizeof(s->err), "unexpected EOF in %s", m->name);
  return KIN_EINVAL;
}

/* Reads the envelope's fields after raw (contentEncoding must be empty, as
 * kin__pb_envelope has it). 0 or an error (s->err). */
static int stream_tail(kin__pb_list_stream *s, int complete) {
  while (s->off < s->held.len) {
    const uint8_t *b = (const uint8_t *)s->held.p + s->off, *q = b,
                  *end = (const uint8_t *)s->held.p + s->held.len;
    uint64_t key, len;
    if (kin__pb_varint(&q, end, &key)) goto wait;
    if ((key & 7) != 2) {
      if (kin__pb_skip(&q, end, (int)(key & 7))) goto wait;
    } else {
      if (kin__pb_varint(&q, end, &len) || len > (uint64_t)(end - q)) goto wait;
      if ((key >> 3) == 3 && len) {
        snprintf(s->err, sizeof(s->err), "unsupported content encoding \"%.*s\"",
                 (int)(len < 64 ? len : 64), (const char *)q);
        return KIN_EINVAL;
      }
      q += len;
    }
    s->off += (size_t)(q - b);
  }
  return 0;
wait:
  if (!complete) return 0;
  snprintf(s->err, sizeof(s->err), "unexpected EOF");
  return KIN_EINVAL;
}

/* Reads what the bytes held allow; complete: no more will come. */
static int stream_step(kin__pb_list_stream *s, int complete) {
  int rc = 0;
  if (s->phase == 0) {
    int h = stream_head(s, complete);
    if (h < 0) return KIN_EINVAL;
    if (h == 2) s->phase = 3;
    if (h == 1) s->phase = 1;
  }
  if (s->phase == 1 && !(rc = stream_fields(s, complete)) && !s->raw_left) s->phase = 2;
  if (!rc && s->phase == 2) rc = stream_tail(s, complete);
  /* what was read goes; a long page does not stay in memory */
  if (!rc && s->phase != 3 && s->phase != 0 && s->off > 65536 && s->off * 2 > s->held.len) {
    memmove(s->held.p, s->held.p + s->off, s->held.len - s->off);
    s->held.len -= s->off;
    s->off = 0;
  }
  return rc;
}

int kin__pb_list_stream_feed(kin__pb_list_stream *s, const void *p, size_t n) {
  if (kin__buf_add(&s->held, p, n)) {
    snprintf(s->err, sizeof(s->err), "out of memory");
    return KIN_ENOMEM;
  }
  return s->phase == 3 ? 0 : stream_step(s, 0);
}

int kin__pb_list_stream_finish(kin__pb_list_stream *s) {
  int rc = s->phase == 3 ? 0 : stream_step(s, 1);
  if (rc) return rc;
  if (s->phase == 0 || s->phase == 3) {
    /* not in gogo's order, or too short for a head: read whole, with the
     * whole reader's words for what is wrong */
    kin__pb_list_meta meta;
    rc = kin__pb_list((const uint8_t *)s->held.p + s->off, s->held.len - s->off, s->fn, s->ud,
                      &meta, s->err, sizeof(s->err));
    free(s->meta.resource_version);
    free(s->meta.cont);
    s->meta = meta;
    s->off = s->held.len;
    return rc;
  }
  if (s->phase == 1) {
    snprintf(s->err, sizeof(s->err), "unexpected EOF in %s", kin__pb_msgs[s->msg].name);
    return KIN_EINVAL;
  }
  return meta_defaults(&s->meta);
}
