/* fuzz_watch_decoder.c -- libFuzzer harness for the watch stream decoder
 * (csrc/core/json/watch_decoder.c): the input is a watch response body,
 * fed in chunks whose sizes come from its first byte, with a small
 * maximum event size when that byte says so; every event's fields and
 * every error's snippet are read, then the stream is finished. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kobj.h"
#include "watch_decoder.h"

static volatile size_t sink;

static int on_event(void *ud, const kin_watch_event *ev) {
  size_t n = 0;
  if (ev->obj) {
    const char *js = kin_obj_json(ev->obj, &n);
    sink += n + (js ? (unsigned char)js[0] : 0);
    sink += strlen(kin_obj_key(ev->obj)) + kin_obj_label_count(ev->obj);
  }
  if (ev->resource_version) sink += strlen(ev->resource_version);
  if (ev->reason) sink += strlen(ev->reason);
  if (ev->message) sink += strlen(ev->message);
  sink += (size_t)ev->type + (size_t)ev->code + (size_t)ev->initial_events_end;
  /* Stop the decoder now and then: feed must return cleanly. */
  return ud && ev->event_no == 3 ? 1 : 0;
}

static void on_error(void *ud, const kin_watch_decode_error *err) {
  size_t s = strlen(err->what) + (err->type ? strlen(err->type) : 0);
  for (size_t i = 0; i < err->snippet_len; i++) s += (unsigned char)err->snippet[i];
  sink += s + (size_t)err->kind;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t ctl = data[0];
  data++, size--;
  kin_watch_decoder *d;
  /* Bit 7: stop after the third event. */
  if (kin_watch_decoder_new(on_event, on_error, (ctl & 0x80) ? (void *)1 : NULL, &d)) return 0;
  /* Bit 6: a maximum event size of 64 bytes. */
  if (ctl & 0x40) kin_watch_decoder_set_max_event_size(d, 64);
  /* Bits 0-5: the chunk size (0: everything at once). */
  size_t chunk = ctl & 0x3f;
  if (!chunk) chunk = size ? size : 1;
  int rc = 0;
  for (size_t off = 0; off < size && rc == 0; off += chunk) {
    size_t n = size - off < chunk ? size - off : chunk;
    rc = kin_watch_decoder_feed(d, (const char *)data + off, n);
  }
  if (rc == 0) kin_watch_decoder_finish(d);
  sink += kin_watch_decoder_events(d);
  kin_watch_decoder_free(d);
  return 0;
}
