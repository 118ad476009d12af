/* list_stream.c -- a list body split into items as it arrives; see
 * list_stream.h. A byte scanner that keeps its state across pieces: string
 * bodies are skipped 16 bytes at a time (kin__json_str_plain), and the
 * bytes of each region (envelope, item, the commas between items) are
 * copied once per piece, not per byte. */
#include "list_stream.h"

#include <stdlib.h>
#include <string.h>

#include "json_str.h"
#include "kin.h"

/* What may come next inside the items array. */
enum { W_ITEM_OR_END, W_ITEM, W_COMMA_OR_END };
/* What the string being read is. */
enum { S_NONE, S_KEY1, S_VAL1 };
/* The depth-1 member whose value comes next. */
enum { K_OTHER, K_ITEMS, K_KIND, K_API_VERSION };
/* Where the bytes being scanned go. */
enum { R_ENV, R_GAP, R_ITEM };

void kin__list_stream_init(kin__list_stream *ls, kin__list_item_fn on_item, void *ud) {
  memset(ls, 0, sizeof(*ls));
  ls->on_item = on_item;
  ls->ud = ud;
}

void kin__list_stream_free(kin__list_stream *ls) {
  free(ls->item);
  free(ls->env);
  ls->item = ls->env = NULL;
}

/* Appends n bytes to *buf (NUL kept after them). Returns 0 or KIN_ENOMEM. */
static int append(char **buf, size_t *len, size_t *cap, const char *p, size_t n) {
  if (*len + n + 1 > *cap) {
    size_t c = *cap ? *cap : 4096;
    while (c < *len + n + 1) c *= 2;
    char *b = realloc(*buf, c);
    if (!b) return KIN_ENOMEM;
    *buf = b;
    *cap = c;
  }
  memcpy(*buf + *len, p, n);
  *len += n;
  (*buf)[*len] = 0;
  return 0;
}

static void cap_add(kin__list_stream *ls, const char *p, size_t n) {
  if (ls->str_role == S_NONE || ls->cap_over) return;
  if (ls->cap_len + n >= sizeof(ls->cap)) {
    ls->cap_over = 1;
    return;
  }
  memcpy(ls->cap + ls->cap_len, p, n);
  ls->cap_len += n;
}

#define CAP_IS(ls, lit) \
  (!(ls)->cap_over && (ls)->cap_len == sizeof(lit) - 1 && !memcmp((ls)->cap, lit, sizeof(lit) - 1))

/* A string ended: what it was for. */
static void string_done(kin__list_stream *ls) {
  switch (ls->str_role) {
  case S_KEY1:
    ls->key1 = CAP_IS(ls, "items") ? K_ITEMS : CAP_IS(ls, "kind") ? K_KIND
             : CAP_IS(ls, "apiVersion") ? K_API_VERSION : K_OTHER;
    break;
  case S_VAL1:
    /* The first of duplicate members counts, as in the page scan; only a
     * value seen before the items can be given to them. */
    if (!ls->cap_over && !ls->items_seen) {
      if (ls->key1 == K_KIND && !ls->kind_seen) {
        ls->kind_seen = 1;
        if (ls->cap_len > 4 && !memcmp(ls->cap + ls->cap_len - 4, "List", 4)) {
          ls->kind_len = ls->cap_len - 4;
          memcpy(ls->kind, ls->cap, ls->kind_len);
        }
      } else if (ls->key1 == K_API_VERSION && !ls->av_seen) {
        ls->av_seen = 1;
        ls->av_len = ls->cap_len;
        memcpy(ls->api_version, ls->cap, ls->av_len);
      }
    }
    break;
  }
  ls->str_role = S_NONE;
}

/* Hands the item that ends at p[i] (its closing brace) to the callback. */
static int item_done(kin__list_stream *ls, const char *p, size_t start, size_t i) {
  int rc;
  const char *it;
  size_t len;
  if (ls->item_len) { /* began in an earlier piece */
    if ((rc = append(&ls->item, &ls->item_len, &ls->item_cap, p + start, i + 1 - start))) return rc;
    it = ls->item;
    len = ls->item_len;
  } else {
    it = p + start;
    len = i + 1 - start;
  }
  rc = ls->on_item(ls->ud, it, len, ls->nitems);
  ls->item_len = 0;
  ls->item_open = 0;
  ls->nitems++;
  return rc;
}

