package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

var inventoryEntryType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"id": types.StringType, "v": types.StringType, "adopted": types.BoolType, "step": types.StringType,
}}

func resourceSetSchema() schema.Schema {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	return schema.Schema{
		// Version 1 added `adopted` to the inventory entries. `step` came
		// later without a version: entries without it read as null, which is
		// what a set without steps plans.
		Version: 1,
		Description: "A set of Kubernetes objects rendered from a matrix of inputs through `<< >>` templates, " +
			"applied server-side in stages, pruned when they leave the set, with the semantics of flux-operator's ResourceSet. " +
			"The inventory of applied objects is state; objects to create and to prune show in the plan.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, Description: "`<namespace>/<name>`.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required: true, PlanModifiers: replace,
				Description: "Name of the set: with namespace, the owner labels `stevedore.dev/resourceset-name` and `-namespace` on every object.",
				Validators:  []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabel, "must be a DNS label")},
			},
			"namespace": schema.StringAttribute{
				Required: true, PlanModifiers: replace,
				Description: "Namespace of the set, and of the namespaced objects that name none.",
				Validators:  []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabel, "must be a DNS label")},
			},
			"inputs": schema.DynamicAttribute{
				Optional: true,
				Description: "List of objects, each one input of the matrix: every resource is rendered once per input, " +
					"which templates read as `<< inputs.key >>`. Without inputs everything renders once.",
			},
			"resources": schema.DynamicAttribute{
				Optional: true,
				Description: "List of Kubernetes manifests (objects) whose strings may hold `<< >>` Go templates; each renders to one object per input. " +
					"The template functions are those of `resources_template`.",
			},
			"resources_template": schema.StringAttribute{
				Optional: true,
				Description: "A multi-document YAML Go template with `<< >>` delimiters, rendered once per input. `resources` win over it on duplicates. " +
					"Functions: flux-operator's (slim-sprig's hermetic functions, `slugify`, `toYaml` and `mustToYaml`, which keep the trailing newline) and `bool`. " +
					"A function whose output changes from one render to the next (random: `genPrivateKey`, `randAlphaNum`, `uuidv4`, `bcrypt`, ...; " +
					"the clock: `now`, `ago`, ...; the environment: `env`, ...) is refused at plan: the plan renders the templates and the apply renders them again, " +
					"so the objects would never match the plan.",
			},
			"steps": schema.DynamicAttribute{
				Optional: true,
				MarkdownDescription: "List of at most " + fmt.Sprint(resourceset.MaxSteps) + " steps, flux-operator's `.spec.steps`, instead of `resources` and " +
					"`resources_template`: objects `{ name, timeout, resources, resources_template }`. `name` is a DNS label unique in the set; " +
					"`resources` and `resources_template` (at least one) render the step's objects with the set's `inputs`, as the set's own do; " +
					"`timeout` (a Go duration, default the set's `timeout`) bounds the step's health check. The steps are applied in order; " +
					"after each step but the last (the last too with `wait`) its objects are health-checked with kstatus, and a step that fails " +
					"stops the apply with `step \"<name>\" health check failed`: later steps are not applied, nothing is pruned, and the state " +
					"records what was applied. An object defined in two steps is an error at plan. " +
					"(An attribute rather than blocks: the framework allows no dynamic `resources` inside a list of blocks.)",
			},
			"wait": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				Description: "Wait for every object to be Current by kstatus (Deployments available, Jobs complete, ...). With `steps`, the objects of the last step: the others are always waited for.",
			},
			"timeout": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(durationText(resourceset.DefaultTimeout)),
				Description: "Bound of the waits: dependencies, CRDs becoming established, `wait`, and of the health check of each step that sets no `timeout`. A Go duration.",
				Validators:  []validator.String{durationValidator{}},
			},
			"service_account_name": schema.StringAttribute{
				Optional: true,
				Description: "Impersonate this service account of `namespace` for every request, so that its RBAC bounds what the set may do. " +
					"One that does not exist is a plan warning (what the apply changes is then unknown), and the apply fails at once.",
			},
			"take_over_from": schema.ListAttribute{
				Optional: true, ElementType: types.StringType,
				Validators: []validator.List{listvalidator.ValueStringsAre(stringvalidator.OneOf(kube.TakeOverNames...)), listvalidator.UniqueValues()},
				MarkdownDescription: "Owners whose objects the set may take over, for a migration: `helm` (objects of a Helm release, " +
					"`meta.helm.sh/release-name` or `app.kubernetes.io/managed-by: Helm`), `flux` (a Flux Kustomization's or HelmRelease's, " +
					"`kustomize.toolkit.fluxcd.io/*` or `helm.toolkit.fluxcd.io/*` labels), `flux-operator` (a flux-operator ResourceSet's, " +
					"`resourceset.fluxcd.controlplane.io/*` labels). Without it such objects are refused at plan, naming their owner. " +
					"A taken-over object is the set's from then on: the plan warns, it is not `adopted`, and prune and destroy delete it. " +
					"The objects of another `stevedore_resourceset` or `stevedore_helmrelease` are never taken over.",
			},
			"suspend": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "flux-operator's `fluxcd.controlplane.io/reconcile: disabled` on the ResourceSet: plan and apply leave the set " +
					"alone (the plan warns that the apply is skipped): nothing is applied, nothing pruned, the configuration is saved, and the " +
					"computed attributes stay as the last apply left them. Refresh still reads drift while the configuration renders what was " +
					"applied (a change saved while suspended is not drift). Destroy removes the resource from state " +
					"and deletes nothing, as flux-operator leaves the objects of a disabled ResourceSet when it is deleted; to delete them, " +
					"apply with `suspend` unset first (which applies the pending configuration), then destroy. A set is applied before it " +
					"can be suspended, and a change that replaces it (`name`, `namespace`) needs `suspend` unset.",
			},
			"force": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				Description: "Recreate objects whose immutable fields changed instead of failing.",
			},
			"inventory": schema.ListAttribute{
				Computed: true, ElementType: inventoryEntryType,
				MarkdownDescription: "The objects the set owns, sorted, as Flux inventories list them: `id` is `<namespace>_<name>_<group>_<kind>`, `v` the API version. " +
					"`adopted` is true for an object that existed before the set first applied it: prune and destroy never delete an adopted object, " +
					"they only remove the owner labels from it. The plan shows it for objects new to the inventory, read from the cluster; it is unknown " +
					"for an object that already carries this set's owner labels (a set replaced after a failed apply), and the apply decides it. " +
					"Entries written before the provider recorded adoption read as not adopted. " +
					"`step` is the name of the step that applies the object (null without `steps`, and for an object that left the set and awaits its prune).",
			},
			"manifests": schema.StringAttribute{
				Computed:    true,
				Description: "The rendered objects as multi-document YAML, Secret values masked.",
			},
			"drift": schema.ListAttribute{
				Computed: true, ElementType: driftEntryType,
				Description: "Objects of the set that changed in the cluster or were deleted, found by server-side dry-run with the provider's field manager " +
					"at refresh; the next apply restores them. `type` is `update` or `create` (missing).",
			},
			"changes": schema.ListAttribute{
				Computed: true, ElementType: driftEntryType,
				Description: "What the apply that the plan shows does to each object, found at plan by server-side dry runs of the apply " +
					"(the provider's field manager, forced), which change nothing: `type` is `create` or `update` (with the changed JSON pointers, " +
					"old and new values, Secret data masked); objects the apply leaves as they are are not listed, and prunes show in " +
					"`inventory`. Worked out only when the set changes. Unknown when the plan cannot tell (inputs not known yet; apply then " +
					"leaves it null). Refresh sets it to null, so that every plan shows only its own changes.",
			},
			"conditions": schema.ListAttribute{
				Computed: true, ElementType: conditionType,
				Description: "kstatus-style conditions after the last apply (`Ready`).",
			},
		},
		Blocks: map[string]schema.Block{
			"common_metadata": schema.SingleNestedBlock{
				Description: "Labels and annotations set on every object, over what the templates set.",
				Attributes: map[string]schema.Attribute{
					"labels":      schema.MapAttribute{Optional: true, ElementType: types.StringType, Description: "Labels."},
					"annotations": schema.MapAttribute{Optional: true, ElementType: types.StringType, Description: "Annotations."},
				},
			},
			"dependencies": dependenciesBlock("Objects in the cluster the set waits for before it applies anything."),
			"inputs_from": schema.ListNestedBlock{
				MarkdownDescription: "flux-operator's `.spec.inputsFrom`, for clusters that run flux-operator: ResourceSetInputProvider objects in `namespace` " +
					"whose `status.exportedInputs` join `inputs`, by `name` or by `selector` (exactly one). They are read at plan (and at refresh and apply), " +
					"so a provider whose inputs changed since the last apply shows as a change of the rendered objects. With the `Flatten` strategy " +
					"(the default) the inputs are `inputs` first, then each provider's (each provider once, sorted by name), each of the latter with " +
					"`provider = { apiVersion, kind, name, namespace }` naming the object, as flux-operator sets it. A provider's readiness is not " +
					"looked at. A provider named but missing, or a cluster that does not serve the kind, fails the plan. When the providers export " +
					"no input and `inputs` is empty, the set renders no object (flux-operator's behavior), rather than everything once.",
				NestedObject: schema.NestedBlockObject{
					Attributes: map[string]schema.Attribute{
						"api_version": schema.StringAttribute{Optional: true, MarkdownDescription: "`" + resourceset.InputProviderAPIVersion + "`, the only one (optional)."},
						"kind":        schema.StringAttribute{Optional: true, MarkdownDescription: "`" + resourceset.InputProviderKind + "`, the only one (optional)."},
						"name":        schema.StringAttribute{Optional: true, Description: "Name of a provider in the set's namespace."},
					},
					Blocks: map[string]schema.Block{
						"selector": schema.SingleNestedBlock{
							Description: "Label selector of providers in the set's namespace (an empty block selects them all).",
							Attributes: map[string]schema.Attribute{
								"match_labels": schema.MapAttribute{Optional: true, ElementType: types.StringType, Description: "Labels the providers carry."},
							},
							Blocks: map[string]schema.Block{
								"match_expressions": schema.ListNestedBlock{
									Description: "Label selector requirements, as Kubernetes' matchExpressions.",
									NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
										"key":      schema.StringAttribute{Required: true, Description: "Label key."},
										"operator": schema.StringAttribute{Required: true, MarkdownDescription: "`In`, `NotIn`, `Exists` or `DoesNotExist`."},
										"values":   schema.ListAttribute{Optional: true, ElementType: types.StringType, Description: "Values, for In and NotIn."},
									}},
								},
							},
						},
					},
				},
			},
			"input_strategy": schema.SingleNestedBlock{
				MarkdownDescription: "flux-operator's `.spec.inputStrategy`: how `inputs` and the inputs of `inputs_from` combine.",
				Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "`Flatten` (the default): the concatenation of the inputs. `Permute`: the cartesian product of the " +
							"sources, as flux-operator's: the set's own `inputs` (the first source) and each provider's (sorted by name), the last " +
							"varying fastest. Each input set holds, under the normalized name of each source (lower case, spaces and punctuation " +
							"as `_`, other characters dropped: `inputs.my_set.tenant`, `inputs.git_tags.tag`), the input it took from it, with its " +
							"`provider`, and an `id`: flux-operator's Adler-32 checksum of `<key>=<index>` of each source joined by `/`. A source " +
							"without inputs is skipped; more than " + fmt.Sprint(resourceset.MaxPermutations) + " input sets fail the plan. Any other " +
							"value is an error on this attribute.",
					},
					"include_empty_providers": schema.BoolAttribute{
						Optional: true,
						MarkdownDescription: "flux-operator's `includeEmptyProviders`, with `Permute` only: a source that has no inputs (the set " +
							"without `inputs`, a provider that exports none) empties the product, so that the set renders no object, rather " +
							"than being skipped. Default false.",
					},
				},
			},
		},
	}
}
