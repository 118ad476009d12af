#!/usr/bin/env python3
"""gen-sim-proto.py -- writes csrc/core/proto/schema.txt, the protobuf
schema kinformer.sim transcodes with (csrc/sim/proto_*.c), as data that
tools/embed-proto.sh compiles in.

Usage: tools/gen-sim-proto.py MODCACHE OUT.txt
MODCACHE is the Go module cache's k8s.io folder of the e2e tier
(~/.cache/kinformer-e2e/v1.36.3/go/pkg/mod/k8s.io). Debian's protoc
compiles the generated.proto files of the served groups into a descriptor
set, decoded to text by protoc itself (no python protobuf module needed);
the Go structs of the same packages give what the .proto files do not
carry: each field's JSON name, whether it is a pointer, omitempty, and
inlining. Only messages reachable from the served kinds are kept."""
import os, re, subprocess, sys, tempfile

VER = None  # the modules' version, v0.<minor>.<patch> of the e2e tier's release
MODS = {"api": "k8s.io/api", "apimachinery": "k8s.io/apimachinery",
        "apiextensions-apiserver": "k8s.io/apiextensions-apiserver",
        "kube-aggregator": "k8s.io/kube-aggregator"}
META = "k8s.io.apimachinery.pkg.apis.meta.v1."
APIEXT_DIR = "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
AGG_DIR = "k8s.io/kube-aggregator/pkg/apis/apiregistration"
# The built-in kinds the sim serves: every resource of the capture of
# kube-apiserver's discovery (csrc/sim/discovery/discovery.json, make
# sim-discovery), each with its List, from its group-version's
# generated.proto (the group's directory in k8s.io/api: its first label,
# rbac.authorization.k8s.io -> rbac; apiextensions and apiregistration in
# their own modules).
DISCOVERY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "csrc", "sim",
                         "discovery", "discovery.json")


def proto_dir(group, version):
    if group == "":
        return "k8s.io/api/core/" + version
    if group == "apiextensions.k8s.io":
        return APIEXT_DIR + "/" + version
    if group == "apiregistration.k8s.io":
        return AGG_DIR + "/" + version
    return "k8s.io/api/" + group.split(".")[0] + "/" + version


def served_roots():
    import json
    with open(DISCOVERY) as f:
        disc = json.load(f)
    protos, roots = [], []
    for gv, res in disc["resources"].items():
        group, _, version = gv.rpartition("/")
        d = proto_dir(group, version)
        if d + "/generated.proto" not in protos:
            protos.append(d + "/generated.proto")
        pkg = d.replace("-", "_").replace("/", ".") + "."
        for r in res:
            if "/" in r["name"]:
                continue
            kind = r["kind"]
            roots.append((gv, kind, pkg + kind))
            if r["verbs"] != ["create"]:
                roots.append((gv, kind + "List", pkg + kind + "List"))
    return protos, roots


PROTOS, ROOTS = served_roots()
PROTOS += ["k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
           "k8s.io/apimachinery/pkg/runtime/generated.proto"]
if "k8s.io/api/autoscaling/v1/generated.proto" not in PROTOS:
    PROTOS.append("k8s.io/api/autoscaling/v1/generated.proto")
ROOTS += [
          ("autoscaling/v1", "Scale", "k8s.io.api.autoscaling.v1.Scale"),
          # serviceaccounts/token (kubectl create token)
          ("authentication.k8s.io/v1", "TokenRequest",
           "k8s.io.api.authentication.v1.TokenRequest"),
          ("v1", "Status", META + "Status"),
          ("meta.k8s.io/v1", "Status", META + "Status"),
          ("v1", "DeleteOptions", META + "DeleteOptions"),
          ("meta.k8s.io/v1", "DeleteOptions", META + "DeleteOptions"),
          ("v1", "WatchEvent", META + "WatchEvent"),
          ("meta.k8s.io/v1", "WatchEvent", META + "WatchEvent"),
          ("", "Unknown", "k8s.io.apimachinery.pkg.runtime.Unknown")]
# Messages whose JSON form is not an object of their fields.
APIEXT = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1."
SPECIAL = {
    META + "Time": "TIME", META + "MicroTime": "MICROTIME", META + "Duration": "DURATION",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "QUANTITY",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "INTORSTR",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "RAWEXT",
    META + "FieldsV1": "RAWEXT",
    APIEXT + "JSON": "RAWEXT",
    APIEXT + "JSONSchemaPropsOrArray": "PROPS_OR_ARRAY",
    APIEXT + "JSONSchemaPropsOrBool": "PROPS_OR_BOOL",
    APIEXT + "JSONSchemaPropsOrStringArray": "PROPS_OR_STRARRAY",
}
KINDS = {"TYPE_STRING": "STRING", "TYPE_BYTES": "BYTES", "TYPE_BOOL": "BOOL",
         "TYPE_INT32": "INT32", "TYPE_INT64": "INT64", "TYPE_UINT32": "UINT32",
         "TYPE_UINT64": "UINT64", "TYPE_DOUBLE": "DOUBLE", "TYPE_FLOAT": "FLOAT",
         "TYPE_MESSAGE": "MESSAGE"}


