package resourceset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// The only kind inputs_from reads, as flux-operator's .spec.inputsFrom.
const (
	InputProviderAPIVersion = "fluxcd.controlplane.io/v1"
	InputProviderKind       = "ResourceSetInputProvider"
)

// Input strategies, flux-operator's .spec.inputStrategy.name.
const (
	// InputStrategyFlatten, the default, concatenates the inputs: the set's
	// own first, then each provider's, providers sorted by name.
	InputStrategyFlatten = "Flatten"
	// InputStrategyPermute is the cartesian product of the sources: the
	// set's own inputs and each provider's (permutedInputs).
	InputStrategyPermute = "Permute"
)

// InputsFrom references ResourceSetInputProvider objects in the set's
// namespace whose status.exportedInputs join the set's inputs: by Name or by
// Selector, exactly one of them. APIVersion and Kind may be empty; set, they
// must be InputProviderAPIVersion and InputProviderKind.
type InputsFrom struct {
	APIVersion string
	Kind       string
	Name       string
	Selector   *metav1.LabelSelector
}

// ValidateInputsFrom reports, without a cluster, the entries of refs that no
// cluster can make right and an unknown strategy, as *fielderr.Error
// joined: on `input_strategy.name` (or `.include_empty_providers`), on an
// entry of inputs_from (`inputs_from[1]`), or on its attribute
// (`inputs_from[1].kind`).
func ValidateInputsFrom(refs []InputsFrom, strategy string, includeEmpty bool) error {
	var errs []error
	if err := checkStrategy(strategy, includeEmpty); err != nil {
		errs = append(errs, err)
	}
	for i, r := range refs {
		at := fielderr.Index("inputs_from", i)
		fail := func(path, format string, args ...any) {
			errs = append(errs, fielderr.Errorf(path, format, args...))
		}
		if r.APIVersion != "" && r.APIVersion != InputProviderAPIVersion {
			fail(at+".api_version", "must be %q, got %q", InputProviderAPIVersion, r.APIVersion)
		}
		if r.Kind != "" && r.Kind != InputProviderKind {
			fail(at+".kind", "must be %q, got %q", InputProviderKind, r.Kind)
		}
		switch {
		case r.Name != "" && r.Selector != nil:
			fail(at, "set either name or selector, not both")
		case r.Name == "" && r.Selector == nil:
			fail(at, "set name or selector")
		case r.Selector != nil:
			if _, err := metav1.LabelSelectorAsSelector(r.Selector); err != nil {
				errs = append(errs, fielderr.Wrap(at+".selector", err))
			}
		}
	}
	return errors.Join(errs...)
}

// ResolveInputs returns spec with the inputs of its InputsFrom providers
// read from the cluster now, to be joined to its Inputs by the input strategy
// when it renders (see combinedInputs); a spec without InputsFrom, or already
// resolved, is returned as is. Each provider counts once, and providers are
// sorted by name; each of their inputs has a `provider` key naming the
// object (apiVersion, kind, name, namespace), as flux-operator computes them.
// A provider's readiness is not looked at: its status.exportedInputs are what
// it exports. A set with InputsFrom whose inputs are none renders no object. A provider named but missing, and a
// cluster that does not serve the kind, are *fielderr.Error on the entry of
// inputs_from (`inputs_from[1]`).
func (e *Engine) ResolveInputs(ctx context.Context, spec *Spec) (*Spec, error) {
	spec = spec.withDefaults()
	resolved, err := e.resolveInputs(ctx, spec)
	return resolved, objectError(spec, err)
}

