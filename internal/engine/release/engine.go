package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	helmcommon "helm.sh/helm/v4/pkg/release/common"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// Engine runs Helm actions against one cluster. Its entry points (Plan,
// CreateConflict, Observe, Reconcile, Uninstall, Import) take the spec as the
// user wrote it and apply its defaults once (Spec.withDefaults). It is safe for concurrent use
// by many resources of one provider process: they share the kube factory (one
// discovery, one RESTMapper), and the releases refresh read, which the plan
// that follows takes instead of reading storage again. A provider process
// keeps one Engine.
type Engine struct {
	kube *kube.Factory
	read *readCache
	// helm3Defaults is the provider's helm3_defaults (Spec.Helm3Defaults)
	// for every spec the engine is given.
	helm3Defaults bool
	// noFlux is set once the API server said it serves no Flux HelmRelease
	// (FluxChartSource): each later import would otherwise rediscover the
	// API groups, for a kind that rarely appears while a provider runs.
	noFlux atomic.Bool
}

// Option configures an Engine.
type Option func(*Engine)

// WithHelm3Defaults gives every spec the defaults of helm-controller's
// UseHelm3Defaults feature gate (Spec.Helm3Defaults).
func WithHelm3Defaults(on bool) Option { return func(e *Engine) { e.helm3Defaults = on } }

// New returns an Engine. It does no I/O.
func New(f *kube.Factory, opts ...Option) *Engine {
	e := &Engine{kube: f, read: newReadCache()}
	for _, o := range opts {
		o(e)
	}
	return e
}

// withDefaults is spec with the engine's options and every default filled
// in: what each entry point works on.
func (e *Engine) withDefaults(spec *Spec) *Spec {
	s := *spec
	s.Helm3Defaults = s.Helm3Defaults || e.helm3Defaults
	return s.withDefaults()
}

// Plan decides, without changing anything, what Reconcile would do first for
// spec given the status of the last apply (nil on create). It reads the
// release from Helm storage and the values_from objects. Drift is taken from
// prev (refresh has just detected it) rather than detected again.
func (e *Engine) Plan(ctx context.Context, spec *Spec, prev *Status) (*Plan, error) {
	spec = e.withDefaults(spec)
	p := &Plan{ReleaseName: ReleaseName(spec), PostRenderersDigest: renderDigest(spec)}
	st := cloneStatus(prev)
	r, err := e.prepare(ctx, spec, st)
	if errors.Is(err, ErrValuesFromMissing) {
		// What apply will do depends on values that are not there yet.
		p.ValuesMissing = objectError(spec, err).Error()
		return p, nil
	}
	if err != nil {
		return nil, objectError(spec, err)
	}
	p.ConfigDigest = r.desired.configDigest
	r.startAttempt(prev)
	if prev != nil {
		r.preread = e.read.take(r.sess.storageNS, r.name, prev.Version)
	}
	s, err := r.observeState(ctx, false)
	if err != nil {
		return nil, objectError(spec, err)
	}
	if prev == nil {
		p.Conflict = createConflict(s, spec, r.sess.storageNS)
	} else if s.kind == stateUnmanaged {
		p.ChangedOutside = changedOutside(s.rls, latest(st.History), r.values, r.sess.storageNS, r.desired.chartName+"@"+r.desired.chartVersion)
	}
	if s.kind == stateInSync && spec.DriftDetection.Mode.Corrects() && prev != nil && len(prev.Drift) > 0 {
		s = releaseState{kind: stateDrifted, rls: s.rls, drift: prev.Drift,
			reason: fmt.Sprintf("%d object(s) of the release differ in the cluster", len(prev.Drift))}
	}
	act, reason, err := r.decide(s)
	var ex *exhaustedError
	switch {
	case errors.As(err, &ex):
		// Apply would fail at once, and keep failing until a new
		// configuration resets the counters.
		p.Stalled = ex.Error()
		return p, nil
	case err != nil:
		return nil, objectError(spec, err)
	}
	if act == ActionNone {
		// In sync (or drifted in warn mode, which the provider reports from
		// the drift itself): nothing to explain.
		reason = ""
	}
	p.Action, p.Reason = act, reason
	p.KeepsFirstDeployed = keepsFirstDeployed(act, r.spec)
	p.ApplyMethod = plannedApplyMethod(act, r.spec, s.rls, st.History)
	if p.Conflict != nil && prev == nil {
		// Apply refuses this create. What its install would create is still
		// what the plan shows, worked out as if the name were free: the plan
		// that found no release (another apply installed it since) showed
		// exactly that, and apply's final plan must agree with it.
		if p.Preview, err = r.previewAsNew(ctx); err != nil {
			p.Preview = &Preview{Unknown: err.Error()}
		}
		return p, nil
	}
	// What an install or upgrade would change, dry-run; nothing for the
	// other actions, so a plan without one makes no extra request.
	p.Preview, err = r.preview(ctx, act, s)
	if act == ActionInstall && prev == nil && (err != nil || p.Preview != nil && p.Preview.Unknown != "") {
		// Another apply may have installed the release since storage was
		// read (its objects appear, or Helm's dry run finds the name
		// taken): then that is what the plan says.
		r.preread = nil
		if s2, oerr := r.observeState(ctx, false); oerr == nil {
			if p.Conflict = createConflict(s2, spec, r.sess.storageNS); p.Conflict != nil {
				if p.Preview, err = r.previewAsNew(ctx); err != nil {
					p.Preview = &Preview{Unknown: err.Error()}
				}
				return p, nil
			}
		}
	}
	if err != nil {
		return nil, objectError(spec, err)
	}
	return p, nil
}

