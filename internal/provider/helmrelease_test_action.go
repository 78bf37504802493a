package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// helmReleaseTestAction is the action stevedore_helmrelease_test: `helm test`
// of a release, now (Terraform 1.14 and newer: `terraform apply -invoke`, or
// a resource's action_trigger). It is a face of the release engine's test
// runner (release.Engine.Test); it writes no state.
type helmReleaseTestAction struct {
	data *providerData
}

var (
	_ action.Action              = (*helmReleaseTestAction)(nil)
	_ action.ActionWithConfigure = (*helmReleaseTestAction)(nil)
)

// NewHelmReleaseTestAction is the stevedore_helmrelease_test action.
func NewHelmReleaseTestAction() action.Action { return &helmReleaseTestAction{} }

func (a *helmReleaseTestAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_helmrelease_test"
}

func (a *helmReleaseTestAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.data = providerDataOf(req.ProviderData, &resp.Diagnostics)
}

// helmReleaseTestModel is the action's configuration.
type helmReleaseTestModel struct {
	Namespace        types.String      `tfsdk:"namespace"`
	Name             types.String      `tfsdk:"name"`
	TargetNamespace  types.String      `tfsdk:"target_namespace"`
	ReleaseName      types.String      `tfsdk:"release_name"`
	StorageNamespace types.String      `tfsdk:"storage_namespace"`
	Timeout          types.String      `tfsdk:"timeout"`
	Filters          []testFilterModel `tfsdk:"filters"`
}

func (a *helmReleaseTestAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = helmReleaseTestSchema()
}

func helmReleaseTestSchema() schema.Schema {
	label := []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabel, "must be a DNS label")}
	return schema.Schema{
		MarkdownDescription: "Runs the Helm tests of a deployed release now, as `helm test` does, with the test runner of " +
			"`stevedore_helmrelease` (Terraform 1.14 and newer; OpenTofu has no actions). Each test hook's phase streams as the " +
			"action's progress; a failed hook fails the action with the logs of the failed hooks' pods (the last " +
			fmt.Sprint(release.MaxHookLogLines) + " lines of each container, at most " + fmt.Sprint(release.MaxHookLogBytes) +
			" bytes, as the resource's failed tests show them). Helm records the run in the release (each test hook's last run), " +
			"as `helm test` does: no new revision, and no Terraform state is written. The release is named as " +
			"`stevedore_helmrelease` names it: give the resource's `namespace`, `name` and `target_namespace` (and " +
			"`release_name` and `storage_namespace` where the resource sets them). A release that does not exist or is not " +
			"`deployed` fails the action on the attribute that names it, and nothing is written.",
		Attributes: map[string]schema.Attribute{
			"namespace": schema.StringAttribute{
				Required: true, Validators: label,
				Description: "Namespace of the release resource (`stevedore_helmrelease.namespace`): the storage namespace unless `storage_namespace` is set.",
			},
			"name": schema.StringAttribute{
				Required:    true,
				Description: "Name of the release resource (`stevedore_helmrelease.name`): the release name unless `target_namespace` or `release_name` is set.",
				Validators:  []validator.String{stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(dnsSubdomain, "must be a DNS subdomain")},
			},
			"target_namespace": schema.StringAttribute{
				Optional: true, Validators: label,
				MarkdownDescription: "The resource's `target_namespace`: the release name is then `<target_namespace>-<name>` (shortened past " +
					"53 characters as Flux does), and the test hooks run there.",
			},
			"release_name": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Helm release name, where the resource sets `release_name`. Default: as `stevedore_helmrelease` derives it.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 53), stringvalidator.RegexMatches(dnsSubdomain, "must be a DNS subdomain")},
			},
			"storage_namespace": schema.StringAttribute{
				Optional: true, Validators: label,
				MarkdownDescription: "Namespace of Helm's release storage, where the resource sets `storage_namespace`. Default: `namespace`.",
			},
			"timeout": schema.StringAttribute{
				Optional:            true,
				Validators:          []validator.String{durationValidator{}},
				MarkdownDescription: "How long each test hook may take, as `helm test --timeout`. A Go duration; default `" + durationText(release.DefaultTimeout) + "`.",
			},
		},
		Blocks: map[string]schema.Block{
			"filters": schema.ListNestedBlock{
				MarkdownDescription: "Which test hooks run, as the resource's `test.filters`: without filters all; `exclude = true` drops the " +
					"named hook, otherwise only named hooks run.",
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"name":    schema.StringAttribute{Required: true, Description: "Name of the test hook."},
					"exclude": schema.BoolAttribute{Optional: true, Description: "Exclude the hook instead of selecting it."},
				}},
			},
		},
	}
}

// Invoke runs the tests and reports each hook's phase as progress.
func (a *helmReleaseTestAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m helmReleaseTestModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, known, diags := helmReleaseTestSpec(&m)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !known || a.data == nil || a.data.unknown || a.data.releases == nil {
		resp.Diagnostics.AddError("Cannot test the release", "the provider or the action's configuration is not known yet: this is a bug in the provider")
		return
	}
	run, err := a.data.releases.Test(ctx, spec, func(h release.TestHook) {
		resp.SendProgress(action.InvokeProgressEvent{Message: testHookMessage(h)})
	})
	if err != nil {
		addError(&resp.Diagnostics, testErrorSummary(err), err)
		return
	}
	resp.SendProgress(action.InvokeProgressEvent{Message: testRunMessage(run)})
}

// helmReleaseTestSpec is the release spec the action's configuration names:
// the names of the release, as a stevedore_helmrelease of the same
// attributes names it, and its test options.
func helmReleaseTestSpec(m *helmReleaseTestModel) (*release.Spec, bool, diag.Diagnostics) {
	b := newSpecBuilder()
	spec := &release.Spec{
		Namespace:        b.str("namespace", m.Namespace),
		Name:             b.str("name", m.Name),
		TargetNamespace:  b.str("target_namespace", m.TargetNamespace),
		ReleaseName:      b.str("release_name", m.ReleaseName),
		StorageNamespace: b.str("storage_namespace", m.StorageNamespace),
		Test:             release.Test{Enable: true, Timeout: b.duration("timeout", m.Timeout)},
	}
	for i, f := range m.Filters {
		fb := b.under(fielderr.Index("filters", i))
		spec.Test.Filters = append(spec.Test.Filters, release.TestFilter{Name: fb.str("name", f.Name), Exclude: fb.boolean("exclude", f.Exclude)})
	}
	known, diags := b.result()
	return spec, known, diags
}

// testHookMessage is the progress message of a test hook's phase.
func testHookMessage(h release.TestHook) string {
	return fmt.Sprintf("test hook %s: %s", h.Name, h.Phase)
}

// testRunMessage is the last progress message of a run that passed.
func testRunMessage(run *release.TestRun) string {
	what := fmt.Sprintf("release %s/%s v%d (%s)", run.StorageNamespace, run.ReleaseName, run.Version, run.Chart)
	if len(run.Hooks) == 0 {
		return what + ": no test hooks ran"
	}
	names := make([]string, len(run.Hooks))
	for i, h := range run.Hooks {
		names[i] = h.Name
	}
	return fmt.Sprintf("%s: %d test hook(s) succeeded (%s)", what, len(run.Hooks), strings.Join(names, ", "))
}

// testErrorSummary is the summary of the action's error: a release it cannot
// test is the configuration's (the error is on the attribute that names it),
// anything else is the tests'.
func testErrorSummary(err error) string {
	if p, _, _ := fielderr.Describe(err); p != "" {
		return "Cannot test the release"
	}
	return "Helm tests failed"
}
