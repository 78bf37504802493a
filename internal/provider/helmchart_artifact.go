package provider

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// NewHelmChartArtifactResource is the stevedore_helmchart_artifact resource.
func NewHelmChartArtifactResource() resource.Resource { return &helmChartArtifactResource{} }

// artifactKind names an artifact in messages: `helmchart_artifact <source>: `.
const artifactKind = "helmchart_artifact"

type helmChartArtifactResource struct {
	data *providerData
}

var (
	_ resource.ResourceWithConfigure      = (*helmChartArtifactResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*helmChartArtifactResource)(nil)
	_ resource.ResourceWithValidateConfig = (*helmChartArtifactResource)(nil)
)

// chartSourceModel is where a chart comes from and how it is fetched: the
// configuration of stevedore_helmchart_artifact, and of an inline chart block
// of stevedore_helmrelease. Both models embed it, so that one conversion into
// a chart spec and one comparison serve both.
type chartSourceModel struct {
	Repository               types.String `tfsdk:"repository"`
	SourcePath               types.String `tfsdk:"source_path"`
	Chart                    types.String `tfsdk:"chart"`
	Version                  types.String `tfsdk:"version"`
	ValuesFiles              types.List   `tfsdk:"values_files"`
	IgnoreMissingValuesFiles types.Bool   `tfsdk:"ignore_missing_values_files"`
	ReconcileStrategy        types.String `tfsdk:"reconcile_strategy"`
	Username                 types.String `tfsdk:"username"`
	Password                 types.String `tfsdk:"password"`
	CAPEM                    types.String `tfsdk:"ca_pem"`
	CertPEM                  types.String `tfsdk:"cert_pem"`
	KeyPEM                   types.String `tfsdk:"key_pem"`
	InsecureSkipTLSVerify    types.Bool   `tfsdk:"insecure_skip_tls_verify"`
	Insecure                 types.Bool   `tfsdk:"insecure"`
	PassCredentials          types.Bool   `tfsdk:"pass_credentials"`
	Verify                   *verifyModel `tfsdk:"verify"`
}

// nullChartSource is a chart source with every attribute null.
func nullChartSource() chartSourceModel {
	return chartSourceModel{
		Repository: types.StringNull(), SourcePath: types.StringNull(), Chart: types.StringNull(), Version: types.StringNull(),
		ValuesFiles: types.ListNull(types.StringType), IgnoreMissingValuesFiles: types.BoolNull(),
		ReconcileStrategy: types.StringNull(), Username: types.StringNull(), Password: types.StringNull(),
		CAPEM: types.StringNull(), CertPEM: types.StringNull(), KeyPEM: types.StringNull(),
		InsecureSkipTLSVerify: types.BoolNull(), Insecure: types.BoolNull(), PassCredentials: types.BoolNull(),
	}
}

// values are the source's attributes, verify's included, in a fixed order.
func (s *chartSourceModel) values() []attr.Value {
	vals := []attr.Value{s.Repository, s.SourcePath, s.Chart, s.Version, s.ValuesFiles, s.IgnoreMissingValuesFiles,
		s.ReconcileStrategy, s.Username, s.Password, s.CAPEM, s.CertPEM, s.KeyPEM, s.InsecureSkipTLSVerify, s.Insecure, s.PassCredentials}
	if v := s.Verify; v != nil {
		vals = append(vals, v.Provider, v.PublicKeys, v.TrustPolicyJSON, v.CACertificates)
		for _, id := range v.MatchOIDCIdentity {
			vals = append(vals, id.Issuer, id.Subject)
		}
	}
	return vals
}

// changedFrom reports whether any configured attribute differs from other's.
func (s *chartSourceModel) changedFrom(other *chartSourceModel) bool {
	a, b := s.values(), other.values()
	if (s.Verify == nil) != (other.Verify == nil) || len(a) != len(b) {
		return true
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return true
		}
	}
	return false
}

