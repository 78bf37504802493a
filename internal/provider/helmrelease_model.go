package provider

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

type helmReleaseModel struct {
	ID                 types.String  `tfsdk:"id"`
	Name               types.String  `tfsdk:"name"`
	Namespace          types.String  `tfsdk:"namespace"`
	ReleaseName        types.String  `tfsdk:"release_name"`
	TargetNamespace    types.String  `tfsdk:"target_namespace"`
	StorageNamespace   types.String  `tfsdk:"storage_namespace"`
	ServiceAccountName types.String  `tfsdk:"service_account_name"`
	MaxHistory         types.Int64   `tfsdk:"max_history"`
	Timeout            types.String  `tfsdk:"timeout"`
	PersistentClient   types.Bool    `tfsdk:"persistent_client"`
	ResetToken         types.String  `tfsdk:"reset_token"`
	ForceToken         types.String  `tfsdk:"force_token"`
	Suspend            types.Bool    `tfsdk:"suspend"`
	Description        types.String  `tfsdk:"description"`
	WaitStrategy       types.String  `tfsdk:"wait_strategy"`
	PostRenderStrategy types.String  `tfsdk:"post_render_strategy"`
	Values             types.Dynamic `tfsdk:"values"`
	Set                types.List    `tfsdk:"set"`
	SetList            types.List    `tfsdk:"set_list"`
	SetSensitive       types.List    `tfsdk:"set_sensitive"`
	// ValuesWO is write-only: null in plan and state; Create, Update and
	// ModifyPlan read it from the configuration (writeOnlyFromConfig).
	ValuesWO        types.Dynamic `tfsdk:"values_wo"`
	ValuesWOVersion types.Int64   `tfsdk:"values_wo_version"`

	Chart          *releaseChartModel     `tfsdk:"chart"`
	CommonMetadata *commonMetadataModel   `tfsdk:"common_metadata"`
	ValuesFrom     []valuesReferenceModel `tfsdk:"values_from"`
	Install        *installModel          `tfsdk:"install"`
	Upgrade        *upgradeModel          `tfsdk:"upgrade"`
	Test           *testModel             `tfsdk:"test"`
	Rollback       *rollbackModel         `tfsdk:"rollback"`
	Uninstall      *uninstallModel        `tfsdk:"uninstall"`
	DriftDetection *driftDetectionModel   `tfsdk:"drift_detection"`
	PostRenderers  []postRendererModel    `tfsdk:"post_renderers"`
	Dependencies   []dependencyModel      `tfsdk:"dependencies"`

	HealthCheckExprs []healthCheckExprModel `tfsdk:"health_check_exprs"`

	Version             types.Int64  `tfsdk:"version"`
	ChartName           types.String `tfsdk:"chart_name"`
	ChartVersion        types.String `tfsdk:"chart_version"`
	AppVersion          types.String `tfsdk:"app_version"`
	ConfigDigest        types.String `tfsdk:"config_digest"`
	PostRenderersDigest types.String `tfsdk:"post_renderers_digest"`
	ChartDigest         types.String `tfsdk:"chart_digest"`
	Drift               types.List   `tfsdk:"drift"`
	Changes             types.List   `tfsdk:"changes"`

	// StatusObject is the `status` attribute: the fields below, which the
	// resource's code reads and writes one by one; getModel and setModel
	// convert between them.
	StatusObject types.Object `tfsdk:"status"`

	Status        types.String `tfsdk:"-"`
	FirstDeployed types.String `tfsdk:"-"`
	LastDeployed  types.String `tfsdk:"-"`
	ApplyMethod   types.String `tfsdk:"-"`

	// Book is the engine's bookkeeping, kept in private state (bookKey):
	// nil until read from there or rebuilt from storage (loadBook).
	Book *releaseBook `tfsdk:"-"`
}

type releaseChartModel struct {
	Path   types.String `tfsdk:"path"`
	Digest types.String `tfsdk:"digest"`

	// An inline chart: the source attributes of stevedore_helmchart_artifact.
	chartSourceModel
}

