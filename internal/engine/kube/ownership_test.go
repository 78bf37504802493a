package kube

import (
	"context"
	"maps"
	"testing"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Lookup tells existing objects from missing ones, and counts a kind the
// cluster does not serve as missing, not as an error.
func TestLookup_unservedKindIsMissing(t *testing.T) {
	ctx := testenv.Context(t)
	f := newFactory(t)
	m, err := f.Manager()
	if err != nil {
		t.Fatal(err)
	}
	live, errs := m.Lookup(ctx, []*unstructured.Unstructured{
		obj("v1", "Namespace", "", "default"),
		obj("v1", "ConfigMap", "default", "lookup-missing"),
		obj("example.com/v1", "Nope", "default", "x"),
		obj("example.com/v1", "Nope", "default", "y"),
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("errs[%d] = %v", i, err)
		}
	}
	if live[0] == nil || live[0].GetName() != "default" || live[1] != nil || live[2] != nil || live[3] != nil {
		t.Fatalf("live = %v", live)
	}
}

// Disown removes only the owner labels, with a patch that keeps every field our
// field manager applied; objects owned by someone else, excluded objects and
// missing objects are left alone.
func TestDisown_removesOnlyOwnerLabels(t *testing.T) {
	ctx := testenv.Context(t)
	f := newFactory(t)
	m, err := f.Manager()
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.Client()
	if err != nil {
		t.Fatal(err)
	}
	objs := mustObjects(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: disown-mine
  namespace: default
  labels: {example.dev/owner: a, example.dev/owner-ns: default, keep: "yes"}
data: {applied: by-us}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: disown-theirs
  namespace: default
  labels: {example.dev/owner: b, example.dev/owner-ns: default}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: disown-excluded
  namespace: default
  labels: {example.dev/owner: a, example.dev/owner-ns: default}
  annotations: {example.dev/prune: disabled}
`)
	if _, err := m.ApplyStaged(ctx, objs, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, o := range objs {
			_ = c.Delete(context.Background(), o)
		}
	})
	owner := map[string]string{"example.dev/owner": "a", "example.dev/owner-ns": "default"}
	err = m.Disown(ctx, append(objs, obj("v1", "ConfigMap", "default", "disown-missing")),
		DisownOptions{Owner: owner, Exclusions: map[string]string{"example.dev/prune": "disabled"}})
	if err != nil {
		t.Fatal(err)
	}
	labelsOf := func(name string) (map[string]string, map[string]string) {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &cm); err != nil {
			t.Fatal(err)
		}
		return cm.Labels, cm.Data
	}
	if l, d := labelsOf("disown-mine"); !maps.Equal(l, map[string]string{"keep": "yes"}) || d["applied"] != "by-us" {
		t.Fatalf("disowned object: labels %v, data %v", l, d)
	}
	if l, _ := labelsOf("disown-theirs"); l["example.dev/owner"] != "b" {
		t.Fatalf("another owner's object changed: %v", l)
	}
	if l, _ := labelsOf("disown-excluded"); l["example.dev/owner"] != "a" {
		t.Fatalf("an excluded object changed: %v", l)
	}
}