type helmChartArtifactModel struct {
	ID types.String `tfsdk:"id"`
	chartSourceModel
	// SourceRoot and Suspend are the artifact's own: the release's inline
	// chart block has neither.
	SourceRoot types.String `tfsdk:"source_root"`
	Suspend    types.Bool   `tfsdk:"suspend"`

	ChartName           types.String `tfsdk:"chart_name"`
	ChartVersion        types.String `tfsdk:"chart_version"`
	AppVersion          types.String `tfsdk:"app_version"`
	Revision            types.String `tfsdk:"revision"`
	Digest              types.String `tfsdk:"digest"`
	Size                types.Int64  `tfsdk:"size"`
	Path                types.String `tfsdk:"path"`
	URL                 types.String `tfsdk:"url"`
	ObservedValuesFiles types.List   `tfsdk:"observed_values_files"`
	Verified            types.Bool   `tfsdk:"verified"`
	SourceRevision      types.String `tfsdk:"source_revision"`
}

type verifyModel struct {
	Provider          types.String    `tfsdk:"provider"`
	PublicKeys        types.List      `tfsdk:"public_keys"`
	MatchOIDCIdentity []identityModel `tfsdk:"match_oidc_identity"`
	TrustPolicyJSON   types.String    `tfsdk:"trust_policy_json"`
	CACertificates    types.Map       `tfsdk:"ca_certificates"`
}

type identityModel struct {
	Issuer  types.String `tfsdk:"issuer"`
	Subject types.String `tfsdk:"subject"`
}

func (r *helmChartArtifactResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_helmchart_artifact"
}

func (r *helmChartArtifactResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = helmChartArtifactSchema()
}

func (r *helmChartArtifactResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req, resp)
}

func (r *helmChartArtifactResource) engine() *chart.Engine { return r.data.charts }

// ValidateConfig checks what the attribute validators cannot see alone.
func (r *helmChartArtifactResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m helmChartArtifactModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	repoKnown := !m.Repository.IsNull() && !m.Repository.IsUnknown()
	if repoKnown && m.Chart.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("chart"), "Missing chart name",
			"chart is required with repository: the name of the chart in "+m.Repository.ValueString())
	}
	if repoKnown && m.ReconcileStrategy.ValueString() == chart.StrategyRevision {
		resp.Diagnostics.AddAttributeError(path.Root("reconcile_strategy"), "Invalid reconcile strategy",
			"Revision applies to source_path only: a repository chart's revision is its version")
	}
	if repoKnown && strings.HasPrefix(m.Repository.ValueString(), "oci://") {
		rest := strings.TrimPrefix(m.Repository.ValueString(), "oci://")
		if i := strings.Index(rest, "/"); i >= 0 && strings.ContainsAny(rest[i:], ":@") {
			resp.Diagnostics.AddAttributeError(path.Root("repository"), "Invalid OCI repository",
				"the repository must not carry a tag or digest: put the chart name in chart and the version in version")
		}
	}
	if v := m.Verify; v != nil {
		validateVerify(v, m.Repository, m.SourcePath, &resp.Diagnostics)
	}
	validateArtifactPaths(ctx, &m, &resp.Diagnostics)
}

