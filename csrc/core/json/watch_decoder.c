/* watch_decoder.c -- framing of a watch body into events and decoding of
 * each event's envelope. See watch_decoder.h. */
#include "watch_decoder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "json_str.h"
#include "kin.h"
#include "log.h"

/* A compact event line always starts like this; seeing it right after a
 * newline while an event is still open means that event was cut off. */
static const char resync_pat[] = "{\"type\"";
#define RESYNC_LEN 7

struct kin_watch_decoder {
  kin_watch_event_cb on_event;
  kin_watch_error_cb on_error;
  void *ud;
  size_t max_event;

  /* Bytes of the current event from earlier feeds (malloc'd, owned). */
  char *buf;
  size_t len, cap;

  /* Scanner state, kept across feeds. */
  int in_event, in_str, esc, skipping;
  size_t depth;
  size_t ev_len;      /* bytes of the current event so far (also when skipping) */
  int match;          /* chars of resync_pat matched after a newline, -1: none */
  size_t nl_ev_len;   /* ev_len at that newline */
  uint64_t line, ev_line, events_seen, delivered;

  /* Garbage run outside events: first bytes kept for the report. */
  int in_garbage;
  uint64_t garbage_line;
  char garbage[KIN_WATCH_SNIPPET_MAX];
  size_t garbage_len;

  int canceled, hard_err;

  /* Where the current event / garbage run began: bytes into the stream. */
  uint64_t off, ev_off, garbage_off;
  /* The bad event's object, when it could be read that far (for reports,
   * never its bytes): kind, namespace/name, resourceVersion; "" unknown. */
  char id_kind[64], id_key[320], id_rv[32];
};

int kin_watch_decoder_new(kin_watch_event_cb on_event, kin_watch_error_cb on_error, void *ud,
                          kin_watch_decoder **out) {
  if (!on_event || !out) return KIN_EINVAL;
  kin_watch_decoder *d = calloc(1, sizeof(*d));
  if (!d) return KIN_ENOMEM;
  d->on_event = on_event;
  d->on_error = on_error;
  d->ud = ud;
  d->max_event = KIN_WATCH_DEFAULT_MAX_EVENT_SIZE;
  d->line = 1;
  d->match = -1;
  *out = d;
  return 0;
}

void kin_watch_decoder_free(kin_watch_decoder *d) {
  if (!d) return;
  free(d->buf);
  free(d);
}

void kin_watch_decoder_set_max_event_size(kin_watch_decoder *d, size_t max) {
  d->max_event = max ? max : KIN_WATCH_DEFAULT_MAX_EVENT_SIZE;
}

uint64_t kin_watch_decoder_events(const kin_watch_decoder *d) { return d->delivered; }

static int buf_add(kin_watch_decoder *d, const char *s, size_t n) {
  if (n == 0) return 0;
  if (d->len + n > d->cap) {
    size_t cap = d->cap ? d->cap : 4096;
    while (cap < d->len + n) cap *= 2;
    char *p = realloc(d->buf, cap);
    if (!p) return KIN_ENOMEM;
    d->buf = p;
    d->cap = cap;
  }
  memcpy(d->buf + d->len, s, n);
  d->len += n;
  return 0;
}

/* Large events leave a large buffer behind; give it back so an idle watch
 * does not pin the memory of its biggest event. */
static void buf_reset(kin_watch_decoder *d) {
  d->len = 0;
  if (d->cap > (1u << 20)) {
    free(d->buf);
    d->buf = NULL;
    d->cap = 0;
  }
}

