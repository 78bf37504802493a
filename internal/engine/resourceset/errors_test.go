package resourceset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// The errors below are found before the engine reads the cluster, so an
// engine without one tells them.
var noCluster = New(nil)

func configMap(name string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}}
}

// A render error is on the resource, or the template, that does not render,
// and under its step; its message names the set once, the attribute, and the
// input being rendered.
func TestRenderError_path(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		path string
		want string // the whole message, or its start when it ends with "..."
	}{
		{"resource, with an input", Spec{Inputs: []map[string]any{{"a": "x"}, {"b": "y"}},
			Resources: []map[string]any{configMap("ok"), configMap("c-<< inputs.a >>")}},
			"resources[1]", `resourceset ns/s: resources[1]: with inputs[1]: template: resources[1]:4:13: executing "resources[1]" at <inputs>: map has no entry for key "a"`},
		{"resource, parse", Spec{Resources: []map[string]any{configMap("<< .x")}},
			"resources[0]", `resourceset ns/s: resources[0]: template: resources[0]:5: unclosed action started at resources[0]:4`},
		{"resource, no kind", Spec{Resources: []map[string]any{{"apiVersion": "v1", "metadata": map[string]any{"name": "x"}}}},
			"resources[0]", `resourceset ns/s: resources[0]: rendered object <no kind>/x has no kind`},
		{"template", Spec{ResourcesTemplate: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: << .x"},
			"resources_template", `resourceset ns/s: resources_template: template: resources_template:3: unclosed action`},
		{"template, with an input", Spec{Inputs: []map[string]any{{"a": "x"}}, ResourcesTemplate: "<< inputs.b >>"},
			"resources_template", `resourceset ns/s: resources_template: with inputs[0]: template: resources_template:1:3: executing "resources_template" at <inputs>: map has no entry for key "b"`},
		{"template of a step", Spec{Steps: []Step{{Name: "db", Resources: []map[string]any{configMap("a")}}, {Name: "app", ResourcesTemplate: "<< .x"}}},
			"steps[1].resources_template", `resourceset ns/s: steps[1].resources_template: step "app": resources_template: template: ...`},
		{"resource of a step", Spec{Steps: []Step{{Name: "db", Resources: []map[string]any{configMap("a"), configMap("<< inputs.a >>")}}}},
			"steps[0].resources[1]", `resourceset ns/s: steps[0].resources[1]: step "db": resources[1]: template: ...`},
		{"unavailable function", Spec{Resources: []map[string]any{configMap("<< now >>")}},
			"resources[0]", `resourceset ns/s: resources[0]: template: resources[0]:4:11: function "now" is not available: ...`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Name, tc.spec.Namespace = "s", "ns"
			_, err := noCluster.Plan(context.Background(), &tc.spec, nil, PlanOptions{})
			if got := fielderr.PathOf(err); got != tc.path {
				t.Errorf("error %v on %q, want %q", err, got, tc.path)
			}
			checkMessage(t, err, tc.want)
		})
	}
}

// checkMessage compares err's message with want, or with its start when want
// ends with "...".
func checkMessage(t *testing.T, err error, want string) {
	t.Helper()
	start, isStart := strings.CutSuffix(want, "...")
	switch {
	case err == nil:
		t.Errorf("no error, want %q", want)
	case isStart && !strings.HasPrefix(err.Error(), start):
		t.Errorf("message %q, want it to start with %q", err, start)
	case !isStart && err.Error() != want:
		t.Errorf("message %q, want %q", err, want)
	}
}

// The errors of steps are on the steps, a step, or its attribute; each of a
// join is on its own, and the messages are flux-operator's.
func TestStepError_path(t *testing.T) {
	cm := []map[string]any{configMap("a")}
	many := make([]Step, MaxSteps+1)
	for i := range many {
		many[i] = Step{Name: fmt.Sprintf("s%d", i), Resources: cm}
	}
	for _, tc := range []struct {
		name string
		err  error
		want []string // path, then message, per error joined
	}{
		{"too many and with resources", ValidateSteps(many, true), []string{
			"steps", "steps: 21 steps, at most 20 are allowed",
			"steps", "steps: steps are mutually exclusive with resources and resources_template",
		}},
		{"a step's attributes", ValidateSteps([]Step{{Name: "db", Resources: cm}, {Name: "db", Timeout: -1}}, false), []string{
			"steps[1].name", `steps[1].name: step "db": name "db" is also the name of steps[0]: step names must be unique`,
			"steps[1].timeout", `steps[1].timeout: step "db": timeout -1ns is negative`,
			"steps[1]", `steps[1]: step "db": at least one of resources or resources_template must be set`,
		}},
		{"field error", StepFieldError(2, "app", "timeout", errors.New(`time: invalid duration "x"`)), []string{
			"steps[2].timeout", `steps[2].timeout: step "app": time: invalid duration "x"`,
		}},
		{"health check", part{index: 0, name: "db-migration"}.failed("health check failed", "wait", errors.New("timeout")), []string{
			"steps[0]", `steps[0]: step "db-migration" health check failed: timeout`,
		}},
		{"apply", part{index: 1, name: "app"}.failed("apply failed", "apply", errors.New("refused")), []string{
			"steps[1]", `steps[1]: step "app" apply failed: refused`,
		}},
		{"a set without steps", part{index: -1}.failed("apply failed", "apply", errors.New("refused")), []string{
			"", "apply: refused",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := []error{tc.err}
			if j, ok := tc.err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			if len(errs)*2 != len(tc.want) {
				t.Fatalf("%d errors, want %d: %v", len(errs), len(tc.want)/2, tc.err)
			}
			for i, e := range errs {
				if got := fielderr.PathOf(e); got != tc.want[2*i] {
					t.Errorf("error %d on %q, want %q", i, got, tc.want[2*i])
				}
				if e.Error() != tc.want[2*i+1] {
					t.Errorf("error %d: %q, want %q", i, e, tc.want[2*i+1])
				}
			}
		})
	}
}