// validateVerify checks the verify block against its chart source and its
// provider: the attributes of one provider are errors under the other, and
// notation needs its trust policy and CA certificates. The attribute
// validators check each value alone (a key, a trust policy, a certificate).
func validateVerify(v *verifyModel, repository, sourcePath types.String, diags *diag.Diagnostics) {
	at := path.Root("verify")
	provider := v.Provider.ValueString()
	if v.Provider.IsNull() {
		provider = chart.VerifyProviderCosign
	}
	if !repository.IsNull() && !repository.IsUnknown() && !strings.HasPrefix(repository.ValueString(), "oci://") {
		diags.AddAttributeError(at, "Nothing to verify",
			fmt.Sprintf("Helm repositories (https://) serve no signatures stevedore can verify; %s verification needs an oci:// repository", provider))
	}
	if !sourcePath.IsNull() {
		diags.AddAttributeError(at, "Nothing to verify",
			fmt.Sprintf("a local chart directory carries no signature; %s verification needs an oci:// repository", provider))
	}
	if v.Provider.IsUnknown() {
		return
	}
	switch provider {
	case chart.VerifyProviderCosign:
		for _, a := range []struct {
			name string
			v    attr.Value
		}{{"trust_policy_json", v.TrustPolicyJSON}, {"ca_certificates", v.CACertificates}} {
			if name := a.name; !a.v.IsNull() {
				diags.AddAttributeError(at.AtName(name), "Notation attribute with cosign",
					fmt.Sprintf("verify.%s is notation's: set verify.provider = \"notation\" to verify Notation signatures, or leave it out for cosign", name))
			}
		}
		if v.PublicKeys.IsNull() && v.MatchOIDCIdentity == nil {
			diags.AddAttributeWarning(at.AtName("match_oidc_identity"), noIdentitySummary, noIdentityDetail)
		}
		// A key that is not one fails here, before any request (the keys
		// that are still unknown are checked again before the pull).
		for i, k := range v.PublicKeys.Elements() {
			key, ok := k.(types.String)
			if !ok || key.IsNull() || key.IsUnknown() {
				continue
			}
			if err := chart.CheckPublicKey([]byte(key.ValueString())); err != nil {
				diags.AddAttributeError(at.AtName("public_keys").AtListIndex(i), "Invalid public key",
					fmt.Sprintf("verify.public_keys[%d]: %v", i, err))
			}
		}
	case chart.VerifyProviderNotation:
		if !v.PublicKeys.IsNull() {
			diags.AddAttributeError(at.AtName("public_keys"), "cosign attribute with notation",
				"verify.public_keys is cosign's: Notation verifies against verify.trust_policy_json and verify.ca_certificates")
		}
		if v.MatchOIDCIdentity != nil {
			diags.AddAttributeError(at.AtName("match_oidc_identity"), "cosign attribute with notation",
				"verify.match_oidc_identity is cosign's: Notation's trusted identities are in the trust policy (trust_policy_json)")
		}
		if v.TrustPolicyJSON.IsNull() {
			diags.AddAttributeError(at.AtName("trust_policy_json"), "Missing trust policy",
				"notation verification needs verify.trust_policy_json, the trust policy document (the trustpolicy.json key of Flux's Secret)")
		} else if !v.TrustPolicyJSON.IsUnknown() {
			if _, cleaned, err := chart.ParseTrustPolicy([]byte(v.TrustPolicyJSON.ValueString())); err == nil && len(cleaned) > 0 {
				diags.AddAttributeWarning(at.AtName("trust_policy_json"), "Trust stores of a skip statement ignored",
					fmt.Sprintf("trust policy statements %s are at level skip but name trust stores or trusted identities: those are ignored, "+
						"as source-controller ignores them, and charts in their scopes are used unverified", strings.Join(cleaned, ", ")))
			}
		}
		if v.CACertificates.IsNull() {
			diags.AddAttributeError(at.AtName("ca_certificates"), "Missing CA certificates",
				"notation verification needs verify.ca_certificates, the trust store's CA certificates (the *.crt and *.pem keys of Flux's Secret)")
		}
	}
}

const (
	noIdentitySummary = "No signing identity enforced"
	noIdentityDetail  = "verify has neither public_keys nor match_oidc_identity: keyless verification accepts a signature by " +
		"any identity Fulcio issued a certificate to, as Flux does without matchOIDCIdentity. That proves the chart was " +
		"signed and logged in Rekor, not who signed it: set match_oidc_identity to your signer's issuer and subject."
)

// validateArtifactPaths checks source_root and the paths relative to it: with
// source_root, source_path and values_files are relative to the source root
// and may not leave it; without, values_files may not leave the chart. Each
// diagnostic is on the attribute, or list element, that is wrong.
func validateArtifactPaths(ctx context.Context, m *helmChartArtifactModel, diags *diag.Diagnostics) {
	fromRoot := !m.SourceRoot.IsNull()
	if fromRoot && m.SourcePath.IsNull() {
		diags.AddAttributeError(path.Root("source_root"), "Invalid source_root",
			"source_root applies to source_path only: it is the root of the source that holds the chart directory")
		fromRoot = false
	}
	if fromRoot && !m.SourcePath.IsUnknown() {
		if err := chart.CheckRelPath(m.SourcePath.ValueString(), true); err != nil {
			diags.AddAttributeError(path.Root("source_path"), "Invalid chart path",
				"with source_root, source_path is the chart directory relative to the source root (Flux's spec.chart): "+err.Error())
		}
	}
	if m.ValuesFiles.IsNull() || m.ValuesFiles.IsUnknown() {
		return
	}
	var files []types.String
	diags.Append(m.ValuesFiles.ElementsAs(ctx, &files, false)...)
	for i, f := range files {
		if f.IsNull() || f.IsUnknown() {
			continue
		}
		if err := chart.CheckRelPath(f.ValueString(), fromRoot); err != nil {
			rule := "values files are files of the chart (of its directory for source_path; set source_root for files " +
				"elsewhere in the source)"
			if fromRoot {
				rule = "with source_root, values files are relative to the source root and stay in it"
			}
			diags.AddAttributeError(path.Root("values_files").AtListIndex(i), "Invalid values file", rule+": "+err.Error())
		}
	}
}

