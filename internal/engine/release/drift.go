package release

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/fluxcd/pkg/ssa"
	ssaerrors "github.com/fluxcd/pkg/ssa/errors"
	"github.com/fluxcd/pkg/ssa/jsondiff"
	ssanormalize "github.com/fluxcd/pkg/ssa/normalize"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"github.com/go-openapi/jsonpointer"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// DriftDetectionKey set to DriftDetectionDisabledValue, as a label or an
// annotation, in the chart or in the cluster, exempts an object from drift
// detection and correction: helm-controller's key, so that charts written for
// Flux behave the same here.
const (
	DriftDetectionKey           = "helm.toolkit.fluxcd.io/driftDetection"
	DriftDetectionDisabledValue = "disabled"
)

// Helm's ownership metadata: Helm puts it on every object it creates, but not
// in the manifest it stores.
const (
	helmManagedByLabel             = "app.kubernetes.io/managed-by"
	helmManagedByValue             = "Helm"
	helmReleaseNameAnnotation      = "meta.helm.sh/release-name"
	helmReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// driftExclusion is the exclusion selector of drift detection and correction.
var driftExclusion = map[string]string{DriftDetectionKey: DriftDetectionDisabledValue}

// detectDrift reports how the objects of rel's manifest differ in the cluster:
// a server-side apply dry-run of each with our field manager, so that fields
// other managers own and the manifest does not set are not drift, without the
// spec's ignored paths and the excluded objects. A missing object is drift of
// type create; Secret values are masked. The objects whose fingerprint in
// since still matches are not dry-run; the fingerprints returned are those
// of the objects in sync now. A refresh (and only a refresh: see
// kube.DriftOptions.SharedLabel) reads the metadata of the fingerprinted
// objects from LISTs that the refreshes of all releases share, selecting the
// objects with the origin labels.
func detectDrift(ctx context.Context, f *kube.Factory, spec *Spec, rel *helmrelease.Release, since kube.Fingerprints, refresh bool) ([]kube.Drift, kube.Fingerprints, error) {
	objs, m, err := driftInputs(f, rel)
	if err != nil {
		return nil, nil, objectError(spec, fmt.Errorf("drift detection: %w", err))
	}
	opts := driftOptions(spec)
	opts.Since = since
	if refresh {
		opts.SharedLabel = OriginNameLabel
	}
	r, err := m.CheckDrift(ctx, objs, opts)
	if err != nil {
		return nil, nil, driftError(spec, "drift detection", err)
	}
	return r.Drift, r.InSync, nil
}

// correctDrift server-side applies, with our field manager and ownership
// forced, the objects of rel that drift (detection's report, as
// helm-controller hands its DiffSet to the corrector) says are missing or
// changed. It is not a Helm upgrade: Helm's storage is not touched and no
// revision is made. The ignored paths of a changed object are left alone (as
// helm-controller, which patches only the diff); a missing object is created
// whole.
func correctDrift(ctx context.Context, f *kube.Factory, spec *Spec, rel *helmrelease.Release, drift []kube.Drift) error {
	objs, m, err := driftInputs(f, rel)
	if err != nil {
		return objectError(spec, fmt.Errorf("drift correction: %w", err))
	}
	fix, err := correctionsOf(objs, drift, spec.DriftDetection.Ignore)
	if err != nil {
		return objectError(spec, fmt.Errorf("drift correction: %w", err))
	}
	return applyCorrections(ctx, m.ResourceManager(), spec, fix)
}

// driftError names the object of a failed dry-run once, as
// `helmrelease <ns>/<name>: <phase>: <Kind/ns/name>: <cause>`: ssa's dry-run
// error and kube's wrapping of it both name it already. Other errors keep
// kube's wording, which says "drift detection".
func driftError(spec *Spec, phase string, err error) error {
	var dr *ssaerrors.DryRunErr
	if errors.As(err, &dr) && dr.InvolvedObject() != nil {
		return objectError(spec, fmt.Errorf("%s: %s: %w", phase, kube.Describe(dr.InvolvedObject()), dr.Unwrap()))
	}
	if phase == "drift detection" {
		return objectError(spec, fmt.Errorf("%w", err))
	}
	return objectError(spec, fmt.Errorf("%s: %w", phase, err))
}

func driftOptions(spec *Spec) kube.DriftOptions {
	return kube.DriftOptions{IgnoreRules: spec.DriftDetection.Ignore, ExclusionSelector: driftExclusion}
}

// driftInputs are the normalized objects of rel and the manager to diff them.
func driftInputs(f *kube.Factory, rel *helmrelease.Release) ([]*unstructured.Unstructured, *kube.Manager, error) {
	mapper, err := f.RESTMapper()
	if err != nil {
		return nil, nil, err
	}
	objs, err := driftObjects(rel, mapper)
	if err != nil {
		return nil, nil, err
	}
	m, err := f.Manager()
	if err != nil {
		return nil, nil, err
	}
	return objs, m, nil
}

// driftObjects reads the objects of rel's manifest and makes them what Helm
// made of them in the cluster, as helm-controller does before diffing:
// normalized (default port protocols, Secret stringData as data, no status),
// with Helm's ownership metadata, and with the release namespace on namespaced
// objects that name none.
func driftObjects(rel *helmrelease.Release, mapper meta.RESTMapper) ([]*unstructured.Unstructured, error) {
	objs, err := kube.ReadObjects(rel.Manifest)
	if err != nil {
		return nil, fmt.Errorf("read release manifest: %w", err)
	}
	if err := ssanormalize.UnstructuredList(objs); err != nil {
		return nil, fmt.Errorf("normalize release objects: %w", err)
	}
	namespaced := map[schema.GroupVersionKind]bool{}
	for _, obj := range objs {
		setHelmOwnership(obj, rel)
		if obj.GetNamespace() != "" {
			continue
		}
		gvk := obj.GroupVersionKind()
		ns, ok := namespaced[gvk]
		if !ok {
			if ns, err = isNamespacedKind(mapper, gvk); err != nil {
				return nil, fmt.Errorf("%s: %w", kube.Describe(obj), err)
			}
			namespaced[gvk] = ns
		}
		if ns {
			obj.SetNamespace(rel.Namespace)
		}
	}
	return objs, nil
}

func isNamespacedKind(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, err
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// setHelmOwnership adds the label and annotations Helm puts on the objects of
// a release when it creates them (helm's action/validate.go).
func setHelmOwnership(obj *unstructured.Unstructured, rel *helmrelease.Release) {
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[helmManagedByLabel] = helmManagedByValue
	obj.SetLabels(l)
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[helmReleaseNameAnnotation] = rel.Name
	a[helmReleaseNamespaceAnnotation] = rel.Namespace
	obj.SetAnnotations(a)
}

// correctionsOf picks the objects of drift out of objs: missing ones whole,
// changed ones without the paths their ignore rules name, so that applying
// them does not take those fields back.
func correctionsOf(objs []*unstructured.Unstructured, drift []kube.Drift, rules []jsondiff.IgnoreRule) ([]*unstructured.Unstructured, error) {
	ignored, err := kube.CompileIgnoreRules(rules)
	if err != nil {
		return nil, err
	}
	types := make(map[string]string, len(drift))
	for _, d := range drift {
		types[d.ID] = d.Type
	}
	var out []*unstructured.Unstructured
	for _, obj := range objs {
		switch types[kube.ID(obj)] {
		case string(jsondiff.DiffTypeCreate):
			out = append(out, obj)
		case string(jsondiff.DiffTypeUpdate):
			stripped, err := withoutPaths(obj, ignored.For(obj))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", kube.Describe(obj), err)
			}
			out = append(out, stripped)
		}
	}
	return out, nil
}

// withoutPaths is a copy of obj without the JSON pointers paths.
func withoutPaths(obj *unstructured.Unstructured, paths []string) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	if err := jsondiff.ApplyPatchToUnstructured(out, jsondiff.GenerateRemovePatch(paths...)); err != nil {
		return nil, err
	}
	return out, nil
}