// resolveInputs is ResolveInputs for the engine's entry points, which name
// the set in their errors.
func (e *Engine) resolveInputs(ctx context.Context, spec *Spec) (*Spec, error) {
	if len(spec.InputsFrom) == 0 || spec.inputsResolved {
		return spec, nil
	}
	if err := ValidateInputsFrom(spec.InputsFrom, spec.InputStrategy, spec.IncludeEmptyProviders); err != nil {
		return nil, err
	}
	c, err := e.kube.Client()
	if err != nil {
		return nil, err
	}
	providers := map[string]*unstructured.Unstructured{}
	for i, r := range spec.InputsFrom {
		fail := func(err error) error { return fielderr.Wrap(fielderr.Index("inputs_from", i), err) }
		gvk := schema.FromAPIVersionAndKind(InputProviderAPIVersion, InputProviderKind)
		if r.Name != "" {
			if _, ok := providers[r.Name]; ok {
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			if err := c.Get(ctx, client.ObjectKey{Namespace: spec.Namespace, Name: r.Name}, u); err != nil {
				return nil, fail(providerReadError(err, fmt.Sprintf("%s %s/%s", InputProviderKind, spec.Namespace, r.Name)))
			}
			providers[r.Name] = u
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(r.Selector)
		if err != nil {
			return nil, fail(fmt.Errorf("invalid selector: %w", err))
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(InputProviderKind + "List"))
		if err := c.List(ctx, list, client.InNamespace(spec.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, fail(providerReadError(err, fmt.Sprintf("%s objects in namespace %s matching %q", InputProviderKind, spec.Namespace, sel.String())))
		}
		for j := range list.Items {
			providers[list.Items[j].GetName()] = &list.Items[j]
		}
	}

	var exported []inputSource
	for _, name := range slices.Sorted(maps.Keys(providers)) {
		got, err := ExportedInputs(providers[name])
		if err != nil {
			return nil, fielderr.Wrap(fielderr.Index("inputs_from", refIndex(spec, providers[name])), err)
		}
		exported = append(exported, inputSource{name: name, inputs: got})
	}
	c2 := *spec
	c2.exported = exported
	c2.inputsResolved = true
	return &c2, nil
}

// ExportedInputs are the inputs of a ResourceSetInputProvider object: its
// status.exportedInputs, each with a `provider` key naming the object.
func ExportedInputs(p *unstructured.Unstructured) ([]map[string]any, error) {
	raw, found, err := unstructured.NestedFieldNoCopy(p.Object, "status", "exportedInputs")
	if err != nil || !found || raw == nil {
		return nil, err
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("%s %s/%s: status.exportedInputs is not a list", InputProviderKind, p.GetNamespace(), p.GetName())
	}
	out := make([]map[string]any, 0, len(list))
	for i, it := range list {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s %s/%s: status.exportedInputs[%d] is not an object", InputProviderKind, p.GetNamespace(), p.GetName(), i)
		}
		in := runtimeDeepCopy(m)
		in["provider"] = map[string]any{
			"apiVersion": InputProviderAPIVersion,
			"kind":       InputProviderKind,
			"name":       p.GetName(),
			"namespace":  p.GetNamespace(),
		}
		out = append(out, in)
	}
	return out, nil
}

func runtimeDeepCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

// refIndex is the position of the first entry of spec.InputsFrom that
// selects p, for errors.
func refIndex(spec *Spec, p *unstructured.Unstructured) int {
	for i, r := range spec.InputsFrom {
		if r.Name == p.GetName() {
			return i
		}
		if r.Selector != nil {
			if sel, err := metav1.LabelSelectorAsSelector(r.Selector); err == nil && sel.Matches(labels.Set(p.GetLabels())) {
				return i
			}
		}
	}
	return 0
}

// providerReadError says why what could not be read.
func providerReadError(err error, what string) error {
	switch {
	case kube.IsNoKindMatch(err):
		return fmt.Errorf("the cluster does not serve kind %s (%s): install flux-operator's CustomResourceDefinitions, or use inputs and the stevedore_resourceset_inputs data source",
			InputProviderKind, InputProviderAPIVersion)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s not found", what)
	}
	return fmt.Errorf("cannot read %s: %w", what, err)
}