// nullReleaseChart is a chart block with every attribute null.
func nullReleaseChart() *releaseChartModel {
	return &releaseChartModel{Path: types.StringNull(), Digest: types.StringNull(), chartSourceModel: nullChartSource()}
}

// inline reports whether the chart is given by its source rather than by an
// artifact's path and digest.
func (c *releaseChartModel) inline() bool {
	return c != nil && (!c.Repository.IsNull() || !c.SourcePath.IsNull())
}

type valuesReferenceModel struct {
	Kind       types.String `tfsdk:"kind"`
	Name       types.String `tfsdk:"name"`
	ValuesKey  types.String `tfsdk:"values_key"`
	TargetPath types.String `tfsdk:"target_path"`
	Optional   types.Bool   `tfsdk:"optional"`
	Literal    types.Bool   `tfsdk:"literal"`
}

type installModel struct {
	Timeout                  types.String             `tfsdk:"timeout"`
	CRDs                     types.String             `tfsdk:"crds"`
	Replace                  types.Bool               `tfsdk:"replace"`
	CreateNamespace          types.Bool               `tfsdk:"create_namespace"`
	DisableHooks             types.Bool               `tfsdk:"disable_hooks"`
	DisableOpenAPIValidation types.Bool               `tfsdk:"disable_openapi_validation"`
	DisableSchemaValidation  types.Bool               `tfsdk:"disable_schema_validation"`
	DisableWait              types.Bool               `tfsdk:"disable_wait"`
	DisableWaitForJobs       types.Bool               `tfsdk:"disable_wait_for_jobs"`
	ServerSideApply          types.Bool               `tfsdk:"server_side_apply"`
	Remediation              *installRemediationModel `tfsdk:"remediation"`

	Strategy      *actionStrategyModel `tfsdk:"strategy"`
	TakeOwnership types.Bool           `tfsdk:"take_ownership"`
}

type installRemediationModel struct {
	Retries              types.Int64 `tfsdk:"retries"`
	IgnoreTestFailures   types.Bool  `tfsdk:"ignore_test_failures"`
	RemediateLastFailure types.Bool  `tfsdk:"remediate_last_failure"`
}

type upgradeModel struct {
	Timeout                  types.String             `tfsdk:"timeout"`
	CRDs                     types.String             `tfsdk:"crds"`
	CleanupOnFail            types.Bool               `tfsdk:"cleanup_on_fail"`
	DisableHooks             types.Bool               `tfsdk:"disable_hooks"`
	DisableOpenAPIValidation types.Bool               `tfsdk:"disable_openapi_validation"`
	DisableSchemaValidation  types.Bool               `tfsdk:"disable_schema_validation"`
	ChartNameChangeStrategy  types.String             `tfsdk:"chart_name_change_strategy"`
	DisableWait              types.Bool               `tfsdk:"disable_wait"`
	DisableWaitForJobs       types.Bool               `tfsdk:"disable_wait_for_jobs"`
	Force                    types.Bool               `tfsdk:"force"`
	PreserveValues           types.Bool               `tfsdk:"preserve_values"`
	ServerSideApply          types.String             `tfsdk:"server_side_apply"`
	Remediation              *upgradeRemediationModel `tfsdk:"remediation"`

	Strategy      *actionStrategyModel `tfsdk:"strategy"`
	TakeOwnership types.Bool           `tfsdk:"take_ownership"`
}

type upgradeRemediationModel struct {
	Retries              types.Int64  `tfsdk:"retries"`
	Strategy             types.String `tfsdk:"strategy"`
	IgnoreTestFailures   types.Bool   `tfsdk:"ignore_test_failures"`
	RemediateLastFailure types.Bool   `tfsdk:"remediate_last_failure"`
}

type testModel struct {
	Enable         types.Bool        `tfsdk:"enable"`
	IgnoreFailures types.Bool        `tfsdk:"ignore_failures"`
	Timeout        types.String      `tfsdk:"timeout"`
	Filters        []testFilterModel `tfsdk:"filters"`
}

