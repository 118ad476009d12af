/* http_table_printers.c -- the cells of kube-apiserver v1.36.3's printers
 * (pkg/printers/internalversion/printers.go) for the built-in types the
 * sim serves, wide columns included, and duration.HumanDuration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_table_cells.h"
#include "http_table_printers.h"
#include "kin.h"


/* ---- the printers (pkg/printers/internalversion/printers.go) ---- */


static int is_true(const json_t *v) { return json_is_true(v); }

static void pod_row(json_t *cells, json_t *row, const json_t *pod, time_t now) {
  const json_t *spec = json_object_get(pod, "spec"), *st = json_object_get(pod, "status");
  long long restarts = 0, ri_restarts = 0;
  size_t total = json_array_size(json_object_get(spec, "containers"));
  long long ready = 0;
  time_t last_restart = 0, ri_last_restart = 0;
  char reason[256];
  const char *phase = kin__sim_tc_or_default(kin__sim_jstr(st, "phase", NULL), "");
  snprintf(reason, sizeof(reason), "%s", kin__sim_tc_or_default(kin__sim_jstr(st, "reason", NULL), phase));
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(st, "conditions"), i, c) {
    const char *t = kin__sim_jstr(c, "type", NULL), *r = kin__sim_jstr(c, "reason", NULL);
    if (t && r && !strcmp(t, "PodScheduled") && !strcmp(r, "SchedulingGated"))
      snprintf(reason, sizeof(reason), "SchedulingGated");
  }
  if (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")) {
    int ok = !strcmp(phase, "Succeeded");
    json_object_set_new(row, "conditions",
                        json_pack("[{s:s, s:s, s:s, s:s}]", "type", "Completed", "status", "True",
                                  "reason", phase, "message",
                                  ok ? "The pod has completed successfully." : "The pod failed."));
  }
  const json_t *inits = json_object_get(spec, "initContainers");
  json_array_foreach((json_t *)inits, i, c) {
    const char *rp = kin__sim_jstr(c, "restartPolicy", NULL);
    if (rp && !strcmp(rp, "Always")) total++;
  }
  int initializing = 0;
  const json_t *ics = json_object_get(st, "initContainerStatuses");
  json_array_foreach((json_t *)ics, i, c) {
    restarts += kin__sim_tc_int_at(c, "restartCount");
    time_t t;
    int restartable = 0;
    size_t j;
    json_t *ic;
    json_array_foreach((json_t *)inits, j, ic) {
      const char *n = kin__sim_jstr(ic, "name", NULL), *rp = kin__sim_jstr(ic, "restartPolicy", NULL);
      if (n && rp && !strcmp(n, kin__sim_tc_or_default(kin__sim_jstr(c, "name", NULL), "")) &&
          !strcmp(rp, "Always"))
        restartable = 1;
    }
    if (kin__sim_tc_parse_time(kin__sim_tc_str_at(c, "lastState.terminated.finishedAt"), &t)) {
      if (t > last_restart) last_restart = t;
      if (restartable) {
        ri_restarts += kin__sim_tc_int_at(c, "restartCount");
        if (t > ri_last_restart) ri_last_restart = t;
      }
    } else if (restartable) {
      ri_restarts += kin__sim_tc_int_at(c, "restartCount");
    }
    const json_t *term = kin__sim_tc_at(c, "state.terminated"), *wait = kin__sim_tc_at(c, "state.waiting");
    if (term && kin__sim_tc_int_at(term, "exitCode") == 0) continue;
    if (restartable && is_true(json_object_get(c, "started"))) {
      if (is_true(json_object_get(c, "ready"))) ready++;
      continue;
    }
    if (term) {
      const char *r = kin__sim_jstr(term, "reason", NULL);
      if (r && *r)
        snprintf(reason, sizeof(reason), "Init:%s", r);
      else if (kin__sim_tc_int_at(term, "signal"))
        snprintf(reason, sizeof(reason), "Init:Signal:%lld", kin__sim_tc_int_at(term, "signal"));
      else
        snprintf(reason, sizeof(reason), "Init:ExitCode:%lld", kin__sim_tc_int_at(term, "exitCode"));
    } else if (wait && kin__sim_jstr(wait, "reason", NULL) && *kin__sim_jstr(wait, "reason", NULL) &&
               strcmp(kin__sim_jstr(wait, "reason", NULL), "PodInitializing")) {
      snprintf(reason, sizeof(reason), "Init:%s", kin__sim_jstr(wait, "reason", NULL));
    } else {
      snprintf(reason, sizeof(reason), "Init:%zu/%zu", i, json_array_size(inits));
    }
    initializing = 1;
    break;
  }
  int init_true = 0;
  json_array_foreach(json_object_get(st, "conditions"), i, c) {
    const char *t = kin__sim_jstr(c, "type", NULL), *s = kin__sim_jstr(c, "status", NULL);
    if (t && s && !strcmp(t, "Initialized") && !strcmp(s, "True")) init_true = 1;
  }
  if (!initializing || init_true) {
    restarts = ri_restarts;
    last_restart = ri_last_restart;
    int has_running = 0;
    char error_reason[256] = "";
    const json_t *cs = json_object_get(st, "containerStatuses");
    for (size_t k = json_array_size(cs); k-- > 0;) {
      c = json_array_get(cs, k);
      restarts += kin__sim_tc_int_at(c, "restartCount");
      time_t t;
      if (kin__sim_tc_parse_time(kin__sim_tc_str_at(c, "lastState.terminated.finishedAt"), &t) && t > last_restart)
        last_restart = t;
      const json_t *term = kin__sim_tc_at(c, "state.terminated"), *wait = kin__sim_tc_at(c, "state.waiting");
      const char *wr = kin__sim_jstr(wait, "reason", NULL);
      if (wait && wr && *wr) {
        snprintf(reason, sizeof(reason), "%s", wr);
      } else if (term) {
        const char *r = kin__sim_jstr(term, "reason", NULL);
        if (r && *r)
          snprintf(reason, sizeof(reason), "%s", r);
        else if (kin__sim_tc_int_at(term, "signal"))
          snprintf(reason, sizeof(reason), "Signal:%lld", kin__sim_tc_int_at(term, "signal"));
        else
          snprintf(reason, sizeof(reason), "ExitCode:%lld", kin__sim_tc_int_at(term, "exitCode"));
        if (kin__sim_tc_int_at(term, "exitCode")) snprintf(error_reason, sizeof(error_reason), "%s", reason);
      } else if (is_true(json_object_get(c, "ready")) && kin__sim_tc_at(c, "state.running")) {
        has_running = 1;
        ready++;
      }
    }
    if (!strcmp(reason, "Completed")) {
      int pod_ready = 0;
      json_array_foreach(json_object_get(st, "conditions"), i, c) {
        const char *t = kin__sim_jstr(c, "type", NULL), *s = kin__sim_jstr(c, "status", NULL);
        if (t && s && !strcmp(t, "Ready") && !strcmp(s, "True")) pod_ready = 1;
      }
      if (has_running && pod_ready)
        snprintf(reason, sizeof(reason), "Running");
      else if (*error_reason)
        snprintf(reason, sizeof(reason), "%s", error_reason);
      else if (has_running)
        snprintf(reason, sizeof(reason), "NotReady");
    }
  }
  if (kin__sim_tc_str_at(pod, "metadata.deletionTimestamp")) {
    const char *sr = kin__sim_jstr(st, "reason", NULL);
    if (sr && !strcmp(sr, "NodeLost"))
      snprintf(reason, sizeof(reason), "Unknown");
    else if (strcmp(phase, "Succeeded") && strcmp(phase, "Failed"))
      snprintf(reason, sizeof(reason), "Terminating");
  }
  char rs[64], buf[32];
  if (restarts && last_restart) {
    kin__sim_human_duration((long long)(now - last_restart), buf, sizeof(buf));
    snprintf(rs, sizeof(rs), "%lld (%s ago)", restarts, buf);
  } else {
    snprintf(rs, sizeof(rs), "%lld", restarts);
  }
  char readys[64];
  snprintf(readys, sizeof(readys), "%lld/%zu", ready, total);
  json_array_append_new(cells, kin__sim_tc_name_of(pod));
  json_array_append_new(cells, json_string(readys));
  json_array_append_new(cells, json_string(reason));
  json_array_append_new(cells, json_string(rs));
  json_array_append_new(cells, kin__sim_tc_age(pod, now));
  const char *ip = kin__sim_jstr(json_array_get(json_object_get(st, "podIPs"), 0), "ip", NULL);
  json_array_append_new(cells, json_string(kin__sim_tc_or_default(ip, "<none>")));
  json_array_append_new(cells, json_string(kin__sim_tc_or_default(kin__sim_jstr(spec, "nodeName", NULL), "<none>")));
  json_array_append_new(cells,
                        json_string(kin__sim_tc_or_default(kin__sim_jstr(st, "nominatedNodeName", NULL), "<none>")));
  const json_t *gates = json_object_get(spec, "readinessGates");
  if (json_array_size(gates)) {
    size_t trues = 0, j;
    json_t *g;
    json_array_foreach((json_t *)gates, j, g) {
      const char *ct = kin__sim_jstr(g, "conditionType", NULL);
      json_array_foreach(json_object_get(st, "conditions"), i, c) {
        const char *t = kin__sim_jstr(c, "type", NULL);
        if (ct && t && !strcmp(ct, t)) {
          const char *s = kin__sim_jstr(c, "status", NULL);
          if (s && !strcmp(s, "True")) trues++;
          break;
        }
      }
    }
    snprintf(buf, sizeof(buf), "%zu/%zu", trues, json_array_size(gates));
    json_array_append_new(cells, json_string(buf));
  } else {
    json_array_append_new(cells, json_string("<none>"));
  }
}

