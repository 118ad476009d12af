/* transform.c -- the informer factory's default transform: drop
 * metadata.managedFields, which is large and useless to controllers, before
 * an object is cached (client-go users do this with a TransformFunc). The
 * member is cut out of the raw JSON bytes with its separating comma (the
 * parse found where: kin__obj_managed_fields_cut; kin__obj_cut makes the
 * new object without parsing again); the rest of the document stays byte
 * for byte. */
#include <stdlib.h>
#include <string.h>

#include "informer_factory.h"
#include "kin.h"
#include "kobj.h"
#include "kobj_int.h"

/* Returns in *out a new object without metadata.managedFields, or a new
 * reference to in when it has none (or is a tombstone). in stays the
 * caller's; on failure *out is NULL. */
int kin_transform_drop_managed_fields(void *ud, kin_obj *in, kin_obj **out) {
  (void)ud;
  *out = NULL;
  size_t len;
  const char *js = kin_obj_json(in, &len);
  kin_span c = kin__obj_managed_fields_cut(in);
  if (kin_obj_is_tombstone(in) || !js || !c.len) {
    *out = kin_obj_ref(in);
    return 0;
  }
  return kin__obj_cut(in, c, out);
}
