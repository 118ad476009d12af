/* fuzz_webhook_review.c -- libFuzzer harness for the webhook server's
 * review decoder and answers (csrc/core/webhook/webhook_review.c,
 * webhook_dispatch.c), through kin_webhook_server_serve: the first byte
 * picks the hook (validating, mutating, conversion), the rest is the body.
 * The hooks read every field of the decoded request and answer with its
 * strings (so the answer's escaping sees the input's bytes); every 200
 * answer must be one well-formed JSON document, every other status a
 * short text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json_check.h"
#include "kobj.h"
#include "webhook.h"

static volatile size_t sink;

static size_t slen(const char *s) {
  if (!s) abort(); /* webhook.h: strings are never NULL */
  return strlen(s);
}

/* Reads every field; aborts on a broken invariant. */
static void read_req(const kin_webhook_request *r) {
  sink += slen(r->path) + slen(r->uid) + slen(r->operation) + slen(r->kind_group) +
          slen(r->kind_version) + slen(r->kind) + slen(r->resource_group) +
          slen(r->resource_version) + slen(r->resource) + slen(r->sub_resource) + slen(r->name) +
          slen(r->namespace_) + slen(r->desired_api_version) + (size_t)r->dry_run;
  if (!r->user_info || !r->options) abort();
  if (r->user_info_len && kin__json_check(r->user_info, r->user_info_len, NULL) != 0) abort();
  if (r->options_len && kin__json_check(r->options, r->options_len, NULL) != 0) abort();
  kin_obj *objs[2] = {r->object, r->old_object};
  for (int i = 0; i < 2; i++) {
    size_t n = 0;
    if (objs[i] && kin_obj_json(objs[i], &n) && kin__json_check(kin_obj_json(objs[i], NULL), n, NULL))
      abort();
  }
  for (size_t i = 0; i < r->nobjects; i++)
    if (!r->objects[i]) abort();
    else sink += slen(kin_obj_name(r->objects[i]));
}

static int admit(void *ud, const kin_webhook_request *r, kin_webhook_response *resp) {
  read_req(r);
  resp->allowed = (r->uid[0] & 1) != 0;
  resp->message = strdup(r->name);
  resp->warnings = calloc(2, sizeof(char *));
  resp->warnings[0] = strdup(r->operation);
  resp->warnings[1] = strdup(r->namespace_);
  resp->nwarnings = 2;
  if (ud) {
    resp->patch = strdup("[{\"op\":\"add\",\"path\":\"/a\",\"value\":1}]");
    resp->patch_len = strlen(resp->patch);
  }
  return r->kind[0] == 'X' ? -5 : 0;
}

static int convert(void *ud, const kin_webhook_request *r, kin_webhook_response *resp) {
  (void)ud;
  read_req(r);
  resp->converted = calloc(r->nobjects + 1, sizeof(char *));
  resp->converted_len = calloc(r->nobjects + 1, sizeof(size_t));
  size_t count = r->nobjects - (r->uid[0] == 'S' && r->nobjects);
  for (size_t i = 0; i < count; i++) {
    size_t n = 0;
    const char *js = kin_obj_json(r->objects[i], &n);
    resp->converted[i] = malloc(n + 1);
    memcpy(resp->converted[i], js, n);
    resp->converted[i][n] = 0;
    resp->converted_len[i] = n;
  }
  resp->nconverted = count;
  resp->message = strdup(r->desired_api_version);
  resp->failed = r->uid[0] == 'F';
  return 0;
}

static kin_webhook_server *server;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!server) {
    kin_webhook_server_config cfg = {.max_request_bytes = 1 << 20};
    if (kin_webhook_server_new(&cfg, &server, NULL, 0) != 0) abort();
    kin_webhook_hook hooks[] = {
        {.path = "/validate", .type = KIN_WEBHOOK_VALIDATING, .fn = admit},
        {.path = "/mutate", .type = KIN_WEBHOOK_MUTATING, .fn = admit, .ud = (void *)1},
        {.path = "/convert", .type = KIN_WEBHOOK_CONVERSION, .fn = convert},
    };
    for (int i = 0; i < 3; i++)
      if (kin_webhook_server_add(server, &hooks[i]) != 0) abort();
  }
  if (size < 1) return 0;
  static const char *const paths[] = {"/validate", "/mutate", "/convert"};
  const char *path = paths[data[0] % 3];
  char *out = NULL;
  size_t n = 0;
  int st = kin_webhook_server_serve(server, path, (const char *)data + 1, size - 1, 0, &out, &n);
  if (st < 0) return 0; /* out of memory */
  if (!out || strlen(out) != n) abort();
  if (st == 200 && kin__json_check(out, n, NULL) != 0) abort();
  if (st != 200 && st != 400 && st != 413) abort();
  free(out);
  return 0;
}
