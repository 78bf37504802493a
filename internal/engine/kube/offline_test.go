package kube

import (
	"errors"
	"k8s.io/client-go/discovery"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestOfflineRESTMapper(t *testing.T) {
	m := OfflineRESTMapper([]KindScope{
		{GroupVersionKind: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Namespaced: false},
		// An extra kind wins over the built-in one.
		{GroupVersionKind: schema.GroupVersionKind{Group: "", Version: "v1", Kind: "ConfigMap"}, Namespaced: false},
	})
	for _, tc := range []struct {
		gvk        schema.GroupVersionKind
		namespaced bool
	}{
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, true},
		{schema.GroupVersionKind{Group: "", Version: "v1", Kind: "Namespace"}, false},
		{schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, false},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}, false},
		// Not in kustomize's OpenAPI data at this version: the kind's scope.
		{schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}, true},
		{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, false},
		{schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}, false},
		{schema.GroupVersionKind{Group: "", Version: "v1", Kind: "ConfigMap"}, false},
	} {
		mapping, err := m.RESTMapping(tc.gvk.GroupKind(), tc.gvk.Version)
		if err != nil {
			t.Errorf("%s: %v", tc.gvk, err)
			continue
		}
		if got := mapping.Scope.Name() == meta.RESTScopeNameNamespace; got != tc.namespaced || mapping.GroupVersionKind != tc.gvk {
			t.Errorf("%s: namespaced %v (%s), want %v", tc.gvk, got, mapping.GroupVersionKind, tc.namespaced)
		}
	}
	_, err := m.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Gizmo"}, "v1")
	if !meta.IsNoMatchError(err) {
		t.Errorf("unknown kind: %v, want a no-match error", err)
	}
	f := NewOfflineFactory(m)
	if _, err := f.Client(); !errors.Is(err, ErrNoCluster) {
		t.Errorf("offline client: %v", err)
	}
	if got, err := f.RESTMapper(); err != nil || got != m {
		t.Errorf("offline mapper: %v", err)
	}
}

// TestOfflineRESTMapper_isClusters compares the offline mapper with the test
// cluster's discovery: every kind both know has the same scope.
func TestOfflineRESTMapper_isClusters(t *testing.T) {
	d, err := newFactory(t).Discovery()
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := d.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		// A group failing discovery is a CRD of another test of this
		// package being established: not a built-in kind.
		t.Fatal(err)
	}
	m := OfflineRESTMapper(nil)
	compared := 0
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		if !builtInGroup(gv.Group) {
			// Served by a CRD that another test of this package made on
			// the shared cluster; a set declares such kinds in api_resources.
			continue
		}
		for _, r := range l.APIResources {
			mapping, err := m.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: r.Kind}, gv.Version)
			if err != nil {
				// Subresources (pods/eviction) and create-only reviews
				// (TokenReview) are never objects a set applies.
				if !strings.Contains(r.Name, "/") && !slices.Equal(r.Verbs, []string{"create"}) {
					t.Errorf("not known offline: %s %s (%s), verbs %v", l.GroupVersion, r.Kind, r.Name, r.Verbs)
				}
				continue
			}
			compared++
			if got := mapping.Scope.Name() == meta.RESTScopeNameNamespace; got != r.Namespaced {
				t.Errorf("%s %s (%s): offline namespaced %v, the cluster's %v", l.GroupVersion, r.Kind, r.Name, got, r.Namespaced)
			}
		}
	}
	if compared < 40 {
		t.Errorf("only %d kinds compared", compared)
	}
}

// builtInGroup reports whether group is one of Kubernetes' own API groups:
// the core group, the unqualified ones (apps, batch, policy, ...) and those
// under k8s.io. A CRD's group has a dot, and is not under k8s.io here.
func builtInGroup(group string) bool {
	return !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io")
}
