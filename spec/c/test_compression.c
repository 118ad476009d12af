/* test_compression.c -- gzip as client-go's transport asks for it: every
 * request carries Accept-Encoding: gzip unless kin_client_opts or the
 * kubeconfig's cluster disable-compression says not to; a gzip answer
 * reaches the caller decoded, and max_response_bytes caps the decoded
 * bytes, so a small body that inflates without end (a gzip bomb) fails
 * with KIN_ETOOBIG at the cap. The server is bad_server.h's. */
#include "kin_test.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "bad_server.h"
#include "kin.h"
#include "kubeconfig.h"
#include "rest_client.h"

#define LIST_PATH "/api/v1/namespaces/default/configmaps"
static const char list_body[] =
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"7\"},"
    "\"items\":[{\"metadata\":{\"name\":\"a\",\"namespace\":\"default\"},\"data\":{\"k\":\"v\"}}]}";

enum { M_LIST, M_BOMB };

typedef struct {
  int mode;
  atomic_int asked; /* requests that offered gzip */
  atomic_int plain; /* requests that did not */
} srv_state;

/* The gzip of body (M_LIST), or of a ConfigMap whose data string runs for
 * n bytes of 'A' (M_BOMB); malloc'd, its size in *out_len. */
static unsigned char *gzip_of(const char *body, size_t n, int bomb, size_t *out_len) {
  static const char bomb_head[] =
      "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x\"},\"data\":{\"k\":\"";
  static char block[1 << 16];
  memset(block, 'A', sizeof block);
  z_stream z = {0};
  assert_int_equal(deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  size_t cap = 1 << 20, len = 0;
  unsigned char *out = malloc(cap);
  const char *piece = bomb ? bomb_head : body;
  size_t left = bomb ? n : 0; /* bytes of 'A' still to come after piece */
  for (;;) {
    z.next_in = (unsigned char *)piece;
    z.avail_in = (uInt)(piece == block ? (left < sizeof block ? left : sizeof block) : strlen(piece));
    if (piece == block) left -= z.avail_in;
    int flush = left ? Z_NO_FLUSH : Z_FINISH, rc;
    do {
      if (cap - len < 65536) out = realloc(out, cap *= 2);
      z.next_out = out + len;
      z.avail_out = (uInt)(cap - len);
      rc = deflate(&z, flush);
      assert_true(rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR);
      len = cap - z.avail_out;
    } while (z.avail_in || (flush == Z_FINISH && rc != Z_STREAM_END));
    if (rc == Z_STREAM_END) break;
    piece = block;
  }
  deflateEnd(&z);
  *out_len = len;
  return out;
}

static void serve(bad_server *s, int fd, const char *method, const char *target,
                  const char *headers) {
  srv_state *st = s->ud;
  int gz = strcasestr(headers, "Accept-Encoding: gzip") != NULL;
  atomic_fetch_add(gz ? &st->asked : &st->plain, 1);
  if (!gz) {
    bs_json(fd, list_body);
    return;
  }
  size_t n;
  unsigned char *z = gzip_of(list_body, (size_t)64 << 20, st->mode == M_BOMB, &n);
  char h[256];
  snprintf(h, sizeof h,
           "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
           "Content-Length: %zu\r\nConnection: close\r\n\r\n", n);
  if (bs_puts(fd, h) == 0) bs_write(fd, (const char *)z, n);
  free(z);
}

static kin_client *client_to(bad_server *s, int disable, int cfg_disable, int64_t cap) {
  char url[64];
  kin_rest_config cfg = {.host = (char *)bs_url(s, url, sizeof url),
                         .disable_compression = cfg_disable};
  kin_client_opts o = {.max_response_bytes = cap, .max_retries = -1, .disable_compression = disable};
  kin_client *c = NULL;
  char err[256];
  assert_int_equal(kin_client_new(&cfg, NULL, &o, &c, err, sizeof err), 0);
  return c;
}

/* By default gzip is asked for, and the compressed list comes decoded. */
static void test_compression_GzipAskedAndDecoded(void **state) {
  srv_state st = {.mode = M_LIST};
  bad_server *s = bs_start(serve, &st);
  kin_client *c = client_to(s, 0, 0, 0);
  kin_client_request req = {.path = LIST_PATH};
  kin_result r;
  assert_int_equal(kin_client_do(c, &req, &r), 0);
  assert_int_equal(r.code, 200);
  assert_int_equal(atomic_load(&st.asked), 1);
  assert_int_equal(atomic_load(&st.plain), 0);
  assert_int_equal(r.body_len, strlen(list_body));
  assert_string_equal(r.body, list_body);
  kin_result_free(&r);
  kin_client_free(c);
  bs_stop(s);
}

/* kin_client_opts.disable_compression, or the config's (the kubeconfig's
 * cluster disable-compression), sends no Accept-Encoding. */
static void test_compression_DisabledAsksPlain(void **state) {
  for (int which = 0; which < 2; which++) {
    srv_state st = {.mode = M_LIST};
    bad_server *s = bs_start(serve, &st);
    kin_client *c = client_to(s, which == 0, which == 1, 0);
    kin_client_request req = {.path = LIST_PATH};
    kin_result r;
    assert_int_equal(kin_client_do(c, &req, &r), 0);
    assert_int_equal(atomic_load(&st.asked), 0);
    assert_int_equal(atomic_load(&st.plain), 1);
    assert_string_equal(r.body, list_body);
    pthread_mutex_lock(&s->mu);
    assert_null(strcasestr(s->last_headers, "Accept-Encoding"));
    pthread_mutex_unlock(&s->mu);
    kin_result_free(&r);
    kin_client_free(c);
    bs_stop(s);
  }
}

/* 64 MiB of body in about 64 KiB of gzip: the cap counts decoded bytes. */
static void test_compression_BombStopsAtTheCap(void **state) {
  srv_state st = {.mode = M_BOMB};
  bad_server *s = bs_start(serve, &st);
  kin_client *c = client_to(s, 0, 0, (int64_t)1 << 20);
  kin_client_request req = {.path = LIST_PATH "/x"};
  kin_result r;
  assert_int_equal(kin_client_do(c, &req, &r), KIN_ETOOBIG);
  assert_non_null(r.message);
  assert_non_null(strstr(r.message, "response body larger than its cap of 1048576 bytes"));
  kin_result_free(&r);
  kin_client_free(c);
  bs_stop(s);
}

/* The kubeconfig's cluster disable-compression is read as a boolean. */
static void test_compression_KubeconfigField(void **state) {
  char path[] = "/tmp/kin-kc-gzip-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  for (int v = 0; v < 3; v++) {
    static const char *const vals[] = {"true", "false", "maybe"};
    char kc[512];
    int n = snprintf(kc, sizeof kc,
                     "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                     "clusters:\n- name: k\n  cluster:\n    server: http://127.0.0.1:1\n"
                     "    disable-compression: %s\n"
                     "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                     "users:\n- name: u\n  user: {}\n", vals[v]);
    assert_int_equal(pwrite(fd, kc, (size_t)n, 0), n);
    assert_int_equal(ftruncate(fd, n), 0);
    kin_kubeconfig_opts o = {.path = path};
    kin_rest_config *cfg = NULL;
    char err[512] = "";
    int rc = kin_kubeconfig_load(&o, &cfg, err, sizeof err);
    if (v < 2) {
      assert_int_equal(rc, 0);
      assert_int_equal(cfg->disable_compression, v == 0);
      kin_rest_config_free(cfg);
    } else {
      assert_int_equal(rc, KIN_EINVAL);
      assert_non_null(strstr(err, "disable-compression: not a boolean"));
    }
  }
  close(fd);
  unlink(path);
}

KIN_SUITE(compression, cmocka_unit_test(test_compression_GzipAskedAndDecoded),
          cmocka_unit_test(test_compression_DisabledAsksPlain),
          cmocka_unit_test(test_compression_BombStopsAtTheCap),
          cmocka_unit_test(test_compression_KubeconfigField))
