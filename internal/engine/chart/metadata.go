package chart

import (
	"fmt"
	"os"
	"path/filepath"

	"helm.sh/helm/v3/pkg/chart/loader"
)

// Metadata is what a chart says of itself in Chart.yaml.
type Metadata struct {
	Name       string
	Version    string
	AppVersion string
}

// ReadMetadata loads the chart archive or directory at path and returns its
// Chart.yaml metadata. A release's plan uses it to show the chart version an
// upgrade installs, and to tell a new chart name (a replacement) from a new
// version (an upgrade).
func ReadMetadata(path string) (*Metadata, error) {
	ch, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", path, err)
	}
	if ch.Metadata == nil {
		return nil, fmt.Errorf("chart %s: no Chart.yaml", path)
	}
	return &Metadata{Name: ch.Metadata.Name, Version: ch.Metadata.Version, AppVersion: ch.Metadata.AppVersion}, nil
}

// FindArtifact looks in the cache for the archive of chart name at revision
// (its version, with build metadata for merged values files) and returns its
// path and digest. ok is false unless exactly one archive matches: importing a
// release uses it to find the artifact that the configuration refers to, and a
// guess between two would be wrong half the time.
func (e *Engine) FindArtifact(name, revision string) (path, digest string, ok bool) {
	matches, err := filepath.Glob(filepath.Join(e.cacheDir, "artifacts", "*", "*", name+"-"+revision+".tgz"))
	if err != nil || len(matches) != 1 {
		return "", "", false
	}
	p := matches[0]
	h := filepath.Base(filepath.Dir(p))
	if _, err := os.Stat(p); err != nil || !e.hasDigest(p, h) {
		return "", "", false
	}
	return p, "sha256:" + h, true
}
