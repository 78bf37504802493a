package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	helmkube "helm.sh/helm/v4/pkg/kube"
	helmreleasei "helm.sh/helm/v4/pkg/release"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"

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
// under the provider's field manager (helmfm.Client), with the waits of
// wait_strategy.
//
//   - poller (pollerStrategy): the release's objects are waited for with
//     kstatus, polled through fluxcd/pkg/ssa as helm-controller's poller
//     waits (and as resource sets wait), failing fast on a Failed object.
//     Paused Deployments are not waited for; a Job is ready once started,
//     or, when the action waits for Jobs, once complete.
//   - legacy: Helm's legacy (Helm 3) waiter.
//
// Hooks and deletions are waited for by Helm's legacy waiter under both:
// hooks to be ready, deleted hooks and uninstalled objects to be gone.
//
// With waiting disabled, Helm 3 still waited for hooks to be ready and for
// deleted hooks to be gone. Helm 4's hookOnly strategy watches hooks with
// its kstatus watcher and does not wait for deletions; noWaitStrategy is
// Helm 3's: legacy waits for hooks and deletions, none for the release's
// resources.
//
// Helm 4 tests a release with its status watcher whatever the strategy: the
// watcher is asked for only by the test action, and gets the legacy waiter,
// which waits for test Pods as Helm 3 did.
type waitClient struct {
	helmfm.Client
	f *kube.Factory
	// health are the health_check_exprs the poller waits with.
	health *kube.HealthChecks
}

// The engine's own wait strategies, which waitClient serves: noWaitStrategy
// (waiting disabled: hooks and deletions only), noWaitUninstallStrategy
// (that of an uninstall, which waits for no deletion: Helm 4 asks one
// waiter for the deletions of hooks and of the release's resources alike)
// and pollerStrategy (wait_strategy poller).
const (
	noWaitStrategy          helmkube.WaitStrategy = "stevedore-nowait"
	noWaitUninstallStrategy helmkube.WaitStrategy = "stevedore-nowait-uninstall"
	pollerStrategy          helmkube.WaitStrategy = "stevedore-poller"
)

func (c *waitClient) GetWaiter(ws helmkube.WaitStrategy) (helmkube.Waiter, error) {
	return c.GetWaiterWithOptions(ws)
}

func (c *waitClient) GetWaiterWithOptions(ws helmkube.WaitStrategy, opts ...helmkube.WaitOption) (helmkube.Waiter, error) {
	helmLegacy, err := c.Client.GetWaiterWithOptions(helmkube.LegacyStrategy, opts...)
	if err != nil {
		return nil, err
	}
	legacy := rampedWaiter{Waiter: helmLegacy}
	switch ws {
	case noWaitStrategy, noWaitUninstallStrategy:
		return hooksOnlyWaiter{Waiter: legacy, waitDeletes: ws == noWaitStrategy}, nil
	case pollerStrategy:
		return pollerWaiter{Waiter: legacy, f: c.f, health: c.health}, nil
	}
	return legacy, nil
}

// rampedWaiter is Helm's legacy waiter reading as kube.WaitRamp says: Helm
// reads the resources at once and then every 2 seconds, so a resource ready
// a moment after the first read kept the action waiting for the rest of the
// interval. Here the first reads of Wait, WaitWithJobs and WaitForDelete are
// Helm's own, each a call with a timeout of the ramp's interval (a call
// reads once, at its start, and ends with its timeout); the last call is
// Helm's with the time left, so that a wait that runs out of time ends as
// Helm's does. What ready means is Helm's (its ReadyChecker), untouched.
// Hooks are watched (WatchUntilReady), not polled: they pass through.
type rampedWaiter struct {
	helmkube.Waiter
}

func (w rampedWaiter) Wait(list helmkube.ResourceList, timeout time.Duration) error {
	return rampCalls(timeout, func(t time.Duration) error { return w.Waiter.Wait(list, t) })
}

func (w rampedWaiter) WaitWithJobs(list helmkube.ResourceList, timeout time.Duration) error {
	return rampCalls(timeout, func(t time.Duration) error { return w.Waiter.WaitWithJobs(list, t) })
}

