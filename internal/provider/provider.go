// Package provider is the terraform-plugin-framework glue of stevedore: schemas,
// validation, plan modifiers, CRUD and import, converting between Terraform
// values and the engines' plain Go types. Helm and client-go stay out of it.
package provider

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// Address is the provider's registry address.
const Address = "registry.terraform.io/stevedore-dev/stevedore"

// New returns the provider factory terraform-plugin-framework serves.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &stevedoreProvider{version: version} }
}

type stevedoreProvider struct {
	version string
}

var (
	_ provider.Provider                  = (*stevedoreProvider)(nil)
	_ provider.ProviderWithListResources = (*stevedoreProvider)(nil)
	_ provider.ProviderWithActions       = (*stevedoreProvider)(nil)
)

func (p *stevedoreProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "stevedore"
	resp.Version = p.version
}

func (p *stevedoreProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = providerSchema()
}

// Configure turns the configuration into the data every resource shares. It
// contacts neither the cluster nor any registry: a cluster created in the same
// apply does not exist yet. It reads local files (kubeconfig) to report a bad
// path or context here, against the attribute that names it.
func (p *stevedoreProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}

	cacheDir := defaultCacheDir()
	if !cfg.CacheDir.IsNull() && !cfg.CacheDir.IsUnknown() {
		cacheDir = cfg.CacheDir.ValueString()
	}
	indexTTL := chart.DefaultIndexTTL
	if !cfg.CacheTTL.IsNull() && !cfg.CacheTTL.IsUnknown() {
		// Validated by the schema.
		indexTTL, _ = time.ParseDuration(cfg.CacheTTL.ValueString())
	}
	data := &providerData{
		cacheDir:   cacheDir,
		charts:     chart.New(chart.Options{CacheDir: cacheDir, IndexTTL: indexTTL}),
		registries: registriesFrom(cfg.Registries),
		// Unknown is false here; the apply configures again once it is known.
		helm3Defaults: cfg.Helm3.ValueBool(),
	}

	if cfg.hasUnknown() {
		// Plans go through with unknown computed values; apply configures again
		// once the values are known.
		data.unknown = true
		resp.ResourceData, resp.DataSourceData = data, data
		resp.ListResourceData = data
		resp.ActionData = data
		return
	}

	kc := kubeConfigFrom(cfg.Kubernetes)
	for _, fe := range kc.Validate() {
		addError(&resp.Diagnostics, "Invalid Kubernetes configuration", fielderr.Under("kubernetes", fe))
	}
	if resp.Diagnostics.HasError() {
		return
	}
	// An empty field manager is the factory's default (kube.DefaultFieldManager).
	data.setCluster(kube.NewFactory(kc, cfg.FieldManager.ValueString()), release.WithHelm3Defaults(data.helm3Defaults))
	resp.ResourceData, resp.DataSourceData = data, data
	resp.ListResourceData = data
	resp.ActionData = data
}

func (p *stevedoreProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		// One line per resource; each resource lives in its own file.
		NewHelmChartArtifactResource,
		NewHelmReleaseResource,
		NewResourceSetResource,
	}
}

func (p *stevedoreProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewResourceSetInputsDataSource,
		NewHelmTemplateDataSource,
		NewResourceSetRenderDataSource,
		NewHelmReleasesDataSource, NewResourceSetsDataSource,
	}
}

// ListResources are the list resources of `terraform query` (Terraform
// 1.14+): the listings of the data sources stevedore_helmreleases and
// stevedore_resourcesets, by the resources they import into.
func (p *stevedoreProvider) ListResources(context.Context) []func() list.ListResource {
	return []func() list.ListResource{NewHelmReleaseListResource, NewResourceSetListResource}
}

// Actions are Terraform's actions (1.14 and newer; OpenTofu has none, and
// never asks for them).
func (p *stevedoreProvider) Actions(context.Context) []func() action.Action {
	return []func() action.Action{
		NewHelmReleaseTestAction,
	}
}

// defaultCacheDir is the user cache directory + /stevedore, or a directory under
// the temp dir when the user has none (a CI runner without HOME).
func defaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "stevedore")
	}
	return filepath.Join(os.TempDir(), "stevedore-cache")
}

// providerData is what Configure hands to every resource and data source:
// the engines of the provider process, built once and shared. Each is safe
// for concurrent use by many resources: chart.Engine holds only its options
// (its index and record caches are process-wide and locked);
// resourceset.Engine holds only the kube factory; release.Engine carries
// what refresh read to the plan, under its own lock.
type providerData struct {
	// kube, releases and sets are nil when unknown is set.
	kube     *kube.Factory
	releases *release.Engine
	sets     *resourceset.Engine
	// charts is the chart engine on cacheDir, also when unknown is set (a
	// chart artifact is removed from the cache by a destroy then).
	charts     *chart.Engine
	cacheDir   string
	registries []registryCredential
	// helm3Defaults is the provider's helm3_defaults, which the release
	// engine also gets: for what renders without it (stevedore_helm_template).
	helm3Defaults bool
	unknown       bool
}

// setCluster builds the engines that work on the cluster f reaches.
func (d *providerData) setCluster(f *kube.Factory, opts ...release.Option) {
	d.kube = f
	d.releases = release.New(f, opts...)
	d.sets = resourceset.New(f)
}

type registryCredential struct {
	URL      string
	Username string
	Password string
}

func registriesFrom(list []registryModel) []registryCredential {
	out := make([]registryCredential, 0, len(list))
	for _, r := range list {
		out = append(out, registryCredential{
			URL:      r.URL.ValueString(),
			Username: r.Username.ValueString(),
			Password: r.Password.ValueString(),
		})
	}
	return out
}
