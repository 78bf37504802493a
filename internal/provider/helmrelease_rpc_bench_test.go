package provider

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// BenchmarkHelmReleaseRPC is what the provider process spends on one release
// in each RPC of a plan, apart from the cluster and Helm: the framework's
// handling of a release's state (an unconfigured provider, whose Read and
// ModifyPlan do no I/O) next to the protocol's own msgpack decode and encode
// of the same value, the floor of a resource written directly on
// terraform-plugin-go. The state is a release of BenchmarkTofuPlanHelmReleases,
// as tofu stored it.
func BenchmarkHelmReleaseRPC(b *testing.B) {
	ctx := context.Background()
	server := NewServer("test")()
	const typeName = "stevedore_helmrelease"
	schemas, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		b.Fatal(err)
	}
	schema := schemas.ResourceSchemas[typeName]
	typ := schema.ValueType()
	// A plan's UpgradeResourceState gets state of the current version,
	// which the framework only decodes.
	current := benchReleaseState(b)
	upgrade := &tfprotov6.UpgradeResourceStateRequest{TypeName: typeName, Version: schema.Version, RawState: &tfprotov6.RawState{JSON: current}}
	up, err := server.UpgradeResourceState(ctx, upgrade)
	if err != nil || len(up.Diagnostics) > 0 {
		b.Fatalf("upgrade: %v %v", err, up.Diagnostics)
	}
	state := up.UpgradedState
	config := configOf(b, schema, state)

	// Each RPC that a plan of an unchanged release makes, once.
	rpcs := []struct {
		name string
		call func() []*tfprotov6.Diagnostic
	}{
		{"ValidateResourceConfig", func() []*tfprotov6.Diagnostic {
			r, _ := server.ValidateResourceConfig(ctx, &tfprotov6.ValidateResourceConfigRequest{TypeName: typeName, Config: config})
			return r.Diagnostics
		}},
		{"UpgradeResourceState", func() []*tfprotov6.Diagnostic {
			r, _ := server.UpgradeResourceState(ctx, upgrade)
			return r.Diagnostics
		}},
		{"ReadResource", func() []*tfprotov6.Diagnostic {
			r, _ := server.ReadResource(ctx, &tfprotov6.ReadResourceRequest{TypeName: typeName, CurrentState: state})
			return r.Diagnostics
		}},
		{"PlanResourceChange", func() []*tfprotov6.Diagnostic {
			r, _ := server.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{TypeName: typeName,
				PriorState: state, ProposedNewState: state, Config: config})
			return r.Diagnostics
		}},
	}
	for _, rpc := range rpcs {
		if d := rpc.call(); len(d) > 0 {
			b.Fatalf("%s: %s: %s", rpc.name, d[0].Summary, d[0].Detail)
		}
	}
	b.Run("framework", func(b *testing.B) {
		for b.Loop() {
			for _, rpc := range rpcs {
				rpc.call()
			}
		}
	})
	for _, rpc := range rpcs {
		b.Run("framework/"+rpc.name, func(b *testing.B) {
			for b.Loop() {
				rpc.call()
			}
		})
	}
	// The same values through msgpack and back, as many times as the four
	// RPCs carry them: 5 decoded (config twice, state three times) and 3
	// encoded.
	b.Run("protocol", func(b *testing.B) {
		for b.Loop() {
			for _, dv := range []*tfprotov6.DynamicValue{config, config, state, state, state} {
				if _, err := dv.Unmarshal(typ); err != nil {
					b.Fatal(err)
				}
			}
			v, _ := state.Unmarshal(typ)
			for range 3 {
				if _, err := tfprotov6.NewDynamicValue(typ, v); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// configOf is the configuration that state came from: the state with every
// computed attribute null.
func configOf(b *testing.B, schema *tfprotov6.Schema, state *tfprotov6.DynamicValue) *tfprotov6.DynamicValue {
	b.Helper()
	typ := schema.ValueType()
	v, err := state.Unmarshal(typ)
	if err != nil {
		b.Fatal(err)
	}
	computed := map[string]bool{}
	for _, a := range schema.Block.Attributes {
		computed[a.Name] = a.Computed
	}
	v, err = tftypes.Transform(v, func(p *tftypes.AttributePath, v tftypes.Value) (tftypes.Value, error) {
		if steps := p.Steps(); len(steps) == 1 {
			if name, ok := steps[0].(tftypes.AttributeName); ok && computed[string(name)] {
				return tftypes.NewValue(v.Type(), nil), nil
			}
		}
		return v, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	dv, err := tfprotov6.NewDynamicValue(typ, v)
	if err != nil {
		b.Fatal(err)
	}
	return &dv
}

// benchReleaseState is the JSON state of a release of
// BenchmarkTofuPlanHelmReleases as tofu stored it (testdata, schema version
// 0), upgraded to the current schema version, with its chart archive made.
func benchReleaseState(b *testing.B) []byte {
	b.Helper()
	ctx := context.Background()
	raw, err := os.ReadFile("testdata/helmrelease_state.json")
	if err != nil {
		b.Fatal(err)
	}
	// The plan reads the chart's metadata from the artifact's archive.
	ch, err := loader.Load(podinfoSrc())
	if err != nil {
		b.Fatal(err)
	}
	archive, err := chartutil.Save(ch, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	raw = bytes.Replace(raw, []byte(`"CHART_ARCHIVE"`), []byte(strconv.Quote(archive)), 1)
	var current resource.UpgradeStateResponse
	(&helmReleaseResource{}).UpgradeState(ctx)[0].StateUpgrader(ctx, resource.UpgradeStateRequest{RawState: &tfprotov6.RawState{JSON: raw}}, &current)
	if current.Diagnostics.HasError() || current.DynamicValue == nil {
		b.Fatalf("upgrade of the file: %v", current.Diagnostics)
	}
	return current.DynamicValue.JSON
}
