package provider

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// adviceErr is an error that says its attribute, summary and advice, as an
// engine's typed error does.
type adviceErr struct{ path, summary, advice string }

func (e adviceErr) Error() string         { return "broken" }
func (e adviceErr) AttributePath() string { return e.path }
func (e adviceErr) Summary() string       { return e.summary }
func (e adviceErr) Advice() string        { return e.advice }

// diagOf is a diagnostic as "<severity> <path or -> | <summary> | <detail>".
func diagOf(d diag.Diagnostic) string {
	p := "-"
	if wp, ok := d.(diag.DiagnosticWithPath); ok {
		p = wp.Path().String()
	}
	return d.Severity().String() + " " + p + " | " + d.Summary() + " | " + d.Detail()
}

// TestAddError_theErrorSaysItsDiagnostic pins the one adapter: every error
// value lands on the attribute it names, with its own summary if it has one,
// and its advice after its text, for errors and warnings alike.
func TestAddError_theErrorSaysItsDiagnostic(t *testing.T) {
	exists := &release.ExistsError{ReleaseName: "web", StorageNamespace: "ns", Status: "deployed", Version: 1, Chart: "web@1.0.0", ImportID: "ns/web"}
	notReady := &kube.DependencyNotReadyError{Unmet: []kube.UnmetDependency{{
		Dependency: kube.Dependency{APIVersion: "v1", Kind: "Secret", Name: "gate", Namespace: "ns"}, Reason: "not found"}}}
	obj := func(err error) error { return fielderr.Object(release.Kind, "ns/web", err) }
	for _, tc := range []struct {
		name    string
		warning bool
		err     error
		want    []string
	}{
		{name: "plain error: on the resource, the caller's summary", err: errors.New("boom"),
			want: []string{"Error - | S | boom"}},
		{name: "field error: on its attribute", err: obj(fielderr.Errorf("values_from[0].kind", "bad")),
			want: []string{"Error values_from[0].kind | S | helmrelease ns/web: values_from[0].kind: bad"}},
		{name: "attribute, summary and advice from the error", err: obj(adviceErr{"upgrade.remediation.strategy", "Own summary", "Do this."}),
			want: []string{"Error upgrade.remediation.strategy | Own summary | helmrelease ns/web: broken. Do this."}},
		{name: "no attribute: on the resource, with its advice", err: adviceErr{"", "", "Do that."},
			want: []string{"Error - | S | broken. Do that."}},
		{name: "release exists: on release_name, with the import advice", err: obj(exists),
			want: []string{"Error release_name | Release already exists | helmrelease ns/web: " + exists.Error() + ". " + exists.Advice()}},
		{name: "dependencies not ready: on the resource, nothing was done", err: obj(&release.DependenciesNotReadyError{Err: notReady}),
			want: []string{"Error - | Dependencies not ready | helmrelease ns/web: dependencies not met: Secret ns/gate: not found. " +
				"The release was not installed or upgraded, and no failure was counted: apply again once they are met."}},
		{name: "joined: one diagnostic each, each as it says", err: obj(errors.Join(fielderr.Errorf("name", "bad"), errors.New("other"), exists)),
			want: []string{
				"Error name | S | helmrelease ns/web: name: bad",
				"Error - | S | helmrelease ns/web: other",
				"Error release_name | Release already exists | helmrelease ns/web: " + exists.Error() + ". " + exists.Advice()}},
		{name: "warning on an attribute", warning: true, err: fielderr.Object(resourceset.Kind, "ns/set", resourceset.Warning{Path: "resources[2]", Summary: "ignored", Message: "careful"}),
			want: []string{"Warning resources[2] | S | resourceset ns/set: careful"}},
		{name: "warning on the resource", warning: true, err: resourceset.Warning{Message: "careful"},
			want: []string{"Warning - | S | careful"}},
		{name: "create conflict warning: on the resource, what apply does", warning: true, err: obj(&release.ConflictWarning{Exists: exists}),
			want: []string{"Warning - | Release already exists | helmrelease ns/web: " + exists.Error() + ". Apply refuses to create this resource over it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var diags diag.Diagnostics
			if tc.warning {
				addWarning(&diags, "S", tc.err)
			} else {
				addError(&diags, "S", tc.err)
			}
			if len(diags) != len(tc.want) {
				t.Fatalf("got %d diagnostics, want %d: %v", len(diags), len(tc.want), diags)
			}
			for i, d := range diags {
				if got := diagOf(d); !strings.HasPrefix(got, tc.want[i]) {
					t.Errorf("diagnostic %d:\n  %s\nwant (prefix):\n  %s", i, got, tc.want[i])
				}
			}
		})
	}
	var diags diag.Diagnostics
	addError(&diags, "S", nil)
	addWarning(&diags, "S", nil)
	if len(diags) != 0 {
		t.Errorf("nil error: %v", diags)
	}
}
