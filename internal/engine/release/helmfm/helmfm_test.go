package helmfm

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	helmkube "helm.sh/helm/v4/pkg/kube"
)

// While a holder of a manager runs, Helm's variable names that manager:
// holders of one manager run together, holders of different managers never
// overlap, and every holder gets its turn.
func TestHold_oneManagerAtATime(t *testing.T) {
	var running [3]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 300)
	for i := range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := i % 3
			manager := fmt.Sprintf("manager-%d", m)
			release := Hold(manager)
			defer release()
			running[m].Add(1)
			defer running[m].Add(-1)
			for other := range running {
				if other != m && running[other].Load() > 0 {
					errs <- fmt.Errorf("%s holds while manager-%d runs", manager, other)
				}
			}
			if got := helmkube.ManagedFieldsManager; got != manager {
				errs <- fmt.Errorf("%s holds, Helm writes under %q", manager, got)
			}
			time.Sleep(time.Millisecond)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("holders still waiting after 30s")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A release function called twice lets go once.
func TestHold_releaseIsIdempotent(t *testing.T) {
	release := Hold("a")
	release()
	release()
	other := make(chan struct{})
	go func() { Hold("b")(); close(other) }()
	select {
	case <-other:
	case <-time.After(5 * time.Second):
		t.Fatal("a second call of release left a holder behind")
	}
	if Current() != "b" {
		t.Fatalf("current manager %q, want b", Current())
	}
}