static void configmap_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  json_array_append_new(cells, kin__sim_tc_name_of(o));
  json_array_append_new(cells, json_integer((json_int_t)(json_object_size(json_object_get(o, "data")) +
                                                         json_object_size(json_object_get(o, "binaryData")))));
  json_array_append_new(cells, kin__sim_tc_age(o, now));
}

static void secret_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  json_array_append_new(cells, kin__sim_tc_name_of(o));
  json_array_append_new(cells, json_string(kin__sim_tc_or_default(kin__sim_jstr(o, "type", NULL), "")));
  json_array_append_new(cells, json_integer((json_int_t)json_object_size(json_object_get(o, "data"))));
  json_array_append_new(cells, kin__sim_tc_age(o, now));
}

static json_t *join_strings(const json_t *arr) {
  kin__buf b = {0};
  size_t i;
  json_t *v;
  json_array_foreach((json_t *)arr, i, v)
      kin__buf_printf(&b, "%s%s", i ? "," : "", kin__sim_tc_or_default(json_string_value(v), ""));
  json_t *s = json_stringn(b.p ? b.p : "", b.len);
  free(b.p);
  return s;
}

static void service_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  const json_t *spec = json_object_get(o, "spec");
  const char *type = kin__sim_tc_or_default(kin__sim_jstr(spec, "type", NULL), "");
  json_array_append_new(cells, kin__sim_tc_name_of(o));
  json_array_append_new(cells, json_string(type));
  const char *cip = json_string_value(json_array_get(json_object_get(spec, "clusterIPs"), 0));
  json_array_append_new(cells, json_string(kin__sim_tc_or_default(cip, "<none>")));
  const json_t *eips = json_object_get(spec, "externalIPs");
  json_t *ext;
  if (!strcmp(type, "ClusterIP") || !strcmp(type, "NodePort")) {
    ext = json_array_size(eips) ? join_strings(eips) : json_string("<none>");
  } else if (!strcmp(type, "LoadBalancer")) {
    /* the sorted set of ingress IPs (or hostnames), then externalIPs */
    json_t *all = json_array();
    size_t i;
    json_t *ing;
    json_array_foreach(kin__sim_tc_at(o, "status.loadBalancer.ingress"), i, ing) {
      const char *a = kin__sim_tc_or_default(kin__sim_jstr(ing, "ip", NULL), kin__sim_jstr(ing, "hostname", NULL));
      if (a && *a) json_array_append_new(all, json_string(a));
    }
    size_t n = json_array_size(all);
    const char **v = calloc(n ? n : 1, sizeof(*v));
    for (i = 0; v && i < n; i++) v[i] = json_string_value(json_array_get(all, i));
    if (v) qsort(v, n, sizeof(*v), kin__sim_tc_cmp_str);
    json_t *sorted = json_array();
    for (i = 0; v && i < n; i++)
      if (!i || strcmp(v[i], v[i - 1])) json_array_append_new(sorted, json_string(v[i]));
    free(v);
    json_decref(all);
    json_array_extend(sorted, (json_t *)eips);
    ext = json_array_size(sorted) ? join_strings(sorted) : json_string("<pending>");
    json_decref(sorted);
  } else if (!strcmp(type, "ExternalName")) {
    ext = json_string(kin__sim_tc_or_default(kin__sim_jstr(spec, "externalName", NULL), ""));
  } else {
    ext = json_string("<unknown>");
  }
  json_array_append_new(cells, ext);
  kin__buf b = {0};
  size_t i;
  json_t *p;
  json_array_foreach(json_object_get(spec, "ports"), i, p) {
    const char *proto = kin__sim_tc_or_default(kin__sim_jstr(p, "protocol", NULL), "");
    if (kin__sim_tc_int_at(p, "nodePort") > 0)
      kin__buf_printf(&b, "%s%lld:%lld/%s", i ? "," : "", kin__sim_tc_int_at(p, "port"), kin__sim_tc_int_at(p, "nodePort"), proto);
    else
      kin__buf_printf(&b, "%s%lld/%s", i ? "," : "", kin__sim_tc_int_at(p, "port"), proto);
  }
  json_array_append_new(cells, b.len ? json_stringn(b.p, b.len) : json_string("<none>"));
  free(b.p);
  json_array_append_new(cells, kin__sim_tc_age(o, now));
  json_array_append_new(cells, kin__sim_tc_format_labels(json_object_get(spec, "selector")));
}