int kin__list_stream_feed(kin__list_stream *ls, const char *p, size_t n) {
  if (ls->err) return ls->err;
  const unsigned char *u = (const unsigned char *)p;
  int region = ls->item_open ? R_ITEM : ls->items_depth ? R_GAP : R_ENV;
  size_t start = 0; /* where the current region began in this piece */
  int rc = 0;
  size_t i = 0;
  while (i < n) {
    if (ls->in_str) {
      if (ls->esc) {
        ls->esc = 0;
        ls->cap_over |= ls->str_role != S_NONE;
        i++;
        continue;
      }
      size_t j = kin__json_str_plain(u, i, n);
      cap_add(ls, p + i, j - i);
      i = j;
      if (i == n) break;
      if (u[i] == '"') {
        ls->in_str = 0;
        string_done(ls);
      } else if (u[i] == '\\') {
        ls->esc = 1;
      } else {
        ls->cap_over |= ls->str_role != S_NONE; /* a control character: not captured */
      }
      i++;
      continue;
    }
    unsigned char c = u[i];
    if (region == R_GAP) { /* inside items, between elements */
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      } else if (c == ',' && ls->want == W_COMMA_OR_END) {
        ls->want = W_ITEM;
      } else if (c == ']' && ls->want != W_ITEM) {
        ls->items_depth = 0;
        ls->depth = 1;
        region = R_ENV;
        start = i; /* the ']' goes to the envelope */
      } else if (c == '{' && ls->want != W_COMMA_OR_END) {
        region = R_ITEM;
        start = i;
        ls->item_open = 1;
        ls->depth = 3;
      } else {
        /* An item that is no object (or a stray byte where one should be) */
        if (ls->want != W_COMMA_OR_END && c != ']' && c != ',') ls->bad_item = ls->nitems + 1;
        rc = KIN_EINVAL;
        break;
      }
      i++;
      continue;
    }
    switch (c) {
    case '"':
      ls->in_str = 1;
      ls->cap_len = 0;
      ls->cap_over = 0;
      ls->str_role = S_NONE;
      if (ls->depth == 1)
        ls->str_role = ls->key_state ? S_KEY1
                     : ls->key1 == K_KIND || ls->key1 == K_API_VERSION ? S_VAL1 : S_NONE;
      break;
    case ':':
      if (ls->depth == 1) ls->key_state = 0;
      break;
    case ',':
      if (ls->depth == 1) ls->key_state = 1;
      break;
    case '{':
    case '[':
      if (ls->depth == 1 && c == '[' && ls->key1 == K_ITEMS && !ls->items_seen && region == R_ENV) {
        /* The envelope keeps "[", then the items are split out. */
        if ((rc = append(&ls->env, &ls->env_len, &ls->env_cap, p + start, i + 1 - start))) break;
        ls->items_seen = 1;
        ls->items_depth = 1;
        ls->want = W_ITEM_OR_END;
        ls->depth = 2;
        region = R_GAP;
        i++;
        continue;
      }
      ls->depth++;
      if (ls->depth == 1) ls->key_state = 1;
      break;
    case '}':
    case ']':
      if (ls->depth == 0) {
        rc = KIN_EINVAL;
        break;
      }
      ls->depth--;
      if (region == R_ITEM && ls->depth == 2) {
        if (c != '}') { /* the item's brace closed by a bracket */
          rc = KIN_EINVAL;
          break;
        }
        if ((rc = item_done(ls, p, start, i))) break;
        region = R_GAP;
        ls->want = W_COMMA_OR_END;
      }
      break;
    default:
      break;
    }
    if (rc) break;
    i++;
  }
  if (rc == 0 && region == R_ENV)
    rc = append(&ls->env, &ls->env_len, &ls->env_cap, p + start, n - start);
  else if (rc == 0 && region == R_ITEM)
    rc = append(&ls->item, &ls->item_len, &ls->item_cap, p + start, n - start);
  if (rc) ls->err = rc;
  return rc;
}

int kin__list_stream_finish(kin__list_stream *ls) {
  if (ls->err) return ls->err;
  if (ls->in_str || ls->depth || ls->item_open || ls->items_depth || !ls->env_len) {
    ls->err = KIN_EINVAL;
    return ls->err;
  }
  return 0;
}