type testFilterModel struct {
	Name    types.String `tfsdk:"name"`
	Exclude types.Bool   `tfsdk:"exclude"`
}

type rollbackModel struct {
	Timeout            types.String `tfsdk:"timeout"`
	CleanupOnFail      types.Bool   `tfsdk:"cleanup_on_fail"`
	DisableHooks       types.Bool   `tfsdk:"disable_hooks"`
	DisableWait        types.Bool   `tfsdk:"disable_wait"`
	DisableWaitForJobs types.Bool   `tfsdk:"disable_wait_for_jobs"`
	Force              types.Bool   `tfsdk:"force"`
	Recreate           types.Bool   `tfsdk:"recreate"`
	ServerSideApply    types.String `tfsdk:"server_side_apply"`
}

type uninstallModel struct {
	Timeout             types.String `tfsdk:"timeout"`
	DeletionPropagation types.String `tfsdk:"deletion_propagation"`
	DisableHooks        types.Bool   `tfsdk:"disable_hooks"`
	DisableWait         types.Bool   `tfsdk:"disable_wait"`
	KeepHistory         types.Bool   `tfsdk:"keep_history"`
}

type driftDetectionModel struct {
	Mode   types.String      `tfsdk:"mode"`
	Ignore []ignoreRuleModel `tfsdk:"ignore"`
}

type ignoreRuleModel struct {
	Paths  types.List     `tfsdk:"paths"`
	Target *selectorModel `tfsdk:"target"`
}

type selectorModel struct {
	Group              types.String `tfsdk:"group"`
	Version            types.String `tfsdk:"version"`
	Kind               types.String `tfsdk:"kind"`
	Name               types.String `tfsdk:"name"`
	Namespace          types.String `tfsdk:"namespace"`
	AnnotationSelector types.String `tfsdk:"annotation_selector"`
	LabelSelector      types.String `tfsdk:"label_selector"`
}

type postRendererModel struct {
	Kustomize *kustomizeModel `tfsdk:"kustomize"`
}

type kustomizeModel struct {
	Patches []kustomizePatchModel `tfsdk:"patches"`
	Images  []kustomizeImageModel `tfsdk:"images"`
}

type kustomizePatchModel struct {
	Patch  types.String   `tfsdk:"patch"`
	Target *selectorModel `tfsdk:"target"`
}

type kustomizeImageModel struct {
	Name    types.String `tfsdk:"name"`
	NewName types.String `tfsdk:"new_name"`
	NewTag  types.String `tfsdk:"new_tag"`
	Digest  types.String `tfsdk:"digest"`
}

// helmReleaseSpec builds the engine spec of m: what the user wrote, which the
// engine completes with its defaults (release.Spec.withDefaults).
func helmReleaseSpec(ctx context.Context, m *helmReleaseModel) (*release.Spec, bool, diag.Diagnostics) {
	b := newSpecBuilder()
	spec := b.release(ctx, m)
	known, diags := b.result()
	return spec, known, diags
}

