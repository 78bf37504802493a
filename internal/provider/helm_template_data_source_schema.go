package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// renderedObjectType is an object the render data sources return.
var renderedObjectType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"api_version": types.StringType, "kind": types.StringType, "namespace": types.StringType, "name": types.StringType,
	"manifest": types.StringType,
}}

func renderedObjectsAttribute(desc string) schema.ListAttribute {
	return schema.ListAttribute{Computed: true, ElementType: renderedObjectType, MarkdownDescription: desc}
}

func helmTemplateSchema() schema.Schema {
	rel := helmReleaseSchema()
	// The release's own attributes, so that a release's configuration
	// renders here as it is.
	chartBlock := dataSourceBlock("chart", rel.Blocks["chart"]).(schema.SingleNestedBlock)
	chartBlock.Description = "The chart, as `stevedore_helmrelease`'s `chart` block: `path` and `digest` of a `stevedore_helmchart_artifact` " +
		"(the archive's digest is checked), or an inline chart (`repository` and `chart`, or `source_path`, with `version`, `values_files`, " +
		"`verify`, ...), which is resolved, fetched and verified into the provider's cache when the data source is read."
	values := dataSourceAttribute("values", rel.Attributes["values"]).(schema.DynamicAttribute)
	values.Description = "Values, as `stevedore_helmrelease`'s `values`: an object or a YAML string, merged over the chart's values " +
		"(and the chart block's `values_files`); `set`, `set_list` and `set_sensitive` are set into it, in that order, as a release's are."
	// set, set_list and set_sensitive are the release's, parsed by the
	// release's code (releaseModel); only what a data source cannot have
	// (state kept out of it by values_from) is said otherwise.
	setSensitive := dataSourceAttribute("set_sensitive", rel.Attributes["set_sensitive"]).(schema.ListNestedAttribute)
	setSensitive.Description = "As `set`, for secret values: the values are marked sensitive and never show in plan output, " +
		"but they are stored in state, and the rendered `manifest` and `objects` show them wherever the chart renders them, " +
		"as `helm template` prints them. Applied after `set` and `set_list`, as hashicorp/helm applies them."
	postRenderers := dataSourceBlock("post_renderers", rel.Blocks["post_renderers"]).(schema.ListNestedBlock)
	postRenderers.Description = "Post-renderers applied in order to the rendered manifest, as `stevedore_helmrelease`'s; then `common_metadata`, as the release's " +
		"(which then adds its origin labels; this does not)."
	postRenderStrategy := dataSourceAttribute("post_render_strategy", rel.Attributes["post_render_strategy"]).(schema.StringAttribute)
	postRenderStrategy.MarkdownDescription = "What `post_renderers` are given, as a release's `post_render_strategy`: `combined` (default, " +
		"Helm 4): hooks and templates in one stream, so patches apply to the hooks `manifest` prints too; `separate` (Helm 4.2): " +
		"hooks and templates in two streams; `nohooks` (Helm 3, and the default with the provider's `helm3_defaults`): templates only."
	commonMetadata := dataSourceBlock("common_metadata", rel.Blocks["common_metadata"]).(schema.SingleNestedBlock)
	commonMetadata.Description = ""
	commonMetadata.MarkdownDescription = "Labels and annotations set on every object, as `stevedore_helmrelease`'s `common_metadata` " +
		"(helm-controller's `commonMetadata`), by the release's own code: after `post_renderers` (they win over the chart and the " +
		"patches), on `metadata` only (not on selectors or pod templates), on hooks too unless `post_render_strategy` is `nohooks`, " +
		"never on the CRDs `include_crds` prints. `manifest` and `objects` then show the labels and annotations the release puts " +
		"on the cluster, but for its origin labels. The keys a release refuses are refused here too: any `stevedore.dev/` key, " +
		"Helm's `app.kubernetes.io/managed-by` label and `meta.helm.sh/release-name` and `meta.helm.sh/release-namespace` annotations."
	releaseName := rel.Attributes["release_name"]
	namespace := rel.Attributes["namespace"]
	computedStr := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, Description: desc}
	}
	return schema.Schema{
		MarkdownDescription: "Renders a Helm chart as `helm template` does, without a cluster: Helm's install action in client-only dry-run mode, " +
			"with `stevedore_helmrelease`'s `chart`, `values`, `set`, `set_list`, `set_sensitive`, `post_renderers`, `post_render_strategy` " +
			"and `common_metadata`, and its `install.disable_schema_validation` as `disable_schema_validation`. The provider needs no `kubernetes` configuration for it, " +
			"so that CI can run policy checks (conftest, kubeconform) on what a release would apply. " +
			"The objects are those of `helm template`: a release also labels every object with `stevedore.dev/name` and `stevedore.dev/namespace` " +
			"(its origin labels), which are not here, and installs the chart's `crds/` by its `install.crds` policy (`include_crds` prints them). " +
			"Secrets appear as rendered, in the state too, as `helm template` prints them.",
		Attributes: map[string]schema.Attribute{
			"release_name": schema.StringAttribute{
				Required: true, Description: "Helm release name (`.Release.Name`).",
				Validators: dataSourceAttribute("release_name", releaseName).(schema.StringAttribute).Validators,
			},
			"namespace": schema.StringAttribute{
				Required: true, Description: "Namespace of the release (`.Release.Namespace`): a release's `target_namespace`, else its `namespace`.",
				Validators: dataSourceAttribute("namespace", namespace).(schema.StringAttribute).Validators,
			},
			"values":        values,
			"set":           dataSourceAttribute("set", rel.Attributes["set"]),
			"set_list":      dataSourceAttribute("set_list", rel.Attributes["set_list"]),
			"set_sensitive": setSensitive,
			"kube_version": schema.StringAttribute{
				Optional: true,
				Description: "Kubernetes version the chart sees as `.Capabilities.KubeVersion`, as `helm template --kube-version`, e.g. `v1.31.0`. " +
					"Default: Helm's (that of the Kubernetes client it is built with).",
			},
			"api_versions": schema.ListAttribute{
				Optional: true, ElementType: types.StringType,
				Description: "API versions added to Helm's defaults in `.Capabilities.APIVersions`, as `helm template --api-versions`: " +
					"`group/version` or `group/version/Kind`, e.g. `monitoring.coreos.com/v1/ServiceMonitor`.",
			},
			"include_crds":         schema.BoolAttribute{Optional: true, Description: "Print the chart's `crds/` first, as `helm template --include-crds`. Default false."},
			"post_render_strategy": postRenderStrategy,
			"skip_tests":           schema.BoolAttribute{Optional: true, Description: "Leave out the test hooks, as `helm template --skip-tests`. Default false."},
			"disable_schema_validation": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Do not validate the values against the chart's `values.schema.json` (and its subcharts'), as " +
					"`helm template --skip-schema-validation` and a release's `install.disable_schema_validation` (the template is " +
					"Helm's install action). Default false: values the schema refuses fail the read, naming `values` and the schema's error, " +
					"as the release's plan fails."},
			"objects": renderedObjectsAttribute("The rendered objects, one entry per YAML document of `manifest` that holds an object, in order " +
				"(hooks included, as `helm template` prints them): `api_version`, `kind`, `namespace` (as the chart renders it, `\"\"` when it sets none), " +
				"`name`, and `manifest`, the document as rendered."),
			"manifest":      computedStr("The whole stream, as `helm template` prints it: the manifest after `post_renderers` and `common_metadata`, then each hook."),
			"notes":         computedStr("The chart's rendered `NOTES.txt`; `\"\"` when it has none."),
			"chart_name":    computedStr("Name of the chart."),
			"chart_version": computedStr("Version of the chart."),
			"app_version":   computedStr("App version of the chart."),
			"chart_digest":  computedStr("Digest of the chart archive: `chart.digest`, or that of the archive an inline chart built."),
			"config_digest": computedStr("Digest of the values, as a release's `config_digest` for the same values."),
		},
		Blocks: map[string]schema.Block{
			"chart":           chartBlock,
			"post_renderers":  postRenderers,
			"common_metadata": commonMetadata,
		},
	}
}
