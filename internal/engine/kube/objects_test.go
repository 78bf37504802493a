package kube

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// IDs are Flux's inventory format, so an inventory we write reads the same as
// one kustomize-controller or flux-operator writes.
func TestInventory_idsInFluxFormat(t *testing.T) {
	inv := Inventory([]*unstructured.Unstructured{
		obj("apps/v1", "Deployment", "default", "podinfo"),
		obj("v1", "Namespace", "", "tenant-a"),
		obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "system:stevedore"),
		obj("apps/v1beta1", "Deployment", "default", "podinfo"), // same object, other version
	})
	want := []Entry{
		{ID: "_system__stevedore_rbac.authorization.k8s.io_ClusterRole", V: "v1"},
		{ID: "_tenant-a__Namespace", V: "v1"},
		{ID: "default_podinfo_apps_Deployment", V: "v1"},
	}
	if len(inv) != len(want) {
		t.Fatalf("inventory = %v, want %v", inv, want)
	}
	for i := range want {
		if inv[i] != want[i] {
			t.Fatalf("entry %d = %v, want %v", i, inv[i], want[i])
		}
	}
	back, err := ObjectOf(inv[0])
	if err != nil {
		t.Fatal(err)
	}
	if back.GetName() != "system:stevedore" || back.GetKind() != "ClusterRole" || back.GetAPIVersion() != "rbac.authorization.k8s.io/v1" {
		t.Fatalf("ObjectOf(%v) = %s %s %s", inv[0], back.GetAPIVersion(), back.GetKind(), back.GetName())
	}
	if _, err := ObjectOf(Entry{ID: "nope"}); err == nil {
		t.Fatal("a malformed ID must be an error")
	}
}