// release reads the release's attributes into its spec.
func (b *specBuilder) release(ctx context.Context, m *helmReleaseModel) *release.Spec {
	values := b.values(m.Values)
	spec := &release.Spec{
		Name:               b.str("name", m.Name),
		Namespace:          b.str("namespace", m.Namespace),
		ReleaseName:        b.str("release_name", m.ReleaseName),
		TargetNamespace:    b.str("target_namespace", m.TargetNamespace),
		StorageNamespace:   b.str("storage_namespace", m.StorageNamespace),
		ServiceAccountName: b.str("service_account_name", m.ServiceAccountName),
		Description:        b.str("description", m.Description),
		WaitStrategy:       b.str("wait_strategy", m.WaitStrategy),
		PostRenderStrategy: b.str("post_render_strategy", m.PostRenderStrategy),
		Timeout:            b.duration("timeout", m.Timeout),
		Values:             values,
		Sets:               b.sets(ctx, values, m),
		ValuesFrom:         b.valuesFrom(m.ValuesFrom),
		ValuesWriteOnly:    b.writeOnlyValues(m.ValuesWO),
		Install:            b.under("install").install(m.Install),
		Upgrade:            b.under("upgrade").upgrade(m.Upgrade),
		Test:               b.under("test").test(m.Test),
		Rollback:           b.under("rollback").rollback(m.Rollback),
		Uninstall:          b.under("uninstall").uninstall(m.Uninstall),
		DriftDetection:     b.under("drift_detection").driftDetection(m.DriftDetection),
		PostRenderers:      b.postRenderers(m.PostRenderers),
		CommonMetadata:     b.releaseCommonMetadata(m.CommonMetadata),
		Dependencies:       b.dependencies(m.Dependencies),
	}
	spec.HealthCheckExprs = b.healthCheckExprs(m.HealthCheckExprs)
	// persistent_client changes nothing here (its description says why); it
	// is read only so that an unknown value leaves the spec unknown, as every
	// other attribute does.
	b.boolean("persistent_client", m.PersistentClient)
	if !m.MaxHistory.IsNull() {
		n := int(b.integer("max_history", m.MaxHistory))
		spec.MaxHistory = &n
	}
	if c := m.Chart; c != nil && !c.inline() {
		spec.ChartDigest = b.str("chart.digest", c.Digest)
		if !c.Path.IsUnknown() || spec.ChartDigest == "" {
			spec.ChartPath = b.str("chart.path", c.Path)
		}
		// Otherwise an artifact built at plan, whose path is known at
		// apply only: the resource finds the archive by digest
		// (chartOnThisMachine).
	}
	return spec
}

// values are the inline values, an object or a YAML string.
func (b *specBuilder) values(v types.Dynamic) map[string]any {
	if v.IsUnknown() || v.IsUnderlyingValueUnknown() {
		b.unknownAt("values")
		return nil
	}
	vals, err := valuesFrom(v)
	if err = b.unknownIf("values", err); err != nil {
		b.diags.AddAttributeError(path.Root("values"), "Invalid values", err.Error())
	}
	return vals
}

func (b *specBuilder) valuesFrom(list []valuesReferenceModel) []release.ValuesReference {
	var out []release.ValuesReference
	for i, r := range list {
		e := b.under(fielderr.Index("values_from", i))
		out = append(out, release.ValuesReference{
			Kind: e.str("kind", r.Kind), Name: e.str("name", r.Name), ValuesKey: e.str("values_key", r.ValuesKey),
			TargetPath: e.str("target_path", r.TargetPath), Optional: e.boolean("optional", r.Optional),
			Literal: e.boolean("literal", r.Literal),
		})
	}
	return out
}

// releaseCommonMetadata reads common_metadata.
func (b *specBuilder) releaseCommonMetadata(cm *commonMetadataModel) release.CommonMetadata {
	if cm == nil {
		return release.CommonMetadata{}
	}
	return release.CommonMetadata{
		Labels:      b.stringMap("common_metadata.labels", cm.Labels),
		Annotations: b.stringMap("common_metadata.annotations", cm.Annotations),
	}
}

func (b *specBuilder) install(in *installModel) release.Install {
	if in == nil {
		return release.Install{}
	}
	out := release.Install{
		Timeout:                  b.duration("timeout", in.Timeout),
		CRDs:                     release.CRDPolicy(b.str("crds", in.CRDs)),
		Replace:                  b.boolean("replace", in.Replace),
		CreateNamespace:          b.boolean("create_namespace", in.CreateNamespace),
		DisableHooks:             b.boolean("disable_hooks", in.DisableHooks),
		DisableOpenAPIValidation: b.boolean("disable_openapi_validation", in.DisableOpenAPIValidation),
		DisableSchemaValidation:  b.boolean("disable_schema_validation", in.DisableSchemaValidation),
		DisableWait:              b.boolean("disable_wait", in.DisableWait),
		DisableWaitForJobs:       b.boolean("disable_wait_for_jobs", in.DisableWaitForJobs),
		ServerSideApply:          b.optBool("server_side_apply", in.ServerSideApply),
	}
	if r := in.Remediation; r != nil {
		rb := b.under("remediation")
		out.Remediation = release.InstallRemediation{
			Retries:              int(rb.integer("retries", r.Retries)),
			IgnoreTestFailures:   rb.optBool("ignore_test_failures", r.IgnoreTestFailures),
			RemediateLastFailure: rb.optBool("remediate_last_failure", r.RemediateLastFailure),
		}
	}
	out.Strategy, out.TakeOwnership = b.actionStrategy(in.Strategy), b.boolean("take_ownership", in.TakeOwnership)
	return out
}

