package release

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// ListOwners are the owners a listing names, and filters by: a release made
// by the helm CLI or the Helm SDK (hashicorp/helm's helm_release included:
// it leaves nothing in the cluster that tells it from `helm install`), by a
// Flux HelmRelease, or by a stevedore_helmrelease.
var ListOwners = []string{kube.TakeOverHelm, kube.TakeOverFlux, kube.ListedStevedore}

// ListOptions narrows a listing of releases.
type ListOptions struct {
	// StorageNamespace lists the releases Helm stores there (as `helm list
	// -n`); "" lists every namespace.
	StorageNamespace string
	// Owner is one of ListOwners, "" any.
	Owner string
	// Selector matches the labels of the latest record of a release (Helm's
	// own, name, owner, status and version, and those given with `helm
	// install --labels`); nil matches every release.
	Selector labels.Selector
	// NamespaceMustExist makes a StorageNamespace the cluster does not have
	// an error (kube.NamespaceNotFoundError), not an empty listing.
	NamespaceMustExist bool
}

// Listed is a release as the latest record in Helm storage says.
type Listed struct {
	// Name is the release name, Namespace where its objects are,
	// StorageNamespace where Helm keeps its records.
	Name, Namespace, StorageNamespace   string
	ChartName, ChartVersion, AppVersion string
	Status                              string
	Revision                            int
	// Owner is one of ListOwners; OwnerName the namespace/name of the Flux
	// HelmRelease or stevedore_helmrelease its objects name, "" when they
	// name none; OwnerID the stevedore owner ID its record carries.
	Owner, OwnerName, OwnerID string
	// Labels are the labels of the latest record, Helm's own included.
	Labels map[string]string
	// ImportID is the stevedore_helmrelease import ID that imports it as it
	// is: the HelmRelease's for a Flux release, the resource's for a
	// stevedore one, else <namespace>/<release>, with release_name and
	// storage_namespace where the names do not follow Flux's rules.
	ImportID ImportID
}

// listConcurrency bounds the reads of latest records at once.
const listConcurrency = 8

// List lists the releases in Helm storage, sorted by storage namespace and
// name: one metadata LIST of the Secrets labelled owner=helm (no release is
// decoded to find the latest revision of each), then one GET and decode of the
// latest record of each release. Releases uninstalled with their history
// kept are not listed (there is nothing to import).
func (e *Engine) List(ctx context.Context, opts ListOptions) ([]Listed, error) {
	c, err := e.kube.Client()
	if err != nil {
		return nil, err
	}
	if opts.StorageNamespace != "" && opts.NamespaceMustExist {
		if err := e.kube.CheckNamespace(ctx, opts.StorageNamespace); err != nil {
			return nil, err
		}
	}
	metas := &metav1.PartialObjectMetadataList{}
	metas.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	listOpts := []client.ListOption{client.MatchingLabels{"owner": "helm"}}
	if opts.StorageNamespace != "" {
		listOpts = append(listOpts, client.InNamespace(opts.StorageNamespace))
	}
	if err := c.List(ctx, metas, listOpts...); err != nil {
		return nil, fmt.Errorf("list Helm storage: %w", err)
	}
	return e.readLatest(latestRecords(metas.Items), opts)
}

