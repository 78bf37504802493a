package resourceset

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// lastAppliedAnnotation is kubectl's client-side apply record.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// ConfigObject is live, an object of a set in the cluster, as a `resources`
// entry of a configuration that applies it unchanged: the fields that the
// set's field manager applied (kube.Applied), without the owner labels and
// the adoption annotation the set writes itself, with `<<` escaped so that
// no string renders as a template. An object that manager never applied
// (written by another tool since) is cleaned as `kubectl get -o yaml` users
// clean one: status, the metadata the API server keeps, and kubectl's
// last-applied annotation left out. It changes nothing in live.
func ConfigObject(live *unstructured.Unstructured, manager string) (map[string]any, error) {
	var obj *unstructured.Unstructured
	if kube.AppliedEntry(live.GetManagedFields(), manager) == nil {
		obj = serverFieldsRemoved(live)
	} else {
		var err error
		if obj, err = kube.Applied(live, manager); err != nil {
			return nil, err
		}
	}
	md, _ := obj.Object["metadata"].(map[string]any)
	for _, f := range []struct {
		field string
		keys  []string
	}{
		{"labels", []string{NameLabel, NamespaceLabel, kube.OwnerLabel}},
		{"annotations", []string{kube.AdoptedAnnotation, lastAppliedAnnotation}},
	} {
		m, _ := md[f.field].(map[string]any)
		for _, k := range f.keys {
			delete(m, k)
		}
		if m != nil && len(m) == 0 {
			delete(md, f.field)
		}
	}
	return escapeTemplates(obj.Object).(map[string]any), nil
}

// serverFieldsRemoved is a copy of obj without status and the metadata the
// API server keeps.
func serverFieldsRemoved(obj *unstructured.Unstructured) *unstructured.Unstructured {
	c := obj.DeepCopy()
	delete(c.Object, "status")
	for _, f := range []string{"managedFields", "uid", "resourceVersion", "creationTimestamp", "generation", "selfLink", "deletionTimestamp",
		"deletionGracePeriodSeconds", "ownerReferences"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	return c
}

// escapeTemplates is v with every `<<` of its strings (keys and values)
// written as a template action that renders `<<`: the resources of a set are
// `<< >>` templates. The raw string literal needs no quote, which YAML
// would escape.
func escapeTemplates(v any) any {
	switch tv := v.(type) {
	case string:
		return strings.ReplaceAll(tv, "<<", "<<`<<`>>")
	case map[string]any:
		out := make(map[string]any, len(tv))
		for k, e := range tv {
			if e == nil {
				continue // what a null applies is no field
			}
			out[escapeTemplates(k).(string)] = escapeTemplates(e)
		}
		return out
	case []any:
		out := make([]any, len(tv))
		for i, e := range tv {
			out[i] = escapeTemplates(e)
		}
		return out
	default:
		return v
	}
}