// artifactSpec is the chart engine's spec of the artifact: its chart source
// (chartSpec) and its source root; known is false when a value it needs is
// unknown.
func (r *helmChartArtifactResource) artifactSpec(m *helmChartArtifactModel) (chart.Spec, bool, diag.Diagnostics) {
	b := newSpecBuilder()
	spec := m.chartSpec(b, r.data)
	spec.SourceRoot = b.str("source_root", m.SourceRoot)
	known, diags := b.result()
	return spec, known, diags
}

// chartSpec reads a chart source, the artifact's or a release's inline
// chart (with b under `chart`), into the chart engine's spec, with the
// credentials of the provider's registries (data; nil when the provider is
// not configured yet).
func (m *chartSourceModel) chartSpec(b *specBuilder, data *providerData) chart.Spec {
	spec := chart.Spec{
		Repository:               b.str("repository", m.Repository),
		SourcePath:               b.str("source_path", m.SourcePath),
		Chart:                    b.str("chart", m.Chart),
		Version:                  b.str("version", m.Version),
		ValuesFiles:              b.strings("values_files", m.ValuesFiles),
		IgnoreMissingValuesFiles: b.boolean("ignore_missing_values_files", m.IgnoreMissingValuesFiles),
		ReconcileStrategy:        b.str("reconcile_strategy", m.ReconcileStrategy),
		Insecure:                 b.boolean("insecure", m.Insecure),
		Auth: chart.Auth{
			Username:              b.str("username", m.Username),
			Password:              b.str("password", m.Password),
			CAPEM:                 []byte(b.str("ca_pem", m.CAPEM)),
			CertPEM:               []byte(b.str("cert_pem", m.CertPEM)),
			KeyPEM:                []byte(b.str("key_pem", m.KeyPEM)),
			InsecureSkipTLSVerify: b.boolean("insecure_skip_tls_verify", m.InsecureSkipTLSVerify),
			PassCredentials:       b.boolean("pass_credentials", m.PassCredentials),
		},
	}
	if v := m.Verify; v != nil {
		spec.Verify = v.verify(b.under("verify"))
	}
	if spec.Auth.Username == "" && spec.Auth.Password == "" && spec.Repository != "" && data != nil {
		if c, ok := registryFor(data.registries, spec.Repository); ok {
			spec.Auth.Username, spec.Auth.Password = c.Username, c.Password
		}
	}
	if spec.SourcePath != "" && data != nil {
		// Dependencies of a local chart from https:// or oci:// repositories
		// use the provider's registries.
		regs := data.registries
		spec.DependencyAuth = func(repository string) chart.Auth {
			if c, ok := registryFor(regs, repository); ok {
				return chart.Auth{Username: c.Username, Password: c.Password}
			}
			return chart.Auth{}
		}
	}
	return spec
}

// verify reads the verify block; the provider is the engine's to default.
func (v *verifyModel) verify(b *specBuilder) *chart.Verify {
	out := &chart.Verify{Provider: b.str("provider", v.Provider)}
	for _, k := range b.strings("public_keys", v.PublicKeys) {
		out.PublicKeys = append(out.PublicKeys, []byte(k))
	}
	if p := b.str("trust_policy_json", v.TrustPolicyJSON); p != "" {
		out.TrustPolicy = []byte(p)
	}
	for k, c := range b.stringMap("ca_certificates", v.CACertificates) {
		if out.CACerts == nil {
			out.CACerts = map[string][]byte{}
		}
		out.CACerts[k] = []byte(c)
	}
	for i, id := range v.MatchOIDCIdentity {
		ib := b.under(fielderr.Index("match_oidc_identity", i))
		out.Identities = append(out.Identities, chart.Identity{Issuer: ib.str("issuer", id.Issuer), Subject: ib.str("subject", id.Subject)})
	}
	return out
}

