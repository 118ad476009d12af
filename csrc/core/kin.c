/* kin.c -- error strings. */
#include "kin.h"

#include <string.h>

const char *kin_strerror(int err) {
  switch (err) {
  case KIN_OK: return "success";
  case KIN_ENOMEM: return "out of memory";
  case KIN_EINVAL: return "invalid argument or malformed input";
  case KIN_ENOENT: return "not found";
  case KIN_EEXIST: return "already exists";
  case KIN_ECLOSED: return "closed";
  case KIN_ETIMEDOUT: return "timed out";
  case KIN_EBUSY: return "busy";
  case KIN_ECANCELED: return "canceled";
  case KIN_EIO: return "transport error";
  case KIN_ESTATUS: return "the server returned an error status";
  default: return err < 0 ? strerror(-err) : "unknown error";
  }
}
