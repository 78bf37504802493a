package kube

import (
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/engine"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/statusreaders"
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
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
func newPoller(c client.Reader, mapper meta.RESTMapper, readers ...engine.StatusReader) *polling.StatusPoller {
	readers = append(readers, objectOnlyReader{statusreaders.NewGenericStatusReader(mapper, status.Compute)})
	return polling.NewStatusPoller(c, mapper, polling.Options{CustomStatusReaders: readers})
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