// registryFor returns the provider-level credentials whose URL is the
// longest prefix of repository.
func registryFor(list []registryCredential, repository string) (registryCredential, bool) {
	var best registryCredential
	found := false
	for _, c := range list {
		prefix := strings.TrimSuffix(c.URL, "/")
		if repository != prefix && !strings.HasPrefix(repository, prefix+"/") {
			continue
		}
		if !found || len(prefix) > len(strings.TrimSuffix(best.URL, "/")) {
			best, found = c, true
		}
	}
	return best, found
}

// artifactError names the artifact by its source in front of err.
func artifactError(spec chart.Spec, err error) error {
	return fielderr.Object(artifactKind, sourceID(spec), err)
}

func sourceID(spec chart.Spec) string {
	if spec.SourceRoot != "" && spec.SourcePath != "" {
		spec.SourcePath = filepath.Join(spec.SourceRoot, filepath.FromSlash(spec.SourcePath))
	}
	if spec.SourcePath != "" {
		if spec.Chart != "" {
			return spec.SourcePath + "#" + spec.Chart
		}
		return spec.SourcePath
	}
	return strings.TrimSuffix(chart.RedactURL(spec.Repository), "/") + "/" + spec.Chart
}

// ModifyPlan resolves the version constraint and, when something changes,
// fetches, packages and verifies the artifact into the cache, so that the plan
// shows the version and digest apply records: unchanged configuration and
// version (and the artifact on this machine) plan nothing; a new version in
// range plans chart_version and digest "old" -> "new", with only path and url
// left to apply. A cosign failure is a plan error.
func (r *helmChartArtifactResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.data == nil || r.data.unknown {
		return
	}
	var plan helmChartArtifactModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, known, diags := r.artifactSpec(&plan)
	resp.Diagnostics.Append(diags...)
	if !known || resp.Diagnostics.HasError() {
		return
	}
	var state *helmChartArtifactModel
	if !req.State.Raw.IsNull() {
		state = &helmChartArtifactModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	if plan.Suspend.ValueBool() {
		r.planSuspended(ctx, &plan, state, spec, resp)
		return
	}
	e := r.engine()
	resolved, err := e.Resolve(ctx, spec)
	var kept *chart.Resolved
	if err != nil {
		if kept = keptVersion(state, &plan, err); kept != nil {
			// The source is down and nothing of it is cached (a fresh CI
			// runner): the recorded version stands, with a warning, as
			// source-controller keeps its last artifact. A destroy, whose
			// refresh plans the configuration first, never needs the source.
			resp.Diagnostics.AddAttributeWarning(path.Root("repository"), "Repository unreachable: recorded version kept",
				about(artifactKind, sourceID(spec), "%v. The recorded chart_version %s is kept; a newer version in range would not show "+
					"until the source can be reached.", unwrapObject(err), kept.Version))
			resolved = kept
		} else {
			addError(&resp.Diagnostics, "Cannot resolve the chart version", artifactError(spec, err))
			return
		}
	}
	staleWarning(&resp.Diagnostics, path.Root("repository"), artifactKind, sourceID(spec), resolved)

	if state != nil && !plan.changedFrom(&state.chartSourceModel) && plan.SourceRoot.Equal(state.SourceRoot) &&
		state.ChartVersion.ValueString() == resolved.Version &&
		(spec.SourcePath == "" || state.Revision.ValueString() == resolved.Revision) &&
		e.Has(state.Path.ValueString(), state.Digest.ValueString()) {
		// Nothing to do: keep what the state has.
		plan.copyComputed(state)
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}

	plan.ID = types.StringValue(sourceID(spec))
	if kept == nil {
		// Fetch, package and verify now, into the cache, so that the plan
		// shows the digest apply records and a release of this artifact
		// plans what its upgrade changes, object by object. Only the path is
		// left to apply: a plan saved here may be applied on a machine with
		// another cache directory (see build).
		a, err := e.Build(ctx, spec, resolved.Version)
		switch {
		case err == nil:
			for _, w := range a.Warnings {
				resp.Diagnostics.AddWarning("Chart cache not used", about(artifactKind, sourceID(spec), "%s", w))
			}
			if a.Unverified != "" {
				resp.Diagnostics.AddAttributeWarning(path.Root("verify"), "Chart used unverified",
					about(artifactKind, sourceID(spec), "%s: the chart is used with verified = false, as source-controller uses it", a.Unverified))
			}
			resp.Diagnostics.Append(plan.setArtifact(sourceID(spec), a)...)
			plan.Path = types.StringUnknown()
			plan.URL = types.StringUnknown()
			resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
			return
		case errors.Is(err, chart.ErrUnreachable):
			// Resolved from a cached index, but the archive cannot be
			// fetched now: the plan goes on (a destroy plans first), and
			// apply fetches it or fails.
			resp.Diagnostics.AddAttributeWarning(path.Root("repository"), "Chart not fetched at plan",
				about(artifactKind, sourceID(spec), "%v. The digest is known only when apply fetches %s %s.", unwrapObject(err), resolved.ChartName, resolved.Version))
		default:
			addError(&resp.Diagnostics, "Cannot build the chart artifact", artifactError(spec, err))
			return
		}
	}
	// The source is down and this machine has nothing of it: apply fetches
	// the version resolved, and what it holds is known then.
	plan.ChartName = types.StringValue(resolved.ChartName)
	plan.ChartVersion = types.StringValue(resolved.Version)
	plan.AppVersion = types.StringUnknown()
	plan.Revision = types.StringUnknown()
	if resolved.Revision != "" {
		plan.Revision = types.StringValue(resolved.Revision)
	}
	plan.SourceRevision = types.StringNull()
	if spec.SourcePath != "" {
		plan.SourceRevision = types.StringValue(resolved.SourceRevision)
	}
	plan.Digest = types.StringUnknown()
	plan.Size = types.Int64Unknown()
	plan.Path = types.StringUnknown()
	plan.URL = types.StringUnknown()
	plan.ObservedValuesFiles = types.ListUnknown(types.StringType)
	plan.Verified = types.BoolUnknown()
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// planSuspended plans a suspended artifact, as source-controller leaves a
// suspended HelmChart's artifact: it keeps its version, digest and archive.
// A newer version in range is not taken, and the plan says which one was
// skipped. An artifact is built before it can be suspended, and its source
// does not change while it is (the state would record a source that was
// never built).
func (r *helmChartArtifactResource) planSuspended(ctx context.Context, plan, state *helmChartArtifactModel, spec chart.Spec, resp *resource.ModifyPlanResponse) {
	id := sourceID(spec)
	switch {
	case state == nil:
		resp.Diagnostics.AddAttributeError(path.Root("suspend"), "Cannot create a suspended artifact",
			about(artifactKind, id, "a suspended artifact keeps the chart it has, and a new one has none: create it with suspend unset"))
		return
	case plan.changedFrom(&state.chartSourceModel) || !plan.SourceRoot.Equal(state.SourceRoot):
		resp.Diagnostics.AddAttributeError(path.Root("suspend"), "Cannot change a suspended artifact",
			about(artifactKind, id, "the chart's source or verification changed, which a suspended artifact does not build: "+
				"unset suspend to apply the change"))
		return
	}
	kept := state.ChartVersion.ValueString()
	if resolved, err := r.engine().Resolve(ctx, spec); err == nil {
		switch {
		case resolved.Version != kept:
			resp.Diagnostics.AddAttributeWarning(path.Root("chart_version"), "Chart version skipped",
				about(artifactKind, id, "suspend is set: version %s in range was not taken; the artifact keeps %s", resolved.Version, kept))
		case spec.SourcePath != "" && resolved.Revision != state.Revision.ValueString():
			resp.Diagnostics.AddAttributeWarning(path.Root("revision"), "Chart revision skipped",
				about(artifactKind, id, "suspend is set: revision %s of the chart directory was not built; the artifact keeps %s",
					resolved.Revision, state.Revision.ValueString()))
		}
	}
	plan.copyComputed(state)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, plan)...)
}

