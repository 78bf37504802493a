package resourceset

import (
	"errors"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// Offline is a set rendered without a cluster.
type Offline struct {
	// Objects are the objects an apply of the set applies, in step order,
	// with their namespaces defaulted and the owner labels and common
	// metadata set (no owner ID: an instance's is not known here).
	Objects []*unstructured.Unstructured
	// Inventory is the sorted inventory of Objects, none adopted: whether an
	// object exists already only a cluster can say.
	Inventory []kube.Entry
	// Steps maps each inventory ID to its step's name ("" without steps).
	Steps map[string]string
	// Manifests are Objects as the resource's manifests attribute has them
	// (Secret values masked).
	Manifests string
	// Warnings are those of a plan about the render.
	Warnings []Warning
}

// RenderOffline renders spec as Plan does (the same templates, steps,
// deduplication, namespace defaulting and metadata) with mapper in place of
// the cluster's discovery, to tell namespaced kinds from cluster-scoped ones
// (kube.OfflineRESTMapper). It reads nothing else: InputsFrom, which needs
// the cluster, is refused.
func RenderOffline(spec *Spec, mapper meta.RESTMapper) (*Offline, error) {
	if len(spec.InputsFrom) > 0 {
		return nil, objectError(spec, fielderr.Wrap("inputs_from", errors.New("inputs_from reads the cluster: an offline render takes inputs only")))
	}
	e := New(kube.NewOfflineFactory(mapper))
	parts, warnings, err := e.desired(spec)
	if err != nil {
		return nil, objectError(spec, err)
	}
	objs := flatten(parts)
	manifests, err := Manifests(objs)
	if err != nil {
		return nil, objectError(spec, err)
	}
	return &Offline{Objects: objs, Inventory: inventoryOf(objs, nil), Steps: stepsOf(parts), Manifests: manifests, Warnings: warnings}, nil
}