def text_format(s):
    """Parses protoc's text format into nested lists of (key, value)."""
    toks = re.findall(r'"(?:[^"\\]|\\.)*"|[{}:]|[^\s{}:"]+', s)
    pos = 0

    def block():
        nonlocal pos
        out = []
        while pos < len(toks) and toks[pos] != "}":
            key = toks[pos]; pos += 1
            if toks[pos] == ":":
                pos += 1
                out.append((key, toks[pos])); pos += 1
            else:
                assert toks[pos] == "{"; pos += 1
                out.append((key, block()))
                assert toks[pos] == "}"; pos += 1
        return out
    return block()


def get(b, k, d=None):
    for kk, v in b:
        if kk == k:
            return v
    return d


def descriptors(modcache):
    tmp = tempfile.mkdtemp()
    os.makedirs(os.path.join(tmp, "k8s.io"))
    for d, imp in MODS.items():
        os.symlink(os.path.join(modcache, d + "@" + VER), os.path.join(tmp, imp))
    pb = os.path.join(tmp, "set.pb")
    # protoc warns of unused imports in the upstream files: not ours to fix
    subprocess.run(["protoc", "-I", tmp, "--include_imports",
                    "--descriptor_set_out=" + pb] + PROTOS, check=True,
                   stderr=subprocess.DEVNULL)
    with open(pb, "rb") as f:
        txt = subprocess.run(["protoc", "-I", "/usr/include",
                              "--decode=google.protobuf.FileDescriptorSet",
                              "google/protobuf/descriptor.proto"], stdin=f,
                             check=True, capture_output=True).stdout.decode()
    msgs = {}

    def walk(prefix, m, pkgdir):
        name = prefix + "." + get(m, "name").strip('"')
        fields = [f for k, f in m if k == "field"]
        opts = get(m, "options", [])
        msgs[name] = {"fields": fields, "map": get(opts, "map_entry") == "true", "dir": pkgdir,
                      "go": get(m, "name").strip('"')}
        for k, n in m:
            if k == "nested_type":
                walk(name, n, None)
    for k, fd in text_format(txt):
        pkg = get(fd, "package").strip('"')
        fname = get(fd, "name").strip('"')
        pkgdir = os.path.dirname(fname)
        for kk, m in fd:
            if kk == "message_type":
                walk(pkg, m, pkgdir)
            if kk == "enum_type":
                sys.exit("gen-sim-proto: enums are not supported")
    return msgs


def go_structs(modcache, pkgdir):
    """struct name -> {field number: (json name, pointer, omitempty, inline, position)}."""
    imp, rest = None, None
    for d, i in MODS.items():
        if pkgdir.startswith(i + "/"):
            imp, rest = d, pkgdir[len(i) + 1:]
    base = os.path.join(modcache, imp + "@" + VER, rest)
    out = {}
    for fn in sorted(os.listdir(base)):
        if not fn.endswith(".go") or fn.endswith("_test.go") or fn.startswith("zz_") \
                or fn.endswith(".pb.go"):
            continue
        cur = None
        pos = 0
        for line in open(os.path.join(base, fn), encoding="utf-8"):
            m = re.match(r"^type (\w+) struct\s*\{\s*\}", line)
            if m:
                out.setdefault(m.group(1), {})
                continue
            m = re.match(r"^type (\w+) struct \{", line)
            if m:
                cur = out.setdefault(m.group(1), {}); pos = 0
                continue
            if cur is not None and line.startswith("}"):
                cur = None
                continue
            if cur is None:
                continue
            m = re.match(r"^\s+(?:(\w+)\s+)?(\S+)\s+`([^`]*)`", line)
            if not m:
                continue
            tag = m.group(3)
            pt = re.search(r'protobuf:"([^"]*)"', tag)
            jt = re.search(r'json:"([^"]*)"', tag)
            pos += 1
            if not pt or pt.group(1) == "-":
                continue
            parts = pt.group(1).split(",")
            num = int(parts[1])
            jparts = (jt.group(1) if jt else "").split(",")
            jname = jparts[0] or (m.group(1) or "")
            inline = "inline" in jparts[1:]
            goname = m.group(1) or m.group(2).lstrip("*").split(".")[-1]
            cur[num] = (jname if not inline else "", m.group(2).startswith("*"),
                        "omitempty" in jparts[1:], inline, pos, goname, "omitzero" in jparts[1:])
    return out


