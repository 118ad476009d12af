/* fuzz_list_stream.c -- libFuzzer harness for the list splitter
 * (csrc/core/json/list_stream.c): the input is a list body. It is split
 * twice, whole and in pieces whose sizes come from its first byte; both
 * must give the same items, envelope, list kind and result, and every item
 * must be what lies between its braces in the body. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "list_stream.h"

typedef struct {
  const char *body;
  size_t body_len;
  char *items;       /* every item, each followed by a NUL */
  size_t len, cap;
  size_t n;
} run;

static int on_item(void *ud, const char *p, size_t len, size_t index) {
  run *r = ud;
  if (index != r->n || len < 2 || p[0] != '{' || p[len - 1] != '}') abort();
  /* an item is some bytes of the body, in order */
  if (!memmem(r->body, r->body_len, p, len)) abort();
  if (r->len + len + 1 > r->cap) {
    size_t c = r->cap ? r->cap * 2 : 256;
    while (c < r->len + len + 1) c *= 2;
    char *n = realloc(r->items, c);
    if (!n) abort();
    r->items = n;
    r->cap = c;
  }
  memcpy(r->items + r->len, p, len);
  r->items[r->len + len] = 0;
  r->len += len + 1;
  r->n++;
  return r->n == 50 && index == 49 && len == 7 ? -1 : 0; /* a callback error now and then */
}

static int split(const uint8_t *data, size_t size, size_t piece, run *r, kin__list_stream *ls) {
  memset(r, 0, sizeof(*r));
  r->body = (const char *)data;
  r->body_len = size;
  kin__list_stream_init(ls, on_item, r);
  for (size_t i = 0; i < size; i += piece) {
    size_t k = size - i < piece ? size - i : piece;
    char *b = malloc(k ? k : 1); /* a piece of its own: ASan sees a pointer kept too long */
    memcpy(b, data + i, k);
    int rc = kin__list_stream_feed(ls, b, k);
    free(b);
    if (rc) return rc;
  }
  return kin__list_stream_finish(ls);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t piece = 1 + data[0] % 17;
  data++, size--;
  run a, b;
  kin__list_stream la, lb;
  int ra = split(data, size, size ? size : 1, &a, &la);
  int rb = split(data, size, piece, &b, &lb);
  if (ra != rb || a.n != b.n || a.len != b.len || (a.len && memcmp(a.items, b.items, a.len))) abort();
  if (ra == 0) {
    if (la.env_len != lb.env_len || memcmp(la.env, lb.env, la.env_len)) abort();
    if (la.kind_len != lb.kind_len || memcmp(la.kind, lb.kind, la.kind_len)) abort();
    if (la.av_len != lb.av_len || memcmp(la.api_version, lb.api_version, la.av_len)) abort();
  }
  if (la.bad_item != lb.bad_item) abort();
  free(a.items);
  free(b.items);
  kin__list_stream_free(&la);
  kin__list_stream_free(&lb);
  return 0;
}
