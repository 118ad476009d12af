#!/usr/bin/env python3
"""bench/apiserver_seed.py -- puts a seed file (bench/informer_seed.c, one
object per line) into a real kube-apiserver for bench-informer's
kube-apiserver rows (bench/informer_apiserver.sh): its namespaces first,
then every object by POST from THREADS keep-alive connections with the
e2e tier's admin certificate (spec/e2e/cluster.sh's environment).

  apiserver_seed.py SEED.jsonl RESOURCE   (RESOURCE: configmaps or pods)

Prints "seeded N RESOURCE in S s" or exits 1 naming the first failure
(status, reason, object)."""
import http.client
import json
import os
import ssl
import sys
import threading
import time
import urllib.parse

THREADS = 8


def connect(ctx, host, port):
    return http.client.HTTPSConnection(host, port, context=ctx, timeout=60)


def main():
    seed, resource = sys.argv[1], sys.argv[2]
    url = urllib.parse.urlparse(os.environ["KINFORMER_E2E_SERVER"])
    ctx = ssl.create_default_context(cafile=os.environ["KINFORMER_E2E_CA"])
    ctx.load_cert_chain(os.environ["KINFORMER_E2E_ADMIN_CERT"], os.environ["KINFORMER_E2E_ADMIN_KEY"])
    with open(seed, "rb") as f:
        lines = [l for l in f.read().split(b"\n") if l.strip()]
    namespaces = sorted({json.loads(l)["metadata"]["namespace"] for l in lines[:1000]} |
                        {json.loads(lines[-1])["metadata"]["namespace"]})
    conn = connect(ctx, url.hostname, url.port)
    for ns in namespaces:
        body = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        conn.request("POST", "/api/v1/namespaces", body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        if r.status not in (201, 409):
            sys.exit("apiserver_seed: namespace %s: %d %s" % (ns, r.status, r.reason))
    conn.close()
    failures = []
    t0 = time.monotonic()

    def work(part):
        c = connect(ctx, url.hostname, url.port)
        for line in part:
            if failures:
                return
            ns = json.loads(line)["metadata"]["namespace"]
            for attempt in range(5):
                try:
                    c.request("POST", "/api/v1/namespaces/%s/%s" % (ns, resource), line,
                              {"Content-Type": "application/json"})
                    r = c.getresponse()
                    data = r.read()
                    break
                except (http.client.HTTPException, OSError):
                    c.close()
                    c = connect(ctx, url.hostname, url.port)
                    if attempt == 4:
                        raise
            if r.status == 429 or r.status >= 500:
                time.sleep(0.2)
                part.append(line)  # again later
                continue
            if r.status not in (201, 409):
                failures.append("%d %s: %s" % (r.status, r.reason, data[:300].decode("utf-8", "replace")))
                return
        c.close()

    parts = [lines[i::THREADS] for i in range(THREADS)]
    threads = [threading.Thread(target=work, args=(p,)) for p in parts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        sys.exit("apiserver_seed: create %s: %s" % (resource, failures[0]))
    print("seeded %d %s in %.1f s" % (len(lines), resource, time.monotonic() - t0))


if __name__ == "__main__":
    main()