func (b *specBuilder) upgrade(up *upgradeModel) release.Upgrade {
	if up == nil {
		return release.Upgrade{}
	}
	out := release.Upgrade{
		Timeout:                  b.duration("timeout", up.Timeout),
		CRDs:                     release.CRDPolicy(b.str("crds", up.CRDs)),
		CleanupOnFail:            b.boolean("cleanup_on_fail", up.CleanupOnFail),
		DisableHooks:             b.boolean("disable_hooks", up.DisableHooks),
		DisableOpenAPIValidation: b.boolean("disable_openapi_validation", up.DisableOpenAPIValidation),
		DisableSchemaValidation:  b.boolean("disable_schema_validation", up.DisableSchemaValidation),
		ChartNameChangeStrategy:  b.str("chart_name_change_strategy", up.ChartNameChangeStrategy),
		DisableWait:              b.boolean("disable_wait", up.DisableWait),
		DisableWaitForJobs:       b.boolean("disable_wait_for_jobs", up.DisableWaitForJobs),
		Force:                    b.boolean("force", up.Force),
		PreserveValues:           b.boolean("preserve_values", up.PreserveValues),
		ServerSideApply:          b.str("server_side_apply", up.ServerSideApply),
	}
	if r := up.Remediation; r != nil {
		rb := b.under("remediation")
		out.Remediation = release.UpgradeRemediation{
			Retries:              int(rb.integer("retries", r.Retries)),
			Strategy:             rb.str("strategy", r.Strategy),
			IgnoreTestFailures:   rb.optBool("ignore_test_failures", r.IgnoreTestFailures),
			RemediateLastFailure: rb.optBool("remediate_last_failure", r.RemediateLastFailure),
		}
	}
	out.Strategy, out.TakeOwnership = b.actionStrategy(up.Strategy), b.boolean("take_ownership", up.TakeOwnership)
	return out
}

func (b *specBuilder) test(t *testModel) release.Test {
	if t == nil {
		return release.Test{}
	}
	out := release.Test{
		Enable:         b.boolean("enable", t.Enable),
		IgnoreFailures: b.boolean("ignore_failures", t.IgnoreFailures),
		Timeout:        b.duration("timeout", t.Timeout),
	}
	for i, f := range t.Filters {
		fb := b.under(fielderr.Index("filters", i))
		out.Filters = append(out.Filters, release.TestFilter{Name: fb.str("name", f.Name), Exclude: fb.boolean("exclude", f.Exclude)})
	}
	return out
}

func (b *specBuilder) rollback(r *rollbackModel) release.Rollback {
	if r == nil {
		return release.Rollback{}
	}
	return release.Rollback{
		Timeout:            b.duration("timeout", r.Timeout),
		CleanupOnFail:      b.boolean("cleanup_on_fail", r.CleanupOnFail),
		DisableHooks:       b.boolean("disable_hooks", r.DisableHooks),
		DisableWait:        b.boolean("disable_wait", r.DisableWait),
		DisableWaitForJobs: b.boolean("disable_wait_for_jobs", r.DisableWaitForJobs),
		Force:              b.boolean("force", r.Force),
		ServerSideApply:    b.str("server_side_apply", r.ServerSideApply),
	}
}

func (b *specBuilder) uninstall(u *uninstallModel) release.Uninstall {
	if u == nil {
		return release.Uninstall{}
	}
	return release.Uninstall{
		Timeout:             b.duration("timeout", u.Timeout),
		DeletionPropagation: b.str("deletion_propagation", u.DeletionPropagation),
		DisableHooks:        b.boolean("disable_hooks", u.DisableHooks),
		DisableWait:         b.boolean("disable_wait", u.DisableWait),
		KeepHistory:         b.boolean("keep_history", u.KeepHistory),
	}
}

