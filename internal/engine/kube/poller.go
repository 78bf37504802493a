package kube

import (
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/clusterreader"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/engine"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/statusreaders"
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/cli-utils/pkg/object"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newPoller is the kstatus poller of every wait: readers first (they win
// for the kinds they support), then objectOnly's reader for the workload
// kinds, then kstatus's own readers.
//
// kstatus computes the status of a Deployment, ReplicaSet or StatefulSet
// from the object alone (status.Compute). Its default readers of those kinds
// also LIST, on every read, the ReplicaSets a Deployment selects and the Pods
// of each ReplicaSet or StatefulSet, to report them as generated resources,
// which no wait here reads: two LISTs more per Deployment per read, which a
// wait of many releases pays on every read, and which fail the read where
// the provider may read Deployments but not list Pods. The status is the
// same either way.
//
// Each wait reads through the cluster reader that sends fewer requests per
// read (clusterReaderFor).
func newPoller(c client.Reader, mapper meta.RESTMapper, readers ...engine.StatusReader) *polling.StatusPoller {
	readers = append(readers, objectOnlyReader{statusreaders.NewGenericStatusReader(mapper, status.Compute)})
	return polling.NewStatusPoller(c, mapper, polling.Options{
		CustomStatusReaders:  readers,
		ClusterReaderFactory: engine.ClusterReaderFactoryFunc(clusterReaderFor),
	})
}

// clusterReaderFor is the cluster reader of a wait for ids. kstatus's default,
// the caching reader, LISTs every kind in every namespace of the set on each
// read (and, beside a Deployment, ReplicaSet or StatefulSet, the ReplicaSets
// and Pods its own readers of those kinds would read), each list holding every
// object of its kind in the namespace, other releases' too. The direct reader
// GETs each object of the set. A release of a few objects, in a namespace it
// may share with many, reads less object by object; a set of hundreds of
// objects reads less kind by kind. The statuses are the same.
func clusterReaderFor(c client.Reader, mapper meta.RESTMapper, ids object.ObjMetadataSet) (engine.ClusterReader, error) {
	if len(ids) <= cachingLists(ids) {
		return clusterreader.NewDirectClusterReader(c, mapper, ids)
	}
	return clusterreader.NewCachingClusterReader(c, mapper, ids)
}

// cachingLists is how many LISTs the caching reader sends per read of ids:
// one per kind and namespace, with the kinds it lists beside a workload (its
// genGroupKinds: a Deployment's ReplicaSets, and the Pods of a ReplicaSet or
// StatefulSet).
func cachingLists(ids object.ObjMetadataSet) int {
	type kindIn struct {
		gk schema.GroupKind
		ns string
	}
	lists := map[kindIn]bool{}
	var add func(gk schema.GroupKind, ns string)
	add = func(gk schema.GroupKind, ns string) {
		if lists[kindIn{gk, ns}] {
			return
		}
		lists[kindIn{gk, ns}] = true
		for _, g := range listedBeside[gk] {
			add(g, ns)
		}
	}
	for _, id := range ids {
		add(id.GroupKind, id.Namespace)
	}
	return len(lists)
}

// listedBeside is kstatus's genGroupKinds (clusterreader/caching_reader.go).
var listedBeside = map[schema.GroupKind][]schema.GroupKind{
	{Group: "apps", Kind: "Deployment"}:  {{Group: "apps", Kind: "ReplicaSet"}},
	{Group: "apps", Kind: "ReplicaSet"}:  {{Kind: "Pod"}},
	{Group: "apps", Kind: "StatefulSet"}: {{Kind: "Pod"}},
}

// objectOnlyKinds are the kinds whose kstatus readers list generated
// resources that the status does not depend on.
var objectOnlyKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}:  true,
	{Group: "apps", Kind: "ReplicaSet"}:  true,
	{Group: "apps", Kind: "StatefulSet"}: true,
}

// objectOnlyReader reads the status of objectOnlyKinds from the object
// alone.
type objectOnlyReader struct{ engine.StatusReader }

func (objectOnlyReader) Supports(gk schema.GroupKind) bool { return objectOnlyKinds[gk] }
