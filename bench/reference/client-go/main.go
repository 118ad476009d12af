// Command kinformer-ref-informer runs one client-go shared informer for a
// resource and prints one JSON line: time to synced, events handled and the
// process RSS after sync. Benchmarks run it side by side with kinformer.
//
//	kinformer-ref-informer -kubeconfig K -resource v1/configmaps [-namespace NS]
//	                       [-client auto|typed|dynamic] [-min-events N] [-watch D]
//	                       [-drop-managed-fields] [-ready-file F] [-read-field]
//	kinformer-ref-informer -reconcile-keys M [-reconcile-workers N] [-timeout D]
//
// -resource is [group/]version/resource: "v1/configmaps",
// "apps/v1/deployments", "e2e.kinformer.io/v1/widgets". With -client auto a
// built-in resource uses the typed informer (what most controllers run) and
// anything else the dynamic one.
//
// -drop-managed-fields installs a transform that clears
// metadata.managedFields before objects are cached, as careful client-go
// users do (kinformer drops them by default). -ready-file is created once
// the informer has synced, so a driver (bench/informer_bench.sh) knows when
// to start changing objects; watch_ms then times the handler from the first
// event after sync to the one that reached -min-events, and watch_end_unix_ms
// is the wall-clock time of that last one (so a driver can time from the
// moment it started the updates: make bench-lua).
//
// -relist-ready-file F: after the watch phase the program creates F and
// waits until the handler has had every cached object once more (a relist,
// forced by the driver, replays them as updates), then reports VmHWM as
// relist_hwm_kib (the driver resets the peak through /proc/PID/clear_refs
// before forcing the relist), VmRSS and the time taken.
//
// Memory is reported three ways at sync: rss_kib (VmRSS as it stands),
// rss_gc_kib (VmRSS after runtime.GC and debug.FreeOSMemory, the fair
// figure to set beside a C program's) and heap_live_kib (HeapAlloc after
// that GC). cpu_sync_s is the process's user+system CPU time at sync, and
// protocol says how the initial state came: "watchlist" when client-go's
// WatchListClient feature is on (its default in v0.36; the driver turns it
// off with KUBE_FEATURE_WatchListClient=false), else "list".
//
// -read-field makes the update handler read the new object's
// metadata.resourceVersion, as the Lua handler of make bench-lua does.
//
// -protobuf makes the typed client send and accept only
// application/vnd.kubernetes.protobuf (spec/differential/kubectl_sim.sh
// runs it against kinformer.sim).
//
// -reconcile-keys M switches to the reconcile mode (reconcile.go): no API
// server; a controller-runtime-style worker loop over client-go's
// rate-limited workqueue, N workers, M trivial reconciles; one JSON line.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type result struct {
	Client          string  `json:"client"`
	ClientGoVersion string  `json:"client_go_version"`
	Mode            string  `json:"mode"`
	Resource        string  `json:"resource"`
	Namespace       string  `json:"namespace"`
	DropManaged     bool    `json:"drop_managed_fields"`
	SyncedMs        float64 `json:"synced_ms"`         // informer start -> handler synced
	ProcessSyncedMs float64 `json:"process_synced_ms"` // process start -> handler synced
	EventsAtSync    int64   `json:"events_at_sync"`
	Events          int64   `json:"events"` // handler calls up to the report
	Adds            int64   `json:"adds"`
	Updates         int64   `json:"updates"`
	Deletes         int64   `json:"deletes"`
	Objects         int     `json:"objects"` // items in the store at the report
	RSSKiB          int64   `json:"rss_kib"` // VmRSS right after sync
	HWMKiB          int64   `json:"hwm_kib"` // VmHWM right after sync
	RSSEndKiB       int64   `json:"rss_end_kib"`
	WatchEvents     int64   `json:"watch_events"`                // events after sync up to -min-events
	WatchMs         float64 `json:"watch_ms"`                    // first of them -> the one reaching -min-events
	WatchEndUnixMs  float64 `json:"watch_end_unix_ms,omitempty"` // wall clock of the one reaching -min-events
	ReadField       bool    `json:"read_field,omitempty"`
	Protobuf        bool    `json:"protobuf,omitempty"`    // -protobuf: ContentType and Accept protobuf only
	FieldBytes      int64   `json:"field_bytes,omitempty"` // -read-field: bytes of resourceVersion read
	Protocol        string  `json:"protocol"`                // "list" or "watchlist"
	CPUSyncS        float64 `json:"cpu_sync_s"`              // user+system CPU seconds at sync
	BaseRSSKiB      int64   `json:"base_rss_kib"`            // VmRSS before the informer starts
	RSSGCKiB        int64   `json:"rss_gc_kib"`              // VmRSS at sync after runtime.GC + FreeOSMemory
	HeapLiveKiB     int64   `json:"heap_live_kib"`           // HeapAlloc after that GC
	RelistHWMKiB    int64   `json:"relist_hwm_kib"`          // VmHWM once a forced relist was replayed
	RelistRSSKiB    int64   `json:"relist_rss_kib"`
	RelistEvents    int64   `json:"relist_events"`
	RelistMs        float64 `json:"relist_ms"`
	Error           string  `json:"error,omitempty"`
}

