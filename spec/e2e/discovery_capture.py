#!/usr/bin/env python3
"""Captures kube-apiserver's discovery (the built-in resources it serves)
into csrc/sim/discovery/discovery.json, from which kinformer.sim builds
its registry of built-in resources (csrc/sim/registry_builtins.c; the file
is compiled in by tools/embed-discovery.sh). Run make sim-openapi and make
sim-proto after it.

    make sim-discovery   (spec/e2e/cluster.sh run python3 spec/e2e/discovery_capture.py)

Runs inside `spec/e2e/cluster.sh run`, which exports the cluster's address
and admin credentials (KINFORMER_E2E_SERVER, _CA, _ADMIN_CERT, _ADMIN_KEY).
The file is one JSON object, one group-version per line so that a refresh
reads as a diff:

    {"groups": [APIGroup...],              the groups of /apis
     "resources": {"v1": [APIResource...],  /api/v1
                   "apps/v1": [...], ...}}  /apis/<group>/<version> of every
                                            served version, not only the
                                            preferred one

The groups keep the order /apis gives them and each group its versions in
the server's order (the preferred version first); each APIResourceList
keeps its resources in the server's order. Subresources the sim does not
serve stay in the capture: the sim reads them to name its limits.
"""
import json
import os
import ssl
import sys
import urllib.request

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "csrc", "sim",
                   "discovery", "discovery.json")


def get_real(path):
    ctx = ssl.create_default_context(cafile=os.environ["KINFORMER_E2E_CA"])
    ctx.load_cert_chain(os.environ["KINFORMER_E2E_ADMIN_CERT"], os.environ["KINFORMER_E2E_ADMIN_KEY"])
    req = urllib.request.Request(os.environ["KINFORMER_E2E_SERVER"] + path,
                                 headers={"Accept": "application/json"})
    with urllib.request.urlopen(req, context=ctx) as r:
        return json.load(r)


def compact(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def main():
    api = get_real("/api")
    if api["versions"] != ["v1"]:
        print("discovery_capture: /api serves %s, expected [v1]" % api["versions"], file=sys.stderr)
        return 1
    groups = get_real("/apis")["groups"]
    lists = [("v1", get_real("/api/v1")["resources"])]
    for g in groups:
        for v in g["versions"]:
            lists.append((v["groupVersion"], get_real("/apis/" + v["groupVersion"])["resources"]))
    lines = ['{"groups":[']
    lines += [compact(g) + ("," if i + 1 < len(groups) else "") for i, g in enumerate(groups)]
    lines.append('],"resources":{')
    lines += [compact(gv) + ":" + compact(res) + ("," if i + 1 < len(lists) else "")
              for i, (gv, res) in enumerate(lists)]
    lines.append("}}")
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    top = sum(1 for _, res in lists for r in res if "/" not in r["name"])
    print("discovery_capture: %d groups, %d group-versions, %d resources (subresources apart), %d bytes in %s"
          % (len(groups) + 1, len(lists), top, os.path.getsize(OUT), os.path.normpath(OUT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
