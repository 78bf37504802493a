package kube

import (
	"errors"
	"strings"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// sealedSecret is Flux's cheat sheet example of a health check.
var sealedSecret = HealthCheck{
	APIVersion: "bitnami.com/v1alpha1", Kind: "SealedSecret",
	Failed:  "status.conditions.filter(e, e.type == 'Synced').all(e, e.status == 'False')",
	Current: "status.conditions.filter(e, e.type == 'Synced').all(e, e.status == 'True')",
}

func TestCompileHealthChecks_errorsNameTheEntryAndField(t *testing.T) {
	for _, tc := range []struct {
		name   string
		checks []HealthCheck
		want   []string // "index.field: text"
	}{
		{name: "none", checks: nil},
		{name: "the cheat sheet's", checks: []HealthCheck{sealedSecret, {APIVersion: "example.com/v1", Current: "has(status.ready) && status.ready"}}},
		{name: "current does not parse", checks: []HealthCheck{sealedSecret, {APIVersion: "example.com/v1", Kind: "Widget", Current: "status.ready ==", InProgress: "true"}},
			want: []string{"1.current: does not parse"}},
		{name: "in_progress and failed do not parse", checks: []HealthCheck{{APIVersion: "example.com/v1", Current: "true", InProgress: "(", Failed: "a b"}},
			want: []string{"0.in_progress: does not parse", "0.failed: does not parse"}},
		{name: "current missing", checks: []HealthCheck{{APIVersion: "example.com/v1", Kind: "Widget"}},
			want: []string{"0.current: must be set"}},
		{name: "api_version missing", checks: []HealthCheck{{Current: "true"}},
			want: []string{"0.api_version: must not be empty"}},
		{name: "api_version malformed", checks: []HealthCheck{{APIVersion: "a/b/c", Current: "true"}},
			want: []string{"0.api_version: \"a/b/c\""}},
		{name: "one kind twice (the version does not count)", checks: []HealthCheck{sealedSecret, {APIVersion: "bitnami.com/v1", Kind: "SealedSecret", Current: "true"}},
			want: []string{"1.kind: a health check for SealedSecret of bitnami.com is given twice"}},
		{name: "one group twice", checks: []HealthCheck{{APIVersion: "example.com/v1", Current: "true"}, {APIVersion: "example.com/v2", Current: "true"}},
			want: []string{"1.api_version: a health check for every kind of example.com is given twice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := CompileHealthChecks(tc.checks)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("CompileHealthChecks: %v", err)
				}
				if (h == nil) != (len(tc.checks) == 0) {
					t.Errorf("HealthChecks %v for %d checks", h, len(tc.checks))
				}
				return
			}
			if h != nil || err == nil {
				t.Fatalf("CompileHealthChecks = %v, %v; want errors", h, err)
			}
			var got []error
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				got = j.Unwrap()
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d errors (%v), want %d", len(got), err, len(tc.want))
			}
			for i, e := range got {
				var he *HealthCheckError
				if !errors.As(e, &he) {
					t.Fatalf("error %v is no *HealthCheckError", e)
				}
				prefix, text, _ := strings.Cut(tc.want[i], ": ")
				if at := strings.Join([]string{string(rune('0' + he.Index)), he.Field}, "."); at != prefix || !strings.Contains(he.Error(), text) {
					t.Errorf("error %d at %s: %q; want at %s with %q", i, at, he.Error(), prefix, text)
				}
			}
		})
	}
}

func healthObj(apiVersion, kind string, generation int64, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": "x", "namespace": "ns", "generation": generation},
	}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func synced(s string) map[string]any {
	return map[string]any{"observedGeneration": int64(1), "conditions": []any{map[string]any{"type": "Synced", "status": s}}}
}

// Flux's rules (RFC 0009): observedGeneration first, then in_progress,
// failed and current in this order, the first true wins, none is
// InProgress; a kind's check wins over its group's; other objects are
// kstatus's.
func TestHealthChecks_status(t *testing.T) {
	h, err := CompileHealthChecks([]HealthCheck{
		sealedSecret,
		{APIVersion: "example.com/v1", Current: "status.phase == 'Ready'", InProgress: "status.phase == 'Ready' && status.busy", Failed: "status.phase == 'Ready' || status.phase == 'Broken'"},
		{APIVersion: "example.com/v1", Kind: "Special", Current: "status.ok"},
		{APIVersion: "example.com/v1", Kind: "Strange", Current: "status.phase"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		obj     *unstructured.Unstructured
		want    status.Status
		wantErr string
	}{
		{"synced", healthObj("bitnami.com/v1alpha1", "SealedSecret", 1, synced("True")), status.CurrentStatus, ""},
		{"not synced", healthObj("bitnami.com/v1alpha1", "SealedSecret", 1, synced("False")), status.FailedStatus, ""},
		{"another version of the group", healthObj("bitnami.com/v1", "SealedSecret", 1, synced("True")), status.CurrentStatus, ""},
		{"observed an older generation", healthObj("bitnami.com/v1alpha1", "SealedSecret", 2, synced("True")), status.InProgressStatus, ""},
		{"in_progress before failed before current", healthObj("example.com/v1", "Widget", 1, map[string]any{"phase": "Ready", "busy": true}), status.InProgressStatus, ""},
		{"failed before current", healthObj("example.com/v1", "Widget", 1, map[string]any{"phase": "Ready", "busy": false}), status.FailedStatus, ""},
		{"failed", healthObj("example.com/v2", "Gadget", 1, map[string]any{"phase": "Broken", "busy": false}), status.FailedStatus, ""},
		{"none true", healthObj("example.com/v1", "Widget", 1, map[string]any{"phase": "Starting", "busy": false}), status.InProgressStatus, ""},
		{"a kind's check wins over its group's", healthObj("example.com/v1", "Special", 1, map[string]any{"ok": true, "phase": "Broken"}), status.CurrentStatus, ""},
		{"a missing field is an error", healthObj("example.com/v1", "Widget", 1, nil), "", "no such attribute"},
		{"a result that is no bool is an error", healthObj("example.com/v1", "Strange", 1, map[string]any{"phase": "Ready"}), "", "not a bool"},
		{"objects of other groups are kstatus's", healthObj("v1", "ConfigMap", 1, nil), status.CurrentStatus, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := h.Status(tc.obj, false)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Status = %v, %v; want an error with %q", res, err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("Status: %v", err)
			case res.Status != tc.want:
				t.Errorf("Status = %s (%s), want %s", res.Status, res.Message, tc.want)
			}
		})
	}
	if !h.Supports(schema.GroupKind{Group: "example.com", Kind: "Anything"}) || h.Supports(schema.GroupKind{Group: "apps", Kind: "Deployment"}) {
		t.Error("Supports matches by group and kind wrongly")
	}
	var none *HealthChecks
	if res, err := none.Status(healthObj("v1", "ConfigMap", 1, nil), false); err != nil || res.Status != status.CurrentStatus {
		t.Errorf("nil HealthChecks: %v, %v; want kstatus's Current", res, err)
	}
}