// keptVersion is what a plan resolves when the chart source cannot be
// reached and has nothing cached: the recorded version, when the
// configuration did not change since it was recorded; nil otherwise (the
// error stands).
func keptVersion(state, plan *helmChartArtifactModel, err error) *chart.Resolved {
	if state == nil || !errors.Is(err, chart.ErrUnreachable) || plan.changedFrom(&state.chartSourceModel) ||
		!plan.SourceRoot.Equal(state.SourceRoot) || state.ChartVersion.ValueString() == "" {
		return nil
	}
	return &chart.Resolved{
		ChartName:      state.ChartName.ValueString(),
		Version:        state.ChartVersion.ValueString(),
		AppVersion:     state.AppVersion.ValueString(),
		Revision:       state.Revision.ValueString(),
		SourceRevision: state.SourceRevision.ValueString(),
	}
}

// unwrapObject is err without the resource name in front, for a message
// that names it itself.
func unwrapObject(err error) error {
	var oe *fielderr.ObjectError
	if errors.As(err, &oe) {
		return oe.Err
	}
	return err
}

func (m *helmChartArtifactModel) copyComputed(from *helmChartArtifactModel) {
	m.ID = from.ID
	m.ChartName, m.ChartVersion, m.AppVersion, m.Revision = from.ChartName, from.ChartVersion, from.AppVersion, from.Revision
	m.Digest, m.Size, m.Path, m.URL = from.Digest, from.Size, from.Path, from.URL
	m.ObservedValuesFiles, m.Verified, m.SourceRevision = from.ObservedValuesFiles, from.Verified, from.SourceRevision
}

