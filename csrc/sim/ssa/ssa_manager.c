/* ssa_manager.c -- the managedFields bookkeeping of kube-apiserver's field
 * manager: decoding and encoding metadata.managedFields, Update
 * operations (every field a write added or changed moves to its manager),
 * Apply operations (merge, prune of dropped fields, conflicts with other
 * managers, force) and the message of a conflict. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ssa.h"

/* Metadata the field manager never records (stripmeta.go). */
static json_t *strip_set(void) {
  return json_pack("{s:{}, s:{}, s:{s:{}, s:{}, s:{}, s:{}, s:{}, s:{}, s:{}, s:{}, s:{}, s:{}}}",
                   "f:apiVersion", "f:kind", "f:metadata", ".", "f:name", "f:namespace",
                   "f:creationTimestamp", "f:selfLink", "f:uid", "f:clusterName", "f:generation",
                   "f:managedFields", "f:resourceVersion");
}

/* The identity of a manager entry: manager, operation, subresource, and
 * the apiVersion for Update entries (BuildManagerIdentifier). */
static void ident(char *buf, size_t cap, const char *manager, const char *op, const char *sub,
                  const char *av) {
  snprintf(buf, cap, "%s\037%s\037%s\037%s", manager, op, sub ? sub : "",
           op && !strcmp(op, "Update") && av ? av : "");
}

/* Decodes a managedFields list into a new object id -> entry, each entry
 * a copy with fieldsV1 the manager's set; NULL when the list does not
 * decode (as DecodeManagedFields: a non-object entry, an operation other
 * than Apply/Update, a fieldsType other than FieldsV1). */
static json_t *decode(const json_t *list) {
  json_t *out = json_object();
  size_t i;
  json_t *e;
  json_array_foreach(list, i, e) {
    const char *m = json_string_value(json_object_get(e, "manager"));
    const char *op = json_string_value(json_object_get(e, "operation"));
    const char *ft = json_string_value(json_object_get(e, "fieldsType"));
    const json_t *f = json_object_get(e, "fieldsV1");
    if (!json_is_object(e) || !op || (strcmp(op, "Apply") && strcmp(op, "Update")) ||
        (ft && strcmp(ft, "FieldsV1")) || (f && !json_is_object(f))) {
      json_decref(out);
      return NULL;
    }
    char id[1024];
    ident(id, sizeof(id), m ? m : "", op, json_string_value(json_object_get(e, "subresource")),
          json_string_value(json_object_get(e, "apiVersion")));
    json_t *c = json_deep_copy(e);
    if (!f) json_object_set_new(c, "fieldsV1", json_object());
    json_object_set_new(out, id, c);
  }
  return out;
}

/* qsort order of managedFields entries (sortEncodedManagedFields; RFC
 * 3339 UTC times sort as strings, a missing time first). */
static int entry_cmp(const void *pa, const void *pb) {
  const json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
  static const char *const keys[] = {"operation", "time", "manager", "apiVersion", "subresource"};
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
    const char *x = json_string_value(json_object_get(a, keys[i]));
    const char *y = json_string_value(json_object_get(b, keys[i]));
    int c = strcmp(x ? x : "", y ? y : "");
    if (c) return c;
  }
  return 0;
}

/* Writes the managers (entries with a non-empty set) into obj's
 * metadata.managedFields, sorted as sortEncodedManagedFields (operation,
 * time, manager, apiVersion, subresource); removes the field when none. */
static void encode(json_t *obj, const json_t *managers) {
  json_t *md = json_object_get(obj, "metadata");
  if (!json_is_object(md)) return;
  size_t n = 0, cap = json_object_size(managers);
  json_t **v = malloc((cap ? cap : 1) * sizeof(*v));
  const char *id;
  json_t *e;
  json_object_foreach((json_t *)managers, id, e) {
    if (v && !kin__ssa_set_empty(json_object_get(e, "fieldsV1"))) v[n++] = e;
  }
  if (!v || !n) {
    free(v);
    json_object_del(md, "managedFields");
    return;
  }
  qsort(v, n, sizeof(*v), entry_cmp);
  json_t *list = json_array();
  for (size_t i = 0; i < n; i++) {
    json_t *c = json_deep_copy(v[i]);
    json_object_set_new(c, "fieldsType", json_string("FieldsV1"));
    json_array_append_new(list, c);
  }
  free(v);
  json_object_set_new(md, "managedFields", list);
}

