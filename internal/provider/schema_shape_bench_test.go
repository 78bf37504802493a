package provider

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	fwprovider "github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// BenchmarkReleaseSchemaShape is issue 27's measurement of what the shape of
// the release schema costs the framework, apart from anything stevedore
// does: one release's ValidateResourceConfig, ReadResource and
// PlanResourceChange on a resource whose Read and plan do nothing, with the
// release schema as it is ("as-is") and reshaped: its computed-only
// top-level attributes in one computed object ("computed-object"), its
// blocks as nested attributes ("blocks-as-attributes"), and both ("both").
// The values are those of BenchmarkHelmReleaseRPC's release, moved into each
// shape.
func BenchmarkReleaseSchemaShape(b *testing.B) {
	ctx := context.Background()
	asIs := helmReleaseSchema()
	state, err := (&tfprotov6.RawState{JSON: benchReleaseState(b)}).UnmarshalWithOpts(asIs.Type().TerraformType(ctx),
		tfprotov6.UnmarshalOpts{ValueFromJSONOpts: tftypes.ValueFromJSONOpts{IgnoreUndefinedAttributes: true}})
	if err != nil {
		b.Fatal(err)
	}
	folded, foldedState := foldComputed(ctx, asIs, state)
	shapes := []struct {
		name  string
		s     schema.Schema
		state tftypes.Value
	}{
		{"as-is", asIs, state},
		{"computed-object", folded, foldedState},
		{"blocks-as-attributes", blocksAsAttributes(asIs), state},
		{"both", blocksAsAttributes(folded), foldedState},
	}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			server, err := providerserver.NewProtocol6WithError(shapeProvider{s: sh.s})()
			if err != nil {
				b.Fatal(err)
			}
			schemas, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
			if err != nil {
				b.Fatal(err)
			}
			const typeName = "shape_release"
			ps := schemas.ResourceSchemas[typeName]
			st, err := tfprotov6.NewDynamicValue(ps.ValueType(), sh.state)
			if err != nil {
				b.Fatal(err)
			}
			config := configOf(b, ps, &st)
			if _, err := server.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{}); err != nil {
				b.Fatal(err)
			}
			rpcs := func() []*tfprotov6.Diagnostic {
				v, _ := server.ValidateResourceConfig(ctx, &tfprotov6.ValidateResourceConfigRequest{TypeName: typeName, Config: config})
				r, _ := server.ReadResource(ctx, &tfprotov6.ReadResourceRequest{TypeName: typeName, CurrentState: &st})
				p, _ := server.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{TypeName: typeName,
					PriorState: &st, ProposedNewState: &st, Config: config})
				return append(append(v.Diagnostics, r.Diagnostics...), p.Diagnostics...)
			}
			if d := rpcs(); len(d) > 0 {
				b.Fatalf("%s: %s", d[0].Summary, d[0].Detail)
			}
			for b.Loop() {
				rpcs()
			}
			b.ReportMetric(float64(len(sh.s.Attributes)+len(sh.s.Blocks)), "top-level")
		})
	}
}

// foldComputed moves the computed-only top-level attributes of s into one
// computed object attribute, `computed`, and state's values with them.
func foldComputed(ctx context.Context, s schema.Schema, state tftypes.Value) (schema.Schema, tftypes.Value) {
	out := s
	out.Attributes = map[string]schema.Attribute{}
	inner := map[string]schema.Attribute{}
	for name, a := range s.Attributes {
		if a.IsComputed() && !a.IsOptional() && !a.IsRequired() && name != "id" {
			inner[name] = a
			continue
		}
		out.Attributes[name] = a
	}
	out.Attributes["computed"] = schema.SingleNestedAttribute{Computed: true, Attributes: inner}
	var shared map[string]tftypes.Value
	if err := state.As(&shared); err != nil {
		panic(err)
	}
	vals := maps.Clone(shared) // As hands out the value's own map
	innerVals := map[string]tftypes.Value{}
	for name := range inner {
		innerVals[name] = vals[name]
		delete(vals, name)
	}
	objType := out.Attributes["computed"].GetType().TerraformType(ctx)
	vals["computed"] = tftypes.NewValue(objType, innerVals)
	return out, tftypes.NewValue(out.Type().TerraformType(ctx), vals)
}

// blocksAsAttributes is s with every block, nested ones included, an
// optional nested attribute of the same value type.
func blocksAsAttributes(s schema.Schema) schema.Schema {
	out := s
	out.Attributes = map[string]schema.Attribute{}
	for n, a := range s.Attributes {
		out.Attributes[n] = a
	}
	for n, blk := range s.Blocks {
		out.Attributes[n] = blockAttribute(blk)
	}
	out.Blocks = nil
	return out
}

func blockAttribute(blk schema.Block) schema.Attribute {
	nested := func(attrs map[string]schema.Attribute, blocks map[string]schema.Block) map[string]schema.Attribute {
		out := map[string]schema.Attribute{}
		for n, a := range attrs {
			out[n] = a
		}
		for n, b := range blocks {
			out[n] = blockAttribute(b)
		}
		return out
	}
	switch b := blk.(type) {
	case schema.ListNestedBlock:
		return schema.ListNestedAttribute{Optional: true, NestedObject: schema.NestedAttributeObject{
			Attributes: nested(b.NestedObject.Attributes, b.NestedObject.Blocks)}}
	case schema.SingleNestedBlock:
		return schema.SingleNestedAttribute{Optional: true, Attributes: nested(b.Attributes, b.Blocks)}
	default:
		panic(fmt.Sprintf("block %T", blk))
	}
}

// shapeProvider serves one resource, shape_release, of schema s.
type shapeProvider struct{ s schema.Schema }

func (p shapeProvider) Metadata(_ context.Context, _ fwprovider.MetadataRequest, resp *fwprovider.MetadataResponse) {
	resp.TypeName = "shape"
}
func (p shapeProvider) Schema(context.Context, fwprovider.SchemaRequest, *fwprovider.SchemaResponse) {
}
func (p shapeProvider) Configure(context.Context, fwprovider.ConfigureRequest, *fwprovider.ConfigureResponse) {
}
func (p shapeProvider) DataSources(context.Context) []func() datasource.DataSource { return nil }
func (p shapeProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{func() resource.Resource { return shapeResource(p) }}
}

// shapeResource does nothing: a refresh keeps the state, a plan the proposal.
type shapeResource struct{ s schema.Schema }

func (r shapeResource) Metadata(_ context.Context, _ resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = "shape_release"
}
func (r shapeResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = r.s
}
func (r shapeResource) Create(context.Context, resource.CreateRequest, *resource.CreateResponse) {}
func (r shapeResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse)       {}
func (r shapeResource) Update(context.Context, resource.UpdateRequest, *resource.UpdateResponse) {}
func (r shapeResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}
