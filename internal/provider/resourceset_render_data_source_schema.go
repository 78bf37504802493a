package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// renderInventoryEntryType is an entry of a planned inventory: the
// resource's inventory entry without `adopted`, which only a cluster can say.
var renderInventoryEntryType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"id": types.StringType, "v": types.StringType, "step": types.StringType,
}}

// resourceSetRenderAttributes are the attributes of stevedore_resourceset a
// set renders from, which the data source takes as they are.
var resourceSetRenderAttributes = []string{"name", "namespace", "inputs", "resources", "resources_template", "steps"}

func resourceSetRenderSchema() schema.Schema {
	rs := resourceSetSchema()
	attrs := map[string]schema.Attribute{
		"api_resources": schema.ListNestedAttribute{
			Optional: true,
			MarkdownDescription: "Kinds the cluster would serve that are neither Kubernetes' built-in ones nor defined by a " +
				"CustomResourceDefinition the set renders (Flux's `HelmRelease`, ...): whether each is namespaced decides, as the " +
				"cluster's discovery does for the resource, whether an object that names no namespace gets the set's. A kind known " +
				"at one version is known at all. A kind that is none of these fails the read, naming it. Entries here win over the built-in kinds.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"api_version": schema.StringAttribute{Required: true, Description: "`group/version` (`v1` for the core group)."},
				"kind":        schema.StringAttribute{Required: true, Description: "The kind."},
				"namespaced":  schema.BoolAttribute{Required: true, Description: "Whether objects of the kind are namespaced."},
			}},
		},
		"objects": renderedObjectsAttribute("The objects `stevedore_resourceset` would apply, in the order it applies them (step by step, " +
			"resources before resources_template, input by input), deduplicated, with the namespace of a namespaced object that names none " +
			"set to `namespace`, and the owner labels and `common_metadata` set: `api_version`, `kind`, `namespace` (`\"\"` for a cluster-scoped " +
			"object), `name`, and `manifest`, the object as YAML (Secret values as rendered: the resource masks them in its `manifests`)."),
		"inventory": schema.ListAttribute{
			Computed: true, ElementType: renderInventoryEntryType,
			MarkdownDescription: "The inventory a plan of `stevedore_resourceset` shows for these objects, sorted: `id` " +
				"(`<namespace>_<name>_<group>_<kind>`), `v` (the API version) and `step` (null without `steps`). Whether an object is " +
				"`adopted` (it exists before the set applies it) only the cluster can say, so it is not here.",
		},
		"manifests": schema.StringAttribute{
			Computed:    true,
			Description: "The objects as multi-document YAML, Secret values masked: what `stevedore_resourceset`'s `manifests` plans.",
		},
	}
	for _, name := range resourceSetRenderAttributes {
		attrs[name] = dataSourceAttribute(name, rs.Attributes[name])
	}
	return schema.Schema{
		MarkdownDescription: "Renders a `stevedore_resourceset` without a cluster: the objects and the inventory it would apply, from its " +
			"`inputs` (for example those of `stevedore_resourceset_inputs`), `resources`, `resources_template`, `steps`, `common_metadata` and " +
			"`input_strategy` (`Permute` of the set's `inputs` alone: without `inputs_from` the set is the one source), " +
			"which take the resource's values as they are. The provider needs no `kubernetes` configuration for it, so that CI can run policy " +
			"checks (conftest, kubeconform) on what a set would apply. `inputs_from` reads the cluster and is not here: read the inputs with " +
			"`stevedore_resourceset_inputs` instead. Which kinds are namespaced comes from Kubernetes' built-in API (kustomize's OpenAPI " +
			"data and client-go's kinds), the CustomResourceDefinitions the set renders, and `api_resources`.",
		Attributes: attrs,
		Blocks: map[string]schema.Block{
			"common_metadata": dataSourceBlock("common_metadata", rs.Blocks["common_metadata"]),
			"input_strategy":  dataSourceBlock("input_strategy", rs.Blocks["input_strategy"]),
		},
	}
}
