package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ resource.ResourceWithMoveState = (*helmReleaseResource)(nil)

// MoveState takes over the state of hashicorp/helm's helm_release, for
// `moved { from = helm_release.x  to = stevedore_helmrelease.x }`: the
// configuration attributes are carried one to one (see
// templates/guides/migrating-from-helm-release.md for the table), the
// computed ones are left null for the refresh that follows a move, which
// reads the release from Helm storage as an import does.
func (r *helmReleaseResource) MoveState(context.Context) []resource.StateMover {
	return []resource.StateMover{{StateMover: moveFromHelmRelease}}
}

// isHelmProvider reports whether addr is hashicorp/helm in any form a CLI
// sends: `helm`, `hashicorp/helm`, or with the Terraform or OpenTofu registry
// host.
func isHelmProvider(addr string) bool {
	parts := strings.Split(strings.ToLower(addr), "/")
	switch len(parts) {
	case 1:
		return parts[0] == "helm"
	case 2:
		return parts[0] == "hashicorp" && parts[1] == "helm"
	case 3:
		return (parts[0] == "registry.terraform.io" || parts[0] == "registry.opentofu.org") && parts[1] == "hashicorp" && parts[2] == "helm"
	}
	return false
}

// helmReleaseSource is what a move reads of a helm_release state, schema
// version 1 (hashicorp/helm 2.x, SDKv2: `set` blocks, `metadata` a list) or 2
// (3.x, the plugin framework: list nested attributes, `metadata` an object).
// The attributes read have the same JSON in both; every other attribute, and
// any that a later version adds, is ignored.
type helmReleaseSource struct {
	Name         string           `json:"name"`
	Namespace    string           `json:"namespace"`
	Chart        string           `json:"chart"`
	Repository   string           `json:"repository"`
	Version      string           `json:"version"`
	Description  *string          `json:"description"`
	Values       []*string        `json:"values"`
	Set          []helmSetSource  `json:"set"`
	SetList      []helmListSource `json:"set_list"`
	SetSensitive []helmSetSource  `json:"set_sensitive"`
	Timeout      *json.Number     `json:"timeout"`
	MaxHistory   *json.Number     `json:"max_history"`

	Atomic                   bool  `json:"atomic"`
	Wait                     *bool `json:"wait"`
	CreateNamespace          bool  `json:"create_namespace"`
	DisableWebhooks          bool  `json:"disable_webhooks"`
	DisableOpenAPIValidation bool  `json:"disable_openapi_validation"`
	SkipCRDs                 bool  `json:"skip_crds"`
	ReuseValues              bool  `json:"reuse_values"`
	CleanupOnFail            bool  `json:"cleanup_on_fail"`
	ForceUpdate              bool  `json:"force_update"`
	Replace                  bool  `json:"replace"`
	PassCredentials          bool  `json:"pass_credentials"`

	RepositoryUsername *string `json:"repository_username"`
	RepositoryPassword *string `json:"repository_password"`
}

type helmSetSource struct {
	Name  string  `json:"name"`
	Value *string `json:"value"`
	Type  *string `json:"type"`
}

type helmListSource struct {
	Name  string    `json:"name"`
	Value []*string `json:"value"`
}

// helm_release's defaults, which a move leaves unset rather than write into
// the configuration attributes.
const helmReleaseDefaultTimeout = 300

func moveFromHelmRelease(ctx context.Context, req resource.MoveStateRequest, resp *resource.MoveStateResponse) {
	if req.SourceTypeName != "helm_release" || !isHelmProvider(req.SourceProviderAddress) {
		return // not ours to move: the framework reports that no mover matched
	}
	if req.SourceSchemaVersion != 1 && req.SourceSchemaVersion != 2 {
		resp.Diagnostics.AddError("Unsupported helm_release state",
			fmt.Sprintf("helm_release state schema version %d: stevedore_helmrelease moves versions 1 (hashicorp/helm 2.x) and 2 (3.x); "+
				"apply the configuration once with hashicorp/helm 2.x or 3.x, then move it", req.SourceSchemaVersion))
		return
	}
	if req.SourceRawState == nil || len(req.SourceRawState.JSON) == 0 {
		resp.Diagnostics.AddError("Unsupported helm_release state", "the helm_release state has no JSON to move")
		return
	}
	m, err := helmReleaseFromSource(req.SourceRawState.JSON)
	if err != nil {
		addError(&resp.Diagnostics, "Cannot move the helm_release state", err)
		return
	}
	resp.Diagnostics.Append(setModel(ctx, &resp.TargetState, m)...)
	// CLIs with resource identity require the moved resource's.
	resp.Diagnostics.Append(setReleaseIdentity(ctx, resp.TargetIdentity, m)...)
}

