package release

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	helmkube "helm.sh/helm/v4/pkg/kube"
	helmreleasei "helm.sh/helm/v4/pkg/release"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release/helmfm"
)

// What Helm 4 changed under the engine, kept in one place: its storage and
// actions speak release.Releaser (any); the engine reads chart API v2
// releases (pkg/release/v1), the only kind Helm writes for a chart v2.

// asRelease is rls as a release of chart API v2, the only kind the engine
// handles.
func asRelease(rls helmreleasei.Releaser) (*helmrelease.Release, error) {
	switch r := rls.(type) {
	case *helmrelease.Release:
		if r == nil {
			return nil, fmt.Errorf("no release")
		}
		return r, nil
	case helmrelease.Release:
		return &r, nil
	case nil:
		return nil, fmt.Errorf("no release")
	default:
		return nil, fmt.Errorf("release of type %T: only releases of chart API v2 are supported", rls)
	}
}

// asReleases is asRelease of each.
func asReleases(ls []helmreleasei.Releaser) ([]*helmrelease.Release, error) {
	out := make([]*helmrelease.Release, 0, len(ls))
	for _, l := range ls {
		r, err := asRelease(l)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// releaseStore is Helm's storage with the engine's release type.
type releaseStore struct{ *storage.Storage }

func (s releaseStore) Get(name string, version int) (*helmrelease.Release, error) {
	r, err := s.Storage.Get(name, version)
	if err != nil {
		return nil, err
	}
	return asRelease(r)
}

func (s releaseStore) Last(name string) (*helmrelease.Release, error) {
	r, err := s.Storage.Last(name)
	if err != nil {
		return nil, err
	}
	return asRelease(r)
}

func (s releaseStore) Deployed(name string) (*helmrelease.Release, error) {
	r, err := s.Storage.Deployed(name)
	if err != nil {
		return nil, err
	}
	return asRelease(r)
}

func (s releaseStore) History(name string) ([]*helmrelease.Release, error) {
	h, err := s.Storage.History(name)
	if err != nil {
		return nil, err
	}
	return asReleases(h)
}

func (s releaseStore) ListReleases() ([]*helmrelease.Release, error) {
	h, err := s.Storage.ListReleases()
	if err != nil {
		return nil, err
	}
	return asReleases(h)
}

// waitClient is the kube client of the engine's Helm actions: Helm's, writing
// under the provider's field manager (helmfm.Client), with Helm 3's waits.
//
// Helm 3 waited by polling (Helm 4's legacy strategy) and, with waiting
// disabled, still waited for hooks to be ready and for deleted hooks to be
// gone. Helm 4's hookOnly strategy watches hooks with kstatus and does not
// wait for deletions; noWaitStrategy is Helm 3's: legacy waits for hooks and
// deletions, none for the release's resources.
//
// Helm 4 tests a release with its status watcher (kstatus) whatever the
// strategy; Helm 3 polled, as the engine's waits do: the watcher is asked
// for only by the test action, and gets the poller.
type waitClient struct {
	helmfm.Client
}

// noWaitStrategy asks waitClient for Helm 3's waits with waiting disabled:
// for hooks to be ready and deleted hooks to be gone (the only deletions an
// install, upgrade or rollback waits for). noWaitUninstallStrategy is that
// of an uninstall, which waits for no deletion: Helm 4 asks one waiter for
// the deletions of hooks and of the release's resources alike.
const (
	noWaitStrategy          helmkube.WaitStrategy = "stevedore-nowait"
	noWaitUninstallStrategy helmkube.WaitStrategy = "stevedore-nowait-uninstall"
)

func (c *waitClient) GetWaiter(ws helmkube.WaitStrategy) (helmkube.Waiter, error) {
	return c.GetWaiterWithOptions(ws)
}

func (c *waitClient) GetWaiterWithOptions(ws helmkube.WaitStrategy, opts ...helmkube.WaitOption) (helmkube.Waiter, error) {
	if ws == helmkube.StatusWatcherStrategy {
		ws = helmkube.LegacyStrategy
	}
	if ws != noWaitStrategy && ws != noWaitUninstallStrategy {
		return c.Client.GetWaiterWithOptions(ws, opts...)
	}
	w, err := c.Client.GetWaiterWithOptions(helmkube.LegacyStrategy, opts...)
	if err != nil {
		return nil, err
	}
	return hooksOnlyWaiter{Waiter: w, waitDeletes: ws == noWaitStrategy}, nil
}

// hooksOnlyWaiter waits for hooks (WatchUntilReady) and, with waitDeletes,
// deletions, not for the release's resources.
type hooksOnlyWaiter struct {
	helmkube.Waiter
	waitDeletes bool
}

func (hooksOnlyWaiter) Wait(helmkube.ResourceList, time.Duration) error         { return nil }
func (hooksOnlyWaiter) WaitWithJobs(helmkube.ResourceList, time.Duration) error { return nil }

func (w hooksOnlyWaiter) WaitForDelete(list helmkube.ResourceList, timeout time.Duration) error {
	if !w.waitDeletes {
		return nil
	}
	return w.Waiter.WaitForDelete(list, timeout)
}

// waitStrategy is Helm 3's wait of an action: polling, or no wait for the
// release's resources when disabled.
func waitStrategy(disable bool) helmkube.WaitStrategy {
	if disable {
		return noWaitStrategy
	}
	return helmkube.LegacyStrategy
}

// The digest of a release (releaseDigest) is kept in the state of every
// release this provider made: it must not change for a release Helm 3 wrote
// when Helm 4 reads it, or every release would look changed by another
// client after an upgrade of the provider. Helm 4 encodes times as Go does
// and leaves zero times out; Helm 3 wrote a zero time as "" and always wrote
// `deleted`. These types encode an observation as Helm 3's types did.

// v3Time is a time as Helm 3's time.Time encodes it.
type v3Time time.Time

func (t v3Time) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte(`""`), nil
	}
	return time.Time(t).MarshalJSON()
}