/* A new entry for the operation's manager. */
static json_t *new_entry(const kin__ssa_op *op, const char *operation) {
  json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:{}}", "manager", op->manager, "operation",
                        operation, "apiVersion", op->api_version, "time", op->now, "fieldsV1");
  if (e && op->subresource && *op->subresource)
    json_object_set_new(e, "subresource", json_string(op->subresource));
  return e;
}

/* obj without metadata.managedFields: a new value (NULL stays NULL). */
static json_t *without_managed(const json_t *obj) {
  json_t *c = json_deep_copy(obj);
  json_object_del(json_object_get(c, "metadata"), "managedFields");
  return c;
}

/* Removes the operation's reset fields (and what is below them) from
 * each set given (NULL skipped). */
static void drop_ignored(const kin__ssa_op *op, json_t *a, json_t *b, json_t *c) {
  if (!op->ignore) return;
  if (a) kin__ssa_set_recursive_difference(a, op->ignore);
  if (b) kin__ssa_set_recursive_difference(b, op->ignore);
  if (c) kin__ssa_set_recursive_difference(c, op->ignore);
}

/* How many Update entries an object keeps (DefaultMaxUpdateManagers). */
#define MAX_UPDATERS 10

typedef struct {
  char *id;
  char time[40];
} updater;

/* qsort order of updaters: oldest first, then by identity. */
static int updater_cmp(const void *pa, const void *pb) {
  const updater *a = pa, *b = pb;
  int c = strcmp(a->time, b->time);
  return c ? c : strcmp(a->id, b->id);
}

/* Caps the Update entries of managers (modified) at MAX_UPDATERS as
 * capmanagers.go does: from the oldest on, the entries of an apiVersion
 * after its first are merged into one "ancient-changes" entry of that
 * apiVersion (the first moves into it), which takes the merged one's
 * time. Out of memory leaves managers as they are. */
static void cap_updaters(json_t *managers) {
  size_t n = 0, cap = json_object_size(managers);
  updater *u = calloc(cap ? cap : 1, sizeof(*u));
  json_t *first = json_object(); /* apiVersion -> id of its first updater */
  const char *id;
  json_t *e;
  json_object_foreach(managers, id, e) {
    const char *op = json_string_value(json_object_get(e, "operation"));
    if (!u || !op || strcmp(op, "Update")) continue;
    u[n].id = strdup(id);
    const char *t = json_string_value(json_object_get(e, "time"));
    snprintf(u[n].time, sizeof(u[n].time), "%s", t ? t : "");
    if (u[n].id) n++;
  }
  if (!u || !first || n <= MAX_UPDATERS) goto done;
  qsort(u, n, sizeof(*u), updater_cmp);
  for (size_t i = 0, length = n; i < n && length > MAX_UPDATERS; i++) {
    json_t *m = json_object_get(managers, u[i].id);
    const char *av = json_string_value(json_object_get(m, "apiVersion"));
    if (!av) av = "";
    const char *f = json_string_value(json_object_get(first, av));
    if (!f) {
      json_object_set_new(first, av, json_string(u[i].id));
      continue;
    }
    char bucket[1024];
    ident(bucket, sizeof(bucket), "ancient-changes", "Update", "", av);
    json_t *b = json_object_get(managers, bucket);
    if (!b) {
      b = json_incref(json_object_get(managers, f));
      json_object_del(managers, f);
      json_object_set_new(b, "manager", json_string("ancient-changes"));
      json_object_del(b, "subresource");
      json_object_set_new(managers, bucket, b);
    }
    kin__ssa_set_union(json_object_get(b, "fieldsV1"), json_object_get(m, "fieldsV1"));
    if (u[i].time[0])
      json_object_set_new(b, "time", json_string(u[i].time));
    else
      json_object_del(b, "time");
    json_object_del(managers, u[i].id);
    length--;
  }
done:
  for (size_t i = 0; i < n; i++) free(u[i].id);
  free(u);
  json_decref(first);
}

