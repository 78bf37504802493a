package resourceset

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	ssautils "github.com/fluxcd/pkg/ssa/utils"
	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// benchSpec is a set of 500 objects: 100 tenants x (ConfigMap, Secret,
// ServiceAccount, Service, Role), in namespace ns.
func benchSpec(tb testing.TB, ns string) *Spec {
	inputs := make([]map[string]any, 100)
	for i := range inputs {
		inputs[i] = map[string]any{"t": fmt.Sprintf("t%03d", i)}
	}
	return &Spec{
		Name: "bench", Namespace: ns, Inputs: inputs, Timeout: 5 * time.Minute,
		ResourcesTemplate: `
apiVersion: v1
kind: ConfigMap
metadata: {name: << inputs.t >>}
data: {tenant: << inputs.t >>, color: blue}
---
apiVersion: v1
kind: Secret
metadata: {name: << inputs.t >>}
stringData: {token: << inputs.t | sha256sum >>}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: << inputs.t >>}
---
apiVersion: v1
kind: Service
metadata: {name: << inputs.t >>}
spec:
  clusterIP: None
  selector: {app: << inputs.t >>}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: << inputs.t >>}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list]}]
`,
	}
}

func benchNamespace(b *testing.B, name string) func() {
	b.Helper()
	_, c := newEngine(b)
	ns := &corev1.Namespace{}
	ns.Name = name
	if err := c.Create(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	return func() { _ = c.Delete(context.Background(), ns) }
}

// BenchmarkSet500 measures, on the local cluster, what an apply and a plan of
// a 500-object set cost, next to `kubectl apply --server-side` of the same
// rendered manifests:
//
//   - apply-create: the first apply (render, stage, server-side apply);
//   - apply-unchanged: an apply that finds nothing to change;
//   - drift: the refresh of a plan (a dry-run of every object);
//   - kubectl-create, kubectl-unchanged: the built kubectl on the same objects.
func BenchmarkSet500(b *testing.B) {
	env := testenv.Need(b)
	e, _ := newEngine(b)
	ctx := context.Background()

	b.Run("apply-create", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			ns := fmt.Sprintf("bench-create-%d-%d", time.Now().UnixNano()%1e6, i)
			cleanup := benchNamespace(b, ns)
			b.StartTimer()
			if _, err := e.Apply(ctx, benchSpec(b, ns), nil, nil); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cleanup()
			b.StartTimer()
		}
	})

	steady := fmt.Sprintf("bench-steady-%d", time.Now().UnixNano()%1e6)
	cleanup := benchNamespace(b, steady)
	defer cleanup()
	res, err := e.Apply(ctx, benchSpec(b, steady), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("apply-unchanged", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Apply(ctx, benchSpec(b, steady), res.Inventory, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("drift", func(b *testing.B) {
		for b.Loop() {
			d, err := e.Drift(ctx, benchSpec(b, steady), res.Inventory)
			if err != nil || len(d) != 0 {
				b.Fatalf("drift %v, err %v", d, err)
			}
		}
	})
	// A refresh after a clean one: the objects nobody wrote since are read
	// (metadata GETs), not dry-run.
	clean, err := e.CheckDrift(ctx, benchSpec(b, steady), res.Inventory, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("drift-since-clean-check", func(b *testing.B) {
		dryRuns := 0
		for b.Loop() {
			r, err := e.CheckDrift(ctx, benchSpec(b, steady), res.Inventory, clean.InSync)
			if err != nil || len(r.Drift) != 0 {
				b.Fatalf("drift %v, err %v", r.Drift, err)
			}
			dryRuns = len(r.DryRun)
		}
		b.ReportMetric(float64(dryRuns), "dry-runs")
	})

	kubectlFile := func(ns string) string {
		objs, err := e.Desired(ctx, benchSpec(b, ns))
		if err != nil {
			b.Fatal(err)
		}
		y, err := ssautils.ObjectsToYAML(objs)
		if err != nil {
			b.Fatal(err)
		}
		p := filepath.Join(b.TempDir(), "manifests.yaml")
		if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
			b.Fatal(err)
		}
		return p
	}
	b.Run("kubectl-create", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			ns := fmt.Sprintf("bench-kubectl-%d-%d", time.Now().UnixNano()%1e6, i)
			cleanup := benchNamespace(b, ns)
			f := kubectlFile(ns)
			b.StartTimer()
			if out, err := env.Cluster.Kubectl(ctx, "apply", "--server-side", "--field-manager", "bench", "-f", f); err != nil {
				b.Fatal(err, out)
			}
			b.StopTimer()
			cleanup()
			b.StartTimer()
		}
	})
	b.Run("kubectl-unchanged", func(b *testing.B) {
		f := kubectlFile(steady)
		for b.Loop() {
			if out, err := env.Cluster.Kubectl(ctx, "apply", "--server-side", "--field-manager", "stevedore", "--force-conflicts", "-f", f); err != nil {
				b.Fatal(err, out)
			}
		}
	})
}
