/* http_request_info.c -- RequestInfo of a URL path, following
 * k8s.io/apiserver pkg/endpoints/request/requestinfo.go:
 *   /api/v1[/watch]/namespaces/{ns}/{resource}[/{name}[/{subresource}]]
 *   /apis/{group}/{version}[/watch]/{resource}[/{name}[/{subresource}]]
 * and /namespaces/{name}[/status|/finalize] for namespaces themselves; the
 * authorizer's attributes of a request (its verb, and the name a list's
 * field selector limits it to). */
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
/* The RBAC verb of an HTTP method on a resource path before the list and
 * collection rules (requestinfo.go): "" for a method it does not map. */
static const char *method_verb(const char *m) {
  if (!strcmp(m, "GET") || !strcmp(m, "HEAD")) return "get";
  if (!strcmp(m, "POST")) return "create";
  if (!strcmp(m, "PUT")) return "update";
  if (!strcmp(m, "PATCH")) return "patch";
  if (!strcmp(m, "DELETE")) return "delete";
  return "";
}

/* The name a list or watch is limited to by its field selector, as
 * RequestInfo takes it: fields.ParseSelector (terms split at unescaped
 * commas, each at its first "!=", "==" or "=", every value unescaped, an
 * unescaped ',' or '=' or a bad escape failing the whole selector), then
 * RequiresExactMatch("metadata.name") (the first metadata.name=X or ==X),
 * kept when a valid path segment (not "." or "..", no '/' or '%'). Copies
 * it to out and returns 1; 0 when there is none or the selector does not
 * parse (the ListOptions then fail to decode: no name). */
static int field_selector_name(const char *sel, char *out, size_t cap) {
  if (!sel) return 0;
  int found = 0;
  for (const char *t = sel;;) {
    const char *end = t;
    for (int slash = 0; *end && (slash || *end != ','); end++) slash = !slash && *end == '\\';
    if (end > t) {
      const char *op = NULL;
      size_t oplen = 0;
      for (const char *p = t; p < end && !op; p++) {
        if (!strncmp(p, "!=", 2) || !strncmp(p, "==", 2)) op = p, oplen = 2;
        else if (*p == '=') op = p, oplen = 1;
      }
      if (!op) return 0;
      int want = !found && op[0] != '!' && op - t == 13 && !strncmp(t, "metadata.name", 13);
      size_t k = 0;
      int slash = 0;
      for (const char *p = op + oplen; p < end; p++) {
        if (!slash && *p == '\\') {
          slash = 1;
          continue;
        }
        if (!slash && (*p == ',' || *p == '=')) return 0;
        if (slash && *p != '\\' && *p != ',' && *p != '=') return 0;
        slash = 0;
        if (want && k + 1 < cap) out[k++] = *p;
        else if (want) return 0; /* longer than any name */
      }
      if (slash) return 0;
      if (want) {
        out[k] = 0;
        found = 1;
      }
    }
    if (!*end) break;
    t = end + 1;
  }
  return found && strcmp(out, ".") && strcmp(out, "..") && !strpbrk(out, "/%");
}

void kin__sim_request_attrs_of(kin__sim_req *req, const char *url, kin__sim_request_attrs *a) {
  memset(a, 0, sizeof(*a));
  const char *m = req->method;
  if (kin__sim_request_info_parse(url, &a->ri) == 0) {
    a->resource_path = 1;
    kin__sim_request_info *ri = &a->ri;
    const char *verb = ri->watch_path ? "watch" : method_verb(m);
    snprintf(a->name, sizeof(a->name), "%s", ri->name);
    /* /namespaces/{name}[/status|/finalize]: the namespace is its own
     * (the sim's RequestInfo clears it; kube-apiserver's keeps it). */
    snprintf(a->ns, sizeof(a->ns), "%s",
             !strcmp(ri->resource, "namespaces") && ri->name[0] ? ri->name : ri->ns);
    if (!a->name[0] && !strcmp(verb, "get")) {
      verb = kin__sim_query_bool(kin__sim_query(req, "watch")) ? "watch" : "list";
      if (!field_selector_name(kin__sim_query(req, "fieldSelector"), a->name, sizeof(a->name)))
        a->name[0] = 0;
    } else if (!a->name[0] && !strcmp(verb, "delete")) {
      verb = "deletecollection";
    }
    snprintf(a->verb, sizeof(a->verb), "%s", verb);
  } else {
    size_t i = 0;
    for (; m[i] && i + 1 < sizeof(a->verb); i++)
      a->verb[i] = m[i] >= 'A' && m[i] <= 'Z' ? (char)(m[i] - 'A' + 'a') : m[i];
    a->verb[i] = 0;
  }
}
