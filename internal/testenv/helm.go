package testenv

import (
	"fmt"
	"log/slog"
	"sort"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmkube "helm.sh/helm/v4/pkg/kube"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release/helmfm"
)

// helmConfig is an action configuration against the cluster of kubeconfig,
// with release Secrets in namespace: what the helm CLI would use.
func helmConfig(kubeconfig, namespace string) (*action.Configuration, error) {
	return helmConfigIn(kubeconfig, namespace, namespace)
}

// HelmFieldManager is the field manager of the releases the tests make
// "from outside" with the Helm SDK: the Helm CLI's (its binary's name).
const HelmFieldManager = "helm"

// helmConfigIn is an action configuration against the cluster of
// kubeconfig, with objects in namespace and release Secrets in
// storageNamespace, writing under HelmFieldManager.
func helmConfigIn(kubeconfig, storageNamespace, namespace string) (*action.Configuration, error) {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	flags.Namespace = &namespace
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	if err := cfg.Init(flags, storageNamespace, "secret"); err != nil {
		return nil, fmt.Errorf("helm configuration: %w", err)
	}
	cfg.KubeClient = &helmfm.Client{Interface: cfg.KubeClient, Manager: HelmFieldManager}
	return cfg, nil
}

// The releases the tests make "from outside" are made as the Helm 3 CLI
// made them: client-side apply, no wait but for hooks, hooks not
// post-rendered.

func helm3Install(cfg *action.Configuration) *action.Install {
	in := action.NewInstall(cfg)
	in.ServerSideApply, in.WaitStrategy, in.PostRenderStrategy = false, helmkube.HookOnlyStrategy, action.PostRenderStrategyNoHooks
	return in
}

func helm3Upgrade(cfg *action.Configuration) *action.Upgrade {
	up := action.NewUpgrade(cfg)
	up.ServerSideApply, up.WaitStrategy, up.PostRenderStrategy = "false", helmkube.HookOnlyStrategy, action.PostRenderStrategyNoHooks
	return up
}

func helm3Rollback(cfg *action.Configuration) *action.Rollback {
	rb := action.NewRollback(cfg)
	rb.ServerSideApply, rb.WaitStrategy = "false", helmkube.HookOnlyStrategy
	return rb
}

// HelmInstall installs chartPath as release name in namespace with the Helm
// SDK, as a user's `helm install` would, outside stevedore: for import tests.
func HelmInstall(kubeconfig, namespace, name, chartPath string, values map[string]any) error {
	cfg, err := helmConfig(kubeconfig, namespace)
	if err != nil {
		return err
	}
	ch, err := loader.Load(chartPath)
	if err != nil {
		return fmt.Errorf("helm install %s/%s: %w", namespace, name, err)
	}
	install := helm3Install(cfg)
	install.ReleaseName, install.Namespace = name, namespace
	if _, err := install.Run(ch, values); err != nil {
		return fmt.Errorf("helm install %s/%s: %w", namespace, name, err)
	}
	return nil
}

// HelmUpgrade upgrades release name in namespace to chartPath with values,
// as another client's `helm upgrade` would.
func HelmUpgrade(kubeconfig, namespace, name, chartPath string, values map[string]any) error {
	cfg, err := helmConfig(kubeconfig, namespace)
	if err != nil {
		return err
	}
	ch, err := loader.Load(chartPath)
	if err != nil {
		return fmt.Errorf("helm upgrade %s/%s: %w", namespace, name, err)
	}
	up := helm3Upgrade(cfg)
	up.Namespace = namespace
	if _, err := up.Run(name, ch, values); err != nil {
		return fmt.Errorf("helm upgrade %s/%s: %w", namespace, name, err)
	}
	return nil
}

// HelmRollback rolls release name in namespace back to revision, as
// another client's `helm rollback` would.
func HelmRollback(kubeconfig, namespace, name string, revision int) error {
	cfg, err := helmConfig(kubeconfig, namespace)
	if err != nil {
		return err
	}
	rb := helm3Rollback(cfg)
	rb.Version = revision
	if err := rb.Run(name); err != nil {
		return fmt.Errorf("helm rollback %s/%s to %d: %w", namespace, name, revision, err)
	}
	return nil
}