static void report(kin_watch_decoder *d, kin_watch_error_kind kind, const char *what,
                   uint64_t event_no, uint64_t line, const char *type, const char *snip,
                   size_t snip_len) {
  if (snip_len > KIN_WATCH_SNIPPET_MAX) snip_len = KIN_WATCH_SNIPPET_MAX;
  if (!snip) snip = "", snip_len = 0;
  kin_watch_decode_error e = {kind, what, event_no, line, type, snip, snip_len,
                              kind == KIN_WATCH_ERR_GARBAGE ? d->garbage_off : d->ev_off,
                              d->id_kind, d->id_key, d->id_rv};
  if (d->on_error) {
    d->on_error(d->ud, &e);
    return;
  }
  char where[512];
  kin_watch_decode_error_where(&e, where, sizeof where);
  kin_log(KIN_LOG_WARN, "watch_decoder", "%s: %s", where, what);
}

void kin_watch_decode_error_where(const kin_watch_decode_error *e, char *buf, size_t n) {
  int w = snprintf(buf, n, "event %llu (line %llu, offset %llu%s%s", (unsigned long long)e->event_no,
                   (unsigned long long)e->line, (unsigned long long)e->offset,
                   e->type ? ", type " : "", e->type ? e->type : "");
  if (w < 0 || (size_t)w >= n) return;
  size_t o = (size_t)w;
  if (e->kind_name && *e->kind_name) o += (size_t)snprintf(buf + o, n - o, ", %s", e->kind_name);
  if (o < n && e->key && *e->key) o += (size_t)snprintf(buf + o, n - o, " %s", e->key);
  if (o < n && e->resource_version && *e->resource_version)
    o += (size_t)snprintf(buf + o, n - o, ", resourceVersion %s", e->resource_version);
  if (o < n) snprintf(buf + o, n - o, ")");
}

/* ---- light JSON scanning of one event ---------------------------------- */

static size_t skip_ws(const char *s, size_t n, size_t i) {
  while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) i++;
  return i;
}

/* s[i] is '"'; returns the index after the closing quote, or 0 when the
 * string is unterminated. Skipped, not checked: kin_obj_parse checks the
 * object's strings (json_str.h's rule) and the type is compared exactly. */
static size_t str_end(const char *s, size_t n, size_t i) {
  return kin__json_str_skip(s, n, i);
}

/* Returns the index after the value starting at s[i], or 0 on error. Lenient
 * inside containers: strict checking is kin_obj_parse's job. */