static void serviceaccount_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  json_array_append_new(cells, kin__sim_tc_name_of(o));
  json_array_append_new(cells, kin__sim_tc_age(o, now));
}

static void deployment_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  char buf[64];
  snprintf(buf, sizeof(buf), "%lld/%lld", kin__sim_tc_int_at(o, "status.readyReplicas"), kin__sim_tc_int_at(o, "spec.replicas"));
  json_array_append_new(cells, kin__sim_tc_name_of(o));
  json_array_append_new(cells, json_string(buf));
  json_array_append_new(cells, json_integer(kin__sim_tc_int_at(o, "status.updatedReplicas")));
  json_array_append_new(cells, json_integer(kin__sim_tc_int_at(o, "status.availableReplicas")));
  json_array_append_new(cells, kin__sim_tc_age(o, now));
  kin__sim_tc_container_cells(cells, kin__sim_tc_at(o, "spec.template.spec.containers"));
  json_array_append_new(cells, kin__sim_tc_selector_cell(kin__sim_tc_at(o, "spec.selector"), 0));
}

static void replicaset_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  json_array_append_new(cells, kin__sim_tc_name_of(o));
  json_array_append_new(cells, json_integer(kin__sim_tc_int_at(o, "spec.replicas")));
  json_array_append_new(cells, json_integer(kin__sim_tc_int_at(o, "status.replicas")));
  json_array_append_new(cells, json_integer(kin__sim_tc_int_at(o, "status.readyReplicas")));
  json_array_append_new(cells, kin__sim_tc_age(o, now));
  kin__sim_tc_container_cells(cells, kin__sim_tc_at(o, "spec.template.spec.containers"));
  json_array_append_new(cells, kin__sim_tc_selector_cell(kin__sim_tc_at(o, "spec.selector"), 1));
}

