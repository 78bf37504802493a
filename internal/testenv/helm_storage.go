package testenv

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/postrenderer"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// HelmInstallStored installs chartPath as release name with its objects in
// namespace and its release Secrets in storageNamespace, as helm-controller
// installs a HelmRelease whose storage namespace is not its target namespace
// (the `helm` CLI cannot): for import tests of releases made that way.
func HelmInstallStored(kubeconfig, storageNamespace, namespace, name, chartPath string, values map[string]any) error {
	return helmInstall(kubeconfig, storageNamespace, namespace, name, chartPath, values, nil)
}

// FluxInstall installs chartPath as helm-controller installs HelmRelease
// hrNamespace/hrName with spec.targetNamespace targetNamespace ("" for
// none) and no releaseName or storageNamespace: release
// "<targetNamespace>-<hrName>" (shortened past 53 bytes as Flux does),
// stored in hrNamespace, its objects in the target namespace, each labelled
// by Flux's origin post-renderer (helm.toolkit.fluxcd.io/name and
// /namespace, naming the HelmRelease). It returns the release name.
func FluxInstall(kubeconfig, hrNamespace, hrName, targetNamespace, chartPath string, values map[string]any) (string, error) {
	name, namespace := hrName, hrNamespace
	if targetNamespace != "" {
		name, namespace = targetNamespace+"-"+hrName, targetNamespace
	}
	if len(name) > 53 {
		name = name[:40] + "-" + fmt.Sprintf("%x", sha256.Sum256([]byte(name)))[:12]
	}
	labels := originLabels{"helm.toolkit.fluxcd.io/name": hrName, "helm.toolkit.fluxcd.io/namespace": hrNamespace}
	return name, helmInstall(kubeconfig, hrNamespace, namespace, name, chartPath, values, labels)
}

func helmInstall(kubeconfig, storageNamespace, namespace, name, chartPath string, values map[string]any, pr postrenderer.PostRenderer) error {
	cfg, err := helmConfigIn(kubeconfig, storageNamespace, namespace)
	if err != nil {
		return err
	}
	ch, err := loader.Load(chartPath)
	if err != nil {
		return fmt.Errorf("helm install %s/%s: %w", storageNamespace, name, err)
	}
	install := helm3Install(cfg)
	install.ReleaseName, install.Namespace = name, namespace
	install.PostRenderer = pr
	if _, err := install.Run(ch, values); err != nil {
		return fmt.Errorf("helm install %s/%s: %w", storageNamespace, name, err)
	}
	return nil
}

// originLabels is a Helm post-renderer that adds its labels to every
// object, as helm-controller's origin labels do.
type originLabels map[string]string

func (l originLabels) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	out := new(bytes.Buffer)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(rendered.Bytes()), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("origin labels: %w", err)
		}
		if obj == nil {
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		merged := u.GetLabels()
		if merged == nil {
			merged = map[string]string{}
		}
		for k, v := range l {
			merged[k] = v
		}
		u.SetLabels(merged)
		doc, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, fmt.Errorf("origin labels: %w", err)
		}
		out.WriteString("---\n")
		out.Write(doc)
	}
}
