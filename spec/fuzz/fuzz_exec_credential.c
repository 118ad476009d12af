/* fuzz_exec_credential.c -- libFuzzer harness for the ExecCredential
 * parser (kin__exec_credential_parse, csrc/core/transport/exec_credential.c):
 * the input is a plugin's output, parsed for both API versions. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubeconfig.h"

static volatile size_t sink;

static size_t slen(const char *s) { return s ? strlen(s) : 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const versions[] = {"client.authentication.k8s.io/v1",
                                         "client.authentication.k8s.io/v1beta1"};
  /* A copy of exactly size bytes, so ASan sees any read past the end. */
  char *buf = malloc(size ? size : 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  for (int i = 0; i < 2; i++) {
    kin_exec_credential cred;
    char err[512];
    if (kin__exec_credential_parse("fuzz-plugin", versions[i], buf, size, &cred, err,
                                   sizeof err) == 0) {
      sink += slen(cred.token) + slen(cred.client_cert_data) + slen(cred.client_key_data) +
              (size_t)cred.expiration;
      kin_exec_credential_clear(&cred);
    } else {
      sink += strlen(err);
      /* A failed parse leaves nothing behind. */
      if (cred.token || cred.client_cert_data || cred.client_key_data) abort();
    }
  }
  free(buf);
  return 0;
}
