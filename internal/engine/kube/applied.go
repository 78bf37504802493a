package kube

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// AppliedEntry is the entry of fields (an object's managedFields) of
// manager's server-side applies (operation Apply, no subresource), or nil
// when it has none.
func AppliedEntry(fields []metav1.ManagedFieldsEntry, manager string) *metav1.ManagedFieldsEntry {
	for _, e := range fields {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			return &e
		}
	}
	return nil
}

// Applied is the part of obj that manager applied server-side: the fields
// its managedFields entry owns, and the object's identity (apiVersion, kind,
// metadata.name and metadata.namespace). What other managers set, what the
// API server defaulted (a Service's clusterIP, a Deployment's strategy) and
// what it keeps (status, uid, resourceVersion, managedFields, ...) is left
// out: applied again, it is exactly what the manager applied, and changes
// nothing. obj must be read in the API version of the entry, whose field set
// names that version's fields. It changes nothing in obj.
func Applied(obj *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	e := AppliedEntry(obj.GetManagedFields(), manager)
	if e == nil {
		return nil, fmt.Errorf("%s: no field of it was applied by field manager %q", Describe(obj), manager)
	}
	if e.APIVersion != obj.GetAPIVersion() {
		return nil, fmt.Errorf("%s: read in %s, but field manager %q applied it in %s", Describe(obj), obj.GetAPIVersion(), manager, e.APIVersion)
	}
	set := &fieldpath.Set{}
	if e.FieldsV1 != nil {
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return nil, fmt.Errorf("%s: the fields of field manager %q: %w", Describe(obj), manager, err)
		}
	}
	out, _ := extractMap(obj.Object, set)
	if out == nil {
		out = map[string]any{}
	}
	u := &unstructured.Unstructured{Object: out}
	u.SetAPIVersion(obj.GetAPIVersion())
	u.SetKind(obj.GetKind())
	u.SetName(obj.GetName())
	if ns := obj.GetNamespace(); ns != "" {
		u.SetNamespace(ns)
	}
	return u, nil
}

// extractMap is the part of m that set names.
func extractMap(m map[string]any, set *fieldpath.Set) (map[string]any, bool) {
	var out map[string]any
	for k, v := range m {
		pe := fieldpath.PathElement{FieldName: &k}
		if child, ok := set.Children.Get(pe); ok {
			if ev, ok := extract(v, child); ok {
				if out == nil {
					out = map[string]any{}
				}
				out[k] = ev
				continue
			}
		}
		if set.Members.Has(pe) {
			if out == nil {
				out = map[string]any{}
			}
			out[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	return out, out != nil
}

// extract is the part of v that set names, false for none.
func extract(v any, set *fieldpath.Set) (any, bool) {
	switch tv := v.(type) {
	case map[string]any:
		return extractMap(tv, set)
	case []any:
		var out []any
		for i, el := range tv {
			pe, ok := listElement(el, i, set)
			if !ok {
				continue
			}
			if child, ok := set.Children.Get(pe); ok {
				ev, ok := extract(el, child)
				if m, isMap := el.(map[string]any); isMap && pe.Key != nil {
					// An element's keys name it: always there.
					em, _ := ev.(map[string]any)
					if em == nil {
						em = map[string]any{}
					}
					for _, f := range *pe.Key {
						em[f.Name] = runtime.DeepCopyJSONValue(m[f.Name])
					}
					ev, ok = em, true
				}
				if ok {
					out = append(out, ev)
					continue
				}
			}
			if set.Members.Has(pe) {
				out = append(out, runtime.DeepCopyJSONValue(el))
			}
		}
		return out, out != nil
	default:
		// A scalar with children: the set is of another shape; nothing.
		return nil, false
	}
}

// listElement is the path element of set that names el, the element at
// index i of a list: by its keys (associative lists), its value (sets) or
// its index.
func listElement(el any, i int, set *fieldpath.Set) (fieldpath.PathElement, bool) {
	var found fieldpath.PathElement
	ok := false
	match := func(pe fieldpath.PathElement) {
		if ok {
			return
		}
		switch {
		case pe.Key != nil:
			m, isMap := el.(map[string]any)
			if !isMap {
				return
			}
			for _, f := range *pe.Key {
				fv, has := m[f.Name]
				if !has || !value.Equals(value.NewValueInterface(fv), f.Value) {
					return
				}
			}
		case pe.Value != nil:
			if !value.Equals(value.NewValueInterface(el), *pe.Value) {
				return
			}
		case pe.Index != nil:
			if *pe.Index != i {
				return
			}
		default:
			return
		}
		found, ok = pe, true
	}
	set.Children.Iterate(match)
	set.Members.Iterate(match)
	return found, ok
}
