package kube

import (
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/clusterreader"
	"github.com/fluxcd/cli-utils/pkg/object"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A wait reads object by object when that sends no more requests per read
// than the caching reader's lists (one per kind and namespace, with the
// ReplicaSets and Pods it lists beside a workload), and kind by kind
// otherwise.
func TestClusterReaderFor(t *testing.T) {
	id := func(group, kind, ns, name string) object.ObjMetadata {
		return object.ObjMetadata{GroupKind: schema.GroupKind{Group: group, Kind: kind}, Namespace: ns, Name: name}
	}
	many := func(n int) object.ObjMetadataSet {
		var ids object.ObjMetadataSet
		for i := range n {
			ids = append(ids, id("", "ConfigMap", "a", string(rune('a'+i%26))+string(rune('a'+i/26))))
		}
		return ids
	}
	release := object.ObjMetadataSet{id("apps", "Deployment", "a", "web"), id("", "Service", "a", "web"), id("", "ConfigMap", "a", "web")}
	for _, tc := range []struct {
		name       string
		ids        object.ObjMetadataSet
		lists      int
		objectWise bool
	}{
		{"a release of three objects: a Deployment lists ReplicaSets and Pods", release, 5, true},
		{"a StatefulSet lists its Pods", object.ObjMetadataSet{id("apps", "StatefulSet", "a", "db")}, 2, true},
		{"namespaces are lists of their own", object.ObjMetadataSet{id("", "ConfigMap", "a", "x"), id("", "ConfigMap", "b", "x")}, 2, true},
		{"one kind listed once for its objects", many(2), 1, false},
		{"a set of hundreds of one kind", many(300), 1, false},
		{"nothing", nil, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cachingLists(tc.ids); got != tc.lists {
				t.Errorf("cachingLists: %d, want %d", got, tc.lists)
			}
			r, err := clusterReaderFor(nil, nil, tc.ids)
			if err != nil {
				t.Fatal(err)
			}
			_, direct := r.(*clusterreader.DirectClusterReader)
			if direct != tc.objectWise {
				t.Errorf("reader %T, want the direct reader: %v", r, tc.objectWise)
			}
		})
	}
}
