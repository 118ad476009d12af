/* authfilter.c -- TokenReview + SubjectAccessReview with caches, as
 * controller-runtime's metrics filter (see authfilter.h). */
#include "authfilter.h"

#include <gnutls/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "clock.h"
#include "hmap.h"
#include "json_tok.h"
#include "kin.h"
#include "log.h"

#define TOKEN_TTL_NS (60ull * 1000000000ull)
#define ALLOW_TTL_NS (300ull * 1000000000ull)
#define DENY_TTL_NS (30ull * 1000000000ull)
#define MAX_ENTRIES 4096
#define REVIEW_TIMEOUT_MS 10000

/* A cached TokenReview: who the token is (NULL: not authenticated). */
typedef struct {
  uint64_t expires;
  char *name; /* the user's name */
  char *spec; /* "user":..,"uid":..,"groups":[..],"extra":{..} of a SAR spec */
} tok_entry;

typedef struct {
  uint64_t expires;
  int allowed;
} sar_entry;

struct kin__authfilter {
  kin_client *client;
  char what[32];
  pthread_mutex_t mu; /* guards tokens and sars (leaf) */
  kin__hmap tokens;   /* sha256 hex -> tok_entry */
  kin__hmap sars;     /* user spec + verb + path -> sar_entry */
};

/* The real clock's now, in ns: the caches' expiry times. */
static uint64_t now_ns(void) { return kin_clock_now(kin_clock_real()); }

/* See authfilter.h: NULL on OOM. */
kin__authfilter *kin__authfilter_new(kin_client *c, const char *what) {
  kin__authfilter *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->client = c;
  snprintf(f->what, sizeof f->what, "%s", what ? what : "metrics");
  pthread_mutex_init(&f->mu, NULL);
  kin__hmap_init(&f->tokens);
  kin__hmap_init(&f->sars);
  return f;
}

/* Frees a tok_entry and its strings (NULL: nothing). */
static void tok_free(void *v) {
  tok_entry *e = v;
  if (!e) return;
  free(e->name);
  free(e->spec);
  free(e);
}

/* Frees every value of m and the map; kind 't' tokens, 's' decisions. */
static void clear_map(kin__hmap *m, int kind) {
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(m, &pos)) != NULL) {
    if (kind == 't') tok_free(e->val);
    else free(e->val);
  }
  kin__hmap_free(m);
  kin__hmap_init(m);
}

void kin__authfilter_free(kin__authfilter *f) {
  if (!f) return;
  clear_map(&f->tokens, 't');
  clear_map(&f->sars, 's');
  pthread_mutex_destroy(&f->mu);
  free(f);
}

/* Under f->mu: makes room for one entry in m (expired ones first, then
 * all). The expiry is the first field of both entry types. */
static void make_room(kin__hmap *m, int kind, uint64_t now) {
  if (kin__hmap_len(m) < MAX_ENTRIES) return;
  kin__hmap fresh;
  kin__hmap_init(&fresh);
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(m, &pos)) != NULL) {
    uint64_t exp = *(uint64_t *)e->val;
    if (exp > now && kin__hmap_len(&fresh) < MAX_ENTRIES / 2 &&
        kin__hmap_put(&fresh, e->key, e->val, NULL) >= 0)
      continue;
    if (kind == 't') tok_free(e->val);
    else free(e->val);
  }
  kin__hmap_free(m);
  *m = fresh;
}

/* ---- JSON ------------------------------------------------------------------ */

/* Appends the string array at i of j as JSON to b. */
static void put_strings(kin__buf *b, const kin__json *j, int i) {
  kin__buf_puts(b, "[");
  int n = kin__json_array_size(j, i), k = i + 1;
  for (int x = 0; x < n; x++, k = kin__json_next(j, k)) {
    char *s = kin__json_strdup(j, k);
    if (x) kin__buf_puts(b, ",");
    kin__buf_json_str(b, s ? s : "");
    free(s);
  }
  kin__buf_puts(b, "]");
}

/* Builds the SAR spec fields of the user object at u. Returns a malloc'd
 * string or NULL. */
