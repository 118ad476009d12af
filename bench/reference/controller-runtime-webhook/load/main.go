// Command kinformer-webhook-load sends AdmissionReview requests to one
// webhook URL over HTTPS and prints one JSON line: requests per second,
// latency percentiles, errors. make bench-webhook (bench/webhook_bench.sh)
// drives kinformer's webhook server and controller-runtime's with it, one
// after the other, so both get the very same client: HTTP/1.1 (HTTP/2 is
// not offered), keep-alive connections (one per worker, opened and
// TLS-handshaken before the clock starts), the same body.
//
//	kinformer-webhook-load -url https://127.0.0.1:P/path -body review.json -ca ca.crt
//	                       [-c 8] [-d 5s] [-warmup 1s] [-n 0] [-expect allowed|denied]
//
// Each answer must be HTTP 200 with an AdmissionReview whose response.uid is
// the request's and whose response.allowed is what -expect says; anything
// else counts as an error (and the first one is printed to stderr). The run
// is bounded by -d (and by -n requests when set) and stops by itself.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

type review struct {
	Request *struct {
		UID string `json:"uid"`
	} `json:"request"`
	Response *struct {
		UID     string `json:"uid"`
		Allowed bool   `json:"allowed"`
	} `json:"response"`
}

type result struct {
	URL       string  `json:"url"`
	Workers   int     `json:"workers"`
	Requests  int64   `json:"requests"`
	Errors    int64   `json:"errors"`
	Seconds   float64 `json:"seconds"`
	RPS       float64 `json:"rps"`
	P50ms     float64 `json:"p50_ms"`
	P90ms     float64 `json:"p90_ms"`
	P99ms     float64 `json:"p99_ms"`
	Proto     string  `json:"proto"`
	TLS       string  `json:"tls"`
	BodyBytes int     `json:"body_bytes"`
}

func die(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "kinformer-webhook-load: "+f+"\n", a...)
	os.Exit(1)
}

func main() {
	url := flag.String("url", "", "the webhook's URL")
	bodyPath := flag.String("body", "", "file with the AdmissionReview to send")
	caPath := flag.String("ca", "", "PEM of the CA that signed the server's certificate")
	workers := flag.Int("c", 8, "concurrent keep-alive connections")
	dur := flag.Duration("d", 5*time.Second, "measured time")
	warm := flag.Duration("warmup", time.Second, "unmeasured time before it")
	maxN := flag.Int64("n", 0, "stop after this many measured requests (0: no limit)")
	expect := flag.String("expect", "allowed", "allowed or denied")
	flag.Parse()
	if *url == "" || *bodyPath == "" || *caPath == "" {
		die("-url, -body and -ca are required")
	}
	body, err := os.ReadFile(*bodyPath)
	if err != nil {
		die("%v", err)
	}
	var in review
	if err := json.Unmarshal(body, &in); err != nil || in.Request == nil {
		die("%s is not an AdmissionReview with a request: %v", *bodyPath, err)
	}
	caPEM, err := os.ReadFile(*caPath)
	if err != nil {
		die("%v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		die("no certificate in %s", *caPath)
	}
	wantAllowed := *expect == "allowed"

	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool},
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1 only
		MaxIdleConns:        *workers,
		MaxIdleConnsPerHost: *workers,
		MaxConnsPerHost:     *workers,
		DisableCompression:  true,
		IdleConnTimeout:     time.Minute,
	}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	var proto, tlsDesc atomic.Value
	var firstErr sync.Once
	var errs atomic.Int64
	// post sends one review; true when the answer is the expected one.
	post := func() bool {
		req, _ := http.NewRequest(http.MethodPost, *url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			firstErr.Do(func() { fmt.Fprintln(os.Stderr, "kinformer-webhook-load: first error:", err) })
			return false
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if proto.Load() == nil {
			proto.Store(resp.Proto)
			if resp.TLS != nil {
				tlsDesc.Store(tls.VersionName(resp.TLS.Version) + " " + tls.CipherSuiteName(resp.TLS.CipherSuite))
			}
		}
		var out review
		if err == nil {
			err = json.Unmarshal(b, &out)
		}
		if err != nil || resp.StatusCode != 200 || out.Response == nil ||
			out.Response.UID != in.Request.UID || out.Response.Allowed != wantAllowed {
			firstErr.Do(func() {
				fmt.Fprintf(os.Stderr, "kinformer-webhook-load: first unexpected answer: HTTP %d %s (%v)\n", resp.StatusCode, b, err)
			})
			return false
		}
		return true
	}

	// Warm-up: every worker's connection is opened (and its TLS handshake
	// done) before the measured window.
	ctx, cancel := context.WithTimeout(context.Background(), *warm)
	var wg sync.WaitGroup
	for i := 0; i < *workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for first := true; first || ctx.Err() == nil; first = false {
				post()
			}
		}()
	}
	wg.Wait()
	cancel()
	errs.Store(0)

	var count atomic.Int64
	lat := make([][]time.Duration, *workers)
	start := time.Now()
	end := start.Add(*dur)
	for i := 0; i < *workers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for time.Now().Before(end) {
				if *maxN > 0 && count.Add(1) > *maxN {
					return
				}
				t0 := time.Now()
				if !post() {
					errs.Add(1)
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}(i)
	}
	wg.Wait()
	secs := time.Since(start).Seconds()

	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000
	}
	r := result{URL: *url, Workers: *workers, Requests: int64(len(all)), Errors: errs.Load(),
		Seconds: secs, RPS: float64(len(all)) / secs, P50ms: pct(0.5), P90ms: pct(0.9), P99ms: pct(0.99),
		BodyBytes: len(body)}
	if v := proto.Load(); v != nil {
		r.Proto = v.(string)
	}
	if v := tlsDesc.Load(); v != nil {
		r.TLS = v.(string)
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
	if r.Errors > 0 {
		os.Exit(1)
	}
}
