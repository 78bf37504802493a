package provider

import (
	"context"
	"testing"
)

type ctxKey struct{}

// During the RPC the context is the request's: its values, and its
// cancellation reaching a context derived from it. After the RPC it holds
// nothing of the request, which is what a retained derived context keeps.
func TestDuring_releasesTheRequestContext(t *testing.T) {
	req, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "request"))
	var kept, derived context.Context
	var derivedCancel context.CancelFunc
	_, err := during(req, "ping", func(ctx context.Context, _ string) (string, error) {
		if got := ctx.Value(ctxKey{}); got != "request" {
			t.Errorf("Value during the RPC = %v, want the request's", got)
		}
		kept = ctx
		// As proto6server.registerContext does, and keeps it.
		derived, derivedCancel = context.WithCancel(ctx)
		return "pong", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer derivedCancel()
	cancel() // gRPC cancels the request's context when the RPC returns
	<-derived.Done()
	if got := kept.Value(ctxKey{}); got != nil {
		t.Errorf("Value after the RPC = %v, want nil: the request is still referenced", got)
	}
	if kept.Done() != nil || kept.Err() != nil {
		t.Errorf("after the RPC: Done %v, Err %v; want an empty context", kept.Done(), kept.Err())
	}
}