static char *user_spec(const kin__json *j, int u, char **name) {
  kin__buf b = {0};
  char *n = kin__json_strdup(j, kin__json_get(j, u, "username"));
  char *uid = kin__json_strdup(j, kin__json_get(j, u, "uid"));
  kin__buf_puts(&b, "\"user\":");
  kin__buf_json_str(&b, n ? n : "");
  if (uid && *uid) {
    kin__buf_puts(&b, ",\"uid\":");
    kin__buf_json_str(&b, uid);
  }
  free(uid);
  int g = kin__json_get(j, u, "groups");
  if (kin__json_array_size(j, g) > 0) {
    kin__buf_puts(&b, ",\"groups\":");
    put_strings(&b, j, g);
  }
  int x = kin__json_get(j, u, "extra");
  if (x >= 0 && kin__json_is_object(j, x)) {
    kin__buf_puts(&b, ",\"extra\":{");
    int end = kin__json_next(j, x), first = 1;
    for (int k = x + 1; k < end; k = kin__json_next(j, k + 1)) {
      char *key = kin__json_strdup(j, k);
      if (key && kin__json_array_size(j, k + 1) >= 0) {
        kin__buf_puts(&b, first ? "" : ",");
        first = 0;
        kin__buf_json_str(&b, key);
        kin__buf_puts(&b, ":");
        put_strings(&b, j, k + 1);
      }
      free(key);
    }
    kin__buf_puts(&b, "}");
  }
  if (b.oom || !n) {
    free(n);
    kin__buf_free(&b);
    return NULL;
  }
  *name = n;
  return b.p;
}

/* POSTs body to path; returns 0 with the parsed status object index in
 * *st (j holds the answer, res the result: both freed by the caller), or
 * an error with why filled. */
static int review(kin__authfilter *f, const char *path, kin__buf *body, kin_result *res,
                  kin__json *j, int *st, char *why, size_t n) {
  /* outside the client's rate limiter, as controller-runtime's reviews
   * use clients of their own: a flood of bogus tokens must not eat the
   * reconcilers' budget. The endpoint's one thread sends them one at a
   * time, which bounds what they cost the API server. */
  kin_client_request req = {.method = "POST", .path = path, .body = body->p,
                            .body_len = body->len, .timeout_ms = REVIEW_TIMEOUT_MS,
                            .idempotent = 1, .unlimited = 1};
  memset(res, 0, sizeof *res);
  memset(j, 0, sizeof *j);
  int rc = kin_client_do(f->client, &req, res);
  if (rc) {
    snprintf(why, n, "%s", res->message ? res->message : kin_strerror(rc));
    return rc;
  }
  if (!res->body || kin__json_parse(j, res->body, res->body_len) != 0) {
    snprintf(why, n, "POST %s: the answer is not JSON", path);
    return KIN_EINVAL;
  }
  *st = kin__json_get(j, 0, "status");
  return 0;
}

/* Copies the user of e into *out (the caller frees it with tok_free).
 * Returns 1, or KIN_ENOMEM (*out NULL). */
static int copy_user(const tok_entry *e, tok_entry **out) {
  tok_entry *c = calloc(1, sizeof *c);
  if (c && (c->name = strdup(e->name)) && (c->spec = strdup(e->spec))) {
    *out = c;
    return 1;
  }
  tok_free(c);
  *out = NULL;
  return KIN_ENOMEM;
}

/* Authenticates token: returns 1 (entry in *out, a copy the caller frees
 * with tok_free), 0 (not authenticated), or an error (logged). */
static int authenticate(kin__authfilter *f, const char *token, tok_entry **out) {
  char hex[65];
  unsigned char dig[32];
  gnutls_hash_fast(GNUTLS_DIG_SHA256, token, strlen(token), dig);
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", dig[i]);
  uint64_t now = now_ns();
  pthread_mutex_lock(&f->mu);
  void **v = kin__hmap_get(&f->tokens, hex);
  tok_entry *e = v ? *v : NULL;
  int rc = -1;
  if (e && e->expires > now) rc = e->name ? copy_user(e, out) : 0;
  pthread_mutex_unlock(&f->mu);
  if (rc != -1) return rc;

  kin__buf body = {0};
  kin__buf_puts(&body, "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\","
                       "\"spec\":{\"token\":");
  kin__buf_json_str(&body, token);
  kin__buf_puts(&body, "}}");
  if (body.oom) {
    kin__buf_free(&body);
    return KIN_ENOMEM;
  }
  kin_result res;
  kin__json j;
  int st = -1;
  char why[512];
  rc = review(f, "/apis/authentication.k8s.io/v1/tokenreviews", &body, &res, &j, &st, why, sizeof why);
  memset(body.p, 0, body.len);
  kin__buf_free(&body);
  tok_entry *ne = NULL;
  if (rc == 0) {
    ne = calloc(1, sizeof *ne);
    if (ne && kin__json_true(&j, kin__json_get(&j, st, "authenticated"))) {
      int u = kin__json_get(&j, st, "user");
      ne->spec = user_spec(&j, u, &ne->name);
      if (!ne->spec) {
        tok_free(ne);
        ne = NULL;
      }
    }
    if (!ne) rc = KIN_ENOMEM;
  } else {
    kin_log(KIN_LOG_ERROR, f->what, "Authentication failed: TokenReview: %s", why);
  }
  kin__json_free(&j);
  kin_result_free(&res);
  if (rc) return rc;
  ne->expires = now + TOKEN_TTL_NS;
  int ok = ne->name ? copy_user(ne, out) : 0;
  if (ok < 0) {
    tok_free(ne);
    return ok;
  }
  pthread_mutex_lock(&f->mu);
  make_room(&f->tokens, 't', now);
  void *old = NULL;
  if (kin__hmap_put(&f->tokens, hex, ne, &old) < 0) tok_free(ne);
  else tok_free(old);
  pthread_mutex_unlock(&f->mu);
  return ok;
}

