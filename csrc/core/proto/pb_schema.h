/* pb_schema.h -- internal: the protobuf schema of the built-in types
 * (`application/vnd.kubernetes.protobuf`, k8s.io/apimachinery's
 * runtime/serializer/protobuf) as data, and the wire readers every user of
 * it shares. The tables are generated: csrc/core/proto/schema.txt (from
 * upstream's generated.proto files and Go types by tools/gen-sim-proto.py,
 * `make sim-proto`, committed) compiled in by tools/embed-proto.sh. The
 * core reads protobuf with them (pb_json.h); kinformer.sim reads and
 * writes it (csrc/sim/proto/). Immutable: any thread may read them. */
#ifndef KIN_PB_SCHEMA_H
#define KIN_PB_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

/* Scalar kind of a field (its descriptor's type). */
enum {
  KIN__PB_STRING, KIN__PB_BYTES, KIN__PB_BOOL, KIN__PB_INT32, KIN__PB_INT64,
  KIN__PB_UINT32, KIN__PB_UINT64, KIN__PB_DOUBLE, KIN__PB_FLOAT, KIN__PB_MESSAGE
};
/* Field flags: repeated, a proto map (REPEATED too), a Go pointer (absent
 * stays absent), omitempty in its JSON tag, a Go struct inlined in its
 * parent's JSON (`json:",inline"`). */
#define KIN__PB_F_REPEATED 1
#define KIN__PB_F_MAP 2
#define KIN__PB_F_POINTER 4
#define KIN__PB_F_OMITEMPTY 8
#define KIN__PB_F_INLINE 16
#define KIN__PB_F_OMITZERO 32 /* `json:",omitzero"`: a zero struct is left out */
/* Messages whose JSON is not an object of their fields. */
enum {
  KIN__PB_S_NONE, KIN__PB_S_MAP_ENTRY, KIN__PB_S_TIME, KIN__PB_S_MICROTIME,
  KIN__PB_S_DURATION, KIN__PB_S_QUANTITY, KIN__PB_S_INTORSTR, KIN__PB_S_RAWEXT,
  KIN__PB_S_WRAPPED_LIST, KIN__PB_S_PROPS_OR_ARRAY, KIN__PB_S_PROPS_OR_BOOL,
  KIN__PB_S_PROPS_OR_STRARRAY
};

typedef struct {
  const char *json; /* JSON name; "" when INLINE */
  const char *go;   /* Go field name (in errors) */
  uint32_t num;
  uint8_t kind;
  uint8_t flags;
  short msg; /* the message (or map entry) of a MESSAGE field, else -1 */
} kin__pb_field;

typedef struct {
  const char *name; /* full proto name */
  int special;
  int nfields;
  const kin__pb_field *fields;      /* by number */
  const unsigned short *json_order; /* indices of fields in Go struct order */
} kin__pb_msg;

typedef struct {
  const char *api_version, *kind;
  int msg;
} kin__pb_root;

extern const kin__pb_msg kin__pb_msgs[];
extern const int kin__pb_nmsgs;
extern const kin__pb_root kin__pb_roots[]; /* ends with a NULL kind */

/* The message of (apiVersion, kind), or -1. */
int kin__pb_root_msg(const char *api_version, const char *kind);

/* 1 when the schema has a kind of group-version av ("v1", "apps/v1"; n
 * bytes): a built-in API the server can serve in protobuf. */
int kin__pb_serves(const char *av, size_t n);

/* Wire readers. Each returns 0 and advances *p, or -1 at a truncated or
 * overlong value. */
int kin__pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);
int kin__pb_skip(const uint8_t **p, const uint8_t *end, int wire_type);
/* A length-delimited value at *p: its bytes in *s, *n; advances past it. */
int kin__pb_read_len(const uint8_t **p, const uint8_t *end, const uint8_t **s, size_t *n);

#endif
