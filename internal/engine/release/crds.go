package release

import (
	"context"
	"fmt"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// crdEstablishTimeout bounds the wait for new CRDs to be served, as Helm's.
const crdEstablishTimeout = 60 * time.Second

// chartCRDs reads the CustomResourceDefinitions of the chart's crds/
// directories (its subcharts' included). Anything else there is dropped: Helm
// would create it unmanaged, outside the release, and never delete it.
func chartCRDs(ch *chart.Chart) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, crd := range ch.CRDObjects() {
		objs, err := kube.ReadObjects(string(crd.File.Data))
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", crd.Filename, err)
		}
		for _, o := range objs {
			gvk := o.GroupVersionKind()
			if gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition" {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// applyCRDs puts the chart's CRDs in the cluster with policy: Skip does
// nothing, Create creates the missing ones and never touches existing ones,
// CreateReplace also replaces existing ones. None deletes a CRD. The CRDs get
// the origin labels, as helm-controller labels them with its object's.
func applyCRDs(ctx context.Context, f *kube.Factory, spec *Spec, ch *chart.Chart, policy CRDPolicy) error {
	if policy == CRDsSkip {
		return nil
	}
	crds, err := chartCRDs(ch)
	if err != nil || len(crds) == 0 {
		return err
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	var changed []*unstructured.Unstructured
	for _, crd := range crds {
		labels := crd.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[OriginNameLabel], labels[OriginNamespaceLabel] = spec.Name, spec.Namespace
		crd.SetLabels(labels)

		err := c.Create(ctx, crd.DeepCopy(), client.FieldOwner(f.FieldManager()))
		switch {
		case err == nil:
			changed = append(changed, crd)
			continue
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("create CustomResourceDefinition %s: %w", crd.GetName(), err)
		case policy == CRDsCreate:
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(crd.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKey{Name: crd.GetName()}, live); err != nil {
			return fmt.Errorf("get CustomResourceDefinition %s: %w", crd.GetName(), err)
		}
		// A replace, as Helm's and helm-controller's: the chart's definition
		// wins whole, with the live object's version to guard the write.
		desired := crd.DeepCopy()
		desired.SetResourceVersion(live.GetResourceVersion())
		if err := c.Update(ctx, desired, client.FieldOwner(f.FieldManager())); err != nil {
			return fmt.Errorf("replace CustomResourceDefinition %s: %w", crd.GetName(), err)
		}
		changed = append(changed, crd)
	}
	if len(changed) == 0 {
		return nil
	}
	if err := waitEstablished(ctx, c, changed); err != nil {
		return err
	}
	// The new kinds must be mappable by the action that follows: forget what
	// discovery cached, reset the mapper when it can be reset (the shared one
	// also rediscovers a group on a miss), and wait until it maps them.
	if dc, err := f.Discovery(); err == nil {
		dc.Invalidate()
	}
	m, err := f.RESTMapper()
	if err != nil {
		return err
	}
	if rm, ok := m.(apimeta.ResettableRESTMapper); ok {
		rm.Reset()
	}
	return kube.WaitForKinds(ctx, m, changed, crdEstablishTimeout)
}

// waitEstablished waits until the API server serves every CRD.
func waitEstablished(ctx context.Context, c client.Client, crds []*unstructured.Unstructured) error {
	for _, crd := range crds {
		name := crd.GetName()
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, crdEstablishTimeout, true, func(ctx context.Context) (bool, error) {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(crd.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKey{Name: name}, live); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
			for _, ci := range conds {
				cm, _ := ci.(map[string]any)
				if cm["type"] == "Established" && cm["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("wait for CustomResourceDefinition %s to be established: %w", name, err)
		}
	}
	return nil
}