static void statefulset_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  char buf[64];
  snprintf(buf, sizeof(buf), "%lld/%lld", kin__sim_tc_int_at(o, "status.readyReplicas"), kin__sim_tc_int_at(o, "spec.replicas"));
  json_array_append_new(cells, kin__sim_tc_name_of(o));
  json_array_append_new(cells, json_string(buf));
  json_array_append_new(cells, kin__sim_tc_age(o, now));
  kin__sim_tc_container_cells(cells, kin__sim_tc_at(o, "spec.template.spec.containers"));
}

static void daemonset_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  static const char *const f[] = {"desiredNumberScheduled", "currentNumberScheduled",
                                  "numberReady", "updatedNumberScheduled", "numberAvailable"};
  json_array_append_new(cells, kin__sim_tc_name_of(o));
  for (size_t i = 0; i < 5; i++)
    json_array_append_new(cells, json_integer(kin__sim_tc_int_at(json_object_get(o, "status"), f[i])));
  json_array_append_new(cells, kin__sim_tc_format_labels(kin__sim_tc_at(o, "spec.template.spec.nodeSelector")));
  json_array_append_new(cells, kin__sim_tc_age(o, now));
  kin__sim_tc_container_cells(cells, kin__sim_tc_at(o, "spec.template.spec.containers"));
  json_array_append_new(cells, kin__sim_tc_selector_cell(kin__sim_tc_at(o, "spec.selector"), 1));
}