// Each problem of inputs_from is on the entry, or on the entry's attribute,
// and the engine's entry points name the set once in front of them.
func TestInputsFromError_path(t *testing.T) {
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
	spec := &Spec{Name: "s", Namespace: "ns", Resources: []map[string]any{configMap("a")}, InputStrategy: "Zip", InputsFrom: []InputsFrom{
		{Name: "a"},
		{Kind: "ResourceSet", APIVersion: "v1", Name: "b"},
		{Selector: bad},
		{},
	}}
	want := []string{
		"input_strategy.name", `input_strategy.name: must be "Flatten" or "Permute", got "Zip"`,
		"inputs_from[1].api_version", `inputs_from[1].api_version: must be "fluxcd.controlplane.io/v1", got "v1"`,
		"inputs_from[1].kind", `inputs_from[1].kind: must be "ResourceSetInputProvider", got "ResourceSet"`,
		"inputs_from[2].selector", `inputs_from[2].selector: "Near" is not a valid label selector operator`,
		"inputs_from[3]", `inputs_from[3]: set name or selector`,
	}
	check := func(t *testing.T, err error, prefix string) {
		t.Helper()
		inner := err
		if oe, ok := err.(*fielderr.ObjectError); ok {
			inner = oe.Err
		}
		var errs []error
		if j, ok := inner.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		if len(errs)*2 != len(want) {
			t.Fatalf("%d errors, want %d: %v", len(errs), len(want)/2, err)
		}
		for i, e := range errs {
			if got := fielderr.PathOf(e); got != want[2*i] {
				t.Errorf("error %d on %q, want %q", i, got, want[2*i])
			}
			if e.Error() != want[2*i+1] {
				t.Errorf("error %d: %q, want %q", i, e, want[2*i+1])
			}
		}
		if !strings.HasPrefix(err.Error(), prefix) || strings.Count(err.Error(), "resourceset ") != strings.Count(prefix, "resourceset ") {
			t.Errorf("message %q, want %q in front, once", err, prefix)
		}
	}
	t.Run("validate", func(t *testing.T) { check(t, ValidateInputsFrom(spec.InputsFrom, spec.InputStrategy, false), "") })
	t.Run("resolve", func(t *testing.T) {
		_, err := noCluster.ResolveInputs(context.Background(), spec)
		check(t, err, "resourceset ns/s: ")
	})
	t.Run("desired", func(t *testing.T) {
		_, err := noCluster.Desired(context.Background(), spec)
		check(t, err, "resourceset ns/s: ")
	})
	t.Run("plan", func(t *testing.T) {
		_, err := noCluster.Plan(context.Background(), spec, nil, PlanOptions{})
		check(t, err, "resourceset ns/s: ")
	})
}

// An object owned by another set is on the part of the spec that renders it,
// and stays an *OwnershipError naming the owner.
func TestOwnershipError_path(t *testing.T) {
	oe := &OwnershipError{ID: "default_x__ConfigMap", Object: "ConfigMap/default/x", Owner: kube.Owner{Kind: kube.OwnedBySet, Namespace: "default", Name: "other", ID: "0a1b"}}
	for _, tc := range []struct {
		name string
		spec Spec
		path string
	}{
		{"resources", Spec{Resources: []map[string]any{configMap("x")}}, "resources"},
		{"resources_template", Spec{ResourcesTemplate: "x"}, "resources_template"},
		{"steps", Spec{Steps: []Step{{Name: "db", ResourcesTemplate: "x"}}}, "steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Name, tc.spec.Namespace = "s", "default"
			err := objectError(&tc.spec, noCluster.locate(context.Background(), &tc.spec, oe))
			var got *OwnershipError
			if !errors.As(err, &got) || got.Owner.Name != "other" {
				t.Errorf("%v is no *OwnershipError naming the owner", err)
			}
			if p := fielderr.PathOf(err); p != tc.path {
				t.Errorf("error on %q, want %q", p, tc.path)
			}
			want := "resourceset default/s: " + tc.path + ": ConfigMap/default/x is owned by stevedore_resourceset default/other (owner 0a1b); remove it from one of the sets"
			if err.Error() != want {
				t.Errorf("message %q, want %q", err, want)
			}
		})
	}
}

