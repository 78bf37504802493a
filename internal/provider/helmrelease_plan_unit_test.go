package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// TestPlannedRelease covers every branch of the translation of the engine's
// plan into the planned model and the plan's warnings.
func TestPlannedRelease(t *testing.T) {
	planned := func() helmReleaseModel {
		return helmReleaseModel{
			ID: types.StringValue("ns/app"), ConfigDigest: types.StringNull(), PostRenderersDigest: types.StringNull(),
			FirstDeployed: types.StringNull(), Changes: types.ListNull(driftEntryType),
		}
	}
	state := func() *helmReleaseModel {
		return &helmReleaseModel{
			ID: types.StringValue("ns/app"), ReleaseName: types.StringValue("app"), StorageNamespace: types.StringValue("ns"),
			Status: types.StringValue(release.StatusDeployed), Version: types.Int64Value(3),
			ChartName: types.StringValue("podinfo"), ChartVersion: types.StringValue("1.0.0"), AppVersion: types.StringValue("6.0"),
			ConfigDigest: types.StringValue("sha256:old"), PostRenderersDigest: types.StringValue("sha256:pr-old"),
			FirstDeployed: types.StringValue("2026-01-01T00:00:00Z"), LastDeployed: types.StringValue("2026-02-01T00:00:00Z"),
			Drift:   types.ListValueMust(driftEntryType, driftValue([]kube.Drift{{ID: "apps/v1/Deployment/ns/app", Type: "update"}}).Elements()),
			Changes: types.ListNull(driftEntryType),
		}
	}
	meta := &chart.Metadata{Name: "podinfo", Version: "1.1.0", AppVersion: "6.1"}
	changes := []kube.Drift{{ID: "v1/ConfigMap/ns/app", Type: "create"}}
	conflict := &release.ExistsError{ReleaseName: "app", StorageNamespace: "ns", Status: "deployed", Version: 1,
		Chart: "podinfo@1.0.0", ImportID: "ns/app"}

	type want struct {
		warnings     []string // summaries, in order
		warningAt    path.Path
		status       types.String
		version      types.Int64
		configDigest types.String
		prDigest     types.String
		chartVersion types.String
		first        types.String
		drift        types.List
		changes      types.List
	}
	for _, tc := range []struct {
		name  string
		p     release.Plan
		state *helmReleaseModel
		spec  release.Spec
		meta  *chart.Metadata
		want  want
	}{{
		name: "values missing: digest and status unknown",
		p:    release.Plan{ValuesMissing: "ConfigMap ns/values", PostRenderersDigest: "sha256:pr"},
		meta: meta,
		spec: release.Spec{DriftDetection: release.DriftDetection{Mode: release.DriftDisabled}},
		want: want{warnings: []string{"Values not found: apply may fail"}, warningAt: path.Root("values_from"),
			status: types.StringValue(release.StatusDeployed), version: types.Int64Unknown(),
			configDigest: types.StringUnknown(), prDigest: types.StringUnknown(), chartVersion: types.StringValue("1.1.0"),
			first: types.StringUnknown(), drift: types.ListUnknown(driftEntryType), changes: types.ListUnknown(driftEntryType)},
	}, {
		name: "create with a preview and a conflict",
		p: release.Plan{Action: release.ActionInstall, ConfigDigest: "sha256:new", PostRenderersDigest: "sha256:pr",
			Conflict: conflict, Preview: &release.Preview{Changes: changes, Warnings: []string{"namespace other does not exist yet"}}},
		spec: release.Spec{DriftDetection: release.DriftDetection{Mode: release.DriftEnabled}},
		want: want{warnings: []string{"Release already exists", "Apply may fail"},
			status: types.StringValue(release.StatusDeployed), version: types.Int64Unknown(),
			configDigest: types.StringValue("sha256:new"), prDigest: types.StringValue("sha256:pr"), chartVersion: types.StringUnknown(),
			first: types.StringUnknown(), drift: emptyDrift(), changes: driftValue(changes)},
	}, {
		name: "preview that cannot tell the changes",
		p: release.Plan{Action: release.ActionInstall, ConfigDigest: "sha256:new", PostRenderersDigest: "sha256:pr",
			Preview: &release.Preview{Unknown: "kind Widget is not served yet"}},
		meta: meta, // drift_detection.mode unset: enabled, apply corrects drift
		want: want{status: types.StringValue(release.StatusDeployed), version: types.Int64Unknown(),
			configDigest: types.StringValue("sha256:new"), prDigest: types.StringValue("sha256:pr"), chartVersion: types.StringValue("1.1.0"),
			first: types.StringUnknown(), drift: emptyDrift(), changes: types.ListUnknown(driftEntryType)},
	}, {
		name:  "changed outside, upgrade keeps the first deployment",
		p:     release.Plan{Action: release.ActionUpgrade, Reason: "release out of desired", ConfigDigest: "sha256:new", PostRenderersDigest: "sha256:pr", ChangedOutside: "helm upgrade set replicaCount", KeepsFirstDeployed: true},
		state: state(),
		meta:  meta,
		spec:  release.Spec{DriftDetection: release.DriftDetection{Mode: release.DriftWarn}},
		want: want{warnings: []string{"Release changed outside stevedore"},
			status: types.StringValue(release.StatusDeployed), version: types.Int64Unknown(),
			configDigest: types.StringValue("sha256:new"), prDigest: types.StringValue("sha256:pr"), chartVersion: types.StringValue("1.1.0"),
			first: types.StringValue("2026-01-01T00:00:00Z"), drift: types.ListUnknown(driftEntryType), changes: types.ListUnknown(driftEntryType)},
	}, {
		name:  "stalled: the state's attributes, status unknown",
		p:     release.Plan{Stalled: "upgrade retries exhausted", ConfigDigest: "sha256:new", PostRenderersDigest: "sha256:pr"},
		state: state(),
		want: want{warnings: []string{"Release stalled: apply will fail"},
			status: types.StringUnknown(), version: types.Int64Value(3),
			configDigest: types.StringValue("sha256:old"), prDigest: types.StringValue("sha256:pr-old"), chartVersion: types.StringValue("1.0.0"),
			first: types.StringValue("2026-01-01T00:00:00Z"), drift: state().Drift, changes: types.ListNull(driftEntryType)},
	}, {
		name:  "nothing to do, same configuration: the state",
		p:     release.Plan{Action: release.ActionNone, ConfigDigest: "sha256:old", PostRenderersDigest: "sha256:pr-old"},
		state: state(),
		want: want{status: types.StringValue(release.StatusDeployed), version: types.Int64Value(3),
			configDigest: types.StringValue("sha256:old"), prDigest: types.StringValue("sha256:pr-old"), chartVersion: types.StringValue("1.0.0"),
			first: types.StringValue("2026-01-01T00:00:00Z"), drift: state().Drift, changes: types.ListNull(driftEntryType)},
	}, {
		name:  "nothing to do, new configuration: the new digest",
		p:     release.Plan{Action: release.ActionNone, ConfigDigest: "sha256:new", PostRenderersDigest: "sha256:pr-old"},
		state: state(),
		want: want{status: types.StringValue(release.StatusDeployed), version: types.Int64Value(3),
			configDigest: types.StringValue("sha256:new"), prDigest: types.StringValue("sha256:pr-old"), chartVersion: types.StringValue("1.0.0"),
			first: types.StringValue("2026-01-01T00:00:00Z"), drift: state().Drift, changes: types.ListNull(driftEntryType)},
	}, {
		name:  "nothing to do, reset_failures: the new digest",
		p:     release.Plan{Action: release.ActionNone, ConfigDigest: "sha256:old", PostRenderersDigest: "sha256:pr-old"},
		state: func() *helmReleaseModel { s := state(); s.ConfigDigest = types.StringValue("sha256:older"); return s }(),
		spec:  release.Spec{ResetFailures: true},
		want: want{status: types.StringValue(release.StatusDeployed), version: types.Int64Value(3),
			configDigest: types.StringValue("sha256:old"), prDigest: types.StringValue("sha256:pr-old"), chartVersion: types.StringValue("1.0.0"),
			first: types.StringValue("2026-01-01T00:00:00Z"), drift: state().Drift, changes: types.ListNull(driftEntryType)},
	}, {
		name:  "remediation is said",
		p:     release.Plan{Action: release.ActionRollback, Reason: "upgrade failed; rolling back (remediation)", ConfigDigest: "sha256:old", PostRenderersDigest: "sha256:pr-old"},
		state: state(),
		want: want{warnings: []string{"Release needs remediation"},
			status: types.StringValue(release.StatusDeployed), version: types.Int64Unknown(),
			configDigest: types.StringValue("sha256:old"), prDigest: types.StringValue("sha256:pr-old"), chartVersion: types.StringUnknown(),
			first: types.StringUnknown(), drift: emptyDrift(), changes: types.ListUnknown(driftEntryType)},
	}, {
		name:  "drift correction: the state's release, drift empty",
		p:     release.Plan{Action: release.ActionCorrect, Reason: "1 object drifted", ConfigDigest: "sha256:old", PostRenderersDigest: "sha256:pr-old", Preview: &release.Preview{Changes: changes}},
		state: state(),
		spec:  release.Spec{DriftDetection: release.DriftDetection{Mode: release.DriftEnabled}},
		want: want{status: types.StringValue(release.StatusDeployed), version: types.Int64Value(3),
			configDigest: types.StringValue("sha256:old"), prDigest: types.StringValue("sha256:pr-old"), chartVersion: types.StringValue("1.0.0"),
			first: types.StringValue("2026-01-01T00:00:00Z"), drift: emptyDrift(), changes: types.ListNull(driftEntryType)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			got, diags := plannedRelease(&p, planned(), tc.state, tc.meta, &tc.spec)
			if diags.HasError() {
				t.Fatalf("errors: %v", diags)
			}
			var summaries []string
			for _, d := range diags.Warnings() {
				summaries = append(summaries, d.Summary())
				if !strings.HasPrefix(d.Detail(), release.Kind+" ns/app: ") && d.Summary() != "Values not found: apply may fail" {
					t.Errorf("warning %q does not name the resource: %s", d.Summary(), d.Detail())
				}
				if wp, ok := d.(diag.DiagnosticWithPath); ok != (tc.want.warningAt.String() != "") || ok && !wp.Path().Equal(tc.want.warningAt) {
					t.Errorf("warning %q on path %v, want %v", d.Summary(), d, tc.want.warningAt)
				}
			}
			if strings.Join(summaries, "|") != strings.Join(tc.want.warnings, "|") {
				t.Errorf("warnings %q, want %q", summaries, tc.want.warnings)
			}
			check := func(name string, got, want interface{ String() string }, eq bool) {
				if !eq {
					t.Errorf("%s = %s, want %s", name, got, want)
				}
			}
			check("status", got.Status, tc.want.status, got.Status.Equal(tc.want.status))
			check("version", got.Version, tc.want.version, got.Version.Equal(tc.want.version))
			check("config_digest", got.ConfigDigest, tc.want.configDigest, got.ConfigDigest.Equal(tc.want.configDigest))
			check("post_renderers_digest", got.PostRenderersDigest, tc.want.prDigest, got.PostRenderersDigest.Equal(tc.want.prDigest))
			check("chart_version", got.ChartVersion, tc.want.chartVersion, got.ChartVersion.Equal(tc.want.chartVersion))
			check("first_deployed", got.FirstDeployed, tc.want.first, got.FirstDeployed.Equal(tc.want.first))
			check("drift", got.Drift, tc.want.drift, got.Drift.Equal(tc.want.drift))
			check("changes", got.Changes, tc.want.changes, got.Changes.Equal(tc.want.changes))
		})
	}
}

