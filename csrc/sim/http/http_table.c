/* http_table.c -- server-side Table output (k8s.io/apiserver
 * handlers/response.go asTable, the printers of
 * pkg/printers/internalversion for the built-ins, the default
 * TableConvertor of k8s.io/apiserver registry/rest/table.go and
 * apiextensions' tableconvertor for custom resources).
 *
 * A GET, LIST or WATCH whose Accept header asks first for
 * `application/json;as=Table;v=v1|v1beta1;g=meta.k8s.io` gets a
 * meta.k8s.io Table. Column definitions are kube-apiserver v1.36.3's,
 * captured from it with curl (names, types, formats, descriptions and
 * priorities byte for byte); the cells follow its printers, wide columns
 * included, as the server always prints them (kubectl hides priority > 0
 * columns unless -o wide). includeObject: Metadata (default:
 * PartialObjectMetadata), Object, None. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_table_cells.h"
#include "http_table_printers.h"
#include "kin.h"

static json_t *col_json(const char *name, const char *type, const char *format,
                        const char *desc, long long prio) {
  return json_pack("{s:s, s:s, s:s, s:s, s:I}", "name", name, "type", type, "format", format,
                   "description", desc, "priority", (json_int_t)prio);
}

/* ---- custom resources (apiextensions tableconvertor) ---- */