func (b *specBuilder) driftDetection(d *driftDetectionModel) release.DriftDetection {
	if d == nil {
		return release.DriftDetection{}
	}
	out := release.DriftDetection{Mode: release.DriftMode(b.str("mode", d.Mode))}
	for i, r := range d.Ignore {
		rb := b.under(fielderr.Index("ignore", i))
		out.Ignore = append(out.Ignore, jsondiff.IgnoreRule{Paths: rb.strings("paths", r.Paths), Selector: rb.jsondiffSelector(r.Target)})
	}
	return out
}

func (b *specBuilder) postRenderers(list []postRendererModel) []release.PostRenderer {
	var out []release.PostRenderer
	for i, pr := range list {
		var r release.PostRenderer
		if k := pr.Kustomize; k != nil {
			kb := b.under(fielderr.Index("post_renderers", i)).under("kustomize")
			r.Kustomize = &release.Kustomize{}
			for j, p := range k.Patches {
				pb := kb.under(fielderr.Index("patches", j))
				r.Kustomize.Patches = append(r.Kustomize.Patches, release.KustomizePatch{Patch: pb.str("patch", p.Patch), Target: pb.kustomizeSelector(p.Target)})
			}
			for j, img := range k.Images {
				ib := kb.under(fielderr.Index("images", j))
				r.Kustomize.Images = append(r.Kustomize.Images, release.KustomizeImage{
					Name: ib.str("name", img.Name), NewName: ib.str("new_name", img.NewName), NewTag: ib.str("new_tag", img.NewTag), Digest: ib.str("digest", img.Digest),
				})
			}
		}
		out = append(out, r)
	}
	return out
}

// selector reads a target block into the fields both selector types have.
func (b *specBuilder) selector(s *selectorModel) (group, version, kind, name, namespace, annotations, labels string) {
	t := b.under("target")
	return t.str("group", s.Group), t.str("version", s.Version), t.str("kind", s.Kind), t.str("name", s.Name),
		t.str("namespace", s.Namespace), t.str("annotation_selector", s.AnnotationSelector), t.str("label_selector", s.LabelSelector)
}

func (b *specBuilder) jsondiffSelector(s *selectorModel) *jsondiff.Selector {
	if s == nil {
		return nil
	}
	var o jsondiff.Selector
	o.Group, o.Version, o.Kind, o.Name, o.Namespace, o.AnnotationSelector, o.LabelSelector = b.selector(s)
	return &o
}

func (b *specBuilder) kustomizeSelector(s *selectorModel) *release.KustomizeSelector {
	if s == nil {
		return nil
	}
	var o release.KustomizeSelector
	o.Group, o.Version, o.Kind, o.Name, o.Namespace, o.AnnotationSelector, o.LabelSelector = b.selector(s)
	return &o
}

// valuesFrom reads the values attribute: an object, a YAML string holding
// one, or a list of them (hashicorp/helm's `values`), deep-merged in order.
// Null is no values.
func valuesFrom(v types.Dynamic) (map[string]any, error) {
	if v.IsNull() || v.IsUnderlyingValueNull() {
		return nil, nil
	}
	switch l := v.UnderlyingValue().(type) {
	case types.Tuple:
		return valuesList(l.Elements())
	case types.List:
		return valuesList(l.Elements())
	}
	if s, ok := v.UnderlyingValue().(types.String); ok {
		out, err := yamlMapping(s.ValueString())
		if err != nil {
			return nil, fmt.Errorf("values is a string, so it %w", err)
		}
		return out, nil
	}
	g, err := goValue(v)
	if err != nil {
		return nil, err
	}
	m, ok := g.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("values must be an object, a YAML string holding a mapping, or a list of them, got %s", typeName(g))
	}
	return m, nil
}

