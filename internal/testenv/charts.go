// Package testenv holds test-only helpers: the local cluster, an HTTP Helm
// repository, an OCI registry and the test charts they serve. Everything
// runs in-process on 127.0.0.1; nothing here is used by the provider itself.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/Masterminds/semver/v3"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// fileRepositoryPrefix marks a dependency that lives on the local filesystem,
// relative to the depending chart's directory.
const fileRepositoryPrefix = "file://"

// ChartsDir returns the absolute path of testdata/charts, the test chart
// sources (podinfo, withdep, crds).
//
// The path is taken from this source file's location rather than the working
// directory, because `go test` runs each package in its own directory and the
// helpers are called from tests all over the module. It does not work in a
// binary built with -trimpath, which tests never are.
func ChartsDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("testenv: cannot determine the location of charts.go")
	}
	return filepath.Join(filepath.Dir(file), "testdata", "charts")
}

// PackageChart packages the chart source in srcDir into destDir and returns
// the path of the archive, <name>-<version>.tgz.
//
// A non-empty version replaces the one in Chart.yaml, so that one source can
// be published as 1.0.0, 1.1.0 and 2.0.0-rc.1. Dependencies with a file://
// repository that are not already in charts/ are loaded from their directory
// and vendored into the archive, which is what `helm dependency build` does
// for local paths, without writing charts/ or Chart.lock into the source.
//
// The archive's tar headers carry the current time, so two packagings of the
// same source differ in digest.
func PackageChart(srcDir, version, destDir string) (string, error) {
	ch, err := loader.LoadDir(srcDir)
	if err != nil {
		return "", fmt.Errorf("package chart %s: load: %w", srcDir, err)
	}
	name := ch.Name()
	if version != "" {
		// Validated by chartutil.Save, with Helm's (lenient) semver rules, so
		// tests can also produce versions that strict semver rejects.
		ch.Metadata.Version = version
	}
	if err := vendorLocalDependencies(ch, srcDir); err != nil {
		return "", fmt.Errorf("package chart %s-%s: %w", name, ch.Metadata.Version, err)
	}
	if err := os.MkdirAll(destDir, 0o755); err != nil {
		return "", fmt.Errorf("package chart %s-%s: %w", name, ch.Metadata.Version, err)
	}
	path, err := chartutil.Save(ch, destDir)
	if err != nil {
		return "", fmt.Errorf("package chart %s-%s: save: %w", name, ch.Metadata.Version, err)
	}
	return path, nil
}

// vendorLocalDependencies adds to ch every dependency declared in Chart.yaml
// with a file:// repository that charts/ does not already hold. A missing
// dependency from any other repository is an error: packaging it without its
// subchart would produce an archive Helm refuses to install.
func vendorLocalDependencies(ch *chart.Chart, srcDir string) error {
	present := make(map[string]bool, len(ch.Dependencies()))
	for _, sub := range ch.Dependencies() {
		present[sub.Name()] = true
	}
	for _, dep := range ch.Metadata.Dependencies {
		if present[dep.Name] {
			continue
		}
		if !strings.HasPrefix(dep.Repository, fileRepositoryPrefix) {
			return fmt.Errorf("dependency %q (%s) is not in charts/ and only %s dependencies are resolved offline",
				dep.Name, dep.Repository, fileRepositoryPrefix)
		}
		sub, err := loadLocalDependency(dep, srcDir)
		if err != nil {
			return err
		}
		ch.AddDependency(sub)
		present[dep.Name] = true
	}
	return nil
}

// loadLocalDependency loads a file:// dependency and checks that it is the
// chart and version range Chart.yaml asks for.
func loadLocalDependency(dep *chart.Dependency, srcDir string) (*chart.Chart, error) {
	dir := strings.TrimPrefix(dep.Repository, fileRepositoryPrefix)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(srcDir, dir)
	}
	sub, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("dependency %q: load %s: %w", dep.Name, dir, err)
	}
	if sub.Name() != dep.Name {
		return nil, fmt.Errorf("dependency %q: %s holds chart %q", dep.Name, dir, sub.Name())
	}
	if dep.Version == "" {
		return sub, nil
	}
	constraint, err := semver.NewConstraint(dep.Version)
	if err != nil {
		return nil, fmt.Errorf("dependency %q: version constraint %q: %w", dep.Name, dep.Version, err)
	}
	v, err := semver.NewVersion(sub.Metadata.Version)
	if err != nil {
		return nil, fmt.Errorf("dependency %q: version %q in %s: %w", dep.Name, sub.Metadata.Version, dir, err)
	}
	if !constraint.Check(v) {
		return nil, fmt.Errorf("dependency %q: version %s in %s does not match %q", dep.Name, v, dir, dep.Version)
	}
	return sub, nil
}

// GadgetCRD is the CustomResourceDefinition of a namespaced kind Gadget in
// group (group/v1), with no schema and no status subresource, so that a
// chart writes the status a controller would. A CRD is cluster-wide: give
// each test a group of its own (its namespace + ".stevedore.dev").
func GadgetCRD(group string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.` + group + `
spec:
  group: ` + group + `
  names: {kind: Gadget, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`
}
