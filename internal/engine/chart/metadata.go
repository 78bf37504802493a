package chart

import (
	"fmt"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
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