// v3Info is Helm 3's release.Info, with Helm 4's rollback revision (left
// out when zero, as it is in every record Helm 3 wrote).
type v3Info struct {
	FirstDeployed    v3Time                      `json:"first_deployed,omitempty"`
	LastDeployed     v3Time                      `json:"last_deployed,omitempty"`
	Deleted          v3Time                      `json:"deleted"`
	Description      string                      `json:"description,omitempty"`
	Status           string                      `json:"status,omitempty"`
	RollbackRevision int                         `json:"rollback_revision,omitempty"`
	Notes            string                      `json:"notes,omitempty"`
	Resources        map[string][]runtime.Object `json:"resources,omitempty"`
}

func v3InfoOf(i *helmrelease.Info) v3Info {
	if i == nil {
		return v3Info{}
	}
	return v3Info{
		FirstDeployed: v3Time(i.FirstDeployed), LastDeployed: v3Time(i.LastDeployed), Deleted: v3Time(i.Deleted),
		Description: i.Description, Status: i.Status.String(), RollbackRevision: i.RollbackRevision,
		Notes: i.Notes, Resources: i.Resources,
	}
}

// v3Hook is Helm 3's release.Hook.
type v3Hook struct {
	Name              string                            `json:"name,omitempty"`
	Kind              string                            `json:"kind,omitempty"`
	Path              string                            `json:"path,omitempty"`
	Manifest          string                            `json:"manifest,omitempty"`
	Events            []helmrelease.HookEvent           `json:"events,omitempty"`
	LastRun           v3HookExecution                   `json:"last_run,omitempty"`
	Weight            int                               `json:"weight,omitempty"`
	DeletePolicies    []helmrelease.HookDeletePolicy    `json:"delete_policies,omitempty"`
	OutputLogPolicies []helmrelease.HookOutputLogPolicy `json:"output_log_policies,omitempty"`
}

type v3HookExecution struct {
	StartedAt   v3Time                `json:"started_at,omitempty"`
	CompletedAt v3Time                `json:"completed_at,omitempty"`
	Phase       helmrelease.HookPhase `json:"phase"`
}

func v3HookOf(h *helmrelease.Hook) v3Hook {
	return v3Hook{
		Name: h.Name, Kind: h.Kind, Path: h.Path, Manifest: h.Manifest, Events: h.Events,
		LastRun: v3HookExecution{
			StartedAt: v3Time(h.LastRun.StartedAt), CompletedAt: v3Time(h.LastRun.CompletedAt), Phase: h.LastRun.Phase,
		},
		Weight: h.Weight, DeletePolicies: h.DeletePolicies, OutputLogPolicies: h.OutputLogPolicies,
	}
}

var _ json.Marshaler = v3Time{}

// uninstallWaitStrategy is Helm 3's wait of an uninstall: polling for the
// deletions, or none when disabled (Helm 3 still waited for the deletion of
// hooks then; Helm 4 asks one waiter for both, so that is no more).
func uninstallWaitStrategy(disable bool) helmkube.WaitStrategy {
	if disable {
		return noWaitUninstallStrategy
	}
	return helmkube.LegacyStrategy
}

// runRelease is the release an action returned, as the engine's type.
func runRelease(rls helmreleasei.Releaser, err error) (*helmrelease.Release, error) {
	if rls == nil {
		return nil, err
	}
	r, cerr := asRelease(rls)
	if cerr != nil {
		return nil, errors.Join(err, cerr)
	}
	return r, err
}
