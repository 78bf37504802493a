package testenv

import (
	"fmt"
	"log"
	"sort"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// helmConfig is an action configuration against the cluster of kubeconfig,
// with release Secrets in namespace: what the helm CLI would use.
func helmConfig(kubeconfig, namespace string) (*action.Configuration, error) {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	flags.Namespace = &namespace
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, namespace, "secret", log.Printf); err != nil {
		return nil, fmt.Errorf("helm configuration: %w", err)
	}
	return cfg, nil
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
	install := action.NewInstall(cfg)
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
	up := action.NewUpgrade(cfg)
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
	rb := action.NewRollback(cfg)
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
	if _, err := action.NewUninstall(cfg).Run(name); err != nil {
		return fmt.Errorf("helm uninstall %s/%s: %w", namespace, name, err)
	}
	return nil
}

// SetReleaseStatus rewrites the status of the latest revision of a release in
// storage, as an apply killed halfway leaves it (pending-install,
// pending-upgrade, ...).
func SetReleaseStatus(kubeconfig, namespace, name string, status release.Status) error {
	cfg, err := helmConfig(kubeconfig, namespace)
	if err != nil {
		return err
	}
	rel, err := cfg.Releases.Last(name)
	if err != nil {
		return fmt.Errorf("release %s/%s: %w", namespace, name, err)
	}
	rel.Info.Status = status
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
	h, err := cfg.Releases.History(name)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: %w", namespace, name, err)
	}
	sort.Slice(h, func(i, j int) bool { return h[i].Version < h[j].Version })
	out := make([]string, len(h))
	for i, r := range h {
		out[i] = fmt.Sprintf("%d:%s", r.Version, r.Info.Status)
	}
	return out, nil
}

// lastRelease is the latest revision of a release in storage.
func lastRelease(kubeconfig, namespace, name string) (*release.Release, error) {
	cfg, err := helmConfig(kubeconfig, namespace)
	if err != nil {
		return nil, err
	}
	rls, err := cfg.Releases.Last(name)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: %w", namespace, name, err)
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
