// Package release is the Helm release engine: helm-controller's HelmRelease
// semantics (install, upgrade, test, rollback, uninstall, remediation with
// retries, drift detection and correction) driven by plan and apply instead of
// a controller loop. It knows nothing of Terraform: a Spec goes in, a Status
// comes out, and the provider stores the Status in state between applies.
//
// Helm SDK imports stay inside this package and internal/engine/chart, so that
// the move to Helm v4 touches only those two.
package release

import (
	"slices"
	"time"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	helmcommon "helm.sh/helm/v4/pkg/release/common"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// Defaults of the Spec, as helm-controller's.
const (
	DefaultMaxHistory = 5
	DefaultTimeout    = 5 * time.Minute
	// DefaultValuesKey is the key of a values_from ConfigMap or Secret.
	DefaultValuesKey = "values.yaml"
	// DefaultDeletionPropagation is how an uninstall deletes the release's
	// objects.
	DefaultDeletionPropagation = "background"
)

// CRDPolicy says what happens to the CRDs in a chart's crds/ directory.
type CRDPolicy string

const (
	CRDsSkip          CRDPolicy = "Skip"
	CRDsCreate        CRDPolicy = "Create"
	CRDsCreateReplace CRDPolicy = "CreateReplace"
)

// Remediation strategies of an upgrade.
const (
	StrategyRollback  = "rollback"
	StrategyUninstall = "uninstall"
)

// DriftMode is drift_detection.mode: what refresh and apply do about the
// release's objects differing in the cluster. The empty mode is the default,
// DriftEnabled, unlike Flux's (disabled): in Terraform the plan is where
// changes are reviewed.
type DriftMode string

const (
	DriftDisabled DriftMode = "disabled"
	DriftWarn     DriftMode = "warn"
	DriftEnabled  DriftMode = "enabled"
)

// Apply methods of a release record: Helm 4's release.ApplyMethod, which
// Helm writes as `apply_method` in every record (a record without one, as
// Helm 3 wrote them, was client-side applied).
const (
	ApplyMethodCSA = "csa"
	ApplyMethodSSA = "ssa"
)

// Server-side apply modes of upgrade and rollback, helm-controller's
// ServerSideApplyMode: always, never, or as the release applied from did.
const (
	SSAEnabled  = "enabled"
	SSADisabled = "disabled"
	SSAAuto     = "auto"
)

// SSAModes are the valid modes, for validators and messages.
var SSAModes = []string{SSAEnabled, SSADisabled, SSAAuto}

// Wait strategies (helm-controller's waitStrategy.name): kstatus polling,
// or Helm 3's wait.
const (
	WaitPoller = "poller"
	WaitLegacy = "legacy"
)

// WaitStrategies are the valid wait strategies.
var WaitStrategies = []string{WaitPoller, WaitLegacy}

// Post-render strategies (helm-controller's postRenderStrategy): what Helm
// gives the post-renderers. nohooks: the templates only (Helm 3); combined:
// hooks and templates in one stream (Helm 4's default); separate: hooks and
// templates in two streams (Helm 4.2).
const (
	PostRenderNoHooks  = "nohooks"
	PostRenderCombined = "combined"
	PostRenderSeparate = "separate"
)

// PostRenderStrategies are the valid post-render strategies.
var PostRenderStrategies = []string{PostRenderNoHooks, PostRenderCombined, PostRenderSeparate}

// DriftModes are the valid modes, for validators and messages.
var DriftModes = []DriftMode{DriftEnabled, DriftWarn, DriftDisabled}

// effective is m, or the default when unset: the provider asks an unset mode
// what it does, before the engine applies Spec.withDefaults.
func (m DriftMode) effective() DriftMode {
	if m == "" {
		return DriftEnabled
	}
	return m
}

// Detects says whether refresh compares the objects with the cluster.
func (m DriftMode) Detects() bool { return m.effective() != DriftDisabled }

// Corrects says whether the plan shows drift going away and apply corrects it.
func (m DriftMode) Corrects() bool { return m.effective() == DriftEnabled }

// Warns says whether drift is reported and left alone.
func (m DriftMode) Warns() bool { return m.effective() == DriftWarn }

// valid says whether m is unset or one of DriftModes.
func (m DriftMode) valid() bool { return m == "" || slices.Contains(DriftModes, m) }

// Spec is the desired release: what a HelmRelease object's spec says.
type Spec struct {
	// Name and Namespace identify the resource as a HelmRelease object would be
	// identified: they name it in errors (`helmrelease default/podinfo: ...`),
	// make the default release name, and are the origin labels that
	// post-rendering puts on every object.
	Name      string
	Namespace string
	// ReleaseName is the Helm release name; empty means ReleaseName(spec).
	ReleaseName string
	// Owner is the owner ID of the resource instance (kube.NewOwnerID): every
	// release record an install or upgrade writes carries it as the label
	// kube.OwnerLabel, and a create goes on over a release in storage only
	// when it carries this ID. Empty when the instance has none: the plan of
	// a create, or a state written before owners were recorded.
	Owner string
	// TargetNamespace is where the release's objects go; empty means Namespace.
	TargetNamespace string
	// StorageNamespace holds Helm's release Secrets; empty means Namespace,
	// as helm-controller's (see StorageNamespace).
	StorageNamespace string
	// ServiceAccountName, when set, is impersonated for every Helm action.
	ServiceAccountName string
	// MaxHistory is how many release revisions Helm keeps; 0 keeps all, nil
	// means DefaultMaxHistory.
	MaxHistory *int
	// Timeout of each action unless the action's own timeout is set; 0
	// means DefaultTimeout.
	Timeout time.Duration
	// Description is Helm's release description that an install or upgrade
	// writes (hashicorp/helm's `description`, `helm upgrade --description`),
	// in place of Helm's "Install complete" or "Upgrade complete"; empty
	// leaves Helm's. Helm's rollback takes none: a rollback writes "Rollback
	// to <revision>". No digest covers it: the provider forces an upgrade
	// when it changes (Force), as it does for values_wo_version.
	Description string
	// ResetFailures says the configuration changed since the last apply (a
	// new generation, in Flux's terms; or a new reset token): the failure
	// counters start over, as they do when the chart or the values change.
	ResetFailures bool
	// Force is a new force token (Flux's forceAt), or a change that no digest
	// covers (values_wo_version, Description, a new Name or Namespace): the
	// first decision of this apply upgrades a release that is in sync (or
	// drifted), and installs or upgrades one whose retries are exhausted.
	// See forcedAction.
	Force bool

	// Dependencies are objects in the cluster that an install or upgrade
	// waits for, within Timeout: Flux's dependsOn. An unmet dependency is
	// not a failure of the release: nothing is done and nothing counted.
	Dependencies []kube.Dependency

	// ChartPath is a chart archive (.tgz) or directory on local disk: the
	// path of a stevedore_helmchart_artifact, or a chart the provider fetched.
	ChartPath string
	// ChartDigest identifies the chart's bytes (`sha256:<hex>`); a new digest
	// means an upgrade.
	ChartDigest string
	// PlannedConfigDigest is the config digest the plan showed, "" when it
	// showed none: Reconcile refuses, before any action, values that compose
	// to another digest (a values_from object changed since the plan).
	PlannedConfigDigest string
	// PlannedApplyMethod is the apply method the plan showed for the
	// release (Plan.ApplyMethod), "" when it showed none: Reconcile refuses,
	// before it runs, a first install or upgrade that would write with
	// another (StaleApplyMethodError).
	PlannedApplyMethod string

	// Values are the inline values; ValuesFrom are merged first, in order (a
	// TargetPath reference set into the result so far), and on top of them
	// Values with Sets set into them (InlineValues).
	Values     map[string]any
	ValuesFrom []ValuesReference
	// Sets are the entries of set, then set_list, then set_sensitive, each
	// in its order, set into Values as hashicorp/helm's helm_release sets
	// them (Helm's --set parser).
	Sets []SetValue
	// ValuesWriteOnly are merged last, over everything (`values_wo`, which
	// Terraform never stores). No config digest covers them: the desired
	// values and the release's stored ones are both digested without the
	// paths they set, so that a new write-only value alone is no change
	// (Force, from `values_wo_version`, upgrades with it), and removing them
	// is one.
	ValuesWriteOnly map[string]any

	// Helm3Defaults is the provider's helm3_defaults: the defaults of
	// helm-controller's UseHelm3Defaults feature gate (client-side apply for
	// installs, the legacy wait, post-renderers without hooks), for teams
	// that keep Helm 3's behaviour while they move.
	Helm3Defaults bool
	// WaitStrategy is how an action waits for the release's objects:
	// WaitPoller (kstatus) or WaitLegacy; empty means WaitPoller, or
	// WaitLegacy with Helm3Defaults.
	WaitStrategy string
	// PostRenderStrategy says what the post-renderers get; empty means
	// PostRenderCombined, or PostRenderNoHooks with Helm3Defaults.
	PostRenderStrategy string

	// CommonMetadata are labels and annotations put on every object the
	// release renders (commonmetadata.go).
	CommonMetadata CommonMetadata

	Install        Install
	Upgrade        Upgrade
	Test           Test
	Rollback       Rollback
	Uninstall      Uninstall
	DriftDetection DriftDetection
	PostRenderers  []PostRenderer

	// HealthCheckExprs are helm-controller's healthCheckExprs: CEL health
	// checks of custom resources, used by the poller wait and by the
	// report of the objects not ready (health_exprs.go).
	HealthCheckExprs []HealthCheckExpr
}

// withDefaults is a copy of s with every default of a Spec filled in: the one
// place they are decided (the comments of the fields say them). The engine's
// entry points apply it once, and everything after reads the spec as filled;
// the provider passes what the user wrote. Names (ReleaseName,
// StorageNamespace) are derived, not defaulted: the provider shows them.
func (s *Spec) withDefaults() *Spec {
	d := *s
	if d.MaxHistory == nil {
		d.MaxHistory = ptr(DefaultMaxHistory)
	}
	if d.Timeout <= 0 {
		d.Timeout = DefaultTimeout
	}
	for _, t := range []*time.Duration{&d.Install.Timeout, &d.Upgrade.Timeout, &d.Test.Timeout, &d.Rollback.Timeout, &d.Uninstall.Timeout} {
		if *t <= 0 {
			*t = d.Timeout
		}
	}
	if d.Install.ServerSideApply == nil {
		d.Install.ServerSideApply = ptr(!d.Helm3Defaults)
	}
	for _, m := range []*string{&d.Upgrade.ServerSideApply, &d.Rollback.ServerSideApply} {
		if *m == "" {
			*m = SSAAuto // also with Helm3Defaults, as helm-controller's
		}
	}
	if d.WaitStrategy == "" {
		d.WaitStrategy = WaitPoller
		if d.Helm3Defaults {
			d.WaitStrategy = WaitLegacy
		}
	}
	if d.PostRenderStrategy == "" {
		d.PostRenderStrategy = PostRenderCombined
		if d.Helm3Defaults {
			d.PostRenderStrategy = PostRenderNoHooks
		}
	}
	if d.Install.CRDs == "" {
		d.Install.CRDs = CRDsCreate
	}
	if d.Upgrade.CRDs == "" {
		d.Upgrade.CRDs = CRDsSkip
	}
	ir, ur := &d.Install.Remediation, &d.Upgrade.Remediation
	if ir.IgnoreTestFailures == nil {
		ir.IgnoreTestFailures = ptr(d.Test.IgnoreFailures)
	}
	if ir.RemediateLastFailure == nil {
		ir.RemediateLastFailure = ptr(false)
	}
	if ur.IgnoreTestFailures == nil {
		ur.IgnoreTestFailures = ptr(d.Test.IgnoreFailures)
	}
	if ur.RemediateLastFailure == nil {
		ur.RemediateLastFailure = ptr(ur.Retries > 0)
	}
	if ur.Strategy == "" {
		ur.Strategy = StrategyRollback
	}
	if d.Uninstall.DeletionPropagation == "" {
		d.Uninstall.DeletionPropagation = DefaultDeletionPropagation
	}
	if d.Upgrade.ChartNameChangeStrategy == "" {
		d.Upgrade.ChartNameChangeStrategy = ChartNameReinstall
	}
	d.DriftDetection.Mode = d.DriftDetection.Mode.effective()
	d.ValuesFrom = append([]ValuesReference(nil), s.ValuesFrom...)
	for i := range d.ValuesFrom {
		if d.ValuesFrom[i].ValuesKey == "" {
			d.ValuesFrom[i].ValuesKey = DefaultValuesKey
		}
	}
	return &d
}

func ptr[T any](v T) *T { return &v }

// ValuesReference is a values_from entry: a ConfigMap or Secret in the
// resource's Namespace.
type ValuesReference struct {
	Kind       string // ConfigMap or Secret
	Name       string
	ValuesKey  string // empty means DefaultValuesKey
	TargetPath string // Helm --set path; empty merges the whole document
	Optional   bool   // a missing object is tolerated; a missing key is not
	Literal    bool   // the value is set at TargetPath verbatim, as helm --set-literal
}

// Install are the install options.
type Install struct {
	Timeout         time.Duration // 0: Spec.Timeout
	CRDs            CRDPolicy     // empty: CRDsCreate
	Replace         bool
	CreateNamespace bool
	// ServerSideApply installs with server-side apply; nil means true, or
	// false with Helm3Defaults.
	ServerSideApply          *bool
	DisableHooks             bool
	DisableOpenAPIValidation bool
	DisableSchemaValidation  bool // values.schema.json skipped, at plan as at apply
	DisableWait              bool
	DisableWaitForJobs       bool
	Remediation              InstallRemediation

	// Strategy is install.strategy (strategy.go): RemediateOnFailure
	// (empty) or RetryOnFailure.
	Strategy ActionStrategy
	// TakeOwnership takes objects that exist and belong to no release or
	// other tool (takeownership.go); false by default, unlike Flux's.
	TakeOwnership bool
}

// InstallRemediation says what happens after a failed install: uninstall and
// retry.
type InstallRemediation struct {
	// Retries before giving up; negative is infinite.
	Retries int
	// IgnoreTestFailures; nil means Test.IgnoreFailures.
	IgnoreTestFailures *bool
	// RemediateLastFailure; nil means false.
	RemediateLastFailure *bool
}

// Upgrade are the upgrade options.
type Upgrade struct {
	Timeout                  time.Duration // 0: Spec.Timeout
	CRDs                     CRDPolicy     // empty: CRDsSkip
	CleanupOnFail            bool
	DisableHooks             bool
	DisableOpenAPIValidation bool
	DisableSchemaValidation  bool // values.schema.json skipped, at plan as at apply
	DisableWait              bool
	DisableWaitForJobs       bool
	// ChartNameChangeStrategy is one of ChartNameChangeStrategies; empty
	// means ChartNameReinstall (chartname.go).
	ChartNameChangeStrategy string
	// Force replaces objects where a patch fails under client-side apply,
	// and forces field conflicts under server-side apply (which always
	// forces them, as helm-controller's).
	Force          bool
	PreserveValues bool
	// ServerSideApply is one of SSAModes; empty means SSAAuto: the method
	// of the latest release.
	ServerSideApply string
	Remediation     UpgradeRemediation

	// Strategy is upgrade.strategy (strategy.go).
	Strategy ActionStrategy
	// TakeOwnership: as Install.TakeOwnership, for objects new to the
	// release in an upgrade.
	TakeOwnership bool
}

// UpgradeRemediation says what happens after a failed upgrade.
type UpgradeRemediation struct {
	// Retries before giving up; negative is infinite.
	Retries int
	// IgnoreTestFailures; nil means Test.IgnoreFailures.
	IgnoreTestFailures *bool
	// RemediateLastFailure; nil means Retries > 0.
	RemediateLastFailure *bool
	// Strategy is StrategyRollback (empty) or StrategyUninstall.
	Strategy string
}

// Test are the Helm test options.
type Test struct {
	Enable         bool
	IgnoreFailures bool
	Timeout        time.Duration // 0: Spec.Timeout
	Filters        []TestFilter
}

// TestFilter selects test hooks by name: Exclude drops the named hook, otherwise
// only the named hooks run.
type TestFilter struct {
	Name    string
	Exclude bool
}

// Rollback are the rollback options (remediation of a failed upgrade).
type Rollback struct {
	Timeout            time.Duration // 0: Spec.Timeout
	CleanupOnFail      bool
	DisableHooks       bool
	DisableWait        bool
	DisableWaitForJobs bool
	Force              bool
	// ServerSideApply is one of SSAModes; empty means SSAAuto: the method
	// of the revision rolled back to.
	ServerSideApply string
}

// Uninstall are the uninstall options.
type Uninstall struct {
	Timeout             time.Duration // 0: Spec.Timeout
	DeletionPropagation string        // background, foreground or orphan; empty: DefaultDeletionPropagation
	DisableHooks        bool
	DisableWait         bool
	KeepHistory         bool
}

// DriftDetection says whether refresh compares the release's objects with the
// cluster, and what apply does about differences.
type DriftDetection struct {
	Mode   DriftMode
	Ignore []jsondiff.IgnoreRule
}

// PostRenderer is one post_renderers entry.
type PostRenderer struct {
	Kustomize *Kustomize
}

// Kustomize is a kustomize post-renderer: patches and image overrides applied
// to the rendered manifest with kustomize's API.
type Kustomize struct {
	Patches []KustomizePatch
	Images  []KustomizeImage
}

// KustomizePatch is a strategic merge or JSON 6902 patch, optionally limited to
// the objects a target selects.
type KustomizePatch struct {
	Patch  string
	Target *KustomizeSelector
}

// KustomizeSelector is kustomize's patch target.
type KustomizeSelector struct {
	Group, Version, Kind, Name, Namespace string
	AnnotationSelector, LabelSelector     string
}

// KustomizeImage is kustomize's image override.
type KustomizeImage struct {
	Name, NewName, NewTag, Digest string
}

// Status is what the engine observed and did: the provider keeps it in state
// and hands it back as prev, which is how failure counters and history survive
// between applies.
type Status struct {
	// ReleaseName and StorageNamespace locate the release.
	ReleaseName      string
	StorageNamespace string
	// Status is the latest release's Helm status (deployed, failed,
	// pending-install, ...); empty when there is no release.
	Status       string
	Version      int // Helm revision of the latest release
	ChartName    string
	ChartVersion string
	AppVersion   string
	// ApplyMethod is how the latest release's objects were written:
	// ApplyMethodSSA or ApplyMethodCSA (a record without one).
	ApplyMethod string
	// ConfigDigest is the digest of the values of the latest release we
	// attempted, as fluxcd/pkg/chartutil DigestValues computes it.
	ConfigDigest string
	// ChartDigest is the Spec.ChartDigest of the latest attempt.
	ChartDigest string
	// PostRenderersDigest is the digest of the post-renderers of the latest
	// attempt.
	PostRenderersDigest string
	FirstDeployed       time.Time
	LastDeployed        time.Time

	// History, newest first, as helm-controller's status.history.
	History []Snapshot
	// Conditions: Ready, Released, TestSuccess, Remediated.
	Conditions []Condition

	// Failures counts failed actions of any kind since the chart or config
	// last changed; InstallFailures and UpgradeFailures the failed installs
	// and upgrades (those that wrote a release).
	Failures        int64
	InstallFailures int64
	UpgradeFailures int64

	// LastAttemptedReleaseAction is "install" or "upgrade": the last release
	// action tried, which picks the remediation settings that apply to a
	// failure (helm-controller's status field of the same name). The
	// provider should keep it in state; when it is empty the engine infers it
	// from the release's description.
	LastAttemptedReleaseAction string

	// Drift is the objects of the release that differ in the cluster, found
	// by Observe.
	Drift []kube.Drift
	// Fingerprints are those of the objects the last drift check found in
	// sync: the next check dry-runs only the objects written since. The
	// provider keeps them in private state.
	Fingerprints kube.Fingerprints
}

// StatusDeployed is the Helm status in which an apply that succeeds leaves
// the release: the engine's loop ends only on a deployed release in sync (or
// drifted, in warn mode).
const StatusDeployed = string(helmcommon.StatusDeployed)

// Snapshot is one release revision, with helm-controller's snapshot fields.
type Snapshot struct {
	Name          string
	Namespace     string
	Version       int
	Status        string
	ChartName     string
	ChartVersion  string
	AppVersion    string
	ConfigDigest  string
	Digest        string // digest of the release object, as helm-controller's
	FirstDeployed time.Time
	LastDeployed  time.Time
	Deleted       time.Time
	TestHooks     []TestHook

	// ChartDigest is the Spec.ChartDigest of the chart that made this
	// revision, when we made it (empty for revisions made elsewhere or
	// imported). It tells a repackaged chart of the same version apart, as
	// helm-controller's OCIDigest does. The provider should keep it in state.
	ChartDigest string
}

// TestHook is the result of one test hook of a release.
type TestHook struct {
	Name          string
	Phase         string // Succeeded, Failed, Running, Unknown
	LastStarted   time.Time
	LastCompleted time.Time
}

// Condition is a kstatus-style condition of the release: Ready, Released,
// TestSuccess, Remediated, Stalled.
type Condition = kube.Condition

// Action is what Plan says apply would do first.
type Action string

const (
	ActionNone          Action = ""
	ActionInstall       Action = "install"
	ActionUpgrade       Action = "upgrade"
	ActionUnlock        Action = "unlock"
	ActionRollback      Action = "rollback"
	ActionUninstall     Action = "uninstall"
	ActionTest          Action = "test"
	ActionCorrect       Action = "correct-drift"
	ActionUpgradeFailed Action = "upgrade-failed" // upgrade a failed release (retries left, or no remediation applies)
)

// Plan is what apply would do, decided without changing anything.
type Plan struct {
	// ReleaseName is the release name the spec resolves to.
	ReleaseName string
	// ConfigDigest of the values apply would use (values_from read now).
	ConfigDigest string
	// PostRenderersDigest of the spec's post-renderers.
	PostRenderersDigest string
	// Action is the first action apply would take; ActionNone when the
	// release is in sync.
	Action Action
	// Reason says why, in a sentence, for the plan's diagnostics; empty with
	// ActionNone.
	Reason string
	// Stalled, when not empty, says why apply would fail at once without
	// doing anything: remediation retries are exhausted (RetriesExceeded).
	// Action is then ActionNone.
	Stalled string
	// Conflict is set when a create would find a release of the same name
	// that this resource did not make: apply refuses it (unless this plan
	// replaces the resource, whose release is uninstalled first).
	Conflict *ExistsError
	// ValuesMissing, when not empty, says that a values_from object is not
	// in the cluster: the values, and so what apply does, are not known;
	// apply fails unless it exists by then. Only ReleaseName and
	// PostRenderersDigest are set besides.
	ValuesMissing string
	// ChangedOutside, when not empty, says in a sentence that the release in
	// storage is not the one this resource made (a `helm upgrade` or
	// `helm rollback` by another client), with the values that differ.
	ChangedOutside string
	// Preview is what the install or upgrade Action would change in the
	// cluster; nil for other actions.
	Preview *Preview
	// ApplyMethod is the apply method (ApplyMethodSSA or ApplyMethodCSA)
	// of the release that an apply which succeeds leaves, when Action
	// writes one and the plan can know it (plannedApplyMethod); empty
	// otherwise.
	ApplyMethod string
	// KeepsFirstDeployed says that an apply that succeeds leaves the
	// release's first deployment date as it is (keepsFirstDeployed).
	KeepsFirstDeployed bool
}
