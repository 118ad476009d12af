/* selector.c -- ?labelSelector= and ?fieldSelector= of lists, watches and
 * deletecollection, with the messages of apimachinery's fields.ParseSelector
 * and DefaultMetaV1FieldSelectorConversion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "kin.h"
#include "shard_selector.h"

/* The fields each built-in accepts beyond metadata.name/namespace (their
 * registries' field label conversion funcs); NULL-terminated. Resources
 * listed here answer an unknown field with "field label not supported". */
typedef struct {
  const char *group, *resource;
  const char *const *fields;
} field_set;

static const char *const pod_fields[] = {
    "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
    "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName", NULL};
static const char *const secret_fields[] = {"type", NULL};
static const char *const event_fields[] = {
    "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
    "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
    "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type", NULL};
/* events.k8s.io/v1 Events: some of the same fields under their new names
 * (AddFieldLabelConversionsForEvent), matched on the stored core v1 form
 * under the names of events_v1_stored (same index). */
static const char *const events_v1_fields[] = {
    "regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
    "regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath", "reason",
    "reportingController", "type", NULL};
static const char *const events_v1_stored[] = {
    "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
    "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
    "involvedObject.fieldPath", "reason", "reportingComponent", "type", NULL};
static const char *const node_fields[] = {"spec.unschedulable", NULL};
static const char *const namespace_fields[] = {"status.phase", NULL};
static const char *const service_fields[] = {"spec.clusterIP", "spec.type", NULL};
static const char *const replicaset_fields[] = {"status.replicas", NULL};
static const char *const job_fields[] = {"status.successful", NULL};
static const char *const csr_fields[] = {"spec.signerName", NULL};

static const field_set field_sets[] = {
    {"", "pods", pod_fields},           {"", "secrets", secret_fields},
    {"", "events", event_fields},       {"", "nodes", node_fields},
    {"", "namespaces", namespace_fields}, {"", "services", service_fields},
    {"apps", "replicasets", replicaset_fields}, {"events.k8s.io", "events", events_v1_fields},
    {"", "replicationcontrollers", replicaset_fields}, {"batch", "jobs", job_fields},
    {"certificates.k8s.io", "certificatesigningrequests", csr_fields},
};

static const field_set *fields_of(const kin__sim_resource *r) {
  if (!r || r->crd_name) return NULL;
  for (size_t i = 0; i < sizeof(field_sets) / sizeof(field_sets[0]); i++)
    if (!strcmp(field_sets[i].group, r->group) && !strcmp(field_sets[i].resource, r->resource))
      return &field_sets[i];
  return NULL;
}

/* 0 when f is selectable on r, else -1 with the server's 400 in out. The
 * name to match on the stored form goes to *stored (f itself but for
 * events.k8s.io/v1 Events). */
static int field_check(const kin__sim_resource *r, const char *f, const char **stored,
                       kin__sim_result *out) {
  *stored = f;
  if (!strcmp(f, "metadata.name") || !strcmp(f, "metadata.namespace")) return 0;
  const field_set *fs = fields_of(r);
  if (fs) {
    for (int i = 0; fs->fields[i]; i++) {
      if (strcmp(fs->fields[i], f)) continue;
      if (fs->fields == events_v1_fields) *stored = events_v1_stored[i];
      return 0;
    }
    kin__sim_err_bad_request(out, "field label not supported: %s", f);
    return -1;
  }
  kin__sim_err_bad_request(
      out, "\"%s\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
      f);
  return -1;
}

/* Parses one fieldSelector term "k=v", "k==v" or "k!=v". */
static int parse_term(kin__sim_selector *sel, const kin__sim_resource *r, const char *term,
                      const char *all, kin__sim_result *out) {
  const char *op = strstr(term, "!=");
  int neq = 0;
  size_t oplen;
  if (op) {
    neq = 1;
    oplen = 2;
  } else if ((op = strstr(term, "=="))) {
    oplen = 2;
  } else if ((op = strchr(term, '='))) {
    oplen = 1;
  } else {
    kin__sim_err_bad_request(out, "invalid selector: '%s'; can't understand '%s'", all, term);
    return -1;
  }
  size_t klen = (size_t)(op - term);
  char key[256];
  snprintf(key, sizeof(key), "%.*s", (int)klen, term);
  const char *stored;
  if (field_check(r, key, &stored, out)) return -1;
  if (sel->nfields == (int)(sizeof(sel->fields) / sizeof(sel->fields[0]))) {
    kin__sim_err_bad_request(out, "invalid selector: '%s'; too many requirements", all);
    return -1;
  }
  snprintf(sel->fields[sel->nfields].field, sizeof(sel->fields[0].field), "%.63s", stored);
  snprintf(sel->fields[sel->nfields].value, sizeof(sel->fields[0].value), "%s", op + oplen);
  sel->fields[sel->nfields].neq = neq;
  sel->nfields++;
  return 0;
}

