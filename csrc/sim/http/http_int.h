/* http_int.h -- the HTTP side of kinformer.sim (k8s.io/apiserver
 * pkg/endpoints): request info, handlers, response helpers. */
#ifndef KIN_SIM_HTTP_INT_H
#define KIN_SIM_HTTP_INT_H

#include <microhttpd.h>
#include <time.h>

#include "buf.h"

#include "label_selector.h"
#include "admission.h"
#include "conversion.h"
#include "auth_int.h"
#include "selector_string.h"
#include "store_int.h"

/* Largest request body the real server reads (3 MiB). */
#define KIN__SIM_MAX_BODY (3u * 1024u * 1024u)



/* One HTTP request, owned by its MHD connection (freed on completion). */
typedef struct {
  kin_sim *sim;
  struct MHD_Connection *conn;
  const char *method;
  kin__buf body;
  int too_large;
  int proto; /* answer in protobuf (http_proto.c negotiated it) */
  char user[256]; /* authenticated user name ("" when none) */
  char groups[KIN__SIM_MAX_GROUPS][128];
  int ngroups;
  char credential_id[80]; /* "X509SHA256=<hex>" for a client certificate */
  int impersonated; /* user and groups are from Impersonate-* headers (auth/) */
  int code; /* status of the answer queued (kin__sim_queue_response); 0 before */
  char warning[300]; /* a Warning header for the answer ("" none): a limit of the sim */
  json_t *warnings;  /* more Warning headers (strings: admission webhooks' warnings) or NULL */
} kin__sim_req;

/* apiserver's RequestInfo for a resource path. */
typedef struct {
  int is_resource;
  char group[256], version[64], ns[256], resource[256], name[256], subresource[64];
  int watch_path;
} kin__sim_request_info;

/* Parses url; returns 0 for an API resource path (info filled), 1 for a
 * non-resource path, -1 for a malformed one. */
int kin__sim_request_info_parse(const char *url, kin__sim_request_info *ri);

/* The attributes kube-apiserver's authorizer is given for a request
 * (RequestInfo and its verb), shared by the request log and the RBAC
 * authorizer. A path the sim's RequestInfo does not read is a
 * non-resource one (resource_path 0), with the lower-case method as verb. */
typedef struct {
  kin__sim_request_info ri;
  int resource_path; /* ri holds a resource request */
  char verb[24];     /* get, list, watch, create, update, patch, delete,
                        deletecollection; "" for another method */
  char ns[256];      /* the namespace (a namespace's own for /namespaces/{name}) */
  char name[256];    /* the object's, or a list's metadata.name field selector */
} kin__sim_request_attrs;
void kin__sim_request_attrs_of(kin__sim_req *req, const char *url, kin__sim_request_attrs *a);

/* Query parameter value (decoded) or NULL. */
const char *kin__sim_query(kin__sim_req *req, const char *name);
/* A boolean query parameter as the server converts it
 * (Convert_Slice_string_To_bool): absent is false; "0" and, in any case,
 * "f", "false", "n", "no" are false; anything else ("True", "") is true. */
int kin__sim_query_bool(const char *v);
/* The body of a POST parsed as JSON (a new reference the caller drops), or
 * NULL for another method or a body that is not JSON. For the
 * /kinformer-sim/ admin endpoints. */
json_t *kin__sim_post_json(kin__sim_req *req);

/* Queues resp (MHD_queue_response) with status code and records code in
 * req->code for the request log; returns MHD's answer. Every answer of
 * the sim goes through it. */
enum MHD_Result kin__sim_queue_response(kin__sim_req *req, unsigned code,
                                        struct MHD_Response *resp);
/* Queue a JSON response; body stolen. Return MHD_YES/MHD_NO. */
enum MHD_Result kin__sim_respond_json(kin__sim_req *req, int code, json_t *body);
enum MHD_Result kin__sim_respond_result(kin__sim_req *req, kin__sim_result *r);
/* Answers buf (its bytes taken) as content_type, in protobuf instead when
 * the request negotiated it and the body is JSON (http_respond.c). */
enum MHD_Result kin__sim_respond_buf(kin__sim_req *req, int code, kin__buf *buf,
                                     const char *content_type);
/* Answers buf (its bytes taken) as content_type as it is, no negotiation
 * (http_util.c). */
