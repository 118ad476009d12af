/* fault_proxy.h -- a TCP proxy that breaks connections on command, for
 * tests of connection health (a stalled connection, a cut one, a slow one).
 * It listens on 127.0.0.1 only and forwards to a loopback upstream; it
 * never touches the bytes (TLS passes through).
 *
 * Used in-process by the C tests (spec/c/test_conn_health.c,
 * test_e2e_stall.c) and as the
 * program build/<mode>/kin-fault-proxy (fault_proxy_main.c), both through
 * the same line protocol (kin_fault_proxy_command):
 *   pause [ID|all]    stop moving bytes both ways on the connections open
 *                     now (sockets stay open; new connections are not paused)
 *   resume [ID|all]   move bytes again (and lift slow)
 *   cut [ID|all]      close both sockets of the connections
 *   slow BPS [ID|all] at most BPS bytes per second each way (0: unlimited)
 *   partition on|off  on: pause every connection, and every one accepted
 *                     until off (a network partition: connects succeed, no
 *                     byte moves); off: move bytes again on all of them
 *   conns             one line per open connection:
 *                     "ID paused=0|1 slow=BPS up=BYTES down=BYTES"
 *   stats             "accepted=N open=M partitioned=0|1"
 * Without ID a command applies to every connection.
 *
 * Threads: one proxy thread runs a poll loop over every socket; commands
 * come from any thread. Locks: kin_fault_proxy.mu guards the connection
 * list (each connection's flags, counters and buffers) and the stop flag;
 * the proxy thread holds it while it moves bytes, never while it waits in
 * poll. */
#ifndef KIN_FAULT_PROXY_H
#define KIN_FAULT_PROXY_H

#include <stddef.h>
#include <stdint.h>

typedef struct kin_fault_proxy kin_fault_proxy;

/* Starts a proxy on 127.0.0.1:listen_port (0: the kernel picks) forwarding
 * to upstream_host:upstream_port. Returns 0 and the proxy in *out (stop it
 * with kin_fault_proxy_free), KIN_EINVAL when upstream_host is not a
 * loopback address ("127.x.y.z", "::1" or "localhost"), KIN_EBUSY when the
 * port cannot be bound, KIN_ENOMEM. */
int kin_fault_proxy_start(const char *upstream_host, uint16_t upstream_port, uint16_t listen_port,
                          kin_fault_proxy **out);

/* The port it listens on. */
uint16_t kin_fault_proxy_port(kin_fault_proxy *p);

/* Runs one line of the protocol above; the answer ("ok", the listing, or
 * "error: ...") goes to reply (truncated to n). Returns 0, or KIN_EINVAL
 * for a bad command or an unknown connection id. Thread-safe. */
int kin_fault_proxy_command(kin_fault_proxy *p, const char *line, char *reply, size_t n);

/* Connections accepted since start, and open now. Thread-safe. */
void kin_fault_proxy_counts(kin_fault_proxy *p, unsigned *accepted, unsigned *open);

/* Closes every connection, stops the thread and frees. NULL is a no-op. */
void kin_fault_proxy_free(kin_fault_proxy *p);

#endif
