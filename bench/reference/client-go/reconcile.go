// The reconcile mode of kinformer-ref-informer (-reconcile-keys M): the
// worker loop a controller-runtime controller runs, written against
// client-go's rate-limited workqueue alone (no controller-runtime
// dependency), with a trivial reconciler. make bench-lua compares it with a
// kinformer controller running a Lua reconciler (bench/lua/reconcile_bench.lua).
//
// The queue is built as controller-runtime builds its own: typed on the
// request, DefaultTypedControllerRateLimiter, named after the controller.
// Each reconcile gets a context carrying a logger tagged with the
// controller and the request, as controller-runtime's reconcileHandler
// gives it (its reconcileID and metrics are left out). Workers start first; then M distinct requests are added (as event
// handlers would) and the run is timed from the first Add until the worker
// that completes the M-th successful reconcile closes a channel.
package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// reconcileRequest is controller-runtime's reconcile.Request (a NamespacedName).
type reconcileRequest struct {
	Namespace, Name string
}

// reconcileOutcome is controller-runtime's reconcile.Result.
type reconcileOutcome struct {
	Requeue      bool
	RequeueAfter time.Duration
}

type reconciler func(ctx context.Context, req reconcileRequest) (reconcileOutcome, error)

// trivialReconciler returns nothing (done), as the Lua one does; a package
// variable so the call stays an indirect one, as through an interface.
var trivialReconciler reconciler = func(context.Context, reconcileRequest) (reconcileOutcome, error) {
	return reconcileOutcome{}, nil
}

type reconcileResult struct {
	Client          string  `json:"client"`
	ClientGoVersion string  `json:"client_go_version"`
	Mode            string  `json:"mode"`
	Keys            int     `json:"keys"`
	Workers         int     `json:"workers"`
	Success         int64   `json:"reconcile_success"`
	Ms              float64 `json:"ms"` // first Add -> M-th successful reconcile
	Error           string  `json:"error,omitempty"`
}

// runReconcile times M trivial reconciles over `workers` goroutines; it
// fills r and returns an error when they do not finish within timeout.
func runReconcile(r *reconcileResult, timeout time.Duration) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[reconcileRequest](),
		workqueue.TypedRateLimitingQueueConfig[reconcileRequest]{Name: "bench"})

	var success atomic.Int64
	warm, done := make(chan struct{}), make(chan struct{})
	want := int64(r.Keys) + 1 // with the warm-up request
	rec := trivialReconciler
	logger := klog.Background()

	// processNext is one turn of controller-runtime's worker loop
	// (Controller.processNextWorkItem + reconcileHandler).
	processNext := func() bool {
		req, shutdown := q.Get()
		if shutdown {
			return false
		}
		defer q.Done(req)
		// As controller-runtime (and kinformer's ctx.log): a logger
		// tagged with the controller and the request, in the context.
		log := logger.WithValues("controller", "bench", "namespace", req.Namespace, "name", req.Name)
		res, err := rec(klog.NewContext(ctx, log), req)
		switch {
		case err != nil:
			q.AddRateLimited(req)
		case res.RequeueAfter > 0:
			q.Forget(req)
			q.AddAfter(req, res.RequeueAfter)
		case res.Requeue:
			q.AddRateLimited(req)
		default:
			q.Forget(req)
			switch success.Add(1) {
			case 1:
				close(warm)
			case want:
				close(done)
			}
		}
		return true
	}

	var wg sync.WaitGroup
	for i := 0; i < r.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for processNext() {
			}
		}()
	}
	// One request first, outside the clock (the Lua side warms its
	// worker states up the same way).
	q.Add(reconcileRequest{Namespace: "bench", Name: "warm-up"})
	select {
	case <-warm:
	case <-time.After(timeout):
		q.ShutDown()
		return fmt.Errorf("the warm-up reconcile did not finish within %s", timeout)
	}
	// Keys are made before the clock starts, as the informer would have
	// them already.
	keys := make([]reconcileRequest, r.Keys)
	for i := range keys {
		keys[i] = reconcileRequest{Namespace: "bench", Name: "obj-" + strconv.Itoa(i)}
	}
	t0 := time.Now()
	for _, k := range keys {
		q.Add(k)
	}
	var err error
	select {
	case <-done:
		r.Ms = ms(time.Since(t0))
	case <-time.After(timeout):
		err = fmt.Errorf("%d of %d reconciles within %s", success.Load()-1, r.Keys, timeout)
	}
	r.Success = success.Load() - 1
	q.ShutDown()
	wg.Wait()
	return err
}
