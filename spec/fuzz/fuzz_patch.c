/* fuzz_patch.c -- libFuzzer harness for the sim's patches
 * (csrc/sim/patch/sim_patch.c: JSON merge patch, JSON patch;
 * sim_patch_strategic*.c: strategic merge patch) and server-side apply
 * (csrc/sim/ssa_*.c). The input is
 *   <mode><target JSON>\n<patch JSON>
 * where mode is 'm' (merge), 'j' (JSON patch), 's' (strategic) or 'a'
 * (apply: the patch is YAML, applied by two managers, the second with
 * force, then recorded as an Update over the target), any other byte
 * picking one of the first three by its value; the target is the first
 * line. The inputs must come out unchanged (the functions are pure) and a
 * result must serialise. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim_patch.h"
#include "ssa.h"

static volatile size_t sink;

static void use(json_t *v) {
  char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
  if (s) sink += strlen(s);
  free(s);
}

/* A schema with each kind of node: a struct, a map, an atomic map, a
 * list-map with a defaulted key, a set, an atomic list, and deduced
 * fields elsewhere. */
static const char SCHEMA[] =
    "{\"T\":{\"type\":\"object\",\"properties\":{\"metadata\":{\"type\":\"object\","
    "\"properties\":{\"name\":{\"type\":\"string\"},\"labels\":{\"type\":\"object\","
    "\"additionalProperties\":{\"type\":\"string\"}},\"finalizers\":{\"type\":\"array\","
    "\"items\":{\"type\":\"string\"},\"x-kubernetes-list-type\":\"set\"}}},\"spec\":{"
    "\"allOf\":[{\"$ref\":\"#/components/schemas/S\"}]},\"status\":{\"type\":\"object\"}}},"
    "\"S\":{\"type\":\"object\",\"properties\":{\"sel\":{\"type\":\"object\","
    "\"x-kubernetes-map-type\":\"atomic\",\"properties\":{\"a\":{\"type\":\"string\"}}},"
    "\"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"c\":{\"type\":"
    "\"array\",\"x-kubernetes-patch-strategy\":\"merge\",\"x-kubernetes-patch-merge-key\":"
    "\"name\",\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
    "\"p\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\",\"x-kubernetes-list-map-keys\":"
    "[\"port\",\"proto\"],\"items\":{\"type\":\"object\",\"properties\":{\"port\":{\"type\":"
    "\"integer\"},\"proto\":{\"type\":\"string\",\"default\":\"TCP\"}}}}}}}}}}";

/* Apply of the YAML body to target by "a", then by "b" with force, then
 * an Update of the result over target; results serialised. */
static void apply_mode(const json_t *target, const char *body, size_t n) {
  static json_t *defs;
  if (!defs) defs = json_loads(SCHEMA, 0, NULL);
  if (!defs) return;
  kin__ssa_schema sc = {defs, json_object_get(defs, "T")};
  char err[4096];
  json_t *cfg = kin__ssa_yaml_parse(body, n, err, sizeof err);
  if (!cfg) {
    sink += strlen(err);
    return;
  }
  kin__ssa_op op = {&sc, "a", "v1", "", "2026-01-01T00:00:00Z", NULL, 0, 0};
  int code;
  json_t *causes = NULL;
  const json_t *live = json_is_object(target) ? target : NULL;
  json_t *r1 = json_is_object(cfg) ? kin__ssa_apply(&op, live, cfg, &code, &causes, err, sizeof err)
                                   : NULL;
  if (r1) use(r1);
  json_decref(causes);
  causes = NULL;
  op.manager = "b";
  op.force = 1;
  json_t *r2 = r1 ? kin__ssa_apply(&op, r1, cfg, &code, &causes, err, sizeof err) : NULL;
  if (r2) {
    use(r2);
    json_t *upd = json_deep_copy(r2);
    op.manager = "c";
    if (upd && live) kin__ssa_update(&op, live, upd);
    if (upd) use(upd);
    json_decref(upd);
  }
  json_decref(causes);
  json_decref(r1);
  json_decref(r2);
  json_decref(cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2 || size > 64 * 1024) return 0;
  if (data[0] == 'a') {
    const char *p = (const char *)data + 1;
    const char *nl = memchr(p, '\n', size - 1);
    if (!nl) return 0;
    json_t *target = json_loadb(p, (size_t)(nl - p), JSON_DECODE_ANY, NULL);
    if (!target) return 0;
    json_t *target0 = json_deep_copy(target);
    apply_mode(target, nl + 1, size - 1 - (size_t)(nl + 1 - p));
    if (target0 && !json_equal(target, target0)) abort();
    json_decref(target0);
    json_decref(target);
    return 0;
  }
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