def main():
    global VER
    modcache, outp = sys.argv[1], sys.argv[2]
    m = re.search(r"/v1\.(\d+\.\d+)/go/", os.path.abspath(modcache))
    if not m:
        sys.exit("gen-sim-proto: no release in " + modcache)
    VER = "v0." + m.group(1)
    msgs = descriptors(modcache)
    gocache = {}
    order, index = [], {}

    def visit(name):
        if name in index:
            return
        index[name] = len(order); order.append(name)
        m = msgs[name]
        if name in SPECIAL and SPECIAL[name] not in ("PROPS_OR_ARRAY", "PROPS_OR_BOOL",
                                                     "PROPS_OR_STRARRAY"):
            return
        for f in m["fields"]:
            if get(f, "type") == "TYPE_MESSAGE":
                visit(get(f, "type_name").strip('"').lstrip("."))
    for _, _, r in ROOTS:
        visit(r)
    out = ["# csrc/core/proto/schema.txt -- GENERATED by tools/gen-sim-proto.py (make",
           "# sim-proto) from the generated.proto files and Go types of k8s.io/api,",
           "# apimachinery, apiextensions-apiserver and kube-aggregator " + VER + ". Do not edit;",
           "# tools/embed-proto.sh compiles it into libkinsim.a (proto_int.h).",
           "# msg NAME SPECIAL JSON-ORDER | fld JSON GO NUMBER KIND FLAGS MSG | root APIVERSION KIND MSG"]
    for i, name in enumerate(order):
        m = msgs[name]
        special = SPECIAL.get(name, "NONE")
        go = {}
        if m["dir"]:
            if m["dir"] not in gocache:
                gocache[m["dir"]] = go_structs(modcache, m["dir"])
            go = gocache[m["dir"]].get(m["go"], {})
        fields = sorted(m["fields"], key=lambda f: int(get(f, "number")))
        known = m["dir"] and m["go"] in gocache[m["dir"]] and special == "NONE"
        if special == "NONE" and not m["map"] and not known and m["dir"]:
            # a named slice (Verbs) or a message without a Go struct
            if len(fields) == 1 and get(fields[0], "name").strip('"') == "items":
                special = "WRAPPED_LIST"
            elif name != "k8s.io.apimachinery.pkg.runtime.Unknown" and \
                    name != "k8s.io.apimachinery.pkg.runtime.TypeMeta":
                sys.exit("gen-sim-proto: no Go struct for " + name)
        if m["map"]:
            special = "MAP_ENTRY"
        rows = []
        for f in fields:
            num = int(get(f, "number"))
            pname = get(f, "name").strip('"')
            t = get(f, "type")
            if t not in KINDS:
                sys.exit("gen-sim-proto: %s.%s has type %s" % (name, pname, t))
            sub = -1
            flags = []
            if t == "TYPE_MESSAGE":
                tn = get(f, "type_name").strip('"').lstrip(".")
                sub = index.get(tn, -1)
                if sub < 0:
                    sys.exit("gen-sim-proto: unreached " + tn)
                if msgs[tn]["map"]:
                    flags.append("MAP")
            if get(f, "label") == "LABEL_REPEATED":
                flags.append("REPEATED")
            jname, pos, goname = pname, num, pname[:1].upper() + pname[1:]
            g = go.get(num)
            if g:
                jname, ptr, omit, inline, pos, goname, omitzero = g
                if omitzero: flags.append("OMITZERO")
                if ptr: flags.append("POINTER")
                if omit: flags.append("OMITEMPTY")
                if inline: flags.append("INLINE")
            elif known:
                sys.exit("gen-sim-proto: %s field %d has no Go tag" % (name, num))
            else:
                flags.append("OMITEMPTY")
            rows.append((pos, "fld %s %s %d %s %s %d" % (
                jname or "-", goname, num, KINDS[t], "|".join(flags) or "0", sub)))
        jorder = [j for j, _ in sorted(enumerate(rows), key=lambda r: r[1][0])]
        out.append("msg %s %s %s" % (name, special, ",".join(str(j) for j in jorder) or "-"))
        out += [r[1] for r in rows]
    for av, kind, r in ROOTS:
        out.append("root %s %s %d" % (av or "-", kind, index[r]))
    with open(outp, "w") as f:
        f.write("\n".join(out) + "\n")
    print("gen-sim-proto: %d messages, %d roots" % (len(order), len(ROOTS)))


main()