void kin__ssa_update(const kin__ssa_op *op, const json_t *live, json_t *new_) {
  json_t *md = json_object_get(new_, "metadata");
  const json_t *sent = json_object_get(md, "managedFields");
  const json_t *live_mf = json_object_get(json_object_get(live, "metadata"), "managedFields");
  json_t *managers = NULL;
  int from_request = !(op->subresource && *op->subresource);
  if (from_request && json_is_array(sent) && json_array_size(sent) == 0) {
    managers = json_object(); /* reset */
  } else {
    if (from_request && json_array_size(sent)) managers = decode(sent);
    if (!json_object_size(managers)) {
      json_decref(managers);
      managers = decode(live_mf);
    }
    if (!managers) managers = json_object();
  }
  json_t *old = without_managed(live), *cur = without_managed(new_);
  json_t *added = NULL, *modified = NULL, *removed = NULL, *changed = NULL, *strip = NULL;
  char err[512];
  if (!managers || !cur || kin__ssa_compare(op->schema, old, cur, &added, &modified, &removed,
                                            err, sizeof(err))) {
    /* UpdateNoErrors: the object goes without managedFields */
    json_object_del(md, "managedFields");
    goto done;
  }
  drop_ignored(op, added, modified, removed);
  changed = json_deep_copy(modified);
  kin__ssa_set_union(changed, added);
  const char *id;
  json_t *e;
  void *tmp;
  json_object_foreach_safe(managers, tmp, id, e) {
    json_t *set = json_object_get(e, "fieldsV1");
    kin__ssa_set_difference(set, changed);
    kin__ssa_set_difference(set, removed);
    if (kin__ssa_set_empty(set)) json_object_del(managers, id);
  }
  strip = strip_set();
  kin__ssa_set_difference(changed, strip);
  if (!kin__ssa_set_empty(changed)) {
    char me[1024];
    ident(me, sizeof(me), op->manager, "Update", op->subresource, op->api_version);
    json_t *prev = json_object_get(managers, me);
    json_t *e2 = prev;
    if (prev) {
      kin__ssa_set_union(json_object_get(prev, "fieldsV1"), changed);
      json_object_set_new(prev, "time", json_string(op->now));
    } else {
      e2 = new_entry(op, "Update");
      json_object_set(e2, "fieldsV1", changed);
      json_object_set_new(managers, me, e2);
    }
    if (op->untimed) json_object_del(e2, "time");
  }
  cap_updaters(managers);
  encode(new_, managers);
done:
  json_decref(managers);
  json_decref(old);
  json_decref(cur);
  json_decref(added);
  json_decref(modified);
  json_decref(removed);
  json_decref(changed);
  json_decref(strip);
}

/* How a manager is named in a conflict (printManager): "name", with
 * subresource "s", and "using <apiVersion>" for an Update entry. */
static void print_manager(char *buf, size_t cap, const json_t *e) {
  const char *m = json_string_value(json_object_get(e, "manager"));
  const char *op = json_string_value(json_object_get(e, "operation"));
  const char *sub = json_string_value(json_object_get(e, "subresource"));
  const char *av = json_string_value(json_object_get(e, "apiVersion"));
  int n = snprintf(buf, cap, "\"%s\"", m ? m : "");
  if (sub && *sub && n >= 0 && (size_t)n < cap)
    n += snprintf(buf + n, cap - (size_t)n, " with subresource \"%s\"", sub);
  if (op && !strcmp(op, "Update") && n >= 0 && (size_t)n < cap)
    snprintf(buf + n, cap - (size_t)n, " using %s", av ? av : "");
}

typedef struct {
  json_t *causes;
  const char *who;
  char *msg;
  size_t cap;
} conflict_acc;

/* kin__ssa_set_paths callback: one cause and one "- path" line; 0. */
static int add_conflict(void *ud, const char *path) {
  conflict_acc *a = ud;
  char m[1200];
  snprintf(m, sizeof(m), "conflict with %s", a->who);
  json_array_append_new(a->causes, json_pack("{s:s, s:s, s:s}", "reason", "FieldManagerConflict",
                                             "message", m, "field", path));
  size_t len = strlen(a->msg);
  if (len < a->cap) snprintf(a->msg + len, a->cap - len, "\n- %s", path);
  return 0;
}

/* qsort order of strings. */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The 409 of an apply: causes (new array) and the message into err, as
 * NewConflictError words them, managers in the order of their names. */
static void conflict_error(json_t *conflicts, const json_t *managers, json_t **causes, char *err,
                           size_t errlen) {
  size_t n = json_object_size(conflicts), k = 0;
  const char **ids = malloc((n ? n : 1) * sizeof(*ids));
  const char *id;
  json_t *set;
  json_object_foreach(conflicts, id, set) {
    if (ids) ids[k++] = id;
  }
  if (ids) qsort(ids, k, sizeof(*ids), cmp_str);
  *causes = json_array();
  char body[4096] = "";
  for (size_t i = 0; i < k; i++) {
    char who[1024];
    print_manager(who, sizeof(who), json_object_get(managers, ids[i]));
    size_t len = strlen(body);
    snprintf(body + len, sizeof(body) - len, "%sconflicts with %s:", len ? "\n" : "", who);
    conflict_acc a = {*causes, who, body, sizeof(body)};
    kin__ssa_set_paths(json_object_get(conflicts, ids[i]), add_conflict, &a);
  }
  size_t total = json_array_size(*causes);
  if (total == 1) {
    const json_t *c = json_array_get(*causes, 0);
    snprintf(err, errlen, "Apply failed with 1 conflict: %s: %s",
             json_string_value(json_object_get(c, "message")),
             json_string_value(json_object_get(c, "field")));
  } else {
    snprintf(err, errlen, "Apply failed with %zu conflicts: %s", total, body);
  }
  free(ids);
}