/* 1 when every column of cols has a jsonPath of the form .a.b.c. */
static int simple_paths(const json_t *cols) {
  size_t i;
  json_t *c;
  json_array_foreach((json_t *)cols, i, c) {
    const char *p = kin__sim_jstr(c, "jsonPath", NULL);
    if (!p || p[0] != '.' || !p[1]) return 0;
    for (const char *q = p; *q; q++) {
      if (*q == '.') {
        if (!q[1] || q[1] == '.') return 0;
      } else if (!(*q == '_' || *q == '-' || (*q >= 'a' && *q <= 'z') ||
                   (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9'))) {
        return 0;
      }
    }
  }
  return 1;
}

/* The columns of a custom resource: the CRD version's
 * additionalPrinterColumns when their paths are simple, else Age. */
static json_t *cr_columns(const kin__sim_resource *r) {
  const json_t *pc = r->printer_columns;
  if (json_array_size(pc) && simple_paths(pc)) return json_incref((json_t *)pc);
  return json_pack("[{s:s, s:s, s:s, s:s}]", "name", "Age", "type", "date", "jsonPath",
                   ".metadata.creationTimestamp", "description", D_AGE);
}

static void cr_row(json_t *cells, const json_t *cols, const json_t *o, time_t now) {
  json_array_append_new(cells, kin__sim_tc_name_of(o));
  size_t i;
  json_t *c;
  json_array_foreach((json_t *)cols, i, c) {
    const json_t *v = kin__sim_tc_at(o, kin__sim_jstr(c, "jsonPath", NULL) + 1);
    const char *type = kin__sim_tc_or_default(kin__sim_jstr(c, "type", NULL), "");
    json_t *cell = NULL;
    if (v && !json_is_null(v)) {
      if (!strcmp(type, "string")) {
        if (json_is_string(v))
          cell = json_incref((json_t *)v);
        else if (json_is_integer(v) || json_is_real(v) || json_is_boolean(v) ||
                 json_is_object(v) || json_is_array(v)) {
          char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
          cell = s ? json_string(s) : NULL;
          free(s);
        }
      } else if (!strcmp(type, "integer")) {
        if (json_is_integer(v)) cell = json_incref((json_t *)v);
        else if (json_is_real(v)) cell = json_integer((json_int_t)json_real_value(v));
      } else if (!strcmp(type, "number")) {
        if (json_is_number(v)) cell = json_real(json_number_value(v));
      } else if (!strcmp(type, "boolean")) {
        if (json_is_boolean(v)) cell = json_incref((json_t *)v);
      } else if (!strcmp(type, "date")) {
        time_t t;
        if (json_is_string(v))
          cell = kin__sim_tc_parse_time(json_string_value(v), &t) ? kin__sim_tc_since(json_string_value(v), now)
                                                      : json_string("<invalid>");
      }
    }
    json_array_append_new(cells, cell ? cell : json_null());
  }
}

/* ---- conversion ---- */

const char *kin__sim_table_accept(const char *accept) {
  if (!accept) return NULL;
  const char *p = accept;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char mr[512];
    if (n >= sizeof(mr)) n = sizeof(mr) - 1;
    memcpy(mr, p, n);
    mr[n] = 0;
    p += n + (end ? 1 : 0);
    char *save = NULL, *tok = strtok_r(mr, ";", &save);
    if (!tok) continue;
    while (*tok == ' ') tok++;
    size_t tl = strlen(tok);
    while (tl && tok[tl - 1] == ' ') tok[--tl] = 0;
    int json = !strcasecmp(tok, "application/json");
    if (!json && strcasecmp(tok, "*/*") && strcasecmp(tok, "application/*")) continue;
    const char *as = NULL, *v = NULL, *g = NULL;
    while ((tok = strtok_r(NULL, ";", &save))) {
      while (*tok == ' ') tok++;
      char *eq = strchr(tok, '=');
      if (!eq) continue;
      *eq = 0;
      char *val = eq + 1;
      size_t vl = strlen(val);
      while (vl && val[vl - 1] == ' ') val[--vl] = 0;
      if (!strcmp(tok, "as")) as = val;
      else if (!strcmp(tok, "v")) v = val;
      else if (!strcmp(tok, "g")) g = val;
    }
    if (!as) return NULL; /* plain JSON comes first */
    if (!strcmp(as, "Table") && g && !strcmp(g, "meta.k8s.io") && v &&
        (!strcmp(v, "v1") || !strcmp(v, "v1beta1")))
      return !strcmp(v, "v1") ? "v1" : "v1beta1";
  }
  return NULL;
}

int kin__sim_table_include_check(const char *include, kin__sim_result *err) {
  if (!include || !*include || !strcmp(include, "Metadata") || !strcmp(include, "Object") ||
      !strcmp(include, "None"))
    return 0;
  kin__sim_err(err, 400, "BadRequest", NULL,
               "Unable to convert to Table as requested: includeObject: Invalid value: \"%s\": "
               "must be 'Metadata', 'Object', 'None', or empty", include);
  return -1;
}

static json_t *row_object(const kin__sim_resource *r, const json_t *o, const char *gv,
                          const char *include) {
  if (include && !strcmp(include, "None")) return json_null();
  if (include && !strcmp(include, "Object")) {
    json_t *c = json_copy((json_t *)o);
    if (!c) return NULL;
    char av[320];
    kin__sim_api_version(r, av, sizeof(av));
    json_object_set_new(c, "kind", json_string(r->kind));
    json_object_set_new(c, "apiVersion", json_string(av));
    return c;
  }
  char av[64];
  snprintf(av, sizeof(av), "meta.k8s.io/%s", gv);
  json_t *md = json_object_get(o, "metadata");
  return json_pack("{s:s, s:s, s:O}", "kind", "PartialObjectMetadata", "apiVersion", av,
                   "metadata", md ? md : json_object());
}

json_t *kin__sim_table_convert(const kin__sim_resource *r, const json_t *body, int is_list,
                               const char *gv, const char *include, int headers, time_t now) {
  const printer *p = r->crd_name ? NULL : kin__sim_table_printer_of(r);
  json_t *crcols = r->crd_name ? cr_columns(r) : NULL;
  json_t *t = json_object();
  char av[64];
  snprintf(av, sizeof(av), "meta.k8s.io/%s", gv);
  json_object_set_new(t, "kind", json_string("Table"));
  json_object_set_new(t, "apiVersion", json_string(av));
  json_t *md = json_object();
  const json_t *bmd = json_object_get(body, "metadata");
  const char *rv = kin__sim_jstr(bmd, "resourceVersion", NULL);
  if (rv && *rv) json_object_set_new(md, "resourceVersion", json_string(rv));
  if (is_list) {
    const char *cont = kin__sim_jstr(bmd, "continue", NULL);
    if (cont && *cont) json_object_set_new(md, "continue", json_string(cont));
    json_t *ric = json_object_get(bmd, "remainingItemCount");
    if (ric) json_object_set(md, "remainingItemCount", ric);
  }
  json_object_set_new(t, "metadata", md);
  json_t *cols = json_array();
  if (crcols) {
    json_array_append_new(cols, col_json("Name", "string", "name", D_NAME, 0));
    size_t i;
    json_t *c;
    json_array_foreach(crcols, i, c) {
      const char *desc = kin__sim_jstr(c, "description", NULL);
      char dd[600];
      if (!desc || !*desc) {
        snprintf(dd, sizeof(dd), "Custom resource definition column (in JSONPath format): %s",
                 kin__sim_tc_or_default(kin__sim_jstr(c, "jsonPath", NULL), ""));
        desc = dd;
      }
      json_array_append_new(cols, col_json(kin__sim_tc_or_default(kin__sim_jstr(c, "name", NULL), ""),
                                           kin__sim_tc_or_default(kin__sim_jstr(c, "type", NULL), ""),
                                           kin__sim_tc_or_default(kin__sim_jstr(c, "format", NULL), ""), desc,
                                           kin__sim_tc_int_at(c, "priority")));
    }
  } else {
    for (const table_col *c = p ? p->cols : kin__sim_table_dflt_cols; c->name; c++)
      json_array_append_new(cols, col_json(c->name, c->type, c->format, c->description, c->priority));
  }
  json_object_set_new(t, "columnDefinitions", headers ? cols : json_null());
  if (!headers) json_decref(cols);
  json_t *rows = json_array();
  json_t *single = NULL;
  const json_t *items = is_list ? json_object_get(body, "items") : (single = json_pack("[O]", body));
  size_t i;
  json_t *o;
  json_array_foreach((json_t *)items, i, o) {
    json_t *row = json_object();
    json_t *cells = json_array();
    json_object_set_new(row, "cells", cells);
    if (crcols)
      cr_row(cells, crcols, o, now);
    else
      (p ? p->row : kin__sim_table_default_row)(cells, row, o, now);
    json_object_set_new(row, "object", row_object(r, o, gv, include));
    json_array_append_new(rows, row);
  }
  json_decref(single);
  json_decref(crcols);
  json_object_set_new(t, "rows", rows);
  return t;
}

int kin__sim_table_watch_lines(const kin__sim_resource *r, const char *gv, const char *include,
                               int *headers_sent, kin__buf *buf, size_t from) {
  if (from >= buf->len) return 0;
  kin__buf out = {0};
  time_t now = time(NULL);
  const char *p = buf->p + from, *end = buf->p + buf->len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    json_error_t jerr;
    json_t *ev = json_loadb(p, n, 0, &jerr);
    const char *type = kin__sim_jstr(ev, "type", NULL);
    json_t *obj = json_object_get(ev, "object");
    if (ev && type && obj && strcmp(type, "ERROR") && strcmp(type, "BOOKMARK")) {
      json_t *t = kin__sim_table_convert(r, obj, 0, gv, include, !*headers_sent, now);
      *headers_sent = 1;
      json_object_set_new(ev, "object", t);
      char *s = json_dumps(ev, JSON_COMPACT);
      if (s) kin__buf_add(&out, s, strlen(s));
      free(s);
      kin__buf_add(&out, "\n", 1);
    } else {
      kin__buf_add(&out, p, n + (nl ? 1 : 0));
    }
    json_decref(ev);
    p += n + (nl ? 1 : 0);
  }
  buf->len = from;
  int rc = kin__buf_add(buf, out.p ? out.p : "", out.len);
  free(out.p);
  return rc;
}

int kin__sim_table_respond(kin__sim_req *req, const kin__sim_resource *r, const json_t *body,
                           int is_list, enum MHD_Result *ret) {
  const char *gv = kin__sim_table_accept(
      MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Accept"));
  if (!gv) return 0;
  const char *include = kin__sim_query(req, "includeObject");
  kin__sim_result err = {0, NULL};
  if (kin__sim_table_include_check(include, &err)) {
    *ret = kin__sim_respond_result(req, &err);
    return 1;
  }
  *ret = kin__sim_respond_json(req, 200, kin__sim_table_convert(r, body, is_list, gv, include, 1,
                                                                time(NULL)));
  return 1;
}
