package testenv

import (
	"fmt"
	"log"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// HelmInstallStored installs chartPath as release name with its objects in
// namespace and its release Secrets in storageNamespace, as helm-controller
// installs a HelmRelease whose storage namespace is not its target namespace
// (the `helm` CLI cannot): for import tests of releases Flux made.
func HelmInstallStored(kubeconfig, storageNamespace, namespace, name, chartPath string, values map[string]any) error {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	flags.Namespace = &namespace
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, storageNamespace, "secret", log.Printf); err != nil {
		return fmt.Errorf("helm configuration: %w", err)
	}
	ch, err := loader.Load(chartPath)
	if err != nil {
		return fmt.Errorf("helm install %s/%s: %w", storageNamespace, name, err)
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = name, namespace
	if _, err := install.Run(ch, values); err != nil {
		return fmt.Errorf("helm install %s/%s: %w", storageNamespace, name, err)
	}
	return nil
}