// applyCorrections applies objs one by one, so that an error names its
// object: Namespaces, CRDs and ClusterRoles first, waiting for the ones made
// again, then the rest in ssa's kind order. It goes on after a failure and
// returns all of them.
func applyCorrections(ctx context.Context, rm *ssa.ResourceManager, spec *Spec, objs []*unstructured.Unstructured) error {
	opts := ssa.DefaultApplyOptions()
	opts.ExclusionSelector = driftExclusion
	var defs, rest []*unstructured.Unstructured
	for _, obj := range objs {
		if ssautils.IsClusterDefinition(obj) {
			defs = append(defs, obj)
		} else {
			rest = append(rest, obj)
		}
	}
	var errs []error
	applied := ssa.NewChangeSet()
	for _, obj := range sortedForApply(defs) {
		e, err := rm.Apply(ctx, obj, opts)
		if err != nil {
			errs = append(errs, correctionError(spec, obj, err))
			continue
		}
		if e.Action == ssa.CreatedAction {
			applied.Add(*e)
		}
	}
	if len(applied.Entries) > 0 {
		wait := ssa.WaitOptions{Interval: opts.WaitInterval, Timeout: opts.WaitTimeout}
		if err := rm.WaitForSetWithContext(ctx, applied.ToObjMetadataSet(), wait); err != nil {
			errs = append(errs, objectError(spec, fmt.Errorf("drift correction: %w", err)))
		}
	}
	for _, obj := range sortedForApply(rest) {
		if _, err := rm.Apply(ctx, obj, opts); err != nil {
			errs = append(errs, correctionError(spec, obj, err))
		}
	}
	return errors.Join(errs...)
}

