package release

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// noSuchNode is a nodeSelector no node of the test cluster has: the pods of
// the Deployment stay Pending, and it never becomes available.
var noSuchNode = map[string]any{"nodeSelector": map[string]any{"stevedore.dev/no-such-node": "true"}}

// An install or upgrade that times out while Helm waits for the objects says
// which were not ready, with their kstatus status and message, as
// helm-controller does; the Released condition says it too.
func TestReconcile_timeoutNamesObjectsNotReady(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	path, digest := podinfo(t, "1.0.0")

	t.Run("install", func(t *testing.T) {
		t.Parallel()
		ns := makeNamespace(t, c)
		spec := &Spec{Name: "podinfo", Namespace: ns, Timeout: 5 * time.Second, ChartPath: path, ChartDigest: digest,
			Values: map[string]any{"replicaCount": 2, "nodeSelector": noSuchNode["nodeSelector"]}}
		st, err := e.Reconcile(ctx, spec, nil)
		want := regexp.MustCompile(`: install failed: context deadline exceeded; not ready: \[Deployment/` + ns +
			`/podinfo: InProgress: (Replicas|Updated|Available|Ready): \d+/2\]`)
		if err == nil || !want.MatchString(err.Error()) {
			t.Fatalf("error = %v, want it to match %s", err, want)
		}
		if msg := condition(st, CondReleased).Message; !strings.Contains(msg, "not ready: [Deployment/"+ns+"/podinfo: InProgress: ") {
			t.Errorf("Released message = %q", msg)
		}
	})

	t.Run("upgrade", func(t *testing.T) {
		t.Parallel()
		ns := makeNamespace(t, c)
		spec := &Spec{Name: "podinfo", Namespace: ns, Timeout: 5 * time.Second, ChartPath: path, ChartDigest: digest}
		st, err := e.Reconcile(ctx, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		spec.Values = noSuchNode
		_, err = e.Reconcile(ctx, spec, st)
		want := regexp.MustCompile(`: upgrade failed: context deadline exceeded; not ready: \[Deployment/` + ns +
			`/podinfo: InProgress: \w[\w ]*: \d+(/\d+)?\]`)
		if err == nil || !want.MatchString(err.Error()) {
			t.Fatalf("error = %v, want it to match %s", err, want)
		}
	})
}