static void lease_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  json_array_append_new(cells, kin__sim_tc_name_of(o));
  json_array_append_new(cells, json_string(kin__sim_tc_or_default(kin__sim_tc_str_at(o, "spec.holderIdentity"), "")));
  json_array_append_new(cells, kin__sim_tc_age(o, now));
}

static void namespace_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  json_array_append_new(cells, kin__sim_tc_name_of(o));
  json_array_append_new(cells, json_string(kin__sim_tc_or_default(kin__sim_tc_str_at(o, "status.phase"), "")));
  json_array_append_new(cells, kin__sim_tc_age(o, now));
}

static void node_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  kin__buf st = {0};
  size_t i;
  json_t *c;
  json_array_foreach(kin__sim_tc_at(o, "status.conditions"), i, c) {
    const char *t = kin__sim_jstr(c, "type", NULL), *s = kin__sim_jstr(c, "status", NULL);
    if (t && !strcmp(t, "Ready")) {
      st.len = 0; /* the last Ready condition wins, as the printer's map */
      kin__buf_printf(&st, "%s", s && !strcmp(s, "True") ? "Ready" : "NotReady");
    }
  }
  if (!st.len) kin__buf_printf(&st, "Unknown");
  if (is_true(kin__sim_tc_at(o, "spec.unschedulable"))) kin__buf_printf(&st, ",SchedulingDisabled");
  json_array_append_new(cells, kin__sim_tc_name_of(o));
  json_array_append_new(cells, json_stringn(st.p, st.len));
  free(st.p);
  /* findNodeRoles: node-role.kubernetes.io/<role> labels and
   * kubernetes.io/role, as a sorted set */
  const json_t *labels = kin__sim_tc_at(o, "metadata.labels");
  size_t n = json_object_size(labels), k = 0;
  const char **roles = calloc(n ? n : 1, sizeof(*roles));
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)labels, key, v) {
    if (!roles) break;
    if (!strncmp(key, "node-role.kubernetes.io/", 24) && key[24])
      roles[k++] = key + 24;
    else if (!strcmp(key, "kubernetes.io/role") && json_string_value(v) && *json_string_value(v))
      roles[k++] = json_string_value(v);
  }
  if (roles) qsort(roles, k, sizeof(*roles), kin__sim_tc_cmp_str);
  kin__buf rb = {0};
  for (i = 0; i < k; i++)
    if (!i || strcmp(roles[i], roles[i - 1])) kin__buf_printf(&rb, "%s%s", rb.len ? "," : "", roles[i]);
  free(roles);
  json_array_append_new(cells, rb.len ? json_stringn(rb.p, rb.len) : json_string("<none>"));
  free(rb.p);
  json_array_append_new(cells, kin__sim_tc_age(o, now));
  const json_t *ni = kin__sim_tc_at(o, "status.nodeInfo");
  json_array_append_new(cells, json_string(kin__sim_tc_or_default(kin__sim_jstr(ni, "kubeletVersion", NULL), "")));
  const char *internal = NULL, *external = NULL;
  json_array_foreach(kin__sim_tc_at(o, "status.addresses"), i, c) {
    const char *t = kin__sim_jstr(c, "type", NULL), *a = kin__sim_jstr(c, "address", NULL);
    if (!t || !a) continue;
    if (!internal && !strcmp(t, "InternalIP")) internal = a;
    if (!external && !strcmp(t, "ExternalIP")) external = a;
  }
  json_array_append_new(cells, json_string(kin__sim_tc_or_default(internal, "<none>")));
  json_array_append_new(cells, json_string(kin__sim_tc_or_default(external, "<none>")));
  json_array_append_new(cells, json_string(kin__sim_tc_or_default(kin__sim_jstr(ni, "osImage", NULL), "<unknown>")));
  char kv[512];
  const char *arch = kin__sim_jstr(ni, "architecture", NULL);
  snprintf(kv, sizeof(kv), "%s%s%s%s", kin__sim_tc_or_default(kin__sim_jstr(ni, "kernelVersion", NULL), "<unknown>"),
           arch && *arch ? " (" : "", arch && *arch ? arch : "", arch && *arch ? ")" : "");
  json_array_append_new(cells, json_string(kv));
  json_array_append_new(cells,
                        json_string(kin__sim_tc_or_default(kin__sim_jstr(ni, "containerRuntimeVersion", NULL), "<unknown>")));
}