// HelmUninstall uninstalls release name from namespace with the Helm SDK, as
// a user's `helm uninstall` would: for tests that leave a release behind on
// purpose.
func HelmUninstall(kubeconfig, namespace, name string) error {
	cfg, err := helmConfig(kubeconfig, namespace)
	if err != nil {
		return err
	}
	un := action.NewUninstall(cfg)
	un.WaitStrategy = helmkube.HookOnlyStrategy
	if _, err := un.Run(name); err != nil {
		return fmt.Errorf("helm uninstall %s/%s: %w", namespace, name, err)
	}
	return nil
}

// SetReleaseStatus rewrites the status of the latest revision of a release in
// storage, as an apply killed halfway leaves it (pending-install,
// pending-upgrade, ...).
func SetReleaseStatus(kubeconfig, namespace, name string, status helmcommon.Status) error {
	return rewriteLast(kubeconfig, namespace, name, func(rel *helmrelease.Release) { rel.Info.Status = status })
}

// DropReleaseChart rewrites the latest revision of a release in storage
// without its chart, as a corrupted or hand-edited record has it.
func DropReleaseChart(kubeconfig, namespace, name string) error {
	return rewriteLast(kubeconfig, namespace, name, func(rel *helmrelease.Release) { rel.Chart = nil })
}

// rewriteLast changes the latest revision of a release in storage with edit.
func rewriteLast(kubeconfig, namespace, name string, edit func(*helmrelease.Release)) error {
	cfg, err := helmConfig(kubeconfig, namespace)
	if err != nil {
		return err
	}
	reli, err := cfg.Releases.Last(name)
	if err != nil {
		return fmt.Errorf("release %s/%s: %w", namespace, name, err)
	}
	rel, ok := reli.(*helmrelease.Release)
	if !ok {
		return fmt.Errorf("release %s/%s: of type %T", namespace, name, reli)
	}
	edit(rel)
	if err := cfg.Releases.Update(rel); err != nil {
		return fmt.Errorf("release %s/%s: %w", namespace, name, err)
	}
	return nil
}

// ReleaseRevisions returns the revisions of a release in storage, oldest
// first, as "<version>:<status>".
func ReleaseRevisions(kubeconfig, namespace, name string) ([]string, error) {
	cfg, err := helmConfig(kubeconfig, namespace)
	if err != nil {
		return nil, err
	}
	hi, err := cfg.Releases.History(name)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: %w", namespace, name, err)
	}
	h := make([]*helmrelease.Release, len(hi))
	for i, r := range hi {
		var ok bool
		if h[i], ok = r.(*helmrelease.Release); !ok {
			return nil, fmt.Errorf("release %s/%s: of type %T", namespace, name, r)
		}
	}
	sort.Slice(h, func(i, j int) bool { return h[i].Version < h[j].Version })
	out := make([]string, len(h))
	for i, r := range h {
		out[i] = fmt.Sprintf("%d:%s", r.Version, r.Info.Status)
	}
	return out, nil
}

// lastRelease is the latest revision of a release in storage.
func lastRelease(kubeconfig, namespace, name string) (*helmrelease.Release, error) {
	cfg, err := helmConfig(kubeconfig, namespace)
	if err != nil {
		return nil, err
	}
	rlsi, err := cfg.Releases.Last(name)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: %w", namespace, name, err)
	}
	rls, ok := rlsi.(*helmrelease.Release)
	if !ok {
		return nil, fmt.Errorf("release %s/%s: of type %T", namespace, name, rlsi)
	}
	return rls, nil
}

// ReleaseValues returns the user-supplied values of the latest revision of a
// release in storage.
func ReleaseValues(kubeconfig, namespace, name string) (map[string]any, error) {
	rls, err := lastRelease(kubeconfig, namespace, name)
	if err != nil {
		return nil, err
	}
	return rls.Config, nil
}

// ReleaseDescription returns Helm's description of the latest revision of a
// release in storage, as `helm history` shows it.
func ReleaseDescription(kubeconfig, namespace, name string) (string, error) {
	rls, err := lastRelease(kubeconfig, namespace, name)
	if err != nil {
		return "", err
	}
	return rls.Info.Description, nil
}

// ReleaseManifest returns the manifest of the latest revision of a release
// in storage (its hooks left out), as `helm get manifest` prints it.
func ReleaseManifest(kubeconfig, namespace, name string) (string, error) {
	rls, err := lastRelease(kubeconfig, namespace, name)
	if err != nil {
		return "", err
	}
	return rls.Manifest, nil
}