func (w rampedWaiter) WaitForDelete(list helmkube.ResourceList, timeout time.Duration) error {
	return rampCalls(timeout, func(t time.Duration) error { return w.Waiter.WaitForDelete(list, t) })
}

// legacyInterval is how often Helm's legacy waiter reads.
const legacyInterval = 2 * time.Second

// rampCalls runs wait, a Helm wait given its timeout, in the stages of
// kube.WaitRamp: in each, one call per interval, with the interval as its
// timeout; a call that ends other than out of time (done, or failed) ends
// the wait.
func rampCalls(timeout time.Duration, wait func(time.Duration) error) error {
	return kube.Ramp(timeout, legacyInterval, func(st kube.RampStage) (bool, error) {
		if st.Interval >= legacyInterval {
			return false, wait(st.Length) // the last stage: Helm's own
		}
		var err error
		for end := time.Now().Add(st.Length); time.Until(end) >= st.Interval; {
			if err = wait(st.Interval); err == nil || !errors.Is(err, context.DeadlineExceeded) {
				return false, err
			}
		}
		return true, err
	})
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

// pollerWaiter waits for the release's resources with kstatus (kube.Manager's
// Wait); hooks and deletions as the legacy Waiter it wraps.
type pollerWaiter struct {
	helmkube.Waiter
	f      *kube.Factory
	health *kube.HealthChecks
}

func (w pollerWaiter) Wait(list helmkube.ResourceList, timeout time.Duration) error {
	return w.wait(list, timeout, false)
}

func (w pollerWaiter) WaitWithJobs(list helmkube.ResourceList, timeout time.Duration) error {
	return w.wait(list, timeout, true)
}

func (w pollerWaiter) wait(list helmkube.ResourceList, timeout time.Duration, jobs bool) error {
	var entries []kube.Entry
	for _, info := range list {
		gk := info.Mapping.GroupVersionKind.GroupKind()
		if gk.Group == "apps" && gk.Kind == "Deployment" && paused(info.Object) {
			continue // as Helm's waiters
		}
		entries = append(entries, kube.Entry{ID: infoID(info)})
	}
	if len(entries) == 0 {
		return nil
	}
	m, err := w.f.Manager()
	if err != nil {
		return err
	}
	if w.health != nil {
		// health_check_exprs: their objects' status is their checks'.
		m = m.WithHealthChecks(w.health, jobs)
	} else if jobs {
		// A Job is Current once complete, not once started (kstatus's).
		m = m.WithCompleteJobs()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err = m.Wait(ctx, entries, kube.WaitOptions{Interval: kube.PollInterval, Timeout: timeout, FailFast: true})
	if err != nil && outOfTime(ctx, err) {
		// As Helm's waiters say it: the action's error then names the
		// objects not ready, by kstatus (explainTimeout).
		return context.DeadlineExceeded
	}
	return err
}

// outOfTime says whether the wait under ctx ended for lack of time: its
// context is done, fluxcd/pkg/ssa timed out, or a poll could not be sent
// before the deadline (client-go's rate limiter refuses a request that
// would end after it, before the context is done).
func outOfTime(ctx context.Context, err error) bool {
	msg := err.Error()
	return ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) ||
		strings.HasPrefix(msg, "timeout waiting for") || strings.Contains(msg, "would exceed context deadline")
}

// paused says whether obj is a Deployment whose rollout is paused.
func paused(obj runtime.Object) bool {
	u, err := toUnstructured(obj)
	if err != nil {
		return false
	}
	p, _, _ := unstructured.NestedBool(u.Object, "spec", "paused")
	return p
}

// waitStrategy is the wait of an action: wait_strategy's, or, when the
// action's waiting is disabled, only for hooks and deleted hooks.
func waitStrategy(spec *Spec, disable bool) helmkube.WaitStrategy {
	switch {
	case disable:
		return noWaitStrategy
	case spec.WaitStrategy == WaitLegacy:
		return helmkube.LegacyStrategy
	}
	return pollerStrategy
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

// uninstallWaitStrategy is the wait of an uninstall, under both wait
// strategies: Helm's legacy polling for the deletions, or none when disabled (Helm 3 still waited for the deletion of
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