/* printEvent, for core/v1 Events and events.k8s.io/v1 ones (converted to
 * the internal Event by the server: regarding, note, deprecated*). */
static void event_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  int v1 = json_object_get(o, "involvedObject") || json_object_get(o, "message") ||
           json_object_get(o, "source") || json_object_get(o, "firstTimestamp");
  int newapi = !v1 && (json_object_get(o, "regarding") || json_object_get(o, "note") ||
                       json_object_get(o, "deprecatedSource"));
  const json_t *inv = json_object_get(o, newapi ? "regarding" : "involvedObject");
  const json_t *src = json_object_get(o, newapi ? "deprecatedSource" : "source");
  const char *first_ts = kin__sim_tc_str_at(o, newapi ? "deprecatedFirstTimestamp" : "firstTimestamp");
  const char *last_ts = kin__sim_tc_str_at(o, newapi ? "deprecatedLastTimestamp" : "lastTimestamp");
  long long count = kin__sim_tc_int_at(o, newapi ? "deprecatedCount" : "count");
  const char *msg = kin__sim_tc_or_default(kin__sim_jstr(o, newapi ? "note" : "message", NULL), "");
  time_t t;
  json_t *first = kin__sim_tc_parse_time(first_ts, &t) ? kin__sim_tc_since(first_ts, now) : kin__sim_tc_since(kin__sim_tc_str_at(o, "eventTime"), now);
  json_t *last = kin__sim_tc_parse_time(last_ts, &t) ? kin__sim_tc_since(last_ts, now) : json_incref(first);
  const json_t *series = json_object_get(o, "series");
  if (json_is_object(series)) {
    json_decref(last);
    last = kin__sim_tc_since(kin__sim_jstr(series, "lastObservedTime", NULL), now);
    count = kin__sim_tc_int_at(series, "count");
  } else if (count == 0) {
    count = 1;
  }
  char target[600];
  const char *kind = kin__sim_tc_or_default(kin__sim_jstr(inv, "kind", NULL), "");
  char lk[256];
  size_t i = 0;
  for (; kind[i] && i + 1 < sizeof(lk); i++) lk[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] + 32 : kind[i]);
  lk[i] = 0;
  const char *iname = kin__sim_jstr(inv, "name", NULL);
  if (iname && *iname)
    snprintf(target, sizeof(target), "%s/%s", lk, iname);
  else
    snprintf(target, sizeof(target), "%s", lk);
  /* formatEventSource: source first, then the reporting controller
   * (reportingComponent in core v1) and instance */
  const char *comp = kin__sim_tc_or_default(
      kin__sim_jstr(src, "component", NULL),
      kin__sim_tc_or_default(kin__sim_jstr(o, newapi ? "reportingController" : "reportingComponent", NULL),
                 ""));
  const char *host = kin__sim_tc_or_default(kin__sim_jstr(src, "host", NULL),
                                kin__sim_tc_or_default(kin__sim_jstr(o, "reportingInstance", NULL), ""));
  char source[600];
  snprintf(source, sizeof(source), "%s%s%s", comp, *host ? ", " : "", host);
  /* strings.TrimSpace of the message */
  size_t ml = strlen(msg);
  while (ml && strchr(" \t\n\r\v\f", msg[ml - 1])) ml--;
  while (ml && strchr(" \t\n\r\v\f", *msg)) msg++, ml--;
  json_array_append_new(cells, last);
  json_array_append_new(cells, json_string(kin__sim_tc_or_default(kin__sim_jstr(o, "type", NULL), "")));
  json_array_append_new(cells, json_string(kin__sim_tc_or_default(kin__sim_jstr(o, "reason", NULL), "")));
  json_array_append_new(cells, json_string(target));
  json_array_append_new(cells, json_string(kin__sim_tc_or_default(kin__sim_jstr(inv, "fieldPath", NULL), "")));
  json_array_append_new(cells, json_string(source));
  json_array_append_new(cells, json_stringn(msg, ml));
  json_array_append_new(cells, first);
  json_array_append_new(cells, json_integer(count));
  json_array_append_new(cells, kin__sim_tc_name_of(o));
}

