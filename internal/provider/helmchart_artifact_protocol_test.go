package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// warmArtifacts is a provider server, driven as the CLIs drive it
// (ConfigureProvider, PlanResourceChange, ApplyResourceChange, ReadResource),
// holding n artifacts of a chart from a test repository, applied and cached.
// It needs no cluster.
type warmArtifacts struct {
	server  tfprotov6.ProviderServer
	typ     tftypes.Type
	repo    *testenv.HelmRepo
	configs []tfprotov6.DynamicValue
	states  []*tfprotov6.DynamicValue
}

func newWarmArtifacts(tb testing.TB, n int) *warmArtifacts {
	tb.Helper()
	repo := startTestRepo(tb, testenv.HelmRepoOptions{}, "1.0.0", "1.1.0")
	ctx := context.Background()
	server, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		tb.Fatal(err)
	}
	ptyp := providerSchema().Type().TerraformType(ctx)
	pcfg, err := tfprotov6.NewDynamicValue(ptyp, valueOf(tb, ptyp, map[string]any{
		"cache_dir":  tb.TempDir(),
		"kubernetes": map[string]any{"config_path": writeKubeconfig(tb)},
	}))
	if err != nil {
		tb.Fatal(err)
	}
	cresp, err := server.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{TerraformVersion: "1.5.7", Config: &pcfg})
	if err != nil || len(cresp.Diagnostics) > 0 {
		tb.Fatalf("configure: %v %s", err, describe(cresp.Diagnostics))
	}
	w := &warmArtifacts{server: server, typ: helmChartArtifactSchema().Type().TerraformType(ctx), repo: repo,
		configs: make([]tfprotov6.DynamicValue, n), states: make([]*tfprotov6.DynamicValue, n)}
	for i := range w.configs {
		attrs := map[string]any{"repository": repo.URL(), "chart": "podinfo", "version": "1.x"}
		if i%3 == 0 {
			attrs["values_files"] = []any{"values.yaml", "values-prod.yaml"}
		}
		cfg, err := tfprotov6.NewDynamicValue(w.typ, valueOf(tb, w.typ, attrs))
		if err != nil {
			tb.Fatal(err)
		}
		w.configs[i] = cfg
		null, _ := tfprotov6.NewDynamicValue(w.typ, tftypes.NewValue(w.typ, nil))
		plan, err := server.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{
			TypeName: "stevedore_helmchart_artifact", PriorState: &null, ProposedNewState: &cfg, Config: &cfg,
		})
		if err != nil || hasError(plan.Diagnostics) {
			tb.Fatalf("plan %d: %v %s", i, err, describe(plan.Diagnostics))
		}
		applied, err := server.ApplyResourceChange(ctx, &tfprotov6.ApplyResourceChangeRequest{
			TypeName: "stevedore_helmchart_artifact", PriorState: &null, PlannedState: plan.PlannedState, Config: &cfg,
		})
		if err != nil || hasError(applied.Diagnostics) {
			tb.Fatalf("apply %d: %v %s", i, err, describe(applied.Diagnostics))
		}
		w.states[i] = applied.NewState
	}
	return w
}

// refreshAndPlan refreshes and plans every artifact, and fails unless each
// plan is empty.
func (w *warmArtifacts) refreshAndPlan(tb testing.TB) {
	tb.Helper()
	ctx := context.Background()
	for i := range w.configs {
		read, err := w.server.ReadResource(ctx, &tfprotov6.ReadResourceRequest{TypeName: "stevedore_helmchart_artifact", CurrentState: w.states[i]})
		if err != nil || hasError(read.Diagnostics) {
			tb.Fatalf("read %d: %v %s", i, err, describe(read.Diagnostics))
		}
		plan, err := w.server.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{
			TypeName: "stevedore_helmchart_artifact", PriorState: read.NewState, ProposedNewState: read.NewState, Config: &w.configs[i],
		})
		if err != nil || hasError(plan.Diagnostics) {
			tb.Fatalf("plan %d: %v %s", i, err, describe(plan.Diagnostics))
		}
		if len(plan.RequiresReplace) > 0 {
			tb.Fatalf("plan %d requires replacement", i)
		}
		same, err := dynamicEqual(w.typ, plan.PlannedState, read.NewState)
		if err != nil {
			tb.Fatal(err)
		}
		if !same {
			tb.Fatalf("plan %d is not empty", i)
		}
	}
}

// TestHelmChartArtifact_warmPlanSendsNoRequest: the refresh and plan of 30
// artifacts within the index TTL are empty and send no request to the
// repository. BenchmarkHelmChartArtifactWarmPlan30 times them.
func TestHelmChartArtifact_warmPlanSendsNoRequest(t *testing.T) {
	w := newWarmArtifacts(t, 30)
	w.repo.ResetCounters()
	w.refreshAndPlan(t)
	if got := w.repo.Requests(); got != 0 {
		t.Fatalf("%d requests for the refresh and plan of 30 artifacts within the TTL, want 0", got)
	}
}

// BenchmarkHelmChartArtifactWarmPlan30 is the provider's own time for the
// refresh and plan of 30 artifacts against a warm cache (the target:
// under 1 s).
func BenchmarkHelmChartArtifactWarmPlan30(b *testing.B) {
	w := newWarmArtifacts(b, 30)
	w.repo.ResetCounters()
	b.ReportAllocs()
	for b.Loop() {
		w.refreshAndPlan(b)
	}
	if got := w.repo.Requests(); got != 0 {
		b.Fatalf("%d requests within the TTL, want 0", got)
	}
}

func hasError(diags []*tfprotov6.Diagnostic) bool {
	for _, d := range diags {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			return true
		}
	}
	return false
}

func dynamicEqual(typ tftypes.Type, a, b *tfprotov6.DynamicValue) (bool, error) {
	va, err := a.Unmarshal(typ)
	if err != nil {
		return false, fmt.Errorf("unmarshal: %w", err)
	}
	vb, err := b.Unmarshal(typ)
	if err != nil {
		return false, fmt.Errorf("unmarshal: %w", err)
	}
	return va.Equal(vb), nil
}
