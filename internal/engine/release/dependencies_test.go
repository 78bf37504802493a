package release

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// An install or upgrade waits for the spec's dependencies; unmet, nothing is
// done and nothing counted: at create no status, at update the previous one
// with Ready=False (DependencyNotReady). A release in sync does not wait.
func TestReconcile_dependencies(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "reconcile-deps-" + hex.EncodeToString(b)}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	path, digest := podinfo(t, "1.0.0")
	gate := kube.Dependency{APIVersion: "v1", Kind: "Secret", Name: "gate", Namespace: ns.Name, Ready: true, ReadyExpr: "type == 'kubernetes.io/tls'"}
	spec := &Spec{Name: "podinfo", Namespace: ns.Name, Timeout: 2 * time.Second, MaxHistory: ptr(5),
		Install: Install{Timeout: 2 * time.Minute}, Upgrade: Upgrade{Timeout: 2 * time.Minute},
		ChartPath: path, ChartDigest: digest, Dependencies: []kube.Dependency{gate}}

	// The plan does not look at the dependencies.
	if p, err := e.Plan(ctx, spec, nil); err != nil || p.Action != ActionInstall {
		t.Fatalf("plan = %+v, %v", p, err)
	}
	st, err := e.Reconcile(ctx, spec, nil)
	var notReady *kube.DependencyNotReadyError
	if st != nil || !errors.As(err, &notReady) ||
		!strings.Contains(err.Error(), "helmrelease "+ns.Name+"/podinfo: dependencies not met: Secret "+ns.Name+"/gate: not found") {
		t.Fatalf("create with an unmet dependency = %+v, %v", st, err)
	}
	if _, ok := get(t, c, "apps/v1", "Deployment", ns.Name, "podinfo"); ok {
		t.Fatal("installed before the dependency existed")
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "gate", Namespace: ns.Name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	prev, err := e.Reconcile(ctx, spec, nil)
	if err != nil || prev.Version != 1 {
		t.Fatalf("install once the dependency is met = %+v, %v", prev, err)
	}

	// In desired: no action, so no wait, even for a dependency that is gone.
	spec.Dependencies = append(spec.Dependencies, kube.Dependency{APIVersion: "v1", Kind: "ConfigMap", Name: "later", Namespace: ns.Name})
	st, err = e.Reconcile(ctx, spec, prev)
	if err != nil || st.Version != 1 {
		t.Fatalf("no-op with an unmet dependency = %+v, %v", st, err)
	}

	// An upgrade waits; unmet, the state is the previous one but for Ready.
	spec.Values = map[string]any{"replicaCount": 2}
	st, err = e.Reconcile(ctx, spec, prev)
	if !errors.As(err, &notReady) || len(notReady.Unmet) != 1 || notReady.Unmet[0].Index != 1 {
		t.Fatalf("upgrade with an unmet dependency: %v", err)
	}
	if st == nil || st.Version != 1 || st.ConfigDigest != prev.ConfigDigest || st.Failures != 0 || st.UpgradeFailures != 0 ||
		historyOf(st) != historyOf(prev) {
		t.Fatalf("status after an unmet dependency = %+v, want %+v", st, prev)
	}
	wantCondition(t, st, CondReady, "False", ReasonDependencyNotReady)
	wantCondition(t, st, CondReleased, "True", ReasonInstallSucceeded)

	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: ns.Name}}); err != nil {
		t.Fatal(err)
	}
	st, err = e.Reconcile(ctx, spec, st)
	if err != nil || st.Version != 2 {
		t.Fatalf("upgrade once the dependencies are met = %+v, %v", st, err)
	}
	wantCondition(t, st, CondReady, "True", ReasonUpgradeSucceeded)
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
}
