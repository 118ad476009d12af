#!/usr/bin/env python3
"""Captures kube-apiserver's OpenAPI v3 documents for the group-versions
kinformer.sim serves and writes them, trimmed and gzip-compressed, to
csrc/sim/openapi/ (compiled into the sim: csrc/sim/http_openapi.c).

    make sim-openapi     (spec/e2e/cluster.sh run python3 spec/e2e/openapi_capture.py)

Runs inside `spec/e2e/cluster.sh run`, which exports the cluster's address
and admin credentials (KINFORMER_E2E_SERVER, _CA, _ADMIN_CERT, _ADMIN_KEY).
KINFORMER_SIM names a kinformer-sim program: the group-versions, resources
and scale subresources to keep are read from its discovery, so the data
follows csrc/sim/store/registry.c. Each document keeps the paths of the sim's
resources (with their /status and /scale subresources and the
/watch/ paths) and the gv's root, and the components.schemas those paths
reach through $ref; it is written compact (the real server's key order)
as csrc/sim/openapi/<gv with / as _>.json.gz (gzip -9, no name or time).
Files of group-versions no longer served are removed.
"""
import gzip
import json
import os
import ssl
import subprocess
import sys
import urllib.request

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "csrc", "sim", "openapi")
REF = "#/components/schemas/"


def get_real(path):
    ctx = ssl.create_default_context(cafile=os.environ["KINFORMER_E2E_CA"])
    ctx.load_cert_chain(os.environ["KINFORMER_E2E_ADMIN_CERT"], os.environ["KINFORMER_E2E_ADMIN_KEY"])
    with urllib.request.urlopen(os.environ["KINFORMER_E2E_SERVER"] + path, context=ctx) as r:
        return r.read()


def sim_resources(sim):
    """{gv key ("api/v1", "apis/apps/v1"): {resource: set of subresources}}"""
    p = subprocess.Popen([sim, "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        url = p.stdout.readline().strip()

        def get(path):
            with urllib.request.urlopen(url + path) as r:
                return json.load(r)

        gvs = ["api/" + v for v in get("/api")["versions"]]
        for g in get("/apis")["groups"]:
            gvs += ["apis/" + v["groupVersion"] for v in g["versions"]]
        out = {}
        for gv in gvs:
            res = out.setdefault(gv, {})
            for r in get("/" + gv)["resources"]:
                name, _, sub = r["name"].partition("/")
                res.setdefault(name, set())
                if sub:
                    res[name].add(sub)
        return out
    finally:
        p.terminate()
        p.wait()


def trim(doc, res):
    paths = {}
    for path, v in doc["paths"].items():
        segs = path.strip("/").split("/")
        rest = segs[2:] if segs[0] == "api" else segs[3:]
        if rest and rest[0] == "watch":
            rest = rest[1:]
            if not rest:
                continue
        if len(rest) >= 3 and rest[:2] == ["namespaces", "{namespace}"]:
            rest = rest[2:]
        if rest:
            if rest[0] not in res:
                continue
            if len(rest) >= 3 and rest[2] not in res[rest[0]]:
                continue
        paths[path] = v
    schemas = doc["components"]["schemas"]
    seen = set()

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "$ref" and isinstance(v, str) and v.startswith(REF):
                    n = v[len(REF):]
                    if n not in seen:
                        seen.add(n)
                        walk(schemas[n])
                else:
                    walk(v)
        elif isinstance(o, list):
            for x in o:
                walk(x)

    walk(paths)
    doc["paths"] = paths
    doc["components"]["schemas"] = {k: v for k, v in schemas.items() if k in seen}
    return doc


def main():
    sim = os.environ.get("KINFORMER_SIM", "build/release/kinformer-sim")
    served = sim_resources(sim)
    index = json.loads(get_real("/openapi/v3"))["paths"]
    os.makedirs(OUT, exist_ok=True)
    wanted = set()
    total = 0
    for gv, res in sorted(served.items()):
        if gv not in index:
            print("openapi_capture: the real server has no %s" % gv, file=sys.stderr)
            return 1
        doc = trim(json.loads(get_real(index[gv]["serverRelativeURL"])), res)
        raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
        name = gv.replace("/", "_") + ".json.gz"
        wanted.add(name)
        gz = gzip.compress(raw, 9, mtime=0)
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(gz)
        total += len(gz)
        print("%-40s %3d paths %4d schemas %8d bytes, %7d gzipped" %
              (gv, len(doc["paths"]), len(doc["components"]["schemas"]), len(raw), len(gz)))
    for name in os.listdir(OUT):
        if name.endswith(".json.gz") and name not in wanted:
            os.remove(os.path.join(OUT, name))
    print("openapi_capture: %d documents, %d bytes in %s" % (len(wanted), total, os.path.normpath(OUT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
