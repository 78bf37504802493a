package resourceset

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// FluxOperatorSetOf translates each field of a ResourceSet's spec as the
// migration guide's table maps it, keeps templates and steps as they are,
// and notes what it does not carry over and a ResourceSet still reconciled.
func TestFluxOperatorSetOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rs    string
		want  *Spec
		notes []string
		err   string
	}{{
		name: "every field",
		rs: `
metadata:
  name: tenants
  namespace: flux-system
  annotations: {fluxcd.controlplane.io/reconcile: disabled, fluxcd.controlplane.io/reconcileTimeout: 2m}
spec:
  commonMetadata: {labels: {team: a}, annotations: {note: x}}
  inputs: [{tenant: a, replicas: 2}, {tenant: b, replicas: 3}]
  inputsFrom: [{kind: ResourceSetInputProvider, name: prs}, {selector: {matchLabels: {env: prod}}}]
  inputStrategy: {name: Permute}
  resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: "cm-<< inputs.tenant >>"}
  resourcesTemplate: |
    apiVersion: v1
    kind: Namespace
    metadata: {name: "<< inputs.tenant >>"}
  dependsOn:
  - {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: x.example.com, ready: true}
  - {apiVersion: v1, kind: Secret, name: s, namespace: flux-system, ready: true, readyExpr: "type == 'Opaque'"}
  serviceAccountName: deployer
  wait: true
status:
  inventory: {entries: [{id: a, v: v1}, {id: b, v: v1}]}
`,
		want: &Spec{Name: "tenants", Namespace: "flux-system", TakeOverFrom: []string{kube.TakeOverFluxOperator},
			Inputs:        []map[string]any{{"tenant": "a", "replicas": int64(2)}, {"tenant": "b", "replicas": int64(3)}},
			InputsFrom:    []InputsFrom{{Kind: "ResourceSetInputProvider", Name: "prs"}, {Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}},
			InputStrategy: "Permute",
			Resources: []map[string]any{{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "cm-<< inputs.tenant >>"}}},
			ResourcesTemplate: "apiVersion: v1\nkind: Namespace\nmetadata: {name: \"<< inputs.tenant >>\"}\n",
			CommonMetadata:    CommonMetadata{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}},
			Dependencies: []Dependency{{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "x.example.com", Ready: true},
				{APIVersion: "v1", Kind: "Secret", Name: "s", Namespace: "flux-system", Ready: true, ReadyExpr: "type == 'Opaque'"}},
			ServiceAccountName: "deployer", Wait: true, Timeout: 2 * time.Minute},
	}, {
		name: "steps, still reconciled, fields the set does not have",
		rs: `
metadata: {name: apps, namespace: ns}
spec:
  steps:
  - {name: crds, timeout: 30s, resourcesTemplate: "kind: A"}
  - name: apps
    resources: [{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}]
  inputStrategy: {name: Permute, includeEmptyProviders: true}
  newField: {x: 1}
`,
		want: &Spec{Name: "apps", Namespace: "ns", TakeOverFrom: []string{kube.TakeOverFluxOperator}, InputStrategy: "Permute", IncludeEmptyProviders: true,
			Steps: []Step{{Name: "crds", Timeout: 30 * time.Second, ResourcesTemplate: "kind: A"},
				{Name: "apps", Resources: []map[string]any{{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}}}}},
		notes: []string{"spec.newField is not carried over",
			"flux-operator still reconciles flux-operator ResourceSet ns/apps: before the apply, disable it (kubectl annotate resourceset apps -n ns fluxcd.controlplane.io/reconcile=disabled)"},
	}, {
		name: "a step timeout that is no duration",
		rs:   `{metadata: {name: a, namespace: ns}, spec: {steps: [{name: s, timeout: soon}]}}`,
		err:  "flux-operator ResourceSet ns/a: spec.steps[0].timeout",
	}, {
		name: "a timeout annotation that is no duration",
		rs:   `{metadata: {name: a, namespace: ns, annotations: {fluxcd.controlplane.io/reconcileTimeout: later}}, spec: {resources: []}}`,
		err:  "annotation fluxcd.controlplane.io/reconcileTimeout",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.rs), &u.Object); err != nil {
				t.Fatal(err)
			}
			// As the API server returns them: integers are int64.
			u.Object = mustRoundTrip(t, u.Object)
			got, err := FluxOperatorSetOf(u)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Spec, tc.want) {
				t.Errorf("spec\n%#v\nwant\n%#v", got.Spec, tc.want)
			}
			notes := strings.Join(got.Notes, "\n")
			for _, n := range tc.notes {
				if !strings.Contains(notes, n) {
					t.Errorf("notes lack %q:\n%s", n, notes)
				}
			}
			if len(tc.notes) == 0 && len(got.Notes) != 0 {
				t.Errorf("notes: %q, want none", got.Notes)
			}
		})
	}
}

// mustRoundTrip is obj as the API server returns it (integers are int64).
func mustRoundTrip(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	obj["apiVersion"], obj["kind"] = FluxOperatorResourceSet.GroupVersion().String(), FluxOperatorResourceSet.Kind
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u.Object
}