// readLatest reads and describes the records of latest that opts selects. A
// record deleted since the listing (its release uninstalled, on a cluster
// other writers share) is left out, not an error.
func (e *Engine) readLatest(latest []*metav1.PartialObjectMetadata, opts ListOptions) ([]Listed, error) {
	rc, err := e.kube.RESTConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	var (
		mu  sync.Mutex
		out []Listed
		g   errgroup.Group
	)
	g.SetLimit(listConcurrency)
	for _, m := range latest {
		if opts.Selector != nil && !opts.Selector.Matches(labels.Set(m.Labels)) {
			continue
		}
		if m.Labels["status"] == helmcommon.StatusUninstalled.String() {
			continue
		}
		g.Go(func() error {
			rlsi, err := secretsDriver(cs, m.Namespace).Get(m.Name)
			if errors.Is(err, driver.ErrReleaseNotFound) {
				return nil // uninstalled since the listing
			}
			if err != nil {
				return fmt.Errorf("release %s in storage namespace %s: read %s: %w", m.Labels["name"], m.Namespace, m.Name, err)
			}
			rls, err := asRelease(rlsi)
			if err != nil {
				return fmt.Errorf("release %s in storage namespace %s: %w", m.Labels["name"], m.Namespace, err)
			}
			l, err := listed(rls, m.Namespace, m.Labels)
			if err != nil {
				return err
			}
			if opts.Owner != "" && l.Owner != opts.Owner {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			out = append(out, l)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Listed) int {
		return strings.Compare(a.StorageNamespace+"/"+a.Name, b.StorageNamespace+"/"+b.Name)
	})
	return out, nil
}

// latestRecords keeps, of Helm's storage Secrets, the one of the highest
// revision of each release, as their labels say.
func latestRecords(items []metav1.PartialObjectMetadata) []*metav1.PartialObjectMetadata {
	type key struct{ ns, name string }
	best := map[key]*metav1.PartialObjectMetadata{}
	bestV := map[key]int{}
	for i := range items {
		m := &items[i]
		name := m.Labels["name"]
		v, err := strconv.Atoi(m.Labels["version"])
		if name == "" || err != nil || !strings.HasPrefix(m.Name, "sh.helm.release.v1.") {
			continue
		}
		k := key{m.Namespace, name}
		if cur, ok := bestV[k]; !ok || v > cur {
			best[k], bestV[k] = m, v
		}
	}
	out := make([]*metav1.PartialObjectMetadata, 0, len(best))
	for _, m := range best {
		out = append(out, m)
	}
	return out
}

// listed describes rls, stored in storageNS with the record labels lbls.
// A record without its chart is an error that names the release: it cannot
// be imported.
func listed(rls *helmrelease.Release, storageNS string, lbls map[string]string) (Listed, error) {
	if rls.Info == nil || rls.Chart == nil || rls.Chart.Metadata == nil {
		return Listed{}, fmt.Errorf("release %s in storage namespace %s: revision %d is incomplete in storage (no chart or no info)", rls.Name, storageNS, rls.Version)
	}
	l := Listed{Name: rls.Name, Namespace: rls.Namespace, StorageNamespace: storageNS,
		ChartName: rls.Chart.Metadata.Name, ChartVersion: rls.Chart.Metadata.Version, AppVersion: rls.Chart.Metadata.AppVersion,
		Status: rls.Info.Status.String(), Revision: rls.Version, Labels: lbls, OwnerID: lbls[kube.OwnerLabel]}
	// The resource the import names: the one the objects' labels name, for
	// Flux's and stevedore's; else a resource named as the release, in the
	// namespace of its objects.
	named := &Spec{Namespace: rls.Namespace, Name: rls.Name}
	l.Owner = kube.TakeOverHelm
	if objs, err := kube.ReadObjects(rls.Manifest); err == nil && len(objs) > 0 {
		own := kube.OwnerOf(objs[0].GetLabels(), objs[0].GetAnnotations())
		switch own.Kind {
		case kube.OwnedByFluxHelm:
			l.Owner = kube.TakeOverFlux
		case kube.OwnedByRelease:
			l.Owner = kube.ListedStevedore
		}
		if l.Owner != kube.TakeOverHelm && own.Namespace != "" && own.Name != "" {
			named = &Spec{Namespace: own.Namespace, Name: own.Name}
			l.OwnerName = own.Namespace + "/" + own.Name
		}
	}
	if l.OwnerID != "" {
		l.Owner = kube.ListedStevedore
	}
	id, err := ParseImportID(ImportIDOf(named, rls.Name, storageNS, rls.Namespace))
	if err != nil {
		return Listed{}, fmt.Errorf("release %s in storage namespace %s: %w", rls.Name, storageNS, err)
	}
	l.ImportID = id
	return l, nil
}