// setArtifact fills the computed attributes from a built artifact.
func (m *helmChartArtifactModel) setArtifact(id string, a *chart.Artifact) diag.Diagnostics {
	m.ID = types.StringValue(id)
	m.ChartName = types.StringValue(a.ChartName)
	m.ChartVersion = types.StringValue(a.Version)
	m.AppVersion = types.StringValue(a.AppVersion)
	m.Revision = types.StringValue(a.Revision)
	m.Digest = types.StringValue(a.Digest)
	m.Size = types.Int64Value(a.Size)
	m.Path = types.StringValue(a.Path)
	m.URL = types.StringValue(a.URL)
	m.Verified = types.BoolValue(a.Verified)
	m.SourceRevision = types.StringNull()
	if a.SourceRevision != "" {
		m.SourceRevision = types.StringValue(a.SourceRevision)
	}
	observed := a.ObservedValuesFiles
	if observed == nil {
		observed = []string{}
	}
	list, diags := types.ListValueFrom(context.Background(), types.StringType, observed)
	m.ObservedValuesFiles = list
	return diags
}

func (r *helmChartArtifactResource) build(ctx context.Context, m *helmChartArtifactModel, diags *diag.Diagnostics) {
	if r.data == nil || r.data.unknown {
		diags.AddError("Provider not configured", "the provider configuration is not known yet")
		return
	}
	spec, known, d := r.artifactSpec(m)
	diags.Append(d...)
	if diags.HasError() {
		return
	}
	if !known {
		diags.AddError("Unknown configuration", "helmchart_artifact: a configuration value is still unknown at apply")
		return
	}
	version := m.ChartVersion.ValueString()
	if m.ChartVersion.IsUnknown() || version == "" {
		// Planned without resolution (unknown inputs at plan time): resolve now.
		resolved, err := r.engine().Resolve(ctx, spec)
		if err != nil {
			addError(diags, "Cannot resolve the chart version", artifactError(spec, err))
			return
		}
		staleWarning(diags, path.Root("repository"), artifactKind, sourceID(spec), resolved)
		version = resolved.Version
	}
	if d := m.Digest; !d.IsUnknown() && !d.IsNull() {
		r.buildPlanned(ctx, spec, m, diags)
		return
	}
	plannedRevision := m.Revision
	a, err := r.engine().Build(ctx, spec, version)
	if err != nil {
		addError(diags, "Cannot build the chart artifact", artifactError(spec, err))
		return
	}
	if !plannedRevision.IsUnknown() && !plannedRevision.IsNull() && plannedRevision.ValueString() != a.Revision {
		diags.AddAttributeError(path.Root("revision"), "Chart changed since the plan",
			about(artifactKind, sourceID(spec), "planned revision %s, built %s: the source changed between plan and apply; plan again", plannedRevision.ValueString(), a.Revision))
		return
	}
	diags.Append(m.setArtifact(sourceID(spec), a)...)
}