static size_t value_end(const char *s, size_t n, size_t i) {
  if (i >= n) return 0;
  if (s[i] == '"') return str_end(s, n, i);
  if (s[i] == '{' || s[i] == '[') {
    size_t depth = 0;
    for (; i < n; i++) {
      char c = s[i];
      if (c == '"') {
        size_t e = str_end(s, n, i);
        if (!e) return 0;
        i = e - 1;
      } else if (c == '{' || c == '[') {
        depth++;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
    }
    return 0;
  }
  size_t b = i;
  while (i < n && !strchr(",}] \t\r\n", s[i])) i++;
  return i > b ? i : 0;
}

/* Iterates the members of the object s[0..n): *pos starts at 0. Returns 1
 * with the raw key (quotes included) and value spans, 0 at the end, -1 on
 * a syntax error. */
static int obj_next(const char *s, size_t n, size_t *pos, size_t *ko, size_t *kl, size_t *vo,
                    size_t *vl) {
  size_t i = *pos;
  if (i == 0) {
    i = skip_ws(s, n, 0);
    if (i >= n || s[i] != '{') return -1;
    i = skip_ws(s, n, i + 1);
    if (i < n && s[i] == '}') { *pos = n; return 0; }
  } else {
    if (i >= n) return 0;
    i = skip_ws(s, n, i);
    if (i < n && s[i] == '}') { *pos = n; return 0; }
    if (i >= n || s[i] != ',') return -1;
    i = skip_ws(s, n, i + 1);
  }
  if (i >= n || s[i] != '"') return -1;
  size_t e = str_end(s, n, i);
  if (!e) return -1;
  *ko = i;
  *kl = e - i;
  i = skip_ws(s, n, e);
  if (i >= n || s[i] != ':') return -1;
  i = skip_ws(s, n, i + 1);
  e = value_end(s, n, i);
  if (!e) return -1;
  *vo = i;
  *vl = e - i;
  *pos = e;
  return 1;
}

/* Unescapes the JSON string s[0..n) (quotes included) with
 * kin__json_unescape (json_str.h) into a new NUL-terminated string in
 * *out, owned by the caller. Returns KIN_EINVAL on a bad string,
 * KIN_ENOMEM; *out is NULL on failure. */
static int str_dup(const char *s, size_t n, char **out) {
  *out = NULL;
  if (n < 2 || s[0] != '"' || s[n - 1] != '"') return KIN_EINVAL;
  return kin__json_unescape_dup(s + 1, n - 2, out, NULL);
}

/* 1 when the raw JSON string s[0..n) equals lit once unescaped. */
static int key_is(const char *s, size_t n, const char *lit) {
  size_t l = strlen(lit);
  if (!memchr(s, '\\', n)) return n == l + 2 && memcmp(s + 1, lit, l) == 0;
  char *u;
  if (str_dup(s, n, &u) < 0) return 0;
  int eq = strcmp(u, lit) == 0;
  free(u);
  return eq;
}

/* Finds member key of the object s[0..n); returns 1 with its value span, 0
 * when absent or on a syntax error. */
static int obj_get(const char *s, size_t n, const char *key, size_t *vo, size_t *vl) {
  size_t pos = 0, ko, kl;
  int r;
  while ((r = obj_next(s, n, &pos, &ko, &kl, vo, vl)) == 1)
    if (key_is(s + ko, kl, key)) return 1;
  return 0;
}

/* ---- decoding one complete event --------------------------------------- */

static const char *type_names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

/* Decodes and delivers the event e[0..n). Returns 0, KIN_ENOMEM or
 * KIN_ECANCELED; malformed events are reported and yield 0. */
static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* Copies the string value of member key of object s[0..n) into out (room
 * m; "" when absent, not a string, or longer). */
static void ident_str(const char *s, size_t len, const char *key, char *out, size_t m) {
  size_t vo, vl;
  char *v = NULL;
  out[0] = 0;
  if (!obj_get(s, len, key, &vo, &vl) || str_dup(s + vo, vl, &v) < 0) return;
  if (strlen(v) < m) strcpy(out, v);
  free(v);
}

/* Notes kind, namespace/name and resourceVersion of the event's object
 * s[0..n) (as far as they can be read) for a report. */
static void ident(kin_watch_decoder *d, const char *s, size_t len) {
  size_t vo, vl;
  char ns[64], name[254];
  ident_str(s, len, "kind", d->id_kind, sizeof d->id_kind);
  if (!obj_get(s, len, "metadata", &vo, &vl) || s[vo] != '{') return;
  ident_str(s + vo, vl, "namespace", ns, sizeof ns);
  ident_str(s + vo, vl, "name", name, sizeof name);
  ident_str(s + vo, vl, "resourceVersion", d->id_rv, sizeof d->id_rv);
  if (name[0]) snprintf(d->id_key, sizeof d->id_key, "%s%s%s", ns, ns[0] ? "/" : "", name);
}

/* The event as every apiserver writes it, {"type":"T","object":{...}}
 * with no space between the members: 1 with the type's index in *t and
 * the object's bytes at e[*oo..*oo + *ol), found without walking the
 * members; else 0. When the object then parses, the result is the general
 * path's: the bytes between the prefix and the event's closing brace form
 * one object only when nothing follows it. */
static int fast_shape(const char *e, size_t n, int *t, size_t *oo, size_t *ol) {
  static const char head[] = "{\"type\":\"", mid[] = "\",\"object\":";
  const size_t hl = sizeof(head) - 1, ml = sizeof(mid) - 1;
  if (n < hl + ml + 8 || memcmp(e, head, hl)) return 0;
  size_t i = hl, k;
  for (k = 0; k < 5; k++) {
    size_t l = strlen(type_names[k]);
    if (n - i > l + ml && !memcmp(e + i, type_names[k], l) && !memcmp(e + i + l, mid, ml)) {
      i += l + ml;
      break;
    }
  }
  if (k == 5 || e[i] != '{') return 0;
  size_t end = n;
  while (end > i && is_ws(e[end - 1])) end--;
  if (end <= i || e[end - 1] != '}') return 0;
  end--; /* the event's closing brace */
  while (end > i && is_ws(e[end - 1])) end--;
  if (end <= i + 1 || e[end - 1] != '}') return 0;
  *t = (int)k;
  *oo = i;
  *ol = end - i;
  return 1;
}

static int deliver(kin_watch_decoder *d, const char *e, size_t n) {
  uint64_t no = d->events_seen, line = d->ev_line;
  size_t pos = 0, ko, kl, vo, vl, to = 0, tl = 0, oo = 0, ol = 0;
  int r, have_type = 0, have_obj = 0, t = -1, err;
  char *type = NULL;
  kin_watch_event ev;
  memset(&ev, 0, sizeof(ev));
  if (fast_shape(e, n, &t, &oo, &ol)) {
    err = t <= KIN_WATCH_DELETED ? kin_obj_parse(e + oo, ol, &ev.obj)
                                 : kin_obj_parse_any(e + oo, ol, &ev.obj);
    if (err == KIN_ENOMEM) goto oom;
    if (err == 0) goto parsed;
    /* not that shape after all, or a bad object: the general path says which */
  }
  while ((r = obj_next(e, n, &pos, &ko, &kl, &vo, &vl)) == 1) {
    if (key_is(e + ko, kl, "type")) { to = vo; tl = vl; have_type = 1; }
    else if (key_is(e + ko, kl, "object")) { oo = vo; ol = vl; have_obj = 1; }
  }
  if (have_obj && e[oo] == '{') ident(d, e + oo, ol); /* names it in reports */
  if (r < 0) {
    report(d, KIN_WATCH_ERR_MALFORMED, "not a JSON object", no, line, NULL, e, n);
    return 0;
  }
  if (!have_type || e[to] != '"') {
    report(d, KIN_WATCH_ERR_MALFORMED, "missing or non-string \"type\"", no, line, NULL, e, n);
    return 0;
  }
  err = str_dup(e + to, tl, &type);
  if (err == KIN_ENOMEM) goto oom;
  if (err < 0) {
    report(d, KIN_WATCH_ERR_MALFORMED, "bad \"type\" string", no, line, NULL, e, n);
    return 0;
  }
  t = -1;
  for (int k = 0; k < 5; k++)
    if (strcmp(type, type_names[k]) == 0) t = k;
  if (t < 0) {
    report(d, KIN_WATCH_ERR_MALFORMED, "unknown event type", no, line, type, e, n);
    free(type);
    return 0;
  }
  if (!have_obj || e[oo] != '{') {
    report(d, KIN_WATCH_ERR_MALFORMED, "missing or non-object \"object\"", no, line, type, e, n);
    free(type);
    return 0;
  }

  if (t <= KIN_WATCH_DELETED) err = kin_obj_parse(e + oo, ol, &ev.obj);
  else err = kin_obj_parse_any(e + oo, ol, &ev.obj);
  if (err == KIN_ENOMEM) goto oom;
  if (err < 0) {
    report(d, KIN_WATCH_ERR_MALFORMED,
           t <= KIN_WATCH_DELETED ? "object is malformed or has no metadata.name"
                                  : "object is malformed",
           no, line, type, e, n);
    free(type);
    return 0;
  }
parsed:
  ev.type = (kin_watch_event_type)t;
  ev.event_no = no;
  ev.line = line;
  ev.resource_version = "";
  ev.reason = "";
  ev.message = "";
  char *reason = NULL, *message = NULL;
  if (t == KIN_WATCH_BOOKMARK) {
    ev.resource_version = kin_obj_resource_version(ev.obj);
    if (!ev.resource_version) ev.resource_version = "";
    kin_span a = kin_obj_annotations_span(ev.obj);
    const char *js = kin_obj_json(ev.obj, NULL);
    if (a.len && obj_get(js + a.off, a.len, "k8s.io/initial-events-end", &vo, &vl))
      ev.initial_events_end = key_is(js + a.off + vo, vl, "true");
  } else if (t == KIN_WATCH_ERROR) {
    const char *s = e + oo;
    if (obj_get(s, ol, "code", &vo, &vl) && vl < 24) {
      char num[24];
      memcpy(num, s + vo, vl);
      num[vl] = '\0';
      ev.code = (int)strtol(num, NULL, 10);
    }
    if (obj_get(s, ol, "reason", &vo, &vl) && str_dup(s + vo, vl, &reason) == 0) ev.reason = reason;
    if (obj_get(s, ol, "message", &vo, &vl) && str_dup(s + vo, vl, &message) == 0)
      ev.message = message;
  }
  int stop = d->on_event(d->ud, &ev);
  d->delivered++;
  kin_obj_unref(ev.obj);
  free(reason);
  free(message);
  free(type);
  if (stop) {
    d->canceled = 1;
    return KIN_ECANCELED;
  }
  return 0;
oom:
  report(d, KIN_WATCH_ERR_MALFORMED, "out of memory decoding event", no, line, type, e, n);
  free(type);
  return KIN_ENOMEM;
}

/* ---- framing ------------------------------------------------------------ */

/* Copies the first bytes of the current event (earlier feeds' bytes, then
 * chunk[from..to)) into out; returns how many. */
static size_t event_prefix(const kin_watch_decoder *d, const char *chunk, size_t from, size_t to,
                           char *out) {
  size_t k = d->len < KIN_WATCH_SNIPPET_MAX ? d->len : KIN_WATCH_SNIPPET_MAX;
  if (k) memcpy(out, d->buf, k);
  size_t more = to - from;
  if (more > KIN_WATCH_SNIPPET_MAX - k) more = KIN_WATCH_SNIPPET_MAX - k;
  if (more) memcpy(out + k, chunk + from, more);
  return k + more;
}

static void flush_garbage(kin_watch_decoder *d) {
  if (!d->in_garbage) return;
  report(d, KIN_WATCH_ERR_GARBAGE, "bytes outside any watch event skipped", d->events_seen,
         d->garbage_line, NULL, d->garbage, d->garbage_len);
  d->in_garbage = 0;
  d->garbage_len = 0;
}

static void start_event(kin_watch_decoder *d, uint64_t off) {
  d->ev_off = off;
  d->id_kind[0] = d->id_key[0] = d->id_rv[0] = 0;
  d->in_event = 1;
  d->in_str = d->esc = d->skipping = 0;
  d->depth = 1;
  d->ev_len = 1;
  d->match = -1;
  d->events_seen++;
  d->ev_line = d->line;
}

static void end_event(kin_watch_decoder *d) {
  d->id_kind[0] = d->id_key[0] = d->id_rv[0] = 0;
  d->in_event = 0;
  d->skipping = 0;
  d->match = -1;
  buf_reset(d);
}

/* Bytes the framing loop must look at one by one: inside a string the
 * quote, backslash and newline; outside, the quote, brackets and newline.
 * Every other byte only counts towards the event's length. */
static const unsigned char stop_in_str[256] = {['"'] = 1, ['\\'] = 1, ['\n'] = 1};
static const unsigned char stop_outside[256] = {['"'] = 1, ['{'] = 1, ['}'] = 1,
                                                ['['] = 1, [']'] = 1, ['\n'] = 1};

/* Returns the index in p[i..n) of the first byte the framing loop must see
 * (n when there is none): 16 bytes at a time with SSE2, then a table. */
static size_t skip_plain(const char *p, size_t i, size_t n, int in_str) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), nl = _mm_set1_epi8('\n');
  if (in_str) {
    const __m128i bs = _mm_set1_epi8('\\');
    for (; i + 16 <= n; i += 16) {
      __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
      __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bs)),
                                 _mm_cmpeq_epi8(v, nl));
      unsigned m = (unsigned)_mm_movemask_epi8(hit);
      if (m) return i + (size_t)__builtin_ctz(m);
    }
  } else {
    /* '[' and '{' (0x5B, 0x7B) differ only in bit 0x20, as do ']' and '}'. */
    const __m128i b20 = _mm_set1_epi8(0x20), open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}');
    for (; i + 16 <= n; i += 16) {
      __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
      __m128i low = _mm_or_si128(v, b20);
      __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, nl)),
                                 _mm_or_si128(_mm_cmpeq_epi8(low, open), _mm_cmpeq_epi8(low, close)));
      unsigned m = (unsigned)_mm_movemask_epi8(hit);
      if (m) return i + (size_t)__builtin_ctz(m);
    }
  }
