#!/usr/bin/env python3
"""Captures kube-apiserver's answers to the Event requests of
spec/fixtures/sim_events/steps.json (the same storage seen through v1 and
events.k8s.io/v1) into spec/fixtures/sim_events/real.json, the answers
spec/sim_events_spec.lua holds kinformer.sim to.

    spec/e2e/cluster.sh run spec/e2e/capture-events.py
"""
import json
import os
import ssl
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "..", "fixtures", "sim_events")


def request(ctx, step):
    body = step.get("body")
    data = None
    ct = step.get("content_type", "application/json")
    if body is not None:
        data = json.dumps(body).encode()
    req = urllib.request.Request(os.environ["KINFORMER_E2E_SERVER"] + step["path"],
                                 data=data, method=step["method"])
    req.add_header("Authorization", "Bearer " + os.environ["KINFORMER_E2E_TOKEN"])
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", ct)
    try:
        with urllib.request.urlopen(req, context=ctx) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def main():
    ctx = ssl.create_default_context(cafile=os.environ["KINFORMER_E2E_CA"])
    with open(os.path.join(DIR, "steps.json")) as f:
        steps = json.load(f)
    out = []
    for step in steps:
        code, resp = request(ctx, step)
        out.append({"name": step["name"], "code": code, "response": resp})
    with open(os.path.join(DIR, "real.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


main()
