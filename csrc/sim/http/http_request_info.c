/* http_request_info.c -- RequestInfo of a URL path, following
 * k8s.io/apiserver pkg/endpoints/request/requestinfo.go:
 *   /api/v1[/watch]/namespaces/{ns}/{resource}[/{name}[/{subresource}]]
 *   /apis/{group}/{version}[/watch]/{resource}[/{name}[/{subresource}]]
 * and /namespaces/{name}[/status|/finalize] for namespaces themselves. */
#include <stdio.h>
#include <string.h>

#include "http_int.h"

static int copy(char *dst, size_t cap, const char *s) {
  size_t n = strlen(s);
  if (n >= cap) return -1;
  memcpy(dst, s, n + 1);
  return 0;
}

int kin__sim_request_info_parse(const char *url, kin__sim_request_info *ri) {
  memset(ri, 0, sizeof(*ri));
  char path[2048];
  if (copy(path, sizeof(path), url)) return -1;
  char *q = strchr(path, '?');
  if (q) *q = 0;
  char *parts[16];
  int n = 0;
  for (char *save, *t = strtok_r(path, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
    if (n == 16) return -1;
    parts[n++] = t;
  }
  int i = 0;
  if (n >= 2 && !strcmp(parts[0], "api")) {
    if (copy(ri->version, sizeof(ri->version), parts[1])) return -1;
    i = 2;
  } else if (n >= 3 && !strcmp(parts[0], "apis")) {
    if (copy(ri->group, sizeof(ri->group), parts[1]) ||
        copy(ri->version, sizeof(ri->version), parts[2]))
      return -1;
    i = 3;
  } else {
    return 1;
  }
  if (i >= n) return 1; /* /api/v1, /apis/g/v: discovery */
  if (!strcmp(parts[i], "watch")) {
    ri->watch_path = 1;
    i++;
  }
  if (i >= n) return -1;
  if (!strcmp(parts[i], "namespaces") && i + 1 < n) {
    if (copy(ri->ns, sizeof(ri->ns), parts[i + 1])) return -1;
    if (i + 2 < n && strcmp(parts[i + 2], "status") && strcmp(parts[i + 2], "finalize")) {
      i += 2;
    }
  }
  if (copy(ri->resource, sizeof(ri->resource), parts[i])) return -1;
  if (i + 1 < n && copy(ri->name, sizeof(ri->name), parts[i + 1])) return -1;
  if (i + 2 < n && copy(ri->subresource, sizeof(ri->subresource), parts[i + 2])) return -1;
  if (i + 3 < n) return -1;
  /* /namespaces/{name}: the namespace is the object itself. */
  if (!strcmp(ri->resource, "namespaces")) ri->ns[0] = 0;
  ri->is_resource = 1;
  return 0;
}
