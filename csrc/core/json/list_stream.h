/* list_stream.h -- splitting a list body (a Kubernetes List: kind,
 * apiVersion, metadata, items) into its items as the bytes arrive, so the
 * reflector parses a LIST of tens of MB while it downloads instead of
 * holding it whole (internal).
 *
 * Fed piece by piece (any boundaries), the splitter hands each element of
 * the top-level "items" array to a callback as soon as its closing brace
 * arrives: a pointer into the piece when the element lies within it, else
 * into a buffer of its own that grows to the element's size. Everything
 * outside the items (the envelope, with "items":[]) is kept, so that at
 * the end the caller checks it strictly and reads metadata.resourceVersion
 * and continue from it (json_check.h). The splitter itself checks only what
 * it must to find the items: strings, nesting, and the array's commas; each
 * item is checked strictly by whoever parses it (kin_obj_parse).
 *
 * kind and apiVersion of the list are captured when they come before the
 * items (as every apiserver writes them), so the items that lack their own
 * can be given them (plain text only: a value with an escape or a control
 * character is not captured). Not thread-safe: one splitter per request. */
#ifndef KIN_LIST_STREAM_H
#define KIN_LIST_STREAM_H

#include <stddef.h>

/* One item: its bytes (braces included) and its index in the array.
 * Returns 0 to go on, or an error that stops the splitter (and is returned
 * by feed). */
typedef int (*kin__list_item_fn)(void *ud, const char *item, size_t len, size_t index);

typedef struct {
  kin__list_item_fn on_item;
  void *ud;
  int err;                 /* the first error; feed returns it from then on */
  /* Scanner state across pieces. */
  size_t depth;            /* containers open */
  int in_str, esc;         /* inside a string; after a backslash in it */
  int items_depth;         /* 1 while inside the items array (depth 2) */
  int items_seen;          /* an items array was found (the first counts) */
  int want;                /* inside items at depth 2: what may come next */
  int key_state;           /* depth 1: expecting a key */
  int str_role;            /* what the string being read is (key, value) */
  char cap[64];            /* the string being captured (a key or value) */
  size_t cap_len;
  int cap_over;            /* longer than cap, or escaped */
  int key1;                /* the depth-1 member whose value comes next */
  size_t nitems;
  /* The item being read when it spans pieces. */
  char *item;
  size_t item_len, item_cap;
  int item_open;           /* inside an item */
  /* The envelope (everything outside the items). */
  char *env;
  size_t env_len, env_cap;
  /* The list's kind without "List" and apiVersion, when captured before
   * the items (kind_len 0: not usable). */
  char kind[64], api_version[64];
  size_t kind_len, av_len;
  int kind_seen, av_seen; /* the first of each counts */
  size_t bad_item;        /* feed failed at item bad_item - 1, no object */
} kin__list_stream;

/* Initialises ls. */
void kin__list_stream_init(kin__list_stream *ls, kin__list_item_fn on_item, void *ud);

/* Feeds the next n bytes. Returns 0, KIN_EINVAL (not a list: bad nesting,
 * an item that is no object, a missing comma), KIN_ENOMEM, or the
 * callback's error; once it failed it returns that error again. */
int kin__list_stream_feed(kin__list_stream *ls, const char *p, size_t n);

/* After the last piece: 0 when the body ended at the close of its
 * top-level value; the envelope then is in ls->env / env_len (NUL-ended).
 * KIN_EINVAL otherwise. */
int kin__list_stream_finish(kin__list_stream *ls);

/* Frees the buffers. */
void kin__list_stream_free(kin__list_stream *ls);

#endif
