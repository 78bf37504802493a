package resourceset

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// FluxOperatorIDPrefix starts the import ID of a flux-operator ResourceSet:
// `flux-operator:<namespace>/<name>`. The stevedore_resourceset it imports
// has the ResourceSet's namespace and name.
const FluxOperatorIDPrefix = kube.TakeOverFluxOperator + ":"

// flux-operator's annotations on a ResourceSet: reconciliation disabled, and
// the timeout of its waits.
const (
	fluxOperatorReconcileAnnotation = "fluxcd.controlplane.io/reconcile"
	fluxOperatorTimeoutAnnotation   = "fluxcd.controlplane.io/reconcileTimeout"
)

// FluxOperatorSet is a flux-operator ResourceSet as the stevedore_resourceset
// that takes over its objects is written.
type FluxOperatorSet struct {
	// Spec is the ResourceSet's name, namespace and spec, field by field as
	// the migration guide maps them, with TakeOverFrom flux-operator: its
	// templates, inputs, steps and dependencies are kept as they are, so that
	// the set renders the objects flux-operator applied. Timeout is 0 (the
	// default) unless the ResourceSet's reconcileTimeout annotation sets one.
	Spec *Spec
	// Objects is the number of objects the ResourceSet's status inventory
	// lists.
	Objects int
	// Notes say what to do before the apply (disable flux-operator's
	// reconciliation) and what the set does not carry over.
	Notes []string
}

// ReadFluxOperator reads the flux-operator ResourceSet namespace/name and
// translates it (FluxOperatorSetOf). One that does not exist is an error
// that names the sets of the namespace with their import IDs.
func (e *Engine) ReadFluxOperator(ctx context.Context, namespace, name string) (*FluxOperatorSet, error) {
	spec := &Spec{Name: name, Namespace: namespace}
	c, err := e.kube.Client()
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(FluxOperatorResourceSet)
	err = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
	switch {
	case meta.IsNoMatchError(err):
		return nil, objectError(spec, fmt.Errorf("the cluster serves no flux-operator ResourceSet (%s)", FluxOperatorResourceSet.GroupVersion()))
	case apierrors.IsNotFound(err):
		return nil, objectError(spec, e.notFound(ctx, namespace, name, true))
	case err != nil:
		return nil, objectError(spec, fmt.Errorf("read flux-operator ResourceSet %s/%s: %w", namespace, name, err))
	}
	fo, err := FluxOperatorSetOf(u)
	if err != nil {
		return nil, objectError(spec, err)
	}
	return fo, nil
}

// notFound is the NotFoundError of an import of namespace/name, with the
// import IDs of the sets of namespace that an import takes, stevedore's and
// flux-operator's (Unlisted when they cannot be listed).
func (e *Engine) notFound(ctx context.Context, namespace, name string, fluxOperator bool) *NotFoundError {
	nf := &NotFoundError{Namespace: namespace, Name: name, FluxOperator: fluxOperator}
	sets, err := e.List(ctx, ListOptions{Namespace: namespace})
	if err != nil {
		nf.Unlisted = true
		return nf
	}
	for _, s := range sets {
		if s.Importable {
			nf.Candidates = append(nf.Candidates, ImportIDOf(s))
		}
	}
	return nf
}

// ImportIDOf is the stevedore_resourceset import ID of a listed set:
// `<namespace>/<name>` for a stevedore set, prefixed by FluxOperatorIDPrefix
// for a flux-operator ResourceSet.
func ImportIDOf(s ListedSet) string {
	id := s.Namespace + "/" + s.Name
	if s.Owner == kube.TakeOverFluxOperator {
		id = FluxOperatorIDPrefix + id
	}
	return id
}

