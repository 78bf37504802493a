package resourceset

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ErrUnknownKind is returned for a kind the cluster does not serve and no CRD in
// the set defines.
var ErrUnknownKind = errors.New("unknown kind")

// scopes says whether kinds are namespaced: from the CRDs in the set first (a
// kind whose CRD is applied in the same set does not exist yet), then from the
// cluster's RESTMapper.
type scopes struct {
	mapper meta.RESTMapper
	crds   map[schema.GroupKind]bool
}

func newScopes(mapper meta.RESTMapper, objs []*unstructured.Unstructured) *scopes {
	s := &scopes{mapper: mapper, crds: map[schema.GroupKind]bool{}}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" || o.GroupVersionKind().Group != "apiextensions.k8s.io" {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		s.crds[schema.GroupKind{Group: group, Kind: kind}] = scope != "Cluster"
	}
	return s
}

func (s *scopes) namespaced(gvk schema.GroupVersionKind) (bool, error) {
	if ns, ok := s.crds[gvk.GroupKind()]; ok {
		return ns, nil
	}
	m, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return false, fmt.Errorf("%w %s: the cluster does not serve it and no CustomResourceDefinition in the set defines it", ErrUnknownKind, gvkString(gvk))
		}
		return false, fmt.Errorf("mapping %s: %w", gvkString(gvk), err)
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// defaultNamespaces sets the set's namespace on namespaced objects that name
// none, and clears it on cluster-scoped ones (the API server would ignore it,
// and the inventory ID must match the object's), with a warning for each
// namespace it clears.
func defaultNamespaces(objs []*unstructured.Unstructured, s *scopes, namespace string) ([]Warning, error) {
	var errs []error
	var warnings []Warning
	said := map[string]bool{} // an object rendered by every input is said once
	for _, o := range objs {
		ns, err := s.namespaced(o.GroupVersionKind())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", describe(o), err))
			continue
		}
		switch {
		case ns && o.GetNamespace() == "":
			o.SetNamespace(namespace)
		case !ns && o.GetNamespace() != "":
			msg := fmt.Sprintf("%s %s names the namespace %q, but %s is cluster-scoped: the namespace is ignored",
				o.GetKind(), o.GetName(), o.GetNamespace(), o.GetKind())
			if !said[msg] {
				said[msg] = true
				warnings = append(warnings, Warning{Summary: "Namespace of a cluster-scoped object ignored", Message: msg})
			}
			o.SetNamespace("")
		}
	}
	return warnings, errors.Join(errs...)
}

// duplicates warns about each object that is rendered more than once with
// different content: the first one is applied, as flux-operator does, and the
// others are dropped. Copies that are the same (a shared object rendered by
// every input) are no warning.
func duplicates(objs []*unstructured.Unstructured) []Warning {
	first := map[string]*unstructured.Unstructured{}
	differ := map[string]int{}
	var order []string
	for _, o := range objs {
		key := objectKey(o)
		f, ok := first[key]
		if !ok {
			first[key] = o
			continue
		}
		if !equality.Semantic.DeepEqual(f.Object, o.Object) {
			if differ[key] == 0 {
				order = append(order, key)
			}
			differ[key]++
		}
	}
	var warnings []Warning
	for _, key := range order {
		warnings = append(warnings, Warning{Summary: "Object rendered more than once",
			Message: fmt.Sprintf("%s is rendered %d more time(s) with different content: the first one rendered is applied "+
				"(resources before resources_template, input by input), as flux-operator does, and the others are dropped",
				describe(first[key]), differ[key])})
	}
	return warnings
}

func gvkString(gvk schema.GroupVersionKind) string {
	return strings.TrimPrefix(gvk.GroupVersion().String()+"/", "/") + gvk.Kind
}
