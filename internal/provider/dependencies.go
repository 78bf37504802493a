package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// dependencyModel is one `dependencies` block of stevedore_resourceset and
// stevedore_helmrelease.
type dependencyModel struct {
	APIVersion types.String `tfsdk:"api_version"`
	Kind       types.String `tfsdk:"kind"`
	Name       types.String `tfsdk:"name"`
	Namespace  types.String `tfsdk:"namespace"`
	Ready      types.Bool   `tfsdk:"ready"`
	ReadyExpr  types.String `tfsdk:"ready_expr"`
}

// dependenciesBlock is the `dependencies` block; what says what waits for the
// dependencies and when.
func dependenciesBlock(what string) schema.ListNestedBlock {
	return schema.ListNestedBlock{
		MarkdownDescription: what + " Each object must exist, and with `ready` be ready; unmet dependencies are polled every 5 seconds " +
			"until `timeout`, and the apply then fails naming them. The plan does not read them. Terraform's `depends_on` orders the " +
			"resources of one configuration; `dependencies` waits for objects in the cluster, whoever makes them (a CRD, an object " +
			"of another configuration or of a Flux controller).",
		NestedObject: schema.NestedBlockObject{
			Attributes: map[string]schema.Attribute{
				"api_version": schema.StringAttribute{Required: true, MarkdownDescription: "API version of the object: `v1`, `apps/v1`, `helm.toolkit.fluxcd.io/v2`."},
				"kind":        schema.StringAttribute{Required: true, MarkdownDescription: "Kind of the object."},
				"name":        schema.StringAttribute{Required: true, MarkdownDescription: "Name of the object."},
				"namespace":   schema.StringAttribute{Optional: true, MarkdownDescription: "Namespace of the object; empty for a cluster-scoped object."},
				"ready": schema.BoolAttribute{Optional: true,
					MarkdownDescription: "Require the object to be ready, not only to exist: `ready_expr` true when it is set, " +
						"else Current by kstatus (a Deployment available, a Flux object with `Ready=True`, a CRD established)."},
				"ready_expr": schema.StringAttribute{Optional: true,
					MarkdownDescription: "CEL expression returning bool, with access to all the fields of the object: each top-level " +
						"field is a variable (`metadata`, `spec`, `status`, `data`, `type`, `subjects`, ...), as in flux-operator, " +
						"e.g. `type == 'kubernetes.io/tls'` or `status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')`. " +
						"With the strings, sets and encoders extensions and optional types (`data.?key.orValue('')`). " +
						"A field, map key or list element the object does not have yet (a `status` not written yet) counts as not " +
						"ready yet. A syntax or type error, or a result that cannot be a bool, is a plan error; an expression that " +
						"fails on the object otherwise fails the apply at once. Only with `ready = true`."},
			},
		},
	}
}

// dependenciesFrom converts the blocks; known is false when a value is not
// known yet.
func dependenciesFrom(list []dependencyModel) (deps []kube.Dependency, known bool) {
	b := newSpecBuilder()
	deps = b.dependencies(list)
	return deps, b.known()
}

// dependencies reads the `dependencies` blocks.
func (b *specBuilder) dependencies(list []dependencyModel) []kube.Dependency {
	deps := make([]kube.Dependency, 0, len(list))
	for i, d := range list {
		e := b.under(fielderr.Index("dependencies", i))
		deps = append(deps, kube.Dependency{
			APIVersion: e.str("api_version", d.APIVersion), Kind: e.str("kind", d.Kind), Name: e.str("name", d.Name),
			Namespace: e.str("namespace", d.Namespace), Ready: e.boolean("ready", d.Ready), ReadyExpr: e.str("ready_expr", d.ReadyExpr),
		})
	}
	return deps
}

// validateDependencies reports, at validation, the definitions that no
// cluster can make right: missing fields, malformed API versions, ready_expr
// that does not compile. Blocks with unknown values are left to the plan.
func validateDependencies(diags *diag.Diagnostics, list []dependencyModel) {
	if deps, known := dependenciesFrom(list); known {
		addError(diags, "Invalid dependency", kube.ValidateDependencies(deps))
	}
}