var processStart = time.Now()

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	resource := flag.String("resource", "v1/configmaps", "[group/]version/resource")
	namespace := flag.String("namespace", "", "namespace (empty: all namespaces)")
	mode := flag.String("client", "auto", "auto, typed or dynamic")
	minEvents := flag.Int64("min-events", 0, "after sync, wait until this many events were handled")
	watchFor := flag.Duration("watch", 0, "after sync, keep handling events this long")
	timeout := flag.Duration("timeout", 60*time.Second, "limit for sync and -min-events")
	dropManaged := flag.Bool("drop-managed-fields", false, "clear metadata.managedFields before caching (SetTransform)")
	readyFile := flag.String("ready-file", "", "create this file once synced")
	readField := flag.Bool("read-field", false, "the update handler reads the new object's metadata.resourceVersion")
	relistReady := flag.String("relist-ready-file", "", "after the watch phase, create this file and wait for a relist's replay")
	protobuf := flag.Bool("protobuf", false, "typed client speaks application/vnd.kubernetes.protobuf only (no JSON fallback)")
	reconcileKeys := flag.Int("reconcile-keys", 0, "reconcile mode: time this many trivial reconciles (no API server)")
	reconcileWorkers := flag.Int("reconcile-workers", 1, "reconcile mode: worker goroutines")
	flag.Parse()

	if *reconcileKeys > 0 {
		r := reconcileResult{Client: "client-go", ClientGoVersion: clientGoVersion(), Mode: "workqueue",
			Keys: *reconcileKeys, Workers: *reconcileWorkers}
		err := runReconcile(&r, *timeout)
		if err != nil {
			r.Error = err.Error()
		}
		b, _ := json.Marshal(&r)
		fmt.Println(string(b))
		if err != nil {
			os.Exit(1)
		}
		return
	}

	res := result{Client: "client-go", ClientGoVersion: clientGoVersion(), Resource: *resource,
		Namespace: *namespace, DropManaged: *dropManaged, ReadField: *readField, Protobuf: *protobuf}
	if err := run(&res, *kubeconfig, *mode, *minEvents, *watchFor, *timeout, *readyFile, *relistReady); err != nil {
		res.Error = err.Error()
		emit(&res)
		os.Exit(1)
	}
	emit(&res)
}

