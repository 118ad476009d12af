// Command kinformer-ref-webhook is controller-runtime's webhook server
// (sigs.k8s.io/controller-runtime/pkg/webhook) with one validating webhook
// that does the work of the Website example's (examples/website/operator.lua):
// deny a Website whose spec.image is empty or whose spec.replicas is
// negative. make bench-webhook (bench/webhook_bench.sh) serves it on HTTPS
// with the same key pair as kinformer's webhook server and drives both with
// the same load program (./load).
//
//	kinformer-ref-webhook -port P -cert-dir DIR [-host 127.0.0.1]
//	                      [-path /validate-example-kinformer-io-any-websites] [-ready-file F]
//
// DIR holds tls.crt and tls.key (controller-runtime's default names). The
// server is controller-runtime's as a manager builds it (webhook.NewServer,
// Register with a webhook.Admission: its metrics and request decoding),
// without a manager: it needs no API server. -ready-file is created once the
// port accepts connections.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// website is the part of a Website the handler reads.
type website struct {
	Spec struct {
		Image    string `json:"image"`
		Replicas *int64 `json:"replicas"`
	} `json:"spec"`
}

// validate decodes the object and denies a missing image or negative
// replicas, with the messages of examples/website/operator.lua.
func validate(_ context.Context, req admission.Request) admission.Response {
	var w website
	if err := json.Unmarshal(req.Object.Raw, &w); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if w.Spec.Image == "" {
		return admission.Denied("spec.image is required")
	}
	if w.Spec.Replicas != nil && *w.Spec.Replicas < 0 {
		return admission.Denied("spec.replicas must be an integer >= 0, got " + strconv.FormatInt(*w.Spec.Replicas, 10))
	}
	return admission.Allowed("")
}

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 9443, "port")
	certDir := flag.String("cert-dir", "", "folder with tls.crt and tls.key")
	path := flag.String("path", "/validate-example-kinformer-io-any-websites", "the webhook's path")
	ready := flag.String("ready-file", "", "created once the server accepts connections")
	flag.Parse()
	if *certDir == "" {
		fmt.Fprintln(os.Stderr, "kinformer-ref-webhook: -cert-dir is required")
		os.Exit(2)
	}

	srv := webhook.NewServer(webhook.Options{Host: *host, Port: *port, CertDir: *certDir})
	srv.Register(*path, &webhook.Admission{Handler: admission.HandlerFunc(validate)})

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Start(ctx) }()

	addr := net.JoinHostPort(*host, strconv.Itoa(*port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-errc:
			fmt.Fprintln(os.Stderr, "kinformer-ref-webhook:", err)
			os.Exit(1)
		default:
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "kinformer-ref-webhook: not listening after 10s:", err)
			os.Exit(1)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if *ready != "" {
		if err := os.WriteFile(*ready, []byte(addr+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "kinformer-ref-webhook:", err)
			os.Exit(1)
		}
	}
	if err := <-errc; err != nil {
		fmt.Fprintln(os.Stderr, "kinformer-ref-webhook:", err)
		os.Exit(1)
	}
}
