package provider

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// TestHelmChartArtifact_providerTimeOfWarmPlan drives the provider server as
// the CLIs do (ConfigureProvider, PlanResourceChange, ApplyResourceChange,
// ReadResource) to measure the provider's own time for the refresh and plan
// of 30 artifacts against a warm cache: no request, and well under a second.
// It needs no cluster.
func TestHelmChartArtifact_providerTimeOfWarmPlan(t *testing.T) {
	repo := startTestRepo(t, testenv.HelmRepoOptions{}, "1.0.0", "1.1.0")
	ctx := context.Background()
	server, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	ptyp := providerSchema().Type().TerraformType(ctx)
	pcfg, err := tfprotov6.NewDynamicValue(ptyp, valueOf(t, ptyp, map[string]any{
		"cache_dir":  t.TempDir(),
		"kubernetes": map[string]any{"config_path": writeKubeconfig(t)},
	}))
	if err != nil {
		t.Fatal(err)
	}
	cresp, err := server.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{TerraformVersion: "1.5.7", Config: &pcfg})
	if err != nil || len(cresp.Diagnostics) > 0 {
		t.Fatalf("configure: %v %s", err, describe(cresp.Diagnostics))
	}

	typ := helmChartArtifactSchema().Type().TerraformType(ctx)
	const n = 30
	configs := make([]tfprotov6.DynamicValue, n)
	states := make([]*tfprotov6.DynamicValue, n)
	for i := range configs {
		attrs := map[string]any{"repository": repo.URL(), "chart": "podinfo", "version": "1.x"}
		if i%3 == 0 {
			attrs["values_files"] = []any{"values.yaml", "values-prod.yaml"}
		}
		cfg, err := tfprotov6.NewDynamicValue(typ, valueOf(t, typ, attrs))
		if err != nil {
			t.Fatal(err)
		}
		configs[i] = cfg
		null, _ := tfprotov6.NewDynamicValue(typ, tftypes.NewValue(typ, nil))
		plan, err := server.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{
			TypeName: "stevedore_helmchart_artifact", PriorState: &null, ProposedNewState: &cfg, Config: &cfg,
		})
		if err != nil || hasError(plan.Diagnostics) {
			t.Fatalf("plan %d: %v %s", i, err, describe(plan.Diagnostics))
		}
		applied, err := server.ApplyResourceChange(ctx, &tfprotov6.ApplyResourceChangeRequest{
			TypeName: "stevedore_helmchart_artifact", PriorState: &null, PlannedState: plan.PlannedState, Config: &cfg,
		})
		if err != nil || hasError(applied.Diagnostics) {
			t.Fatalf("apply %d: %v %s", i, err, describe(applied.Diagnostics))
		}
		states[i] = applied.NewState
	}

	repo.ResetCounters()
	start := time.Now()
	for i := range configs {
		read, err := server.ReadResource(ctx, &tfprotov6.ReadResourceRequest{TypeName: "stevedore_helmchart_artifact", CurrentState: states[i]})
		if err != nil || hasError(read.Diagnostics) {
			t.Fatalf("read %d: %v %s", i, err, describe(read.Diagnostics))
		}
		plan, err := server.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{
			TypeName: "stevedore_helmchart_artifact", PriorState: read.NewState, ProposedNewState: read.NewState, Config: &configs[i],
		})
		if err != nil || hasError(plan.Diagnostics) {
			t.Fatalf("plan %d: %v %s", i, err, describe(plan.Diagnostics))
		}
		if len(plan.RequiresReplace) > 0 {
			t.Fatalf("plan %d requires replacement", i)
		}
		same, err := dynamicEqual(typ, plan.PlannedState, read.NewState)
		if err != nil {
			t.Fatal(err)
		}
		if !same {
			t.Fatalf("plan %d is not empty", i)
		}
	}
	elapsed := time.Since(start)
	if got := repo.Requests(); got != 0 {
		t.Fatalf("%d requests for the refresh and plan of %d artifacts within the TTL, want 0", got, n)
	}
	if elapsed > time.Second {
		t.Fatalf("refresh and plan of %d artifacts took %v of provider time, want under 1s", n, elapsed)
	}
	t.Logf("refresh + plan of %d artifacts against a warm cache: %v of provider time, 0 requests", n, elapsed)
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
