package provider

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// The action's configuration names the release as stevedore_helmrelease
// names it: the same Spec fields, so release.ReleaseName and
// release.StorageNamespace give the same release.
func TestHelmReleaseTestSpec(t *testing.T) {
	str := types.StringValue
	null := types.StringNull()
	for _, tc := range []struct {
		name          string
		m             helmReleaseTestModel
		release, stor string
		timeout       time.Duration
		filters       []release.TestFilter
		unknown       bool
	}{{
		name:    "namespace and name",
		m:       helmReleaseTestModel{Namespace: str("apps"), Name: str("podinfo"), TargetNamespace: null, ReleaseName: null, StorageNamespace: null, Timeout: null},
		release: "podinfo", stor: "apps",
	}, {
		name:    "a target namespace, as Flux names the release",
		m:       helmReleaseTestModel{Namespace: str("flux-system"), Name: str("podinfo"), TargetNamespace: str("apps"), ReleaseName: null, StorageNamespace: null, Timeout: null},
		release: "apps-podinfo", stor: "flux-system",
	}, {
		name: "a long composed name, shortened as Flux does",
		m: helmReleaseTestModel{Namespace: str("flux-system"), Name: str(strings.Repeat("n", 40)), TargetNamespace: str("apps"),
			ReleaseName: null, StorageNamespace: null, Timeout: null},
		release: release.ReleaseName(&release.Spec{Name: strings.Repeat("n", 40), TargetNamespace: "apps"}), stor: "flux-system",
	}, {
		name: "explicit release name and storage namespace, filters and a timeout",
		m: helmReleaseTestModel{Namespace: str("apps"), Name: str("web"), TargetNamespace: null, ReleaseName: str("podinfo"),
			StorageNamespace: str("helm"), Timeout: str("90s"),
			Filters: []testFilterModel{{Name: str("a"), Exclude: types.BoolNull()}, {Name: str("b"), Exclude: types.BoolValue(true)}}},
		release: "podinfo", stor: "helm", timeout: 90 * time.Second,
		filters: []release.TestFilter{{Name: "a"}, {Name: "b", Exclude: true}},
	}, {
		name:    "unknown at plan",
		m:       helmReleaseTestModel{Namespace: str("apps"), Name: types.StringUnknown(), TargetNamespace: null, ReleaseName: null, StorageNamespace: null, Timeout: null},
		release: "", stor: "apps", unknown: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			spec, known, diags := helmReleaseTestSpec(&tc.m)
			if diags.HasError() {
				t.Fatal(diags)
			}
			if known == tc.unknown {
				t.Errorf("known = %v", known)
			}
			if got := release.ReleaseName(spec); got != tc.release {
				t.Errorf("release name %q, want %q", got, tc.release)
			}
			if got := release.StorageNamespace(spec); got != tc.stor {
				t.Errorf("storage namespace %q, want %q", got, tc.stor)
			}
			if !spec.Test.Enable || spec.Test.Timeout != tc.timeout || len(spec.Test.Filters) != len(tc.filters) {
				t.Errorf("test %+v, want enabled, timeout %s, filters %v", spec.Test, tc.timeout, tc.filters)
			}
			for i := range tc.filters {
				if spec.Test.Filters[i] != tc.filters[i] {
					t.Errorf("filter %d: %+v, want %+v", i, spec.Test.Filters[i], tc.filters[i])
				}
			}
		})
	}
}

func TestTestActionMessages(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{testHookMessage(release.TestHook{Name: "podinfo-test", Phase: "Running"}), "test hook podinfo-test: Running"},
		{testHookMessage(release.TestHook{Name: "podinfo-test", Phase: "Failed"}), "test hook podinfo-test: Failed"},
		{testRunMessage(&release.TestRun{ReleaseName: "podinfo", StorageNamespace: "apps", Version: 2, Chart: "podinfo@1.0.0",
			Hooks: []release.TestHook{{Name: "a"}, {Name: "b"}}}), "release apps/podinfo v2 (podinfo@1.0.0): 2 test hook(s) succeeded (a, b)"},
		{testRunMessage(&release.TestRun{ReleaseName: "podinfo", StorageNamespace: "apps", Version: 1, Chart: "podinfo@1.0.0"}),
			"release apps/podinfo v1 (podinfo@1.0.0): no test hooks ran"},
		{testErrorSummary(fielderr.Object(release.Kind, "apps/podinfo", &fielderr.Error{Path: "name", Err: errors.New("no Helm release")})), "Cannot test the release"},
		{testErrorSummary(fielderr.Object(release.Kind, "apps/podinfo", errors.New("test failed: pod podinfo-test failed"))), "Helm tests failed"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// The provider serves the action's schema, and it is valid.
func TestHelmReleaseTestAction_schema(t *testing.T) {
	server := NewServer("test")()
	resp, err := server.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			t.Fatalf("schema: %s: %s", d.Summary, d.Detail)
		}
	}
	s, ok := resp.ActionSchemas["stevedore_helmrelease_test"]
	if !ok || s.Schema == nil || s.Schema.Block == nil {
		t.Fatalf("no schema for stevedore_helmrelease_test: %v", resp.ActionSchemas)
	}
	var attrs []string
	for _, a := range s.Schema.Block.Attributes {
		attrs = append(attrs, a.Name)
	}
	for _, want := range []string{"namespace", "name", "target_namespace", "release_name", "storage_namespace", "timeout"} {
		if !strings.Contains(" "+strings.Join(attrs, " ")+" ", " "+want+" ") {
			t.Errorf("attribute %s missing from %v", want, attrs)
		}
	}
}