/* The default TableConvertor (registry/rest/table.go): Name, Created At
 * (RFC 3339, UTC). */
void kin__sim_table_default_row(json_t *cells, json_t *row, const json_t *o, time_t now) {
  (void)row;
  (void)now;
  json_array_append_new(cells, kin__sim_tc_name_of(o));
  const char *ts = kin__sim_tc_str_at(o, "metadata.creationTimestamp");
  time_t t;
  if (kin__sim_tc_parse_time(ts, &t)) {
    struct tm tm;
    char buf[32];
    gmtime_r(&t, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_array_append_new(cells, json_string(buf));
  } else {
    json_array_append_new(cells, json_null());
  }
}


static const printer printers[] = {
    {"", "pods", kin__sim_table_pod_cols, pod_row},
    {"", "configmaps", kin__sim_table_configmap_cols, configmap_row},
    {"", "secrets", kin__sim_table_secret_cols, secret_row},
    {"", "services", kin__sim_table_service_cols, service_row},
    {"", "serviceaccounts", kin__sim_table_serviceaccount_cols, serviceaccount_row},
    {"", "namespaces", kin__sim_table_namespace_cols, namespace_row},
    {"", "nodes", kin__sim_table_node_cols, node_row},
    {"", "events", kin__sim_table_event_cols, event_row},
    {"events.k8s.io", "events", kin__sim_table_event_cols, event_row},
    {"apps", "deployments", kin__sim_table_deployment_cols, deployment_row},
    {"apps", "replicasets", kin__sim_table_replicaset_cols, replicaset_row},
    {"apps", "statefulsets", kin__sim_table_statefulset_cols, statefulset_row},
    {"apps", "daemonsets", kin__sim_table_daemonset_cols, daemonset_row},
    {"coordination.k8s.io", "leases", kin__sim_table_lease_cols, lease_row},
};

const printer *kin__sim_table_printer_of(const kin__sim_resource *r) {
  for (size_t i = 0; i < sizeof(printers) / sizeof(printers[0]); i++)
    if (!strcmp(printers[i].group, r->group) && !strcmp(printers[i].resource, r->resource))
      return &printers[i];
  return NULL;
}