enum MHD_Result kin__sim_send_buf(kin__sim_req *req, int code, kin__buf *buf,
                                  const char *content_type);

/* 0 when the PEM bundle holds at least one certificate, else KIN_EINVAL. */
int kin__sim_client_ca_check(const char *pem);
/* The user a bearer token of the sim authenticates (the config's token:
 * "kinformer-sim"; a named user's) copied into user (cap bytes); 1 when
 * there is one, 0 otherwise. Takes the tokens' lock (http_auth.c). */
int kin__sim_token_user(kin_sim *sim, const char *token, char *user, size_t cap);
/* Authenticates req (client certificate, then bearer token; fills
 * req->user/groups); 1 when it may proceed, 0 for a 401 (http_auth.c). */
int kin__sim_authenticate(kin__sim_req *req, const char *url);
/* ---- the RBAC side of requests (http_authz.c, http_reviews.c,
 * http_token_request.c, http_impersonation.c, http_rbac_escalation.c), over
 * the authorizer of auth/ (auth/auth_int.h) ---- */
/* The subject of req (http_authz.c), as the sim's authenticators make it (names point
 * into req): a client certificate's O groups; for a token of
 * "system:serviceaccount:<ns>:<name>" the groups system:serviceaccounts and
 * system:serviceaccounts:<ns>; system:masters for the all-powerful users
 * when the sim authorizes with RBAC ("kinformer-sim", and the anonymous
 * user of a sim without authentication); then system:authenticated, or
 * system:unauthenticated for an anonymous request. */
void kin__sim_subject_of(kin__sim_req *req, kin__sim_subject *out);

/* POST .../serviceaccounts/{name}/token (http_token_request.c): when r
 * and ri are that subresource, fills out with the TokenRequest (201) or a
 * Status (404 for a missing ServiceAccount, 405, 400) and returns 1; else
 * returns 0. */
int kin__sim_token_request(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                           kin__sim_result *out);
/* RBAC's escalation check on a write of obj (what a create, PUT, patch or
 * apply would store), a Role,
 * ClusterRole, RoleBinding or ClusterRoleBinding of r in namespace ns
 * (http_rbac_escalation.c): under authorization mode RBAC, 1 with the 403 in
 * out when the user may neither escalate (bind) nor holds the rules
 * granted; else 0 (always 0 for other resources or in AlwaysAllow mode).
 * Takes the store lock. */
int kin__sim_rbac_escalation_check(kin__sim_req *req, kin__sim_resource *r, const char *ns,
                                   const json_t *obj, kin__sim_result *out);
/* The Impersonate-User / Impersonate-Group headers (http_impersonation.c):
 * when req has them and its user may impersonate (always in AlwaysAllow
 * mode), req's user and groups become the impersonated ones and 0 is
 * returned; 1 with *ret set when it answered (403, 400); 0 without them. */
int kin__sim_impersonate(kin__sim_req *req, enum MHD_Result *ret);
/* Authorizes req (after authentication) when the sim runs with
 * authorization mode RBAC: returns 1 with *ret set when it answered 403
 * Forbidden, 0 when the request may proceed (always 0 in AlwaysAllow
 * mode). Takes the store lock. */
int kin__sim_authz_request(kin__sim_req *req, const char *url, enum MHD_Result *ret);

/* The create of a review resource (http_reviews.c): authorization.k8s.io/v1
 * subjectaccessreviews, localsubjectaccessreviews,
 * selfsubjectaccessreviews, selfsubjectrulesreviews and
 * authentication.k8s.io/v1 tokenreviews, selfsubjectreviews. When r is one
 * of them, fills out with the answered review (201) or a Status (400, 422)
 * and returns 1; else returns 0 and leaves out alone. obj is the decoded
 * body (borrowed, may be modified), ns the path's namespace. Nothing is
 * stored. */
int kin__sim_review_create(kin__sim_req *req, kin__sim_resource *r, const char *ns, json_t *obj,
                           kin__sim_result *out);

/* Discovery (/api, /apis, /version...); returns 1 when it answered. */
int kin__sim_handle_discovery(kin__sim_req *req, const char *url, enum MHD_Result *ret);
/* Request faults (latency, injected failures); 1 when it answered. */
int kin__sim_apply_request_faults(kin__sim_req *req, const char *url, enum MHD_Result *ret);
/* Calls the request hook (kin_sim_set_request_hook), if any, with url and
 * the request's query. */