func sortedForApply(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	sort.Sort(ssa.SortableUnstructureds(objs))
	return objs
}

// correctionError is `helmrelease <ns>/<name>: drift correction: <object>:
// <cause>`; ssa's errors name the object already, their cause does not.
func correctionError(spec *Spec, obj *unstructured.Unstructured, err error) error {
	if cause := errors.Unwrap(err); cause != nil {
		err = cause
	}
	return objectError(spec, fmt.Errorf("drift correction: %s: %w", kube.Describe(obj), err))
}

// ValidateIgnoreRules checks drift_detection.ignore without a cluster: the
// paths are JSON pointers ("" is the whole object) and the target's names are
// regular expressions and its selectors label selectors, as helm-controller's
// jsondiff reads them. The error joins one *fielderr.Error per problem.
func ValidateIgnoreRules(rules []jsondiff.IgnoreRule) error {
	var errs []error
	for i, r := range rules {
		base := fmt.Sprintf("drift_detection.ignore[%d]", i)
		if len(r.Paths) == 0 {
			errs = append(errs, validationError(base+".paths", "must list at least one JSON pointer (\"\" ignores the whole object)"))
		}
		for j, p := range r.Paths {
			if _, err := jsonpointer.New(p); err != nil {
				errs = append(errs, &fielderr.Error{Path: fmt.Sprintf("%s.paths[%d]", base, j), Err: fmt.Errorf("%q is not a JSON pointer: %w", p, err)})
			}
		}
		errs = append(errs, validateIgnoreTarget(base+".target", r.Selector)...)
	}
	return errors.Join(errs...)
}

// validateIgnoreTarget checks a target as a patch target is checked: both are
// kustomize-style selectors with the same fields.
func validateIgnoreTarget(field string, s *jsondiff.Selector) []error {
	if s == nil {
		return nil
	}
	return validateSelector(field, &KustomizeSelector{
		Group: s.Group, Version: s.Version, Kind: s.Kind, Name: s.Name, Namespace: s.Namespace,
		AnnotationSelector: s.AnnotationSelector, LabelSelector: s.LabelSelector,
	})
}
