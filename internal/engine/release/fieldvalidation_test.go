package release

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// BenchmarkPlanInstallPreview is the plan of an install of the podinfo chart
// (three objects): Helm renders it and builds its objects with validation,
// then dry-runs them. "helm" is Helm's validator as Helm makes it, which parses
// the OpenAPI v3 document of each object's group version on every Build;
// "server-validates-kept" keeps, for the process, which kinds the API server
// validates itself (fieldValidationFactory).
func BenchmarkPlanInstallPreview(b *testing.B) {
	ctx := b.Context()
	e, c := newEngine(b)
	ns := testenv.Namespace(b, c, "")
	path, err := testenv.PackageChart(filepath.Join(testenv.ChartsDir(), "podinfo"), "1.0.0", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	spec := &Spec{Name: "bench", Namespace: ns, Timeout: time.Minute, ChartPath: path}
	for _, keep := range []bool{false, true} {
		name := "helm"
		if keep {
			name = "server-validates-kept"
		}
		b.Run(name, func(b *testing.B) {
			keepServerValidates = keep
			defer func() { keepServerValidates = true }()
			for b.Loop() {
				p, err := e.Plan(ctx, spec, nil)
				if err != nil || p.Action != ActionInstall || p.Preview == nil || p.Preview.Unknown != "" {
					b.Fatalf("plan = %+v, %v", p, err)
				}
			}
		})
	}
}