// helmReleaseFromSource converts a helm_release state (raw JSON) into a
// stevedore_helmrelease state with the configuration attributes set and the
// computed ones null.
func helmReleaseFromSource(raw []byte) (*helmReleaseModel, error) {
	var src helmReleaseSource
	if err := json.Unmarshal(raw, &src); err != nil {
		return nil, fmt.Errorf("read helm_release state: %w", err)
	}
	if src.Name == "" || src.Chart == "" {
		return nil, fmt.Errorf("helm_release state has no name or chart")
	}
	if src.Namespace == "" {
		src.Namespace = "default"
	}
	str := func(s string) types.String {
		if s == "" {
			return types.StringNull()
		}
		return types.StringValue(s)
	}
	yes := func(b bool) types.Bool {
		if !b {
			return types.BoolNull()
		}
		return types.BoolValue(true)
	}
	m := &helmReleaseModel{
		ID:   types.StringValue(src.Namespace + "/" + src.Name),
		Name: types.StringValue(src.Name), Namespace: types.StringValue(src.Namespace),
		// helm_release installs release `name` in `namespace`: stevedore's
		// defaults for a HelmRelease of that name and namespace.
		ReleaseName: types.StringValue(src.Name), StorageNamespace: types.StringValue(src.Namespace),
		TargetNamespace: types.StringNull(), ServiceAccountName: types.StringNull(), MaxHistory: types.Int64Null(),
		Timeout: types.StringNull(), PersistentClient: types.BoolNull(), ResetToken: types.StringNull(),
		ForceToken: types.StringNull(), Suspend: types.BoolNull(), Values: types.DynamicNull(), Description: types.StringNull(),
		Set: types.ListNull(setEntryType), SetList: types.ListNull(setListEntryType), SetSensitive: types.ListNull(setEntryType),

		Version: types.Int64Null(), ChartName: types.StringNull(), ChartVersion: types.StringNull(), AppVersion: types.StringNull(),
		ConfigDigest: types.StringNull(), PostRenderersDigest: types.StringNull(), ChartDigest: types.StringNull(),
		Drift: types.ListNull(driftEntryType), Changes: types.ListNull(driftEntryType),
		// Left for refresh, which reads the release and its bookkeeping
		// from Helm storage.
		Status: types.StringNull(), FirstDeployed: types.StringNull(), LastDeployed: types.StringNull(),
	}

	// The chart: a repository chart, an OCI reference in `chart`, or a
	// local chart directory.
	c := nullReleaseChart()
	switch {
	case src.Repository != "":
		c.Repository, c.Chart = types.StringValue(strings.TrimSuffix(src.Repository, "/")), types.StringValue(src.Chart)
	case strings.HasPrefix(src.Chart, "oci://"):
		i := strings.LastIndex(src.Chart, "/")
		c.Repository, c.Chart = types.StringValue(src.Chart[:i]), types.StringValue(src.Chart[i+1:])
	default:
		c.SourcePath = types.StringValue(src.Chart)
	}
	c.Version = str(src.Version)
	if c.SourcePath.IsNull() {
		if src.RepositoryUsername != nil {
			c.Username = str(*src.RepositoryUsername)
		}
		if src.RepositoryPassword != nil {
			c.Password = str(*src.RepositoryPassword)
		}
		c.PassCredentials = yes(src.PassCredentials)
	} else {
		// A local chart has no version to resolve: the directory's is used.
		c.Version = types.StringNull()
	}
	m.Chart = c
	if src.Description != nil {
		// The description the release was installed or upgraded with, so
		// that the same configuration plans no upgrade.
		m.Description = str(*src.Description)
	}

	if len(src.Values) > 0 {
		docs := make([]attr.Value, 0, len(src.Values))
		typs := make([]attr.Type, 0, len(src.Values))
		for _, v := range src.Values {
			if v == nil {
				docs = append(docs, types.StringNull())
			} else {
				docs = append(docs, types.StringValue(*v))
			}
			typs = append(typs, types.StringType)
		}
		m.Values = types.DynamicValue(types.TupleValueMust(typs, docs))
	}
	var err error
	if m.Set, err = setList(src.Set); err != nil {
		return nil, err
	}
	if m.SetSensitive, err = setList(src.SetSensitive); err != nil {
		return nil, err
	}
	if len(src.SetList) > 0 {
		vals := make([]attr.Value, 0, len(src.SetList))
		for _, e := range src.SetList {
			elems := make([]attr.Value, 0, len(e.Value))
			for _, s := range e.Value {
				if s == nil {
					elems = append(elems, types.StringNull())
				} else {
					elems = append(elems, types.StringValue(*s))
				}
			}
			vals = append(vals, types.ObjectValueMust(setListEntryType.AttrTypes, map[string]attr.Value{
				"name": types.StringValue(e.Name), "value": types.ListValueMust(types.StringType, elems),
			}))
		}
		m.SetList = types.ListValueMust(setListEntryType, vals)
	}

	if src.Timeout != nil {
		n, err := src.Timeout.Int64()
		if err != nil {
			return nil, fmt.Errorf("helm_release timeout %s: %w", src.Timeout, err)
		}
		if n != helmReleaseDefaultTimeout {
			m.Timeout = types.StringValue(fmt.Sprintf("%ds", n))
		}
	}
	if src.MaxHistory != nil {
		n, err := src.MaxHistory.Int64()
		if err != nil {
			return nil, fmt.Errorf("helm_release max_history %s: %w", src.MaxHistory, err)
		}
		if n != 0 {
			m.MaxHistory = types.Int64Value(n)
		}
	}

	noWait := src.Wait != nil && !*src.Wait
	in := &installModel{
		CreateNamespace: yes(src.CreateNamespace), DisableHooks: yes(src.DisableWebhooks), Replace: yes(src.Replace),
		DisableOpenAPIValidation: yes(src.DisableOpenAPIValidation), DisableWait: yes(noWait),
	}
	if src.SkipCRDs {
		in.CRDs = types.StringValue("Skip")
	}
	up := &upgradeModel{
		DisableHooks: yes(src.DisableWebhooks), DisableOpenAPIValidation: yes(src.DisableOpenAPIValidation), DisableWait: yes(noWait),
		CleanupOnFail: yes(src.CleanupOnFail), Force: yes(src.ForceUpdate), PreserveValues: yes(src.ReuseValues),
	}
	if src.Atomic {
		// atomic: a failed install is uninstalled, a failed upgrade rolled back.
		in.Remediation = &installRemediationModel{RemediateLastFailure: types.BoolValue(true)}
		up.Remediation = &upgradeRemediationModel{RemediateLastFailure: types.BoolValue(true)}
	}
	if src.CreateNamespace || src.DisableWebhooks || src.Replace || src.DisableOpenAPIValidation || noWait || src.SkipCRDs || src.Atomic {
		m.Install = in
	}
	if src.DisableWebhooks || src.DisableOpenAPIValidation || noWait || src.CleanupOnFail || src.ForceUpdate || src.ReuseValues || src.Atomic {
		m.Upgrade = up
	}
	if src.DisableWebhooks {
		m.Uninstall = &uninstallModel{DisableHooks: types.BoolValue(true)}
	}
	return m, nil
}

// setList converts helm_release's set or set_sensitive entries. An empty
// type (hashicorp/helm 3.x's default) is no type: `auto`.
func setList(entries []helmSetSource) (types.List, error) {
	if len(entries) == 0 {
		return types.ListNull(setEntryType), nil
	}
	vals := make([]attr.Value, 0, len(entries))
	for _, e := range entries {
		value, typ := types.StringNull(), types.StringNull()
		if e.Value != nil {
			value = types.StringValue(*e.Value)
		}
		if e.Type != nil && *e.Type != "" {
			typ = types.StringValue(*e.Type)
		}
		vals = append(vals, types.ObjectValueMust(setEntryType.AttrTypes, map[string]attr.Value{
			"name": types.StringValue(e.Name), "value": value, "type": typ,
		}))
	}
	return types.ListValueMust(setEntryType, vals), nil
}
