/* fuzz_patch.c -- libFuzzer harness for the sim's patches
 * (csrc/sim/sim_patch.c: JSON merge patch, JSON patch;
 * sim_patch_strategic*.c: strategic merge patch). The input is
 *   <mode><target JSON>\n<patch JSON>
 * where mode is 'm' (merge), 'j' (JSON patch) or 's' (strategic), any other
 * byte picking one by its value; the target is the first line. The inputs
 * must come out unchanged (the functions are pure) and a result must
 * serialise. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim_patch.h"

static volatile size_t sink;

static void use(json_t *v) {
  char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
  if (s) sink += strlen(s);
  free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2 || size > 64 * 1024) return 0;
  int mode = data[0] == 'm' ? 0 : data[0] == 'j' ? 1 : data[0] == 's' ? 2 : data[0] % 3;
  const char *p = (const char *)data + 1;
  size_t n = size - 1;
  const char *nl = memchr(p, '\n', n);
  if (!nl) return 0;
  json_error_t jerr;
  json_t *target = json_loadb(p, (size_t)(nl - p), JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
  json_t *patch = json_loadb(nl + 1, n - (size_t)(nl + 1 - p), JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
  if (!target || !patch) goto out;
  json_t *target0 = json_deep_copy(target), *patch0 = json_deep_copy(patch);
  if (!target0 || !patch0) goto out0;
  json_t *res = NULL;
  char err[1024] = "";
  if (mode == 0) {
    res = kin_sim_merge_patch(target, patch);
  } else if (mode == 1) {
    sink += (size_t)kin_sim_json_patch_malformed(patch);
    if (kin_sim_json_patch(target, patch, &res, err, sizeof err)) sink += strlen(err);
  } else {
    if (kin_sim_strategic_merge_patch(target, patch, &res, err, sizeof err))
      sink += (size_t)kin_sim_strategic_merge_patch_status(err);
  }
  if (res) use(res);
  json_decref(res);
  if (!json_equal(target, target0) || !json_equal(patch, patch0)) abort();
out0:
  json_decref(target0);
  json_decref(patch0);
out:
  json_decref(target);
  json_decref(patch);
  return 0;
}
