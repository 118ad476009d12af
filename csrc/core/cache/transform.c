/* transform.c -- the informer factory's default transform: drop
 * metadata.managedFields, which is large and useless to controllers, before
 * an object is cached (client-go users do this with a TransformFunc). The
 * member is cut out of the raw JSON bytes with its separating comma; the
 * rest of the document stays byte for byte. */
#include <stdlib.h>
#include <string.h>

#include "informer_factory.h"
#include "json_span.h"
#include "kin.h"
#include "kobj.h"

/* Finds the byte range [*from, *to) to cut so that metadata loses its
 * managedFields member and stays valid JSON. Returns 1 when found, 0 when
 * absent, or a negative error. */
static int managed_fields_range(const char *js, size_t len, size_t *from, size_t *to) {
  jsmntok_t *t;
  int n = kin__span_tokenize(js, len, &t);
  if (n < 0) return n;
  int found = 0;
  int md = kin__span_get(js, t, n, 0, "metadata");
  if (md >= 0 && t[md].type == JSMN_OBJECT) {
    int prev_val = -1, i = md + 1;
    for (int m = 0; m < t[md].size && i + 1 < n; m++) {
      int next = kin__span_skip(t, n, i + 1);
      if (kin__span_is(js, &t[i], "managedFields")) {
        found = 1;
        if (m + 1 < t[md].size) {
          /* Not last: cut up to the next key, which takes the comma along. */
          *from = (size_t)kin__span_begin(&t[i]);
          *to = (size_t)kin__span_begin(&t[next]);
        } else if (prev_val >= 0) {
          /* Last: cut from the end of the previous value, comma included. */
          *from = (size_t)kin__span_end(&t[prev_val]);
          *to = (size_t)kin__span_end(&t[i + 1]);
        } else {
          *from = (size_t)kin__span_begin(&t[i]);
          *to = (size_t)kin__span_end(&t[i + 1]);
        }
        break;
      }
      prev_val = i + 1;
      i = next;
    }
  }
  free(t);
  return found;
}

/* Returns in *out a new object without metadata.managedFields, or a new
 * reference to in when it has none (or is a tombstone). in stays the
 * caller's; on failure *out is NULL. */
int kin_transform_drop_managed_fields(void *ud, kin_obj *in, kin_obj **out) {
  (void)ud;
  *out = NULL;
  size_t len;
  const char *js = kin_obj_json(in, &len);
  if (kin_obj_is_tombstone(in) || !js || !memmem(js, len, "\"managedFields\"", 15)) {
    *out = kin_obj_ref(in);
    return 0;
  }
  size_t from = 0, to = 0;
  int rc = managed_fields_range(js, len, &from, &to);
  if (rc < 0) return rc;
  if (rc == 0) {
    *out = kin_obj_ref(in);
    return 0;
  }
  char *cut = malloc(len - (to - from) + 1);
  if (!cut) return KIN_ENOMEM;
  memcpy(cut, js, from);
  memcpy(cut + from, js + to, len - to);
  size_t n = len - (to - from);
  cut[n] = 0;
  rc = kin_obj_parse_any(cut, n, out);
  free(cut);
  return rc;
}