// CreateConflict is what a create of spec would find in storage that it must
// not touch (see createConflict), read without the chart: the plan of a
// create says it as soon as the release's names are known, also when the
// chart is not (an artifact created in the same apply).
func (e *Engine) CreateConflict(ctx context.Context, spec *Spec) (*ExistsError, error) {
	spec = e.withDefaults(spec)
	sess, err := newSession(e.kube, spec)
	if err != nil {
		return nil, objectError(spec, err)
	}
	name := ReleaseName(spec)
	rls, err := sess.storage(nil).Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, objectError(spec, fmt.Errorf("read release %s from storage namespace %s%s: %w", name, sess.storageNS, sess.describeActor(), err))
	}
	if rls.Info == nil || rls.Info.Status == helmcommon.StatusUninstalled || ownedBy(rls, spec) {
		return nil, nil
	}
	return existsError(rls, spec, sess.storageNS), nil
}

// Observe is refresh: it reads the latest release from Helm storage and, with
// drift detection on, the drift of its objects. It returns (nil, nil) when the
// release is gone. Counters and history missing from storage come from prev.
func (e *Engine) Observe(ctx context.Context, spec *Spec, prev *Status) (*Status, error) {
	spec = e.withDefaults(spec)
	if err := validateSpec(spec); err != nil {
		return nil, objectError(spec, err)
	}
	sess, err := newSession(e.kube, spec)
	if err != nil {
		return nil, objectError(spec, err)
	}
	name := ReleaseName(spec)
	store := sess.storage(nil)
	rls, err := store.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, objectError(spec, fmt.Errorf("read release %s from storage namespace %s%s: %w", name, sess.storageNS, sess.describeActor(), err))
	}
	if rls.Info == nil || rls.Info.Status == helmcommon.StatusUninstalled {
		// Uninstalled with keep_history is gone for the user: create installs
		// it again, replacing the kept record.
		return nil, nil
	}
	var st *Status
	if prev == nil || len(prev.History) == 0 {
		hist, err := store.History(name)
		if err != nil {
			return nil, objectError(spec, err)
		}
		st = statusFromHistory(hist, spec.Test.Filters)
	} else {
		st = cloneStatus(prev)
		if cur := latest(st.History); cur != nil && !cur.targets(rls) {
			// Changed outside stevedore: what became of the releases this
			// resource made is in storage (only then: a LIST per refresh
			// would cost every plan).
			hist, err := store.History(name)
			if err != nil {
				return nil, objectError(spec, err)
			}
			st.History = refreshKnown(st.History, hist)
		}
	}
	st.ReleaseName, st.StorageNamespace = name, sess.storageNS
	setRelease(st, rls)
	defer e.read.put(sess.storageNS, rls)
	st.Drift, st.Fingerprints = nil, nil
	if spec.DriftDetection.Mode.Detects() && rls.Info.Status == helmcommon.StatusDeployed {
		var since kube.Fingerprints
		if prev != nil {
			since = prev.Fingerprints
		}
		if st.Drift, st.Fingerprints, err = detectDrift(ctx, sess.f, spec, rls, since, true); err != nil {
			return nil, objectError(spec, err)
		}
	}
	return st, nil
}

