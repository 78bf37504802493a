package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// fluxOperatorCRD is a minimal CRD of flux-operator's kind (namespaced,
// fluxcd.controlplane.io/v1, any content, a status subresource): no
// flux-operator runs in the test cluster, tests write the objects and their
// status themselves (SetInputProvider).
func fluxOperatorCRD(kind string) string {
	lower := strings.ToLower(kind)
	return fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[2]ss.fluxcd.controlplane.io}
spec:
  group: fluxcd.controlplane.io
  scope: Namespaced
  names: {kind: %[1]s, plural: %[2]ss, singular: %[2]s, listKind: %[1]sList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, kind, lower)
}

// InstallInputProviderCRD creates the ResourceSetInputProvider CRD unless it
// exists, and polls until it is Established.
func InstallInputProviderCRD(t testing.TB, c client.Client) {
	installCRD(t, c, fluxOperatorCRD("ResourceSetInputProvider"))
}

// InstallResourceSetCRD creates flux-operator's ResourceSet CRD unless it
// exists, and polls until it is Established.
func InstallResourceSetCRD(t testing.TB, c client.Client) {
	installCRD(t, c, fluxOperatorCRD("ResourceSet"))
}

// installCRD creates the CRD of manifest unless it exists, and polls until
// it is Established.
func installCRD(t testing.TB, c client.Client, manifest string) {
	t.Helper()
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &crd.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(crd.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKey{Name: crd.GetName()}, got); err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cd := range conds {
			if m, ok := cd.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CRD %s is not Established", crd.GetName())
		}
	}
}

// SetInputProvider creates the ResourceSetInputProvider ns/name unless it
// exists, and writes its exported inputs through the status subresource.
func SetInputProvider(t testing.TB, c client.Client, ns, name string, labels map[string]string, inputs ...map[string]any) {
	t.Helper()
	ctx := context.Background()
	p := &unstructured.Unstructured{}
	p.SetAPIVersion("fluxcd.controlplane.io/v1")
	p.SetKind("ResourceSetInputProvider")
	p.SetNamespace(ns)
	p.SetName(name)
	p.SetLabels(labels)
	p.Object["spec"] = map[string]any{"type": "Static"}
	if err := c.Create(ctx, p); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			t.Fatal(err)
		}
	}
	list := make([]any, len(inputs))
	for i, in := range inputs {
		list[i] = in
	}
	p.Object["status"] = map[string]any{"exportedInputs": list}
	if err := c.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
}