// Errors about the cluster rather than the configuration are on no
// attribute, and keep their types.
func TestStalePlanError_message(t *testing.T) {
	spec := &Spec{Name: "s", Namespace: "default"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&StalePlanError{Object: "ConfigMap/default/x", Exists: true},
			"resourceset default/s: ConfigMap/default/x exists now, but did not when the plan said the apply would create it; plan again"},
		{&StalePlanError{Object: "ConfigMap/default/x"},
			"resourceset default/s: ConfigMap/default/x no longer exists, but did when the plan said the apply would adopt it; plan again"},
		{&PreviewError{Object: "Deployment/default/web", Err: errors.New("spec.replicas: Invalid value: -1")},
			"resourceset default/s: Deployment/default/web: the API server refuses it, so apply would fail: spec.replicas: Invalid value: -1"},
	} {
		err := objectError(spec, tc.err)
		if err.Error() != tc.want {
			t.Errorf("message %q, want %q", err, tc.want)
		}
		if p := fielderr.PathOf(err); p != "" {
			t.Errorf("%v on %q, want no attribute", err, p)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("%v does not wrap %T", err, tc.err)
		}
	}
}

// Every entry point names the set once, however the calls nest; the Ready
// condition of a failed apply is the set's own and does not name it.
func TestEngineError_namesTheSetOnce(t *testing.T) {
	ctx := context.Background()
	spec := &Spec{Name: "s", Namespace: "ns", ResourcesTemplate: "<< .x",
		InputsFrom: []InputsFrom{{}}}
	want := "resourceset ns/s: inputs_from[0]: set name or selector"
	_, err := noCluster.Plan(ctx, spec, nil, PlanOptions{})
	checkMessage(t, err, want)
	_, err = noCluster.Preview(ctx, spec)
	checkMessage(t, err, want)
	_, err = noCluster.CheckDrift(ctx, spec, nil, nil)
	checkMessage(t, err, want)
	_, err = noCluster.Drift(ctx, spec, nil)
	checkMessage(t, err, want)
	res, err := noCluster.Apply(ctx, spec, nil, ApplyOptions{})
	checkMessage(t, err, want)
	if msg := res.Conditions[0].Message; msg != "inputs_from[0]: set name or selector" {
		t.Errorf("Ready condition %q, want the error without the set's name", msg)
	}

	spec.InputsFrom = nil
	want = "resourceset ns/s: resources_template: template: resources_template:1: unclosed action"
	_, err = noCluster.Desired(ctx, spec)
	checkMessage(t, err, want)
	_, err = Render(spec)
	checkMessage(t, err, want)
	res, err = noCluster.Apply(ctx, spec, nil, ApplyOptions{})
	checkMessage(t, err, want)
	if msg := res.Conditions[0].Message; msg != strings.TrimPrefix(want, "resourceset ns/s: ") || res.Conditions[0].Reason != ReasonBuildFailed {
		t.Errorf("Ready condition %+v, want the error without the set's name", res.Conditions[0])
	}
}

// A kind the cluster does not serve is on the attribute that renders the
// object, or on its step.
func TestUnknownKind_path(t *testing.T) {
	ctx := testenv.Context(t)
	e, _ := newEngine(t)
	nope := map[string]any{"apiVersion": "example.com/v1", "kind": "Nope", "metadata": map[string]any{"name": "x"}}
	nopeYAML := "apiVersion: example.com/v1\nkind: Nope\nmetadata: {name: x}\n"
	for _, tc := range []struct {
		name string
		spec Spec
		path string
		want string
	}{
		{"resources", Spec{Resources: []map[string]any{configMap("a"), nope}}, "resources",
			"resourceset default/s: resources: Nope/x: unknown kind example.com/v1/Nope: the cluster does not serve it and no CustomResourceDefinition in the set defines it"},
		{"resources_template", Spec{ResourcesTemplate: nopeYAML}, "resources_template",
			"resourceset default/s: resources_template: Nope/x: unknown kind example.com/v1/Nope: ..."},
		{"step", Spec{Steps: []Step{{Name: "db", Resources: []map[string]any{configMap("a")}}, {Name: "app", ResourcesTemplate: nopeYAML}}}, "steps[1]",
			`resourceset default/s: steps[1]: step "app": Nope/x: unknown kind example.com/v1/Nope: ...`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Name, tc.spec.Namespace = "s", "default"
			_, err := e.Plan(ctx, &tc.spec, nil, PlanOptions{})
			if !errors.Is(err, ErrUnknownKind) || fielderr.PathOf(err) != tc.path {
				t.Errorf("error %v on %q, want an unknown kind on %q", err, fielderr.PathOf(err), tc.path)
			}
			checkMessage(t, err, tc.want)
		})
	}
}