// Reconcile is apply: helm-controller's state machine until the release is in
// sync or remediation is exhausted. The Status always says what really
// happened, also when the error is not nil, so that state saved with the error
// lets the next apply continue. Before it installs or upgrades, it waits for
// spec.Dependencies; when they are not met and nothing was done, the error is
// a *kube.DependencyNotReadyError (or *kube.DependencyError) and the Status is
// prev with Ready=False (DependencyNotReady), nil at create.
func (e *Engine) Reconcile(ctx context.Context, spec *Spec, prev *Status) (*Status, error) {
	spec = e.withDefaults(spec)
	st := cloneStatus(prev)
	st.ReleaseName, st.StorageNamespace = ReleaseName(spec), StorageNamespace(spec)
	e.read.forget(st.StorageNamespace, st.ReleaseName)
	r, err := e.prepare(ctx, spec, st)
	if err != nil {
		markError(st, err)
		return st, objectError(spec, err)
	}
	if d := spec.PlannedConfigDigest; d != "" && d != r.desired.configDigest {
		// Nothing was done: there is nothing new to save.
		return nil, objectError(spec, fielderr.Wrap("values_from", &StaleValuesError{Planned: d, Now: r.desired.configDigest}))
	}
	if err := checkChartNameChange(spec, prev, r.desired.chartName); err != nil {
		// Nothing was done: there is nothing new to save.
		return nil, objectError(spec, err)
	}
	r.startAttempt(prev)
	if prev == nil {
		// Create: a release of this name that we did not make is refused
		// before anything is done, and nothing is saved.
		s, err := r.observeState(ctx, false)
		if err != nil {
			markError(st, err)
			return st, objectError(spec, err)
		}
		if c := createConflict(s, spec, r.sess.storageNS); c != nil {
			return nil, objectError(spec, c)
		}
		// Without an owner ID (a caller that records none) nothing tells
		// this apply's own release from another's: only the first look
		// above refuses.
		r.creating = spec.Owner != ""
	}
	err = r.reconcile(ctx)
	if ex := (*ExistsError)(nil); prev == nil && errors.As(err, &ex) {
		// Lost the race for the name: nothing was written, nothing is
		// saved, so a destroy cannot uninstall the winner's release.
		return nil, objectError(spec, err)
	}
	if dependencyProblem(err) && !r.acted {
		// Nothing was done: no release was written, no failure counted.
		return untouched(prev, err), objectError(spec, err)
	}
	// The status is finished with a fresh context: an apply cut short must
	// still save what it did.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	r.finish(fctx)
	markStalled(st, err)
	if err != nil {
		if dependencyProblem(err) {
			markDependencyNotReady(st, err)
		} else if c := getCondition(st, CondReady); c == nil || c.Status == "True" {
			markError(st, err)
		}
		return st, objectError(spec, err)
	}
	return st, nil
}

// finishTimeout bounds the final reads of Reconcile.
const finishTimeout = 30 * time.Second

// Uninstall removes the release with spec.Uninstall's options; a release that
// is already gone is not an error. kept is Helm's account of the objects it
// left in the cluster, "" when none: those its resource policy keeps
// (`helm.sh/resource-policy: keep`) and, since Helm 4.3, those that no longer
// carry the release's `meta.helm.sh/release-name` and
// `meta.helm.sh/release-namespace` annotations (taken over by another
// release or tool), or that it could not read to check.
func (e *Engine) Uninstall(ctx context.Context, spec *Spec) (kept string, err error) {
	spec = e.withDefaults(spec)
	if err := validateSpec(spec); err != nil {
		return "", objectError(spec, err)
	}
	sess, err := newSession(e.kube, spec)
	if err != nil {
		return "", objectError(spec, err)
	}
	name := ReleaseName(spec)
	e.read.forget(sess.storageNS, name)
	cfg := sess.config(nil)
	rls, err := releaseStore{cfg.Releases}.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return "", nil
	}
	if err != nil {
		return "", objectError(spec, fmt.Errorf("read release %s from storage namespace %s%s: %w", name, sess.storageNS, sess.describeActor(), err))
	}
	if rls.Info != nil && rls.Info.Status == helmcommon.StatusUninstalled && spec.Uninstall.KeepHistory {
		return "", nil // uninstalled before, history kept as asked
	}
	if id := rls.Labels[kube.OwnerLabel]; spec.Owner != "" && id != "" && id != spec.Owner {
		return "", objectError(spec, &OwnedElsewhereError{ReleaseName: name, StorageNamespace: sess.storageNS, Owner: releaseOwner(rls)})
	}
	un := newUninstall(cfg, spec)
	un.IgnoreNotFound = true
	res, err := un.Run(name)
	if err != nil {
		if errors.Is(err, driver.ErrReleaseNotFound) || strings.Contains(err.Error(), "is already deleted") {
			return "", nil
		}
		return "", objectError(spec, fmt.Errorf("uninstall failed: %w", err))
	}
	if res != nil {
		kept = strings.TrimSpace(res.Info)
	}
	return kept, nil
}