int kin_sim_feature_gates_check(const char *gates, char *err, size_t errlen) {
  int sharded;
  return kin__sim_feature_gates(gates, &sharded, err, errlen);
}

int kin__sim_feature_gates(const char *gates, int *sharded, char *err, size_t errlen) {
  *sharded = 0;
  if (err && errlen) err[0] = 0;
  if (!gates || !*gates) return 0;
  char *copy = strdup(gates);
  if (!copy) return KIN_ENOMEM;
  int rc = 0;
  for (char *save, *t = strtok_r(copy, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(t, '=');
    const char *v = eq ? eq + 1 : "";
    if (eq) *eq = 0;
    int on = !strcasecmp(v, "true") ? 1 : !strcasecmp(v, "false") ? 0 : -1;
    if (strcmp(t, "ShardedListAndWatch")) {
      if (err && errlen)
        snprintf(err, errlen, "unrecognized feature gate: %s (the sim knows ShardedListAndWatch)", t);
      rc = KIN_EINVAL;
    } else if (on < 0) {
      if (err && errlen)
        snprintf(err, errlen, "invalid value of %s=%s, err: strconv.ParseBool: parsing \"%s\": invalid syntax",
                 t, v, v);
      rc = KIN_EINVAL;
    } else {
      *sharded = on;
    }
  }
  free(copy);
  return rc;
}

void kin__sim_selector_shard_info(const kin__sim_selector *sel, kin__buf *b) {
  if (!sel->shard) return;
  size_t n = kin_shard_selector_string(sel->shard, NULL, 0);
  char *s = malloc(n + 1);
  if (!s) {
    b->oom = 1;
    return;
  }
  kin_shard_selector_string(sel->shard, s, n + 1);
  kin__buf_puts(b, ",\"shardInfo\":{\"selector\":");
  kin__buf_json_str(b, s);
  kin__buf_puts(b, "}");
  free(s);
}

int kin__sim_selector_parse(kin__sim_req *req, const kin__sim_resource *r, kin__sim_selector *sel,
                            kin__sim_result *out) {
  memset(sel, 0, sizeof(*sel));
  /* KEP-5866: honoured only with the gate, as kube-apiserver; a bad one is
   * the registry's plain error, which the server answers as a 500 */
  const char *ss = req->sim->gate_sharded ? kin__sim_query(req, "shardSelector") : NULL;
  if (ss && *ss) {
    char err[512] = "";
    if (kin_shard_selector_parse(ss, &sel->shard, err, sizeof(err))) {
      kin__sim_err(out, 500, "", NULL, "invalid shard selector: %s", err);
      return -1;
    }
  }
  const char *ls = kin__sim_query(req, "labelSelector");
  if (ls && *ls) {
    char err[512] = "";
    if (kin_label_selector_parse(ls, &sel->labels, err, sizeof(err))) {
      kin__sim_err_bad_request(out, "%s", err[0] ? err : "unable to parse requirement");
      return -1;
    }
  }
  const char *fs = kin__sim_query(req, "fieldSelector");
  if (fs && *fs) {
    char *copy = strdup(fs);
    if (!copy) return -1;
    int rc = 0;
    for (char *save, *t = strtok_r(copy, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save))
      rc = parse_term(sel, r, t, fs, out);
    free(copy);
    if (rc) {
      kin__sim_selector_free(sel);
      return -1;
    }
  }
  return 0;
}

void kin__sim_selector_free(kin__sim_selector *sel) {
  if (sel->labels) kin_label_selector_free(sel->labels);
  sel->labels = NULL;
  kin_shard_selector_free(sel->shard);
  sel->shard = NULL;
}

int kin__sim_selector_empty(const kin__sim_selector *sel) {
  return !sel->nfields && !sel->shard && (!sel->labels || kin_label_selector_empty(sel->labels));
}

/* The string form of a selectable field ("" when absent), as the
 * registries' GetAttrs: strings as is, booleans and numbers printed; an
 * Event's "source" is source.component, else reportingComponent. */
static void field_value(const json_t *obj, const char *field, char *buf, size_t cap) {
  char path[64];
  /* the labels whose JSON path differs (GetAttrs' sources); an Event's
   * source falls back to reportingComponent */
  const char *comp = kin__sim_jstr(json_object_get(obj, "source"), "component", NULL);
  snprintf(path, sizeof(path), "%s",
           !strcmp(field, "source")              ? (comp && *comp ? "source.component" : "reportingComponent")
           : !strcmp(field, "status.successful") ? "status.succeeded"
                                                 : field);
  const json_t *v = obj;
  for (char *save, *t = strtok_r(path, ".", &save); t && v; t = strtok_r(NULL, ".", &save))
    v = json_object_get(v, t);
  buf[0] = 0;
  if (json_is_string(v))
    snprintf(buf, cap, "%s", json_string_value(v));
  else if (json_is_boolean(v))
    snprintf(buf, cap, "%s", json_is_true(v) ? "true" : "false");
  else if (json_is_integer(v))
    snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
  /* absent numbers and booleans print as Go's zero values */
  else if (!v && (!strcmp(field, "status.replicas") || !strcmp(field, "status.successful")))
    snprintf(buf, cap, "0");
  else if (!v && !strcmp(field, "spec.unschedulable"))
    snprintf(buf, cap, "false");
}

static const char *get_label(void *ud, const char *key) {
  return json_string_value(json_object_get((const json_t *)ud, key));
}

int kin__sim_selector_matches(const kin__sim_selector *sel, const json_t *obj) {
  const json_t *md = json_object_get(obj, "metadata");
  if (sel->shard && !kin_shard_selector_matches(sel->shard, kin__sim_jstr(md, "uid", ""),
                                                kin__sim_jstr(md, "namespace", "")))
    return 0;
  for (int i = 0; i < sel->nfields; i++) {
    char v[256];
    field_value(obj, sel->fields[i].field, v, sizeof(v));
    int eq = !strcmp(v, sel->fields[i].value);
    if (eq == sel->fields[i].neq) return 0;
  }
  if (sel->labels &&
      !kin_label_selector_matches(sel->labels, get_label, json_object_get(md, "labels")))
    return 0;
  return 1;
}

/* The labels of a stored object read in its bytes: the span of
 * metadata.labels (p NULL: none) and room for the value returned last,
 * which the matcher reads before asking for the next. */
typedef struct {
  const char *p, *end;
  char val[4096];
} raw_labels;

static const char *raw_label(void *ud, const char *key) {
  raw_labels *l = ud;
  const char *vend, *v = l->p ? kin__sim_raw_member(l->p, l->end, key, strlen(key), &vend) : NULL;
  /* Only strings are labels (json_string_value of anything else: NULL). */
  if (!v || *v != '"') return NULL;
  size_t n = (size_t)(vend - v) - 2;
  memcpy(l->val, v + 1, n);
  l->val[n] = 0;
  return l->val;
}

/* Matches a label selector on o's bytes without parsing them: 1 or 0, or
 * -1 when the labels need the parser (escapes, a very large map). */
static int matches_raw_labels(const kin__sim_selector *sel, const kin__sim_obj *o) {
  raw_labels l;
  const char *mdend, *md = kin__sim_raw_member(o->raw, o->raw + o->rawlen, "metadata", 8, &mdend);
  l.p = md && *md == '{' ? kin__sim_raw_member(md, mdend, "labels", 6, &l.end) : NULL;
  if (l.p && *l.p != '{') l.p = NULL; /* null or not a map: no labels */
  if (l.p && ((size_t)(l.end - l.p) >= sizeof(l.val) || memchr(l.p, '\\', (size_t)(l.end - l.p))))
    return -1;
  return kin_label_selector_matches(sel->labels, raw_label, &l);
}

/* The string member key of o's metadata into buf ("" when absent or not
 * a plain string). */
static void raw_meta_str(const kin__sim_obj *o, const char *key, char *buf, size_t cap) {
  buf[0] = 0;
  const char *mdend, *md = kin__sim_raw_member(o->raw, o->raw + o->rawlen, "metadata", 8, &mdend);
  const char *vend, *v = md && *md == '{' ? kin__sim_raw_member(md, mdend, key, strlen(key), &vend) : NULL;
  if (!v || *v != '"') return;
  size_t n = (size_t)(vend - v) - 2;
  if (n >= cap || memchr(v + 1, '\\', n)) return; /* uids and namespaces have no escapes */
  memcpy(buf, v + 1, n);
  buf[n] = 0;
}

int kin__sim_selector_matches_obj(const kin__sim_selector *sel, const kin__sim_obj *o) {
  if (kin__sim_selector_empty(sel)) return 1;
  if (sel->shard) {
    char uid[128], ns[256];
    raw_meta_str(o, "uid", uid, sizeof(uid));
    raw_meta_str(o, "namespace", ns, sizeof(ns));
    if (!kin_shard_selector_matches(sel->shard, uid, ns)) return 0;
    if (!sel->nfields && (!sel->labels || kin_label_selector_empty(sel->labels))) return 1;
  }
  if (!sel->nfields && sel->labels) {
    int m = matches_raw_labels(sel, o);
    if (m >= 0) return m;
  }
  int metadata_only = 1;
  for (int i = 0; i < sel->nfields; i++)
    if (strncmp(sel->fields[i].field, "metadata.", 9)) metadata_only = 0;
  json_t *tree;
  if (metadata_only) {
    /* Labels, name and namespace: parse metadata alone, not data or spec. */
    json_t *md = kin__sim_obj_member(o, "metadata");
    tree = json_object();
    if (tree && md) json_object_set(tree, "metadata", md);
    json_decref(md);
  } else {
    tree = kin__sim_obj_json(o);
  }
  int m = tree ? kin__sim_selector_matches(sel, tree) : 0;
  json_decref(tree);
  return m;
}