// setTriggers sets what Flux's annotation triggers say for an apply from
// state to plan: a new generation (or reset_token) resets the failure
// counters, a new force_token forces one install or upgrade. A force_token
// not known yet at plan may force; so does a new values_wo_version; so does
// a new description; so does a new name or namespace of a
// release that keeps its release name and storage (both set explicitly):
// the upgrade puts the new origin labels (`stevedore.dev/name` and
// `stevedore.dev/namespace`) on its objects, which nothing else would.
func setTriggers(ctx context.Context, spec *release.Spec, state, plan *helmReleaseModel) {
	spec.ResetFailures = newGeneration(ctx, state, plan)
	spec.Force = state != nil && !plan.ForceToken.IsNull() && !plan.ForceToken.Equal(state.ForceToken)
	if state != nil && (!plan.Name.Equal(state.Name) || !plan.Namespace.Equal(state.Namespace)) {
		spec.Force = true
	}
	// A new values_wo_version upgrades with the write-only values, which no
	// digest covers.
	spec.Force = spec.Force || state != nil && !plan.ValuesWOVersion.IsNull() && !plan.ValuesWOVersion.Equal(state.ValuesWOVersion)
	// A new description (removing it too) upgrades the release, which then
	// carries it, as helm_release upgrades on one. No digest covers it:
	// Flux has none, and the release's own is Helm's text after a rollback,
	// not the configuration's. Null and "" are both Helm's text.
	spec.Force = spec.Force || state != nil && plan.Description.ValueString() != state.Description.ValueString()
}

// newGeneration reports whether the configuration of plan differs from the
// one state was applied with: Flux's new generation of a HelmRelease, after
// which the failure counters start over. Computed attributes (the defaulted
// release name and storage namespace, the chart archive's path and digest,
// which the engine compares itself) do not count; reset_token and suspend do.
func newGeneration(ctx context.Context, state, plan *helmReleaseModel) bool {
	if state == nil || !state.Book.failing() {
		// No counter to reset (a release in sync): not worth two spec
		// conversions on every plan.
		return false
	}
	if !state.ResetToken.Equal(plan.ResetToken) || state.Suspend.ValueBool() != plan.Suspend.ValueBool() {
		return true
	}
	if (state.Chart == nil) != (plan.Chart == nil) || state.Chart != nil && state.Chart.inline() && plan.Chart.changedFrom(&state.Chart.chartSourceModel) {
		return true
	}
	a, _, _ := helmReleaseSpec(ctx, state)
	b, _, _ := helmReleaseSpec(ctx, plan)
	for _, s := range []*release.Spec{a, b} {
		s.ReleaseName, s.StorageNamespace, s.ChartPath, s.ChartDigest = "", "", "", ""
	}
	return !reflect.DeepEqual(a, b)
}

// prevStatus is the engine Status the state holds, with its bookkeeping
// (m.Book, loaded by loadBook), which Plan, Observe and Reconcile continue
// from.
func prevStatus(ctx context.Context, m *helmReleaseModel) (*release.Status, diag.Diagnostics) {
	if m == nil || m.Status.IsNull() && m.Version.IsNull() {
		return nil, nil
	}
	s := &release.Status{
		ReleaseName:         m.ReleaseName.ValueString(),
		StorageNamespace:    m.StorageNamespace.ValueString(),
		Status:              m.Status.ValueString(),
		Version:             int(m.Version.ValueInt64()),
		ChartName:           m.ChartName.ValueString(),
		ChartVersion:        m.ChartVersion.ValueString(),
		AppVersion:          m.AppVersion.ValueString(),
		ConfigDigest:        m.ConfigDigest.ValueString(),
		PostRenderersDigest: m.PostRenderersDigest.ValueString(),
		FirstDeployed:       parseTime(m.FirstDeployed),
		LastDeployed:        parseTime(m.LastDeployed),
	}
	if b := m.Book; b != nil {
		s.History, s.Conditions = b.History, b.Conditions
		s.Failures, s.InstallFailures, s.UpgradeFailures = b.Failures, b.InstallFailures, b.UpgradeFailures
		s.LastAttemptedReleaseAction = b.LastAttemptedReleaseAction
	}
	// The chart of the last attempt, which the engine compares with the
	// planned one.
	s.ChartDigest = m.ChartDigest.ValueString()
	drift, diags := driftFrom(ctx, m.Drift)
	s.Drift = drift
	return s, diags
}