void kin__sim_call_request_hook(kin__sim_req *req, const char *url);
/* Logs req when the write log is on and req is an API write (write_log.c). */
void kin__sim_write_log_add(kin__sim_req *req, const char *url);
/* Logs req, answered with req->code, when the request log is on and url
 * is not one of the sim's own endpoints (request_log.c). */
void kin__sim_request_log_add(kin__sim_req *req, const char *url);
/* The admin endpoint POST /kinformer-sim/faults; 1 when it answered. */
int kin__sim_handle_faults(kin__sim_req *req, const char *url, enum MHD_Result *ret);
/* The admin endpoint POST /kinformer-sim/burst (burst.c); 1 when it answered. */
int kin__sim_handle_burst(kin__sim_req *req, const char *url, enum MHD_Result *ret);
/* /openapi/v3 and its documents (http_openapi.c); returns 1 when it
 * answered. */
int kin__sim_handle_openapi(kin__sim_req *req, const char *url, enum MHD_Result *ret);
/* kube-apiserver's document of one group-version ("api/v1",
 * "apis/apps/v1"), gzip-compressed: csrc/sim/openapi/, compiled in by
 * tools/embed-openapi.sh as the table below, ended by a NULL gv. */
typedef struct {
  const char *gv;
  const unsigned char *gz;
  size_t len;
  const char *hash; /* upper-case hex SHA-512 of the inflated JSON */
} kin__sim_openapi_doc;
extern const kin__sim_openapi_doc kin__sim_openapi_docs[];
/* Server-side apply and managedFields (http_apply.c). A write's update
 * function wrapped so that the field manager records it (an Update
 * operation of ?fieldManager or the User-Agent's prefix): fn and ud are
 * the write's own. Runs under the store lock, as every update function. */
typedef struct {
  kin__sim_update_fn fn;
  void *ud;
  kin__sim_req *req;
  kin__sim_resource *r;
  const char *subresource; /* "" or "status" */
} kin__sim_managed_update;
json_t *kin__sim_managed_update_fn(void *ud, const json_t *cur, kin__sim_result *err);
/* Sets obj's managedFields for a create by req (obj modified); takes the
 * store lock itself. */
void kin__sim_managed_create(kin__sim_req *req, kin__sim_resource *r, json_t *obj);
/* ?fieldManager: 0 when absent or valid, else -1 with the server's 422
 * for options_kind (too long, non-printable). */
int kin__sim_check_field_manager(kin__sim_req *req, const char *options_kind,
                                 kin__sim_result *out);
/* PATCH with application/apply-patch+yaml: creates or merges; fills out
 * with the object (201/200) or a Status (400, 404, 409, 422, 500). */
void kin__sim_handle_apply(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                           int dry_run, kin__sim_result *out);
/* The inflated document of a built-in group-version ("api/v1"), borrowed
 * until exit, and its length; NULL when none. */
const char *kin__sim_openapi_builtin(const char *gv, size_t *len);
/* The scale subresource (http_scale.c). kin__sim_scale_of returns the
 * autoscaling/v1 Scale of a deployment, replicaset or statefulset (new
 * reference); the handlers fill out with a Scale or a Status. patch is
 * the PATCH's function from the current Scale to the patched one. */
json_t *kin__sim_scale_of(const json_t *obj);
void kin__sim_scale_get(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                        kin__sim_result *out);
void kin__sim_scale_update(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                           int dry_run, kin__sim_result *out);
void kin__sim_scale_patch(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                          kin__sim_update_fn patch, void *patch_ud, int dry_run,
                          kin__sim_result *out);
