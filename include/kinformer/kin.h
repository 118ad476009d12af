/* kin.h -- definitions shared by every part of the kinformer C core.
 *
 * Conventions (libuv style): public names start with kin_, internal ones
 * with kin__; functions return 0 or a negative error code from the list
 * below; every function that takes or returns memory says who owns it.
 * Nothing in the core calls exit() or abort() on bad input. */
#ifndef KIN_H
#define KIN_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define KIN_VERSION "0.1.0"

/* Error codes are negated errno values so they can be reported with
 * strerror() and compared with the values libuv returns. */
enum {
  KIN_OK = 0,
  KIN_ENOMEM = -ENOMEM,      /* allocation failed */
  KIN_EINVAL = -EINVAL,      /* malformed input or misuse */
  KIN_ENOENT = -ENOENT,      /* no such key / index */
  KIN_EEXIST = -EEXIST,      /* already registered */
  KIN_ECLOSED = -EPIPE,      /* the queue or FIFO was shut down / closed */
  KIN_ETIMEDOUT = -ETIMEDOUT,/* a wait ran out of time */
  KIN_EBUSY = -EBUSY,        /* operation not allowed in the current state */
  KIN_ECANCELED = -ECANCELED, /* a callback asked to stop */
  KIN_EIO = -EIO,            /* transport failure: connection, TLS, broken stream */
  KIN_ESTATUS = -EREMOTEIO,  /* the API server answered with an error Status */
  KIN_EFENCED = -ESTALE,     /* a write refused locally: the leadership it was
                                made under has ended (call_ctx.h) */
  KIN_ETOOBIG = -EFBIG       /* a response passed a size cap (body, items) */
};

/* Returns a static, human-readable description of a kin error code. */
const char *kin_strerror(int err);

/* Returns the static symbolic name of an error code ("ENOMEM", "EIO",
 * "ESTATUS", ...): the kin codes above from one table (kin.c), any other
 * negated errno by its errno name ("EACCES"), "EUNKNOWN" only for a value
 * that is neither. The Lua binding returns these as error codes. */
const char *kin_errname(int err);

#define KIN_NSEC_PER_USEC 1000ULL
#define KIN_NSEC_PER_MSEC 1000000ULL
#define KIN_NSEC_PER_SEC 1000000000ULL

#endif
