"""A tiny HTTPS admission webhook for the kubectl-vs-kinformer.sim specs
(spec/clients/kubectl_webhook_spec.lua): every AdmissionReview is denied
with status {code 403, reason Forbidden, message MESSAGE} and one warning.

    python3 webhook_deny.py CERT KEY MESSAGE WARNING

Listens on 127.0.0.1 at a free port, prints the port on its first line,
serves until killed. Logs nothing."""
import http.server
import json
import ssl
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        review = json.loads(body)
        answer = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {
                "uid": review["request"]["uid"],
                "allowed": False,
                "status": {"code": 403, "reason": "Forbidden", "message": sys.argv[3]},
                "warnings": [sys.argv[4]],
            },
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[1], sys.argv[2])
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
