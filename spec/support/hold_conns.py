#!/usr/bin/env python3
"""Holds idle TCP connections open: hold_conns.py COUNT HOST PORT [PORT...]
opens COUNT connections to each port (raising its own fd limit first),
sends nothing, prints "held N" (connects that succeeded) and keeps them
until stdin closes or 60 s pass. For spec/metrics_secure_spec.lua."""
import resource
import select
import socket
import sys

count, host, ports = int(sys.argv[1]), sys.argv[2], [int(p) for p in sys.argv[3:]]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
for port in ports:
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(0.5)
        try:
            s.connect((host, port))
            held.append(s)
        except OSError:
            s.close()
print("held %d" % len(held), flush=True)
select.select([sys.stdin], [], [], 60)