// buildPlanned applies an artifact that the plan built: every attribute but
// the path is the plan's. The archive is taken from this machine's cache by
// digest, or fetched again when the cache lacks it (a plan saved on another
// machine); bytes that differ from the planned digest (a version republished
// since the plan) are refused, so that no release is upgraded to a chart
// nobody planned.
func (r *helmChartArtifactResource) buildPlanned(ctx context.Context, spec chart.Spec, m *helmChartArtifactModel, diags *diag.Diagnostics) {
	e := r.engine()
	planned := m.Digest.ValueString()
	p, ok := e.Locate(planned)
	if !ok {
		a, err := e.Build(ctx, spec, m.ChartVersion.ValueString())
		if err != nil {
			addError(diags, "Cannot build the chart artifact", artifactError(spec, err))
			return
		}
		if a.Digest != planned {
			diags.AddAttributeError(path.Root("digest"), "Chart changed since the plan",
				about(artifactKind, sourceID(spec), "the plan built %s %s with digest %s; fetched again, it has digest %s: "+
					"the chart was republished between plan and apply. Nothing was applied; plan again", a.ChartName, a.Revision, planned, a.Digest))
			return
		}
		p = a.Path
	}
	m.Path = types.StringValue(p)
	m.URL = types.StringValue(chart.FileURL(p))
}

func (r *helmChartArtifactResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m helmChartArtifactModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.build(ctx, &m, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *helmChartArtifactResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m helmChartArtifactModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// On failure the prior state stays as it was (the framework keeps it).
	r.build(ctx, &m, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Read checks that the artifact is on this machine: at its path or, by
// digest, in this machine's cache. When it is in neither (a fresh CI runner,
// a cleaned cache) it is built again silently if the result has the same
// digest; otherwise the path is cleared so that the plan shows the artifact
// being built again.
func (r *helmChartArtifactResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m helmChartArtifactModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || r.data == nil || r.data.unknown {
		return
	}
	e := r.engine()
	if e.Has(m.Path.ValueString(), m.Digest.ValueString()) {
		return
	}
	spec, known, diags := r.artifactSpec(&m)
	resp.Diagnostics.Append(diags...)
	if !known || resp.Diagnostics.HasError() || m.ChartVersion.ValueString() == "" {
		return
	}
	a, err := e.Build(ctx, spec, m.ChartVersion.ValueString())
	switch {
	case err != nil:
		resp.Diagnostics.AddWarning("Chart artifact missing from the cache",
			about(artifactKind, sourceID(spec), "%s is gone and cannot be fetched again: %v", m.Path.ValueString(), err))
		m.Path = types.StringValue("")
	case a.Digest != m.Digest.ValueString():
		resp.Diagnostics.AddWarning("Chart artifact changed",
			about(artifactKind, sourceID(spec), "%s was gone; fetched again, %s %s has digest %s, not %s as recorded", m.Path.ValueString(), a.ChartName, a.Revision, a.Digest, m.Digest.ValueString()))
		m.Path = types.StringValue("")
	default:
		// The same bytes, now in this machine's cache: the recorded path
		// stays (it may be another machine's, whose cache directory
		// differs), and a release finds the archive by digest.
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *helmChartArtifactResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m helmChartArtifactModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || r.data == nil {
		return
	}
	if err := r.engine().Remove(m.Path.ValueString()); err != nil && !errors.Is(err, context.Canceled) {
		resp.Diagnostics.AddWarning("Cannot remove the chart artifact", fmt.Sprintf("%s: %v", m.Path.ValueString(), err))
	}
}

// staleWarning says that a version was resolved from the cached index of a
// repository that could not be reached: the plan goes on, as
// source-controller keeps serving its last artifact, and says so.
func staleWarning(diags *diag.Diagnostics, at path.Path, kind, id string, r *chart.Resolved) {
	if r.Stale != "" {
		diags.AddAttributeWarning(at, "Repository unreachable: cached index used",
			about(kind, id, "%s. A newer version in range would not show until it can be reached.", r.Stale))
	}
}
