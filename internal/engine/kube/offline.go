package kube

import (
	"errors"
	"fmt"
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// ErrNoCluster is what every client of an offline factory fails with.
var ErrNoCluster = errors.New("no cluster: this render runs without one")

// NewOfflineFactory returns a factory that serves mapper as its RESTMapper
// and nothing else: every client, and the REST configuration, fail with
// ErrNoCluster, without a request. Renders that need to know which kinds are
// namespaced, and nothing else of a cluster, run on it.
func NewOfflineFactory(mapper meta.RESTMapper) *Factory {
	f := &Factory{fieldManager: DefaultFieldManager, mapper: mapper, offline: true}
	f.once.Do(func() { f.err = ErrNoCluster })
	return f
}

// KindScope says whether a kind is namespaced.
type KindScope struct {
	GroupVersionKind schema.GroupVersionKind
	Namespaced       bool
}

var (
	builtinOnce   sync.Once
	builtinScopes map[schema.GroupVersionKind]bool
)

// builtinKinds are the scopes of Kubernetes' built-in kinds in the OpenAPI
// data kustomize embeds (kyaml's: the scope of each kind as the API server's
// paths give it).
func builtinKinds() map[schema.GroupVersionKind]bool {
	builtinOnce.Do(func() {
		builtinScopes = map[schema.GroupVersionKind]bool{}
		for _, d := range openapi.Schema().Definitions {
			gvks, _ := d.Extensions["x-kubernetes-group-version-kind"].([]any)
			for _, g := range gvks {
				m, _ := g.(map[string]any)
				group, _ := m["group"].(string)
				version, _ := m["version"].(string)
				kind, _ := m["kind"].(string)
				if kind == "" || version == "" {
					continue
				}
				gv := schema.GroupVersion{Group: group, Version: version}
				if ns, found := openapi.IsNamespaceScoped(kyaml.TypeMeta{APIVersion: gv.String(), Kind: kind}); found {
					builtinScopes[gv.WithKind(kind)] = ns
				}
			}
		}
	})
	return builtinScopes
}

// laterKinds are the scopes of the built-in kinds of Kubernetes releases
// after the one kustomize's OpenAPI data describes (v1.21) that objects are
// applied as. TestOfflineRESTMapper_isClusters checks them, and that no kind
// the test cluster serves is missing, against its discovery.
var laterKinds = map[schema.GroupKind]bool{
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        false,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: false,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          false,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   false,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   false,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 false,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          false,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   false,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 false,
	{Group: "resource.k8s.io", Kind: "ResourceClaim"}:                                 true,
	{Group: "resource.k8s.io", Kind: "ResourceClaimTemplate"}:                         true,
}

// OfflineRESTMapper maps, without a cluster, Kubernetes' built-in kinds (the
// versions client-go knows and those of kustomize's OpenAPI data, and
// laterKinds) and the kinds of extra, which win. It is for telling namespaced kinds from cluster-scoped
// ones: a kind it knows at any version maps at every version, with the scope
// of the kind. A kind it does not know at all is a NoKindMatchError, as a
// cluster that does not serve it gives.
func OfflineRESTMapper(extra []KindScope) meta.RESTMapper {
	m := &anyVersionMapper{DefaultRESTMapper: meta.NewDefaultRESTMapper(nil), versions: map[schema.GroupKind]string{}}
	add := func(gvk schema.GroupVersionKind, namespaced bool) {
		scope := meta.RESTScopeRoot
		if namespaced {
			scope = meta.RESTScopeNamespace
		}
		m.Add(gvk, scope)
		m.versions[gvk.GroupKind()] = gvk.Version
	}
	// By group and kind, so that a version the OpenAPI data does not have
	// (autoscaling/v2 when it has v1) has the scope of the kind's others.
	scopes := maps.Clone(laterKinds)
	for gvk, ns := range builtinKinds() {
		scopes[gvk.GroupKind()] = ns
		add(gvk, ns)
	}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if ns, ok := scopes[gvk.GroupKind()]; ok && gvk.Version != "__internal" {
			add(gvk, ns)
		}
	}
	for _, k := range extra {
		add(k.GroupVersionKind, k.Namespaced)
	}
	return m
}

// anyVersionMapper maps a kind at a version it was not given at as the kind
// at a version it was given at (the last, in versions): a scope does not
// depend on the version.
type anyVersionMapper struct {
	*meta.DefaultRESTMapper
	versions map[schema.GroupKind]string
}

func (m *anyVersionMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	mapping, err := m.DefaultRESTMapper.RESTMapping(gk, versions...)
	if known, ok := m.versions[gk]; ok && err != nil && meta.IsNoMatchError(err) && len(versions) > 0 {
		if other, otherErr := m.DefaultRESTMapper.RESTMapping(gk, known); otherErr == nil {
			c := *other
			c.GroupVersionKind = gk.WithVersion(versions[0])
			return &c, nil
		}
	}
	if err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("offline mapping of %s: %w", gk, err)
	}
	return mapping, err
}