#endif
  const unsigned char *stop = in_str ? stop_in_str : stop_outside;
  while (i < n && !stop[(unsigned char)p[i]]) i++;
  return i;
}

/* kin_watch_decoder_feed before the stream offset moves past p. */
static int feed_bytes(kin_watch_decoder *d, const char *p, size_t n) {
  if (d->canceled) return KIN_ECANCELED;
  int hard = 0;
  size_t seg = 0; /* start in p of the current event's bytes not yet in buf */
  for (size_t i = 0; i < n; i++) {
    if (d->in_event && d->match < 0 && !d->esc) {
      /* Skip the bytes that change no state, stopping where the event
       * would pass the maximum size so the byte-wise check reports it. */
      size_t lim = n;
      if (!d->skipping) {
        size_t room = d->max_event > d->ev_len ? d->max_event - d->ev_len : 0;
        if (room < n - i) lim = i + room;
      }
      size_t j = skip_plain(p, i, lim, d->in_str);
      d->ev_len += j - i;
      i = j;
      if (i >= n) break;
    }
    char c = p[i];
    if (!d->in_event) {
      if (c == '{') {
        flush_garbage(d);
        start_event(d, d->off + i);
        seg = i;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        if (d->in_garbage && d->garbage_len < KIN_WATCH_SNIPPET_MAX)
          d->garbage[d->garbage_len++] = c;
      } else {
        if (!d->in_garbage) {
          d->in_garbage = 1;
          d->garbage_line = d->line;
          d->garbage_off = d->off + i;
        }
        if (d->garbage_len < KIN_WATCH_SNIPPET_MAX) d->garbage[d->garbage_len++] = c;
      }
      if (c == '\n') d->line++;
      continue;
    }

    d->ev_len++;
    if (d->match >= 0) {
      if (c == resync_pat[d->match]) {
        if (++d->match == RESYNC_LEN) {
          /* The open event was cut off at the newline; a new one began. */
          if (!d->skipping) {
            char snip[KIN_WATCH_SNIPPET_MAX];
            size_t k = event_prefix(d, p, seg, i + 1, snip);
            report(d, KIN_WATCH_ERR_MALFORMED, "event cut off by a new event line",
                   d->events_seen, d->ev_line, NULL, snip, k < d->nl_ev_len ? k : d->nl_ev_len);
          }
          buf_reset(d);
          start_event(d, d->off + i + 1 - RESYNC_LEN);
          d->ev_len = RESYNC_LEN;
          if (buf_add(d, resync_pat, RESYNC_LEN) < 0) {
            hard = KIN_ENOMEM;
            d->skipping = 1;
          }
          seg = i + 1;
          if (c == '\n') d->line++;
          continue;
        }
      } else {
        d->match = -1;
      }
    }
    if (d->ev_len > d->max_event && !d->skipping) {
      char snip[KIN_WATCH_SNIPPET_MAX];
      size_t k = event_prefix(d, p, seg, i + 1, snip);
      report(d, KIN_WATCH_ERR_TOO_LARGE, "event larger than the maximum event size",
             d->events_seen, d->ev_line, NULL, snip, k);
      d->skipping = 1;
      buf_reset(d);
    }
    if (d->in_str) {
      if (c == '\n') {
        /* JSON strings cannot hold a raw newline, escaped or not: the line
         * was cut off. */
        if (!d->skipping) {
          char snip[KIN_WATCH_SNIPPET_MAX];
          size_t k = event_prefix(d, p, seg, i, snip);
          report(d, KIN_WATCH_ERR_MALFORMED, "event line cut off inside a string",
                 d->events_seen, d->ev_line, NULL, snip, k);
        }
        end_event(d);
        d->line++;
      } else if (d->esc) {
        d->esc = 0;
      } else if (c == '\\') {
        d->esc = 1;
      } else if (c == '"') {
        d->in_str = 0;
      }
      continue;
    }
    switch (c) {
      case '"': d->in_str = 1; break;
      case '{': case '[': d->depth++; break;
      case '}': case ']':
        if (--d->depth == 0) {
          if (!d->skipping) {
            int r;
            if (d->len == 0) {
              r = deliver(d, p + seg, i + 1 - seg);
            } else if ((r = buf_add(d, p + seg, i + 1 - seg)) == 0) {
              r = deliver(d, d->buf, d->len);
            } else {
              report(d, KIN_WATCH_ERR_MALFORMED, "out of memory buffering event",
                     d->events_seen, d->ev_line, NULL, d->buf, d->len);
            }
            if (r == KIN_ECANCELED) return r;
            if (r < 0) hard = r;
          }
          end_event(d);
        }
        break;
      case '\n':
        d->line++;
        d->match = 0;
        d->nl_ev_len = d->ev_len - 1;
        break;
      default: break;
    }
  }
  if (d->in_event && !d->skipping && seg < n && buf_add(d, p + seg, n - seg) < 0) {
    report(d, KIN_WATCH_ERR_MALFORMED, "out of memory buffering event", d->events_seen,
           d->ev_line, NULL, d->buf, d->len);
    d->skipping = 1;
    buf_reset(d);
    hard = KIN_ENOMEM;
  }
  return hard;
}