// fluxOperatorSpec is the part of a ResourceSet's spec a stevedore set
// carries, by flux-operator's JSON field names.
type fluxOperatorSpec struct {
	CommonMetadata *struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"commonMetadata"`
	InputStrategy *struct {
		Name                  string `json:"name"`
		IncludeEmptyProviders bool   `json:"includeEmptyProviders"`
	} `json:"inputStrategy"`
	Inputs     []map[string]any `json:"inputs"`
	InputsFrom []struct {
		APIVersion string                `json:"apiVersion"`
		Kind       string                `json:"kind"`
		Name       string                `json:"name"`
		Selector   *metav1.LabelSelector `json:"selector"`
	} `json:"inputsFrom"`
	Resources         []map[string]any `json:"resources"`
	ResourcesTemplate string           `json:"resourcesTemplate"`
	Steps             []struct {
		Name              string           `json:"name"`
		Resources         []map[string]any `json:"resources"`
		ResourcesTemplate string           `json:"resourcesTemplate"`
		Timeout           string           `json:"timeout"`
	} `json:"steps"`
	DependsOn []struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Name       string `json:"name"`
		Namespace  string `json:"namespace"`
		Ready      bool   `json:"ready"`
		ReadyExpr  string `json:"readyExpr"`
	} `json:"dependsOn"`
	ServiceAccountName string `json:"serviceAccountName"`
	Wait               bool   `json:"wait"`
}

// fluxOperatorSpecFields are the JSON fields of fluxOperatorSpec: a field of
// a ResourceSet's spec outside them is a note, not carried over.
var fluxOperatorSpecFields = []string{"commonMetadata", "inputStrategy", "inputs", "inputsFrom", "resources",
	"resourcesTemplate", "steps", "dependsOn", "serviceAccountName", "wait"}

// FluxOperatorSetOf translates the flux-operator ResourceSet rs into the set
// that takes over its objects (see FluxOperatorSet). A spec field it does not
// know and a ResourceSet that flux-operator still reconciles are notes; a
// duration that does not parse is an error naming the field.
func FluxOperatorSetOf(rs *unstructured.Unstructured) (*FluxOperatorSet, error) {
	ref := fmt.Sprintf("flux-operator ResourceSet %s/%s", rs.GetNamespace(), rs.GetName())
	raw, _, _ := unstructured.NestedMap(rs.Object, "spec")
	var in fluxOperatorSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &in); err != nil {
		return nil, fmt.Errorf("%s: spec: %w", ref, err)
	}
	fo := &FluxOperatorSet{Spec: &Spec{
		Name: rs.GetName(), Namespace: rs.GetNamespace(), TakeOverFrom: []string{kube.TakeOverFluxOperator},
		Inputs: in.Inputs, Resources: in.Resources, ResourcesTemplate: in.ResourcesTemplate,
		ServiceAccountName: in.ServiceAccountName, Wait: in.Wait,
	}}
	s := fo.Spec
	if cm := in.CommonMetadata; cm != nil {
		s.CommonMetadata = CommonMetadata{Labels: cm.Labels, Annotations: cm.Annotations}
	}
	if st := in.InputStrategy; st != nil {
		s.InputStrategy, s.IncludeEmptyProviders = st.Name, st.IncludeEmptyProviders
	}
	for _, r := range in.InputsFrom {
		s.InputsFrom = append(s.InputsFrom, InputsFrom{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, Selector: r.Selector})
	}
	for i, st := range in.Steps {
		step := Step{Name: st.Name, Resources: st.Resources, ResourcesTemplate: st.ResourcesTemplate}
		if st.Timeout != "" {
			d, err := time.ParseDuration(st.Timeout)
			if err != nil {
				return nil, fmt.Errorf("%s: spec.steps[%d].timeout: %w", ref, i, err)
			}
			step.Timeout = d
		}
		s.Steps = append(s.Steps, step)
	}
	for _, d := range in.DependsOn {
		s.Dependencies = append(s.Dependencies, Dependency{APIVersion: d.APIVersion, Kind: d.Kind, Name: d.Name,
			Namespace: d.Namespace, Ready: d.Ready, ReadyExpr: d.ReadyExpr})
	}
	if v, ok := rs.GetAnnotations()[fluxOperatorTimeoutAnnotation]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%s: annotation %s: %w", ref, fluxOperatorTimeoutAnnotation, err)
		}
		s.Timeout = d
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if !slices.Contains(fluxOperatorSpecFields, k) {
			fo.Notes = append(fo.Notes, fmt.Sprintf("spec.%s is not carried over: stevedore_resourceset has no such attribute", k))
		}
	}
	if rs.GetAnnotations()[fluxOperatorReconcileAnnotation] != "disabled" {
		fo.Notes = append(fo.Notes, fmt.Sprintf("flux-operator still reconciles %s: before the apply, disable it "+
			"(kubectl annotate resourceset %s -n %s %s=disabled), or it applies and prunes the objects the set takes over",
			ref, rs.GetName(), rs.GetNamespace(), fluxOperatorReconcileAnnotation))
	}
	entries, _, _ := unstructured.NestedSlice(rs.Object, "status", "inventory", "entries")
	fo.Objects = len(entries)
	return fo, nil
}
