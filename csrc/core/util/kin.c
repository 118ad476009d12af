/* kin.c -- error names and strings: one table for every kin error code. */
#include "kin.h"

#include <string.h>

static const struct {
  int code;
  const char *name;
  const char *text;
} errors[] = {
    {KIN_OK, "OK", "success"},
    {KIN_ENOMEM, "ENOMEM", "out of memory"},
    {KIN_EINVAL, "EINVAL", "invalid argument or malformed input"},
    {KIN_ENOENT, "ENOENT", "not found"},
    {KIN_EEXIST, "EEXIST", "already exists"},
    {KIN_ECLOSED, "ECLOSED", "closed"},
    {KIN_ETIMEDOUT, "ETIMEDOUT", "timed out"},
    {KIN_EBUSY, "EBUSY", "busy"},
    {KIN_ECANCELED, "ECANCELED", "canceled"},
    {KIN_EIO, "EIO", "transport error"},
    {KIN_ESTATUS, "ESTATUS", "the server returned an error status"},
    {KIN_EFENCED, "EFENCED", "refused: leadership has ended"},
    {KIN_ETOOBIG, "ETOOBIG", "response larger than its cap"},
};

const char *kin_strerror(int err) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == err) return errors[i].text;
  return err < 0 ? strerror(-err) : "unknown error";
}

const char *kin_errname(int err) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == err) return errors[i].name;
  const char *n = err < 0 ? strerrorname_np(-err) : NULL;
  return n ? n : "EUNKNOWN";
}