/* One column of a Table (http_table_columns.c: kube-apiserver's). */
typedef struct {
  const char *name, *type, *format, *description;
  int priority;
} kin__sim_table_col;
/* Each list ends with a NULL name. */
extern const kin__sim_table_col kin__sim_table_pod_cols[];
extern const kin__sim_table_col kin__sim_table_configmap_cols[];
extern const kin__sim_table_col kin__sim_table_secret_cols[];
extern const kin__sim_table_col kin__sim_table_service_cols[];
extern const kin__sim_table_col kin__sim_table_serviceaccount_cols[];
extern const kin__sim_table_col kin__sim_table_deployment_cols[];
extern const kin__sim_table_col kin__sim_table_replicaset_cols[];
extern const kin__sim_table_col kin__sim_table_statefulset_cols[];
extern const kin__sim_table_col kin__sim_table_daemonset_cols[];
extern const kin__sim_table_col kin__sim_table_lease_cols[];
extern const kin__sim_table_col kin__sim_table_event_cols[];
extern const kin__sim_table_col kin__sim_table_namespace_cols[];
extern const kin__sim_table_col kin__sim_table_node_cols[];
extern const kin__sim_table_col kin__sim_table_dflt_cols[];
extern const char *const kin__sim_table_desc_name, *const kin__sim_table_desc_age;
/* Table output (http_table.c). kin__sim_table_accept: "v1" or "v1beta1"
 * when the Accept header's first usable media range asks for a
 * meta.k8s.io Table, NULL for plain JSON. */
const char *kin__sim_table_accept(const char *accept);
/* 0 for an includeObject kube-apiserver takes ("", Metadata, Object,
 * None), else -1 with its 400 in err. */
int kin__sim_table_include_check(const char *include, kin__sim_result *err);
/* The Table (new reference) of body, an object of r or (is_list) a List;
 * headers: with columnDefinitions (else null, as later watch events);
 * now: the time AGE cells count from. */
json_t *kin__sim_table_convert(const kin__sim_resource *r, const json_t *body, int is_list,
                               const char *gv, const char *include, int headers, time_t now);
/* Rewrites the watch event lines of buf from offset from into Table
 * events (ERROR and BOOKMARK lines unchanged); *headers_sent tells whether
 * an earlier event carried the column definitions. */
int kin__sim_table_watch_lines(const kin__sim_resource *r, const char *gv, const char *include,
                               int *headers_sent, kin__buf *buf, size_t from);
/* When req asks for a Table: answers it from body (borrowed) and returns
 * 1 with *ret set; else 0. */
int kin__sim_table_respond(kin__sim_req *req, const kin__sim_resource *r, const json_t *body,
                           int is_list, enum MHD_Result *ret);
/* duration.HumanDuration of secs into buf. */
void kin__sim_human_duration(long long secs, char *buf, size_t cap);
/* Protobuf (http_proto.c). kin__sim_proto_is: 1 when the media type ct
 * is application/vnd.kubernetes.protobuf. kin__sim_proto_negotiate: the
 * server's Accept negotiation for resource r (NULL: a built-in): 1 for
 * protobuf, 0 for JSON, -1 with a 406 in out when nothing acceptable is
 * served (custom resources have no protobuf). kin__sim_proto_body: the
 * protobuf body of req as the JSON object of kind (that message when the
 * envelope names no served kind: api_version's), a new reference, or NULL with the
 * server's 400 in out. kin__sim_proto_respond: answers the JSON bytes of
 * json (taken) in protobuf, a 500 Status when they have no protobuf form.
 * kin__sim_proto_watch_frames: rewrites the JSON event lines of buf from
 * from into length-prefixed protobuf WatchEvent frames. */
int kin__sim_proto_is(const char *ct);
int kin__sim_proto_negotiate(kin__sim_req *req, const kin__sim_resource *r, int collection,
                             kin__sim_result *out);
json_t *kin__sim_proto_body(kin__sim_req *req, const char *api_version, const char *kind,
                            kin__sim_result *out);
enum MHD_Result kin__sim_proto_respond(kin__sim_req *req, int code, kin__buf *json);
int kin__sim_proto_watch_frames(kin__buf *buf, size_t from);
/* Pre-encoded answers (http_proto_pre.c, kin_sim_config.pre_encode).
 * kin__sim_proto_list_item: appends o as a list's item field to items, its
 * kept message when as_stored (o is stored at r's version) and kept, else
 * encoded now; 0, KIN_ENOMEM or KIN_EINVAL. Caller holds the store lock.
 * kin__sim_proto_respond_list: answers the list whose JSON without items is
 * head, with items' fields, in protobuf (both buffers taken; a 500 Status
 * when it cannot be encoded). kin__sim_proto_watch_event: appends a
 * WatchEvent frame of type for o, whose kept body must exist; 0 or
 * KIN_ENOMEM. */
