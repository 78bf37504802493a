package resourceset

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	ssautils "github.com/fluxcd/pkg/ssa/utils"
	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"

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
// rendered manifests. Each iteration of create and unchanged times stevedore
// and kubectl one after the other, so that the ratio (the median of the
// iterations' ratios, "x-kubectl") holds on a noisy machine:
//
//   - create: the first apply (render, ownership look-up, claims, server-side
//     apply) into a new namespace, and kubectl's into another;
//   - unchanged: an apply that finds nothing to change, with the fingerprints
//     of the apply before it (as the provider passes them from private state),
//     and kubectl's of the same objects; "nofp-x-kubectl" is stevedore's
//     without fingerprints (after an import), where ssa dry-runs every object;
//   - drift: the refresh of a plan (a dry-run of every object);
//   - drift-since-clean-check: a refresh after a clean one.
func BenchmarkSet500(b *testing.B) {
	env := testenv.Need(b)
	e, _ := newEngine(b)
	ctx := context.Background()
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
	kubectl := func(manager, file string) time.Duration {
		start := time.Now()
		if out, err := env.Cluster.Kubectl(ctx, "apply", "--server-side", "--field-manager", manager, "--force-conflicts", "-f", file); err != nil {
			b.Fatal(err, out)
		}
		return time.Since(start)
	}
	report := func(b *testing.B, name string, ours, theirs []time.Duration) {
		ratios := make([]float64, len(ours))
		for i := range ours {
			ratios[i] = ours[i].Seconds() / theirs[i].Seconds()
		}
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], name)
	}
	medianSeconds := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2].Seconds()
	}

	b.Run("create", func(b *testing.B) {
		var ours, theirs []time.Duration
		for i := 0; b.Loop(); i++ {
			ns := fmt.Sprintf("bench-create-%d-%d", time.Now().UnixNano()%1e6, i)
			cleanup := benchNamespace(b, ns)
			start := time.Now()
			if _, err := e.Apply(ctx, benchSpec(b, ns), nil, ApplyOptions{}); err != nil {
				b.Fatal(err)
			}
			ours = append(ours, time.Since(start))
			cleanup()
			kns := fmt.Sprintf("bench-kubectl-%d-%d", time.Now().UnixNano()%1e6, i)
			cleanup = benchNamespace(b, kns)
			theirs = append(theirs, kubectl("bench", kubectlFile(kns)))
			cleanup()
		}
		report(b, "x-kubectl", ours, theirs)
		b.ReportMetric(medianSeconds(ours), "s-stevedore")
		b.ReportMetric(medianSeconds(theirs), "s-kubectl")
	})

	steady := fmt.Sprintf("bench-steady-%d", time.Now().UnixNano()%1e6)
	cleanup := benchNamespace(b, steady)
	defer cleanup()
	res, err := e.Apply(ctx, benchSpec(b, steady), nil, ApplyOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("unchanged", func(b *testing.B) {
		f := kubectlFile(steady)
		var ours, nofp, theirs []time.Duration
		for b.Loop() {
			start := time.Now()
			r, err := e.Apply(ctx, benchSpec(b, steady), res.Inventory, ApplyOptions{Since: res.InSync})
			if err != nil {
				b.Fatal(err)
			}
			ours = append(ours, time.Since(start))
			res.InSync = r.InSync
			start = time.Now()
			if _, err := e.Apply(ctx, benchSpec(b, steady), res.Inventory, ApplyOptions{}); err != nil {
				b.Fatal(err)
			}
			nofp = append(nofp, time.Since(start))
			// Under stevedore's field manager, as a no-op of the same
			// applier: it writes nothing.
			theirs = append(theirs, kubectl(kube.DefaultFieldManager, f))
		}
		report(b, "x-kubectl", ours, theirs)
		report(b, "nofp-x-kubectl", nofp, theirs)
		b.ReportMetric(medianSeconds(ours), "s-stevedore")
		b.ReportMetric(medianSeconds(nofp), "s-nofp")
		b.ReportMetric(medianSeconds(theirs), "s-kubectl")
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
	// (metadata LISTs), not dry-run.
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
}