// The planned status.apply_method and the warnings of a write that moves a
// release to server-side apply or takes fields from other managers.
func TestPlannedRelease_applyMethod(t *testing.T) {
	state := func(method string) *helmReleaseModel {
		return &helmReleaseModel{ID: types.StringValue("ns/app"), Status: types.StringValue(release.StatusDeployed),
			ApplyMethod: types.StringValue(method), ConfigDigest: types.StringValue("sha256:old"), Drift: emptyDrift()}
	}
	upgrade := func(method string, pv *release.Preview) release.Plan {
		return release.Plan{Action: release.ActionUpgrade, ConfigDigest: "sha256:new", ApplyMethod: method, Preview: pv}
	}
	conflicts := []kube.FieldConflict{{ID: "apps/v1/Deployment/ns/app", Field: ".spec.replicas", Manager: "kubectl-scale"}}
	for _, tc := range []struct {
		name     string
		p        release.Plan
		state    *helmReleaseModel
		want     types.String
		warnings []string // summary: a detail fragment
	}{
		{"create: the install's method", release.Plan{Action: release.ActionInstall, ApplyMethod: "ssa", Preview: &release.Preview{}},
			nil, types.StringValue("ssa"), nil},
		{"upgrade that keeps csa", upgrade("csa", &release.Preview{}), state("csa"), types.StringValue("csa"), nil},
		{"csa -> ssa names the migrated objects", upgrade("ssa", &release.Preview{Migrated: []string{"apps/v1/Deployment/ns/app"}}),
			state("csa"), types.StringValue("ssa"),
			[]string{"Release moves to server-side apply: client-side managed fields of apps/v1/Deployment/ns/app"}},
		{"forced conflicts name field and manager", upgrade("ssa", &release.Preview{Conflicts: conflicts}), state("ssa"), types.StringValue("ssa"),
			[]string{`Apply takes fields from other field managers: apps/v1/Deployment/ns/app .spec.replicas (manager "kubectl-scale")`}},
		{"remediation may end on another method: unknown", upgrade("", &release.Preview{}), state("csa"), types.StringUnknown(), nil},
		{"preview unknown: no warning", upgrade("ssa", &release.Preview{Unknown: "kinds", Migrated: []string{"x"}}), state("csa"),
			types.StringValue("ssa"), nil},
		{"nothing to do keeps the state's", release.Plan{Action: release.ActionNone, ConfigDigest: "sha256:old"}, state("ssa"),
			types.StringValue("ssa"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			plan := helmReleaseModel{ID: types.StringValue("ns/app"), ConfigDigest: types.StringNull(), Changes: types.ListNull(driftEntryType)}
			got, diags := plannedRelease(&p, plan, tc.state, nil, &release.Spec{})
			if !got.ApplyMethod.Equal(tc.want) {
				t.Errorf("apply_method = %s, want %s", got.ApplyMethod, tc.want)
			}
			ws := diags.Warnings()
			if len(ws) != len(tc.warnings) {
				t.Fatalf("warnings %v, want %d", ws, len(tc.warnings))
			}
			for i, w := range tc.warnings {
				summary, fragment, _ := strings.Cut(w, ": ")
				if ws[i].Summary() != summary || !strings.Contains(ws[i].Detail(), fragment) {
					t.Errorf("warning %d: %q %q, want %q with %q", i, ws[i].Summary(), ws[i].Detail(), summary, fragment)
				}
			}
		})
	}
}