func run(res *result, kubeconfig, mode string, minEvents int64, watchFor, timeout time.Duration, readyFile, relistReady string) error {
	gvr, err := parseGVR(res.Resource)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	if res.Protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var inf cache.SharedIndexInformer
	var start func()
	if mode == "auto" || mode == "typed" {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(res.Namespace))
		if gi, err := f.ForResource(gvr); err == nil {
			inf, start, res.Mode = gi.Informer(), func() { f.Start(ctx.Done()) }, "typed"
		} else if mode == "typed" {
			return err
		}
	}
	if inf == nil {
		dc, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, res.Namespace, nil)
		gi := f.ForResource(gvr)
		inf, start, res.Mode = gi.Informer(), func() { f.Start(ctx.Done()) }, "dynamic"
	}

	if res.DropManaged {
		if err := inf.SetTransform(func(obj any) (any, error) {
			if a, err := meta.Accessor(obj); err == nil {
				a.SetManagedFields(nil)
			}
			return obj, nil
		}); err != nil {
			return err
		}
	}

	// total numbers the handler calls; once synced (syncCount >= 0) the
	// handler stamps the first call after sync and the one that reaches
	// minEvents (monotonic ns since process start), so the watch time has
	// no polling in it.
	var adds, updates, deletes, total, firstAt, lastAt atomic.Int64
	var syncCount atomic.Int64
	syncCount.Store(-1)
	mark := func() {
		n := total.Add(1)
		if s := syncCount.Load(); s >= 0 && n > s && firstAt.Load() == 0 {
			firstAt.CompareAndSwap(0, int64(time.Since(processStart)))
		}
		if n == minEvents && lastAt.Load() == 0 {
			lastAt.Store(int64(time.Since(processStart)))
		}
	}
	// With -read-field the update handler reads a field of the new object
	// (what a real handler does first); the sum shows the reads happened.
	var fieldBytes atomic.Int64
	update := func(any, any) { updates.Add(1); mark() }
	if res.ReadField {
		update = func(_, newObj any) {
			if o, ok := newObj.(metav1.Object); ok {
				fieldBytes.Add(int64(len(o.GetResourceVersion())))
			}
			updates.Add(1)
			mark()
		}
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { adds.Add(1); mark() },
		UpdateFunc: update,
		DeleteFunc: func(any) { deletes.Add(1); mark() },
	})
	if err != nil {
		return err
	}
	count := func() int64 { return total.Load() }
	fill := func() {
		res.Adds, res.Updates, res.Deletes = adds.Load(), updates.Load(), deletes.Load()
		res.Events = count()
		res.Objects = len(inf.GetStore().ListKeys())
		res.RSSEndKiB, _ = procStatus("VmRSS")
		res.FieldBytes = fieldBytes.Load()
	}

	if clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		res.Protocol = "watchlist"
	} else {
		res.Protocol = "list"
	}
	res.BaseRSSKiB, _ = procStatus("VmRSS")
	t0 := time.Now()
	start()
	syncCtx, syncCancel := context.WithTimeout(ctx, timeout)
	defer syncCancel()
	// The registration's synced state also waits for the handler to have
	// been given every object of the initial list, not only the store. Its
	// Done channel is waited on directly: cache.WaitForCacheSync polls every
	// 100 ms, which would round the time up.
	select {
	case <-reg.HasSyncedChecker().Done():
	case <-syncCtx.Done():
		fill()
		return fmt.Errorf("not synced within %s", timeout)
	}
	res.SyncedMs = ms(time.Since(t0))
	res.ProcessSyncedMs = ms(time.Since(processStart))
	res.EventsAtSync = count()
	syncCount.Store(res.EventsAtSync)
	res.CPUSyncS = cpuSeconds()
	res.RSSKiB, _ = procStatus("VmRSS")
	res.HWMKiB, _ = procStatus("VmHWM")
	runtime.GC()
	debug.FreeOSMemory()
	res.RSSGCKiB, _ = procStatus("VmRSS")
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	res.HeapLiveKiB = int64(ms0.HeapAlloc / 1024)
	if readyFile != "" {
		if err := os.WriteFile(readyFile, nil, 0o644); err != nil {
			return err
		}
	}

	for count() < minEvents {
		if syncCtx.Err() != nil {
			fill()
			return fmt.Errorf("%d events within %s, wanted %d", count(), timeout, minEvents)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if f, l := firstAt.Load(), lastAt.Load(); minEvents > res.EventsAtSync && f > 0 && l >= f {
		res.WatchEvents = minEvents - res.EventsAtSync
		res.WatchMs = ms(time.Duration(l - f))
		res.WatchEndUnixMs = float64(processStart.Add(time.Duration(l)).UnixMicro()) / 1000
	}
	if relistReady != "" {
		// A relist replays every cached object to the handler as an update.
		from, objects := count(), int64(len(inf.GetStore().ListKeys()))
		r0 := time.Now()
		if err := os.WriteFile(relistReady, nil, 0o644); err != nil {
			return err
		}
		for count() < from+objects {
			if time.Since(r0) > timeout {
				fill()
				return fmt.Errorf("relist: %d of %d objects replayed within %s", count()-from, objects, timeout)
			}
			time.Sleep(time.Millisecond)
		}
		res.RelistMs = ms(time.Since(r0))
		res.RelistEvents = count() - from
		res.RelistHWMKiB, _ = procStatus("VmHWM")
		res.RelistRSSKiB, _ = procStatus("VmRSS")
	}
	if watchFor > 0 {
		time.Sleep(watchFor)
	}
	fill()
	return nil
}

// cpuSeconds returns the process's user+system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// parseGVR reads [group/]version/resource.
func parseGVR(s string) (schema.GroupVersionResource, error) {
	p := strings.Split(s, "/")
	switch len(p) {
	case 2:
		return schema.GroupVersionResource{Version: p[0], Resource: p[1]}, nil
	case 3:
		return schema.GroupVersionResource{Group: p[0], Version: p[1], Resource: p[2]}, nil
	}
	return schema.GroupVersionResource{}, fmt.Errorf("resource %q: want [group/]version/resource", s)
}

// procStatus returns a "kB" field of /proc/self/status, in KiB.
func procStatus(field string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && k == field {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s not in /proc/self/status", field)
}

func clientGoVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/client-go" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func emit(r *result) {
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
}