// setStatus fills the computed attributes of m, and its bookkeeping, from
// the engine's status.
func (m *helmReleaseModel) setStatus(s *release.Status) {
	m.ReleaseName = types.StringValue(s.ReleaseName)
	m.StorageNamespace = types.StringValue(s.StorageNamespace)
	m.Status = types.StringValue(s.Status)
	m.Version = types.Int64Value(int64(s.Version))
	m.ChartName = types.StringValue(s.ChartName)
	m.ChartVersion = types.StringValue(s.ChartVersion)
	m.AppVersion = types.StringValue(s.AppVersion)
	m.ConfigDigest = types.StringValue(s.ConfigDigest)
	m.PostRenderersDigest = types.StringValue(s.PostRenderersDigest)
	m.ChartDigest = types.StringValue(s.ChartDigest)
	m.FirstDeployed = timeValue(s.FirstDeployed)
	m.LastDeployed = timeValue(s.LastDeployed)
	m.ApplyMethod = types.StringValue(s.ApplyMethod)
	m.Book = bookOf(s)
	m.Drift = driftValue(s.Drift)
}

func timeValue(t time.Time) types.String {
	if t.IsZero() {
		return types.StringValue("")
	}
	return types.StringValue(t.UTC().Format(time.RFC3339))
}

func parseTime(v types.String) time.Time {
	t, _ := time.Parse(time.RFC3339, v.ValueString())
	return t
}

func driftFrom(ctx context.Context, l types.List) ([]kube.Drift, diag.Diagnostics) {
	if l.IsNull() || l.IsUnknown() {
		return nil, nil
	}
	var raw []struct {
		ID      types.String `tfsdk:"id"`
		Type    types.String `tfsdk:"type"`
		Changes []struct {
			Op   types.String `tfsdk:"op"`
			Path types.String `tfsdk:"path"`
			From types.String `tfsdk:"from"`
			To   types.String `tfsdk:"to"`
		} `tfsdk:"changes"`
	}
	diags := l.ElementsAs(ctx, &raw, false)
	out := make([]kube.Drift, 0, len(raw))
	for _, r := range raw {
		d := kube.Drift{ID: r.ID.ValueString(), Type: r.Type.ValueString()}
		for _, c := range r.Changes {
			d.Changes = append(d.Changes, kube.Change{Op: c.Op.ValueString(), Path: c.Path.ValueString(), From: c.From.ValueString(), To: c.To.ValueString()})
		}
		out = append(out, d)
	}
	return out, diags
}

// keepRelease is copyStatus for a suspended release, which no apply touches:
// the chart digest too stays what the release was installed with.
func (m *helmReleaseModel) keepRelease(s *helmReleaseModel) {
	m.copyStatus(s)
	m.ChartDigest = s.ChartDigest
}

// copyStatus copies the computed attributes of the release from the state,
// for a plan in which apply makes no Helm release. The chart digest is not
// one of them: every apply records the digest of the chart it is given
// (planChart plans it), also over an imported release whose digest was
// unknown. The post-renderers digest is that of the last release made, so it
// stays.
func (m *helmReleaseModel) copyStatus(s *helmReleaseModel) {
	m.ReleaseName, m.StorageNamespace = s.ReleaseName, s.StorageNamespace
	m.Status, m.Version = s.Status, s.Version
	m.ChartName, m.ChartVersion, m.AppVersion = s.ChartName, s.ChartVersion, s.AppVersion
	m.ConfigDigest, m.PostRenderersDigest = s.ConfigDigest, s.PostRenderersDigest
	m.FirstDeployed, m.LastDeployed = s.FirstDeployed, s.LastDeployed
	m.ApplyMethod = s.ApplyMethod
	m.Book = s.Book
	m.Drift = s.Drift
	m.Changes = s.Changes
}
