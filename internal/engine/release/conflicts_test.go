package release

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// othersKept: the dry run without forcing is skipped only when the forced
// one left every other manager's managedFields entry as it was.
func TestOthersKept(t *testing.T) {
	entry := func(manager, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	obj := func(entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apps/v1")
		u.SetKind("Deployment")
		u.SetManagedFields(entries)
		return u
	}
	ours := entry("stevedore", `{"f:spec":{"f:replicas":{}}}`)
	oursMore := entry("stevedore", `{"f:spec":{"f:replicas":{},"f:template":{}}}`)
	hpa := entry("hpa", `{"f:spec":{"f:replicas":{}}}`)
	hpaLess := entry("hpa", `{"f:spec":{}}`)
	cases := []struct {
		name          string
		before, after *unstructured.Unstructured
		want          bool
	}{
		{"no other manager", obj(ours), obj(oursMore), true},
		{"another manager untouched, ours changed", obj(ours, hpa), obj(oursMore, hpa), true},
		{"a field taken from another manager", obj(hpa), obj(ours, hpaLess), false},
		{"another manager's entry gone", obj(hpa), obj(ours), false},
		{"no live object", nil, obj(ours), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := othersKept(tc.before, tc.after, "stevedore"); got != tc.want {
				t.Fatalf("othersKept = %v, want %v", got, tc.want)
			}
		})
	}
}