int kin__sim_proto_list_item(kin__buf *items, const kin__sim_resource *r, const kin__sim_obj *o,
                             int as_stored);
enum MHD_Result kin__sim_proto_respond_list(kin__sim_req *req, kin__buf *head, kin__buf *items);
int kin__sim_proto_watch_event(kin__buf *buf, const char *type, const kin__sim_obj *o);
enum MHD_Result kin__sim_handle_resource(kin__sim_req *req, kin__sim_request_info *ri);

/* ---- http_discovery_aggregated.c ---- */
/* 1 when the Accept header (may be NULL) asks first for
 * apidiscovery.k8s.io/v2 APIGroupDiscoveryList. */
int kin__sim_discovery_aggregated_wanted(const char *accept);
/* Answers /api (core != 0) or /apis with the APIGroupDiscoveryList of the
 * registry; takes the store lock. */
enum MHD_Result kin__sim_discovery_aggregated(kin__sim_req *req, int core);

/* ---- http_binding.c ---- */
/* The create of a v1 Binding: assigns the pod of its name to target.name;
 * fills out with 201 and a Success Status, or the error (404, 409). obj
 * is borrowed. Takes the store lock. */
void kin__sim_binding_create(kin__sim_req *req, kin__sim_request_info *ri, const json_t *obj,
                             int dry_run, kin__sim_result *out);

enum MHD_Result kin__sim_handle_list(kin__sim_req *req, kin__sim_resource *r,
                                     kin__sim_request_info *ri);
enum MHD_Result kin__sim_handle_watch(kin__sim_req *req, kin__sim_resource *r,
                                      kin__sim_request_info *ri);

/* Selectors of a list or watch: label selector, field requirements
 * (metadata.name/namespace and the resource's own selectable fields). */
typedef struct {
  kin_label_selector *labels; /* NULL: everything */
  struct {
    char field[64];
    char value[256];
    int neq;
  } fields[8];
  int nfields;
  struct kin_shard_selector *shard; /* ?shardSelector= (gate ShardedListAndWatch) or NULL */
} kin__sim_selector;

/* Parses kube-apiserver's --feature-gates value gates ("A=true,B=false";
 * NULL: the defaults) into *sharded (ShardedListAndWatch). Returns 0, or
 * KIN_EINVAL with why in err (an unknown gate, a value not a boolean). */
int kin__sim_feature_gates(const char *gates, int *sharded, char *err, size_t errlen);

/* The list's metadata.shardInfo member (',"shardInfo":{"selector":...}')
 * appended to b when sel has a shard selector. */
void kin__sim_selector_shard_info(const kin__sim_selector *sel, kin__buf *b);
/* Parses labelSelector/fieldSelector of req for resource r (its
 * selectable fields); 0, or -1 with a 400 in out. */
int kin__sim_selector_parse(kin__sim_req *req, const kin__sim_resource *r, kin__sim_selector *sel,
                            kin__sim_result *out);
void kin__sim_selector_free(kin__sim_selector *sel);
int kin__sim_selector_empty(const kin__sim_selector *sel);
int kin__sim_selector_matches(const kin__sim_selector *sel, const json_t *obj);
/* The same on a stored object, parsing only what the selector reads (its
 * metadata when that is all); 0 on ENOMEM. Caller holds mu or a reference. */
int kin__sim_selector_matches_obj(const kin__sim_selector *sel, const kin__sim_obj *o);

/* Appends obj as served by r (apiVersion rewritten for a CRD version
 * other than the storage one, converted by r->convert_out when r has
 * one). Caller holds the store lock. Returns 0 or KIN_ENOMEM. */
int kin__sim_append_obj(kin__buf *b, const kin__sim_resource *r, const kin__sim_obj *o);
/* Appends o converted by r->convert_out (non-NULL), without kind and
 * apiVersion unless with_type (list items carry neither, as the
 * server's). Caller holds the store lock. Returns 0 or KIN_ENOMEM. */
int kin__sim_append_converted(kin__buf *b, const kin__sim_resource *r, const kin__sim_obj *o,
                              int with_type);
/* "v1" or "apps/v1" into buf. */
void kin__sim_api_version(const kin__sim_resource *r, char *buf, size_t cap);

#endif