json_t *kin__ssa_apply(const kin__ssa_op *op, const json_t *live, const json_t *config,
                       int *code, json_t **causes, char *err, size_t errlen) {
  *causes = NULL;
  json_t *managers = decode(json_object_get(json_object_get(live, "metadata"), "managedFields"));
  if (!managers) managers = json_object();
  json_t *old = live ? without_managed(live) : json_object();
  json_t *merged = kin__ssa_merge(op->schema, old, config);
  json_t *set = NULL, *added = NULL, *modified = NULL, *removed = NULL, *changed = NULL;
  json_t *conflicts = json_object(), *strip = strip_set(), *out = NULL;
  char me[1024];
  ident(me, sizeof(me), op->manager, "Apply", op->subresource, op->api_version);
  *code = 500;
  if (!managers || !old || !merged || !conflicts || !strip) {
    snprintf(err, errlen, "out of memory");
    goto done;
  }
  set = kin__ssa_to_set(op->schema, config, err, errlen);
  if (!set) {
    char why[512];
    snprintf(why, sizeof(why), "%s", err);
    snprintf(err, errlen, "failed to create typed patch object: %s", why);
    goto done;
  }
  drop_ignored(op, set, NULL, NULL);
  json_t *prev = json_object_get(managers, me);
  json_t *last = prev ? json_incref(json_object_get(prev, "fieldsV1")) : NULL;
  json_t *mine = new_entry(op, "Apply");
  if (prev) json_object_set(mine, "time", json_object_get(prev, "time"));
  json_object_set(mine, "fieldsV1", set);
  json_object_set_new(managers, me, mine);
  if (last && !kin__ssa_set_empty(last)) {
    json_t *owned = json_object();
    const char *id;
    json_t *e;
    json_object_foreach(managers, id, e) kin__ssa_set_union(owned, json_object_get(e, "fieldsV1"));
    kin__ssa_prune(op->schema, merged, last, owned);
    json_decref(owned);
  }
  json_decref(last);
  if (kin__ssa_compare(op->schema, old, merged, &added, &modified, &removed, err, errlen)) goto done;
  drop_ignored(op, added, modified, removed);
  changed = json_deep_copy(modified);
  kin__ssa_set_union(changed, added);
  const char *id;
  json_t *e;
  json_object_foreach(managers, id, e) {
    if (!strcmp(id, me)) continue;
    json_t *c = kin__ssa_set_intersection(json_object_get(e, "fieldsV1"), changed);
    if (c && !kin__ssa_set_empty(c))
      json_object_set_new(conflicts, id, c);
    else
      json_decref(c);
  }
  if (json_object_size(conflicts) && !op->force) {
    conflict_error(conflicts, managers, causes, err, errlen);
    *code = 409;
    goto done;
  }
  void *tmp;
  json_object_foreach_safe(managers, tmp, id, e) {
    json_t *s = json_object_get(e, "fieldsV1");
    if (strcmp(id, me)) {
      json_t *c = json_object_get(conflicts, id);
      if (c) kin__ssa_set_difference(s, c);
      kin__ssa_set_difference(s, removed);
    } else {
      kin__ssa_set_difference(s, strip);
    }
    if (kin__ssa_set_empty(s)) json_object_del(managers, id);
  }
  /* the applier's time moves when the object changes; a new applier of
   * an unchanged object gets none (managedFieldsUpdater.Apply) */
  json_t *mine_now = json_object_get(managers, me);
  if (mine_now && !json_equal(old, merged))
    json_object_set_new(mine_now, "time", json_string(op->now));
  else if (mine_now && !prev)
    json_object_del(mine_now, "time");
  out = merged;
  merged = NULL;
  if (!json_is_object(json_object_get(out, "metadata")))
    json_object_set_new(out, "metadata", json_object());
  encode(out, managers);
  *code = 0;
done:
  json_decref(managers);
  json_decref(old);
  json_decref(merged);
  json_decref(set);
  json_decref(added);
  json_decref(modified);
  json_decref(removed);
  json_decref(changed);
  json_decref(conflicts);
  json_decref(strip);
  return out;
}