int kin_watch_decoder_feed(kin_watch_decoder *d, const char *p, size_t n) {
  int r = feed_bytes(d, p, n);
  d->off += n;
  return r;
}

int kin_watch_decoder_event(kin_watch_decoder *d, const char *e, size_t n) {
  if (d->canceled) return KIN_ECANCELED;
  if (d->in_event) return KIN_EINVAL; /* a partial event from feed is pending */
  flush_garbage(d);
  start_event(d, d->off);
  int r = 0;
  if (n > d->max_event) {
    report(d, KIN_WATCH_ERR_TOO_LARGE, "event larger than the maximum event size", d->events_seen,
           d->ev_line, NULL, e, n < KIN_WATCH_SNIPPET_MAX ? n : KIN_WATCH_SNIPPET_MAX);
  } else {
    r = deliver(d, e, n);
  }
  end_event(d);
  d->off += n;
  d->line++; /* one event, one line, as the JSON stream has it */
  return r;
}

int kin_watch_decoder_finish(kin_watch_decoder *d) {
  if (d->canceled) return KIN_ECANCELED;
  int r = 0;
  flush_garbage(d);
  if (d->in_event) {
    report(d, KIN_WATCH_ERR_TRUNCATED, "stream ended inside an event", d->events_seen,
           d->ev_line, NULL, d->buf, d->len);
    r = KIN_EINVAL;
  }
  end_event(d);
  d->in_str = d->esc = 0;
  d->line = 1;
  d->events_seen = 0;
  d->off = 0;
  return r;
}
