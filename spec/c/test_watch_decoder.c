/* test_watch_decoder.c -- framing of a watch body into events whatever the
 * read boundaries, and recovery from malformed, oversized, foreign and
 * truncated input (client-go: watch/streamwatcher_test.go and the JSON
 * framer of apimachinery/pkg/util/framer). */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "kobj.h"
#include "watch_decoder.h"

/* Everything the callbacks saw, as one text, so that runs with different
 * read boundaries compare with a single string compare. */
typedef struct {
  char *log;
  size_t len, cap;
  int events, errors;
  kin_watch_error_kind last_kind;
  uint64_t last_err_event, last_err_line;
  char last_snippet[KIN_WATCH_SNIPPET_MAX + 1];
  char last_type[32];
  size_t big_len; /* JSON length of the largest object */
} rec;

static void rec_add(rec *r, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  assert_true(k > 0 && (size_t)k < sizeof(line));
  if (r->len + (size_t)k + 1 > r->cap) {
    r->cap = (r->len + (size_t)k + 1) * 2;
    r->log = realloc(r->log, r->cap);
    assert_non_null(r->log);
  }
  memcpy(r->log + r->len, line, (size_t)k + 1);
  r->len += (size_t)k;
}

static const char *tname[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

static int on_event(void *ud, const kin_watch_event *ev) {
  rec *r = ud;
  r->events++;
  assert_non_null(ev->obj);
  if (ev->type == KIN_WATCH_BOOKMARK) {
    rec_add(r, "#%llu BOOKMARK rv=%s end=%d\n", (unsigned long long)ev->event_no,
            ev->resource_version, ev->initial_events_end);
  } else if (ev->type == KIN_WATCH_ERROR) {
    rec_add(r, "#%llu ERROR %d %s %s\n", (unsigned long long)ev->event_no, ev->code, ev->reason,
            ev->message);
  } else {
    size_t n;
    kin_obj_json(ev->obj, &n);
    if (n > r->big_len) r->big_len = n; /* the largest object seen */
    rec_add(r, "#%llu %s %s rv=%s len=%zu\n", (unsigned long long)ev->event_no, tname[ev->type],
            kin_obj_key(ev->obj), kin_obj_resource_version(ev->obj), n);
  }
  return 0;
}

static void on_error(void *ud, const kin_watch_decode_error *e) {
  rec *r = ud;
  r->errors++;
  r->last_kind = e->kind;
  r->last_err_event = e->event_no;
  r->last_err_line = e->line;
  assert_true(e->snippet_len <= KIN_WATCH_SNIPPET_MAX);
  memcpy(r->last_snippet, e->snippet, e->snippet_len);
  r->last_snippet[e->snippet_len] = '\0';
  snprintf(r->last_type, sizeof(r->last_type), "%s", e->type ? e->type : "");
  rec_add(r, "!err kind=%d event=%llu line=%llu type=%s\n", (int)e->kind,
          (unsigned long long)e->event_no, (unsigned long long)e->line, e->type ? e->type : "-");
}

/* xorshift: reproducible chunk sizes per seed. */
static uint32_t rnd(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

enum { WHOLE = 0, BYTES = -1 };

/* Feeds s in one piece (mode WHOLE), byte by byte (BYTES) or in random
 * chunks of 1..max_chunk bytes (mode = seed > 0); returns finish's result.
 * max_event 0 keeps the default. */
static int decode(const char *s, size_t n, int mode, size_t max_chunk, size_t max_event, rec *r) {
  memset(r, 0, sizeof(*r));
  kin_watch_decoder *d = NULL;
  assert_int_equal(kin_watch_decoder_new(on_event, on_error, r, &d), 0);
  if (max_event) kin_watch_decoder_set_max_event_size(d, max_event);
  uint32_t seed = (uint32_t)mode * 2654435761u + 1;
  size_t i = 0;
  while (i < n) {
    size_t k = n - i;
    if (mode == BYTES) k = 1;
    else if (mode > 0) k = 1 + rnd(&seed) % max_chunk;
    if (k > n - i) k = n - i;
    assert_int_equal(kin_watch_decoder_feed(d, s + i, k), 0);
    i += k;
  }
  int rc = kin_watch_decoder_finish(d);
  kin_watch_decoder_free(d);
  return rc;
}

static void rec_free(rec *r) { free(r->log); }

#define EV(type, name, rv)                                                                        \
  "{\"type\":\"" type "\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" name     \
  "\",\"namespace\":\"ns\",\"resourceVersion\":\"" rv "\"}}}"

/* Newlines, \r\n, no separator at all, pretty-printed whitespace, strings
 * holding braces, brackets, quotes and escaped backslashes, a key order with
 * "object" before "type", bookmarks and a 410 Status. */
static const char stream[] =
    EV("ADDED", "a", "1") "\n"
    EV("MODIFIED", "a", "2") "\r\n"
    EV("ADDED", "b", "3") EV("ADDED", "c", "4")
    "  {\n  \"object\" : {\"metadata\":{\"name\":\"d\",\"resourceVersion\":\"5\"},"
    "\"data\":{\"k\":\"}{]\\\"[{\\\\\",\"q\":\"\\\\\\\"}\"}} ,\n \"type\" : \"ADDED\"\n}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"resourceVersion\":\"6\","
    "\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}\n"
    EV("DELETED", "a", "8") "\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
    "\"status\":\"Failure\",\"message\":\"too old resource version: 1 (5)\",\"reason\":\"Expired\","
    "\"code\":410}}\n";

static const char stream_expected[] =
    "#1 ADDED ns/a rv=1 len=83\n"
    "#2 MODIFIED ns/a rv=2 len=83\n"
    "#3 ADDED ns/b rv=3 len=83\n"
    "#4 ADDED ns/c rv=4 len=83\n"
    "#5 ADDED d rv=5 len=84\n"
    "#6 BOOKMARK rv=6 end=1\n"
    "#7 BOOKMARK rv=7 end=0\n"
    "#8 DELETED ns/a rv=8 len=83\n"
    "#9 ERROR 410 Expired too old resource version: 1 (5)\n";

/* client-go TestStreamWatcher: every event of the stream arrives, in order,
 * with its type and object. */
static void test_watch_decoder_StreamWatcher(void **state) {
  rec r;
  assert_int_equal(decode(stream, sizeof(stream) - 1, WHOLE, 0, 0, &r), 0);
  assert_int_equal(r.errors, 0);
  assert_string_equal(r.log, stream_expected);
  rec_free(&r);
}

/* The read boundaries never change the decoded sequence. */
static void test_watch_decoder_ChunkBoundaries(void **state) {
  rec whole, r;
  assert_int_equal(decode(stream, sizeof(stream) - 1, WHOLE, 0, 0, &whole), 0);
  assert_int_equal(decode(stream, sizeof(stream) - 1, BYTES, 0, 0, &r), 0);
  assert_string_equal(r.log, whole.log);
  rec_free(&r);
  for (int seed = 1; seed <= 300; seed++) {
    size_t maxc = seed % 3 == 0 ? 7 : seed % 3 == 1 ? 64 : 400;
    assert_int_equal(decode(stream, sizeof(stream) - 1, seed, maxc, 0, &r), 0);
    assert_int_equal(r.errors, 0);
    assert_string_equal(r.log, whole.log);
    rec_free(&r);
  }
  rec_free(&whole);
}

/* The object JSON handed to kin_obj_parse is exactly the "object" span. */
static void test_watch_decoder_ObjectSpan(void **state) {
  rec r;
  const char *s = "{\"object\":{\"metadata\":{\"name\":\"x\"},\"s\":\"}\"} ,\"type\":\"ADDED\"}";
  assert_int_equal(decode(s, strlen(s), WHOLE, 0, 0, &r), 0);
  assert_string_equal(r.log, "#1 ADDED x rv= len=33\n");
  rec_free(&r);
}

static char *big_stream(size_t payload, size_t *n) {
  size_t cap = payload + 1024;
  char *s = malloc(cap);
  assert_non_null(s);
  size_t k = (size_t)snprintf(s, cap, "%s\n{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":"
                                      "\"big\",\"resourceVersion\":\"2\"},\"data\":{\"v\":\"",
                              EV("ADDED", "a", "1"));
  for (size_t i = 0; i < payload; i++) s[k++] = (char)('a' + i % 26);
  k += (size_t)snprintf(s + k, cap - k, "\"}}}\n%s\n", EV("ADDED", "c", "3"));
  *n = k;
  return s;
}

/* A 1 MB event is delivered whole, whatever the read size. */
static void test_watch_decoder_LargeEvent(void **state) {
  size_t n;
  char *s = big_stream(1 << 20, &n);
  rec r;
  assert_int_equal(decode(s, n, WHOLE, 0, 0, &r), 0);
  assert_int_equal(r.events, 3);
  assert_int_equal(r.errors, 0);
  assert_true(strstr(r.log, "#2 ADDED big rv=2") != NULL);
  rec_free(&r);
  assert_int_equal(decode(s, n, 7, 16384, 0, &r), 0);
  assert_int_equal(r.events, 3);
  assert_true(strstr(r.log, "#2 ADDED big rv=2") != NULL);
  assert_true(r.big_len > (1 << 20));
  rec_free(&r);
  free(s);
}

/* An event over the size cap is reported and skipped; the next one
 * arrives. */
static void test_watch_decoder_OversizeRecovers(void **state) {
  size_t n;
  char *s = big_stream(100000, &n);
  for (int mode = 0; mode <= 3; mode++) {
    rec r;
    assert_int_equal(decode(s, n, mode, 5000, 64 * 1024, &r), 0);
    assert_int_equal(r.errors, 1);
    assert_int_equal(r.last_kind, KIN_WATCH_ERR_TOO_LARGE);
    assert_int_equal(r.last_err_event, 2);
    assert_int_equal(strlen(r.last_snippet), KIN_WATCH_SNIPPET_MAX);
    assert_memory_equal(r.last_snippet, "{\"type\":\"ADDED\"", 15);
    assert_string_equal(r.log, "#1 ADDED ns/a rv=1 len=83\n"
                               "!err kind=1 event=2 line=2 type=-\n"
                               "#3 ADDED ns/c rv=3 len=83\n");
    rec_free(&r);
  }
  free(s);
}

static const char malformed[] =
    EV("ADDED", "a", "1") "\n"
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\",}}}\n" /* trailing comma */
    EV("ADDED", "b", "2") "\n"
    "{\"type\":\"RENAMED\",\"object\":{\"metadata\":{\"name\":\"y\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"namespace\":\"ns\"}}}\n" /* no name */
    "{\"type\":\"DELETED\"}\n"
    "{\"type\":\"ADDED\" \"object\":{}}\n"
    EV("ADDED", "c", "3") "\n"
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"cut" "\n" /* cut in a string */
    EV("ADDED", "d", "4") "\n"
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"cut\"}" "\n" /* cut outside */
    EV("MODIFIED", "d", "5") "\n";

/* client-go logs a bad event and keeps decoding: every good event around
 * the bad ones arrives, and each report names the right event and line. */
static void test_watch_decoder_MalformedLines(void **state) {
  static const char expected[] =
      "#1 ADDED ns/a rv=1 len=83\n"
      "!err kind=0 event=2 line=2 type=ADDED\n"
      "#3 ADDED ns/b rv=2 len=83\n"
      "!err kind=0 event=4 line=4 type=RENAMED\n"
      "!err kind=0 event=5 line=5 type=MODIFIED\n"
      "!err kind=0 event=6 line=6 type=DELETED\n"
      "!err kind=0 event=7 line=7 type=-\n"
      "#8 ADDED ns/c rv=3 len=83\n"
      "!err kind=0 event=9 line=9 type=-\n"
      "#10 ADDED ns/d rv=4 len=83\n"
      "!err kind=0 event=11 line=11 type=-\n"
      "#12 MODIFIED ns/d rv=5 len=83\n";
  rec whole;
  assert_int_equal(decode(malformed, sizeof(malformed) - 1, WHOLE, 0, 0, &whole), 0);
  assert_string_equal(whole.log, expected);
  assert_int_equal(whole.events, 5);
  assert_string_equal(whole.last_snippet, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"cut\"}");
  for (int mode = -1; mode <= 100; mode++) {
    rec r;
    assert_int_equal(decode(malformed, sizeof(malformed) - 1, mode, 13, 0, &r), 0);
    assert_string_equal(r.log, expected);
    rec_free(&r);
  }
  rec_free(&whole);
}

/* A proxy's HTML 502 page in the body is reported once and skipped. */
static void test_watch_decoder_HtmlErrorPage(void **state) {
  static const char s[] =
      EV("ADDED", "a", "1") "\n"
      "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
      "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
      "</body>\r\n</html>\r\n"
      EV("MODIFIED", "a", "2") "\n";
  for (int mode = -1; mode <= 50; mode++) {
    rec r;
    assert_int_equal(decode(s, sizeof(s) - 1, mode, 9, 0, &r), 0);
    assert_string_equal(r.log, "#1 ADDED ns/a rv=1 len=83\n"
                               "!err kind=2 event=1 line=2 type=-\n"
                               "#2 MODIFIED ns/a rv=2 len=83\n");
    assert_int_equal(r.errors, 1);
    assert_true(strncmp(r.last_snippet, "<html>\r\n<head><title>502 Bad Gateway", 36) == 0);
    rec_free(&r);
  }
}

/* The stream ends inside an event: finish reports it, earlier events
 * stand. */
static void test_watch_decoder_TruncatedFinal(void **state) {
  static const char s[] = EV("ADDED", "a", "1") "\n{\"type\":\"ADDED\",\"object\":{\"meta";
  for (int mode = -1; mode <= 20; mode++) {
    rec r;
    assert_int_equal(decode(s, sizeof(s) - 1, mode, 5, 0, &r), KIN_EINVAL);
    assert_string_equal(r.log, "#1 ADDED ns/a rv=1 len=83\n!err kind=3 event=2 line=2 type=-\n");
    assert_string_equal(r.last_snippet, "{\"type\":\"ADDED\",\"object\":{\"meta");
    rec_free(&r);
  }
  /* A clean end, even after trailing whitespace, reports nothing. */
  rec r;
  assert_int_equal(decode(EV("ADDED", "a", "1") "\r\n  ", strlen(EV("ADDED", "a", "1") "\r\n  "), WHOLE, 0, 0, &r), 0);
  assert_int_equal(r.errors, 0);
  assert_int_equal(r.events, 1);
  rec_free(&r);
}

/* BOOKMARK with and without k8s.io/initial-events-end, the annotation key
 * escaped, and a value other than "true". */
static void test_watch_decoder_Bookmarks(void **state) {
  static const char s[] =
      "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"10\",\"annotations\":"
      "{\"a\":\"b\",\"k8s.io\\/initial-events-end\":\"true\"}}}}"
      "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"11\",\"annotations\":"
      "{\"k8s.io/initial-events-end\":\"false\"}}}}"
      "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"12\"}}}";
  rec r;
  assert_int_equal(decode(s, sizeof(s) - 1, WHOLE, 0, 0, &r), 0);
  assert_string_equal(r.log, "#1 BOOKMARK rv=10 end=1\n#2 BOOKMARK rv=11 end=0\n"
                             "#3 BOOKMARK rv=12 end=0\n");
  rec_free(&r);
}

/* A 410 Status as an ERROR event (reason Gone as well as Expired). */
static void test_watch_decoder_ErrorStatus410(void **state) {
  static const char s[] =
      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
      "\"status\":\"Failure\",\"message\":\"too old resource version: 1 (5)\",\"reason\":\"Gone\","
      "\"code\":410}}\n"
      "{\"type\":\"ERROR\",\"object\":{\"code\":410,\"reason\":\"Expired\",\"message\":"
      "\"too old resource version: 1 (5) \\\"q\\\" \\u00e9\"}}\n";
  rec r;
  assert_int_equal(decode(s, sizeof(s) - 1, BYTES, 0, 0, &r), 0);
  assert_string_equal(r.log, "#1 ERROR 410 Gone too old resource version: 1 (5)\n"
                             "#2 ERROR 410 Expired too old resource version: 1 (5) \"q\" \xc3\xa9\n");
  rec_free(&r);
}


/* Corrupting a few bytes of the stream (structural characters, newlines,
 * backslashes) never crashes the decoder or loses the compact event line
 * that follows the damage: it is always the last one delivered. */
static void test_watch_decoder_CorruptionRecovers(void **state) {
  static const char tail[] = "\n" EV("ADDED", "z", "99") "\n";
  static const char bad[] = "{}[]\"\\\n,:x ";
  size_t n = sizeof(stream) - 1, tn = sizeof(tail) - 1;
  char *s = malloc(n + tn);
  assert_non_null(s);
  for (int seed = 1; seed <= 2000; seed++) {
    uint32_t x = (uint32_t)seed * 2246822519u + 7;
    memcpy(s, stream, n);
    memcpy(s + n, tail, tn);
    int flips = 1 + (int)(rnd(&x) % 3);
    for (int f = 0; f < flips; f++) s[rnd(&x) % n] = bad[rnd(&x) % (sizeof(bad) - 1)];
    rec r;
    int rc = decode(s, n + tn, seed % 4 == 0 ? WHOLE : seed, 1 + (size_t)seed % 50, 0, &r);
    assert_int_equal(rc, 0);
    assert_true(r.events <= 10);
    const char *last = r.log + r.len;
    while (last > r.log && last[-1] == '\n') last--;
    while (last > r.log && last[-1] != '\n') last--;
    if (strncmp(last, "#", 1) != 0 || !strstr(last, "ADDED ns/z rv=99")) {
      print_message("seed %d:\n%s\n", seed, r.log);
      fail();
    }
    rec_free(&r);
  }
  free(s);
}

static int stop_first(void *ud, const kin_watch_event *ev) {
  (*(int *)ud)++;
  return 1;
}

/* A callback that returns non-zero stops the decoder. */
static void test_watch_decoder_CallbackStops(void **state) {
  int calls = 0;
  kin_watch_decoder *d = NULL;
  assert_int_equal(kin_watch_decoder_new(stop_first, NULL, &calls, &d), 0);
  const char *s = EV("ADDED", "a", "1") EV("ADDED", "b", "2");
  assert_int_equal(kin_watch_decoder_feed(d, s, strlen(s)), KIN_ECANCELED);
  assert_int_equal(calls, 1);
  assert_int_equal(kin_watch_decoder_feed(d, s, strlen(s)), KIN_ECANCELED);
  assert_int_equal(kin_watch_decoder_finish(d), KIN_ECANCELED);
  assert_int_equal(calls, 1);
  kin_watch_decoder_free(d);
  assert_int_equal(kin_watch_decoder_new(NULL, NULL, NULL, &d), KIN_EINVAL);
}

/* A malformed event is logged with its offset, reason and (when it can be
 * read that far) kind, key and resourceVersion: never its bytes, which can
 * hold a Secret's data. */
static int count_events(void *ud, const kin_watch_event *ev) {
  (*(int *)ud)++;
  return 0;
}

static void test_watch_decoder_LogsNoObjectBytes(void **state) {
  static const char good[] =
      "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Secret\",\"metadata\":{\"name\":\"ok\","
      "\"namespace\":\"ns\",\"resourceVersion\":\"11\"}}}\n";
  /* a Secret whose metadata has no name: the object is refused */
  static const char noname[] =
      "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Secret\",\"metadata\":{\"namespace\":\"ns\","
      "\"resourceVersion\":\"12\"},\"data\":{\"password\":\"c2VjcmV0LXZhbHVl\"}}}\n";
  static const char badtype[] =
      "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Secret\",\"metadata\":{\"name\":\"s2\","
      "\"namespace\":\"ns\",\"resourceVersion\":\"13\"},\"data\":{\"password\":\"c2VjcmV0LXZhbHVl\"}}"
      ",\"type\":1}\n";
  static const char cut[] = "{\"type\":\"ADDED\",\"object\":{\"data\":{\"k\":\"c2VjcmV0LXZhbHVl";
  int events = 0;
  kin_watch_decoder *d;
  assert_int_equal(kin_watch_decoder_new(count_events, NULL, &events, &d), 0);
  kin_test_log_start();
  assert_int_equal(kin_watch_decoder_feed(d, good, sizeof good - 1), 0);
  assert_int_equal(kin_watch_decoder_feed(d, noname, sizeof noname - 1), 0);
  assert_int_equal(kin_watch_decoder_feed(d, badtype, sizeof badtype - 1), 0);
  assert_int_equal(kin_watch_decoder_feed(d, cut, sizeof cut - 1), 0);
  assert_int_equal(kin_watch_decoder_finish(d), KIN_EINVAL);
  kin_test_log_stop();
  assert_int_equal(events, 1);
  assert_int_equal(kin_test_log_count("c2VjcmV0"), 0);
  assert_int_equal(kin_test_log_count("password"), 0);
  char want[160];
  snprintf(want, sizeof want, "event 2 (line 2, offset %zu, type ADDED, Secret, resourceVersion 12)",
           sizeof good - 1);
  assert_int_equal(kin_test_log_count(want), 1);
  assert_int_equal(kin_test_log_count("object is malformed or has no metadata.name"), 1);
  assert_int_equal(kin_test_log_count("Secret ns/s2, resourceVersion 13)"), 1);
  snprintf(want, sizeof want, "event 4 (line 4, offset %zu): stream ended inside an event",
           sizeof good + sizeof noname + sizeof badtype - 3);
  assert_int_equal(kin_test_log_count(want), 1);
  kin_watch_decoder_free(d);
}

/* Events the caller framed itself (a protobuf watch frame's JSON line)
 * give what the same events give fed as a stream: the same numbers, types,
 * objects and reports; an oversized one is reported and skipped, a partial
 * event from feed refuses it, and a stopped decoder stays stopped. */
static void test_watch_decoder_WholeEvents(void **state) {
  static const char *const evs[] = {
      EV("ADDED", "a", "1"), EV("MODIFIED", "a", "2"), EV("ADDED", "b", "3"), EV("ADDED", "c", "4"),
      "  {\n  \"object\" : {\"metadata\":{\"name\":\"d\",\"resourceVersion\":\"5\"},"
      "\"data\":{\"k\":\"}{]\\\"[{\\\\\",\"q\":\"\\\\\\\"}\"}} ,\n \"type\" : \"ADDED\"\n}\n",
      "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"resourceVersion\":\"6\","
      "\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}",
      "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}\n",
      EV("DELETED", "a", "8"),
      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
      "\"status\":\"Failure\",\"message\":\"too old resource version: 1 (5)\",\"reason\":\"Expired\","
      "\"code\":410}}"};
  rec r;
  memset(&r, 0, sizeof(r));
  kin_watch_decoder *d = NULL;
  assert_int_equal(kin_watch_decoder_new(on_event, on_error, &r, &d), 0);
  for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
    assert_int_equal(kin_watch_decoder_event(d, evs[i], strlen(evs[i])), 0);
  assert_int_equal(kin_watch_decoder_finish(d), 0);
  assert_string_equal(r.log, stream_expected);
  assert_int_equal(kin_watch_decoder_events(d), 9);
  rec_free(&r);

  /* over the cap: reported as the event it was, the next one arrives */
  memset(&r, 0, sizeof(r));
  kin_watch_decoder_set_max_event_size(d, 128); /* each event of evs is 110 bytes */
  const char *big = EV("ADDED", "a-name-long-enough-to-pass-the-cap", "2");
  assert_int_equal(kin_watch_decoder_event(d, evs[0], strlen(evs[0])), 0);
  assert_int_equal(kin_watch_decoder_event(d, big, strlen(big)), 0);
  assert_int_equal(kin_watch_decoder_event(d, evs[2], strlen(evs[2])), 0);
  assert_string_equal(r.log, "#1 ADDED ns/a rv=1 len=83\n"
                             "!err kind=1 event=2 line=2 type=-\n"
                             "#3 ADDED ns/b rv=3 len=83\n");
  assert_int_equal(r.last_kind, KIN_WATCH_ERR_TOO_LARGE);
  rec_free(&r);

  /* a partial event from feed is pending: refused, nothing delivered */
  memset(&r, 0, sizeof(r));
  assert_int_equal(kin_watch_decoder_feed(d, "{\"type\":", 8), 0);
  assert_int_equal(kin_watch_decoder_event(d, evs[0], strlen(evs[0])), KIN_EINVAL);
  assert_int_equal(r.events, 0);
  kin_watch_decoder_free(d);
  rec_free(&r);

  int calls = 0;
  assert_int_equal(kin_watch_decoder_new(stop_first, NULL, &calls, &d), 0);
  assert_int_equal(kin_watch_decoder_event(d, evs[0], strlen(evs[0])), KIN_ECANCELED);
  assert_int_equal(kin_watch_decoder_event(d, evs[1], strlen(evs[1])), KIN_ECANCELED);
  assert_int_equal(calls, 1);
  kin_watch_decoder_free(d);
}

KIN_SUITE(watch_decoder, cmocka_unit_test(test_watch_decoder_StreamWatcher),
          cmocka_unit_test(test_watch_decoder_ChunkBoundaries),
          cmocka_unit_test(test_watch_decoder_ObjectSpan),
          cmocka_unit_test(test_watch_decoder_LargeEvent),
          cmocka_unit_test(test_watch_decoder_OversizeRecovers),
          cmocka_unit_test(test_watch_decoder_MalformedLines),
          cmocka_unit_test(test_watch_decoder_HtmlErrorPage),
          cmocka_unit_test(test_watch_decoder_TruncatedFinal),
          cmocka_unit_test(test_watch_decoder_Bookmarks),
          cmocka_unit_test(test_watch_decoder_ErrorStatus410),
          cmocka_unit_test(test_watch_decoder_CorruptionRecovers),
          cmocka_unit_test(test_watch_decoder_CallbackStops),
          cmocka_unit_test(test_watch_decoder_LogsNoObjectBytes),
          cmocka_unit_test(test_watch_decoder_WholeEvents))
