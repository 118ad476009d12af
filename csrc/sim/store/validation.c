/* validation.c -- object name validation as the registries of
 * kube-apiserver choose it (ValidateObjectMeta's name function of each
 * kind), with apimachinery's messages: NameIsDNSSubdomain for most kinds,
 * NameIsDNSLabel for Namespaces, Services (RelaxedServiceNameValidation,
 * on by default in v1.36) and StatefulSets, and IsPathSegmentName for the
 * rbac.authorization.k8s.io kinds. */
#include <stdio.h>
#include <string.h>

#include "store_int.h"

static int alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* 1 when s is an RFC 1123 label (without the length check). */
static int is_label(const char *s, size_t n) {
  if (!n || !alnum(s[0]) || !alnum(s[n - 1])) return 0;
  for (size_t i = 0; i < n; i++)
    if (!alnum(s[i]) && s[i] != '-') return 0;
  return 1;
}

static int is_subdomain(const char *s) {
  const char *p = s;
  for (;;) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (!is_label(p, n)) return 0;
    if (!dot) return 1;
    p = dot + 1;
  }
}

static const char subdomain_msg[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
static const char label_msg[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/* Returns why name is not a path segment (content.IsPathSegmentName), or
 * NULL when it is. */
static const char *path_segment_error(const char *name) {
  if (!strcmp(name, ".")) return "may not be '.'";
  if (!strcmp(name, "..")) return "may not be '..'";
  if (strchr(name, '/')) return "may not contain '/'";
  if (strchr(name, '%')) return "may not contain '%'";
  return NULL;
}

int kin__sim_validate_name(kin__sim_resource *r, const char *name, kin__sim_result *out) {
  int label = !r->crd_name &&
           ((!*r->group && (!strcmp(r->resource, "namespaces") || !strcmp(r->resource, "services"))) ||
            (!strcmp(r->group, "apps") && !strcmp(r->resource, "statefulsets")));
  size_t max = label ? 63 : 253;
  size_t n = strlen(name);
  char detail[1024];
  const char *why = NULL;
  char toolong[64];
  if (!r->crd_name && !strcmp(r->group, "rbac.authorization.k8s.io")) {
    why = path_segment_error(name);
  } else if (n > max) {
    snprintf(toolong, sizeof(toolong), "must be no more than %zu characters", max);
    why = toolong;
  } else if (label ? !is_label(name, n) : !is_subdomain(name)) {
    /* a valid subdomain that is no label: IsDNS1123Label's own words */
    why = !label ? subdomain_msg : is_subdomain(name) ? "must not contain dots" : label_msg;
  }
  if (!why) return 0;
  snprintf(detail, sizeof(detail), "Invalid value: \"%s\": %s", name, why);
  kin__sim_err_invalid(out, r->group, r->kind, name, "metadata.name", "FieldValueInvalid",
                       detail);
  return -1;
}