/* Authorizes user (spec) for verb on path: 1 allowed, 0 denied, or an
 * error (logged). */
static int authorize(kin__authfilter *f, const tok_entry *user, const char *verb,
                     const char *path) {
  kin__buf key = {0};
  kin__buf_printf(&key, "%s\n%s\n%s", user->spec, verb, path);
  if (key.oom) return KIN_ENOMEM;
  uint64_t now = now_ns();
  int rc = -1;
  pthread_mutex_lock(&f->mu);
  void **v = kin__hmap_get(&f->sars, key.p);
  sar_entry *e = v ? *v : NULL;
  if (e && e->expires > now) rc = e->allowed;
  pthread_mutex_unlock(&f->mu);
  if (rc != -1) {
    kin__buf_free(&key);
    return rc;
  }
  kin__buf body = {0};
  kin__buf_puts(&body, "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\","
                       "\"spec\":{\"nonResourceAttributes\":{\"path\":");
  kin__buf_json_str(&body, path);
  kin__buf_puts(&body, ",\"verb\":");
  kin__buf_json_str(&body, verb);
  kin__buf_printf(&body, "},%s}}", user->spec);
  kin_result res;
  kin__json j;
  int st = -1;
  char why[512];
  rc = body.oom ? KIN_ENOMEM
                : review(f, "/apis/authorization.k8s.io/v1/subjectaccessreviews", &body, &res, &j,
                         &st, why, sizeof why);
  kin__buf_free(&body);
  if (rc == 0) {
    rc = kin__json_true(&j, kin__json_get(&j, st, "allowed"));
    if (rc == 0) {
      char *reason = kin__json_strdup(&j, kin__json_get(&j, st, "reason"));
      kin_log(KIN_LOG_DEBUG, f->what, "Authorization denied for user %s: %s", user->name,
              reason && *reason ? reason : "no RBAC rule allows it");
      free(reason);
    }
    kin__json_free(&j);
    kin_result_free(&res);
  } else if (rc != KIN_ENOMEM) {
    kin_log(KIN_LOG_ERROR, f->what, "Authorization for user %s failed: SubjectAccessReview: %s",
            user->name, why);
    kin__json_free(&j);
    kin_result_free(&res);
  }
  if (rc >= 0) {
    sar_entry *ne = malloc(sizeof *ne);
    if (ne) {
      ne->expires = now + (rc ? ALLOW_TTL_NS : DENY_TTL_NS);
      ne->allowed = rc;
      pthread_mutex_lock(&f->mu);
      make_room(&f->sars, 's', now);
      void *old = NULL;
      if (kin__hmap_put(&f->sars, key.p, ne, &old) < 0) free(ne);
      else free(old);
      pthread_mutex_unlock(&f->mu);
    }
  }
  kin__buf_free(&key);
  return rc;
}

int kin__authfilter_check(kin__authfilter *f, const char *authorization, const char *method,
                          const char *path, char *msg, size_t msglen) {
  const char *tok = NULL;
  if (authorization && strncasecmp(authorization, "Bearer ", 7) == 0) {
    tok = authorization + 7;
    while (*tok == ' ') tok++;
  }
  if (!tok || !*tok) {
    snprintf(msg, msglen, "Unauthorized\n");
    return 401;
  }
  tok_entry *user = NULL;
  int rc = authenticate(f, tok, &user);
  if (rc < 0) {
    snprintf(msg, msglen, "Authentication failed\n");
    return 500;
  }
  if (rc == 0) {
    kin_log(KIN_LOG_DEBUG, f->what, "Authentication failed: the token was not authenticated");
    snprintf(msg, msglen, "Unauthorized\n");
    return 401;
  }
  char verb[16];
  size_t i = 0;
  for (; method[i] && i < sizeof verb - 1; i++)
    verb[i] = (char)(method[i] >= 'A' && method[i] <= 'Z' ? method[i] + 32 : method[i]);
  verb[i] = 0;
  rc = authorize(f, user, verb, path);
  int status = rc < 0 ? 500 : rc ? 200 : 403;
  if (rc < 0) snprintf(msg, msglen, "Authorization for user %s failed\n", user->name);
  else if (!rc) snprintf(msg, msglen, "Authorization denied for user %s\n", user->name);
  tok_free(user);
  return status;
}
