package chart

import (
	"fmt"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
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
	if err := supportedAPI(ch); err != nil {
		return nil, fmt.Errorf("chart %s: %w", path, err)
	}
	return &Metadata{Name: ch.Metadata.Name, Version: ch.Metadata.Version, AppVersion: ch.Metadata.AppVersion}, nil
}

// supportedAPI refuses a chart of an API version other than v1 and v2:
// Helm 4's chart API v3 is experimental (Helm's HIP-0020), Helm's v2 loader
// would read it as a v2 chart, and helm-controller and source-controller
// take v2 charts only.
func supportedAPI(ch *helmchart.Chart) error {
	switch v := ch.Metadata.APIVersion; v {
	case "", helmchart.APIVersionV1, helmchart.APIVersionV2:
		return nil
	default:
		return fmt.Errorf("chart %s has apiVersion %s, which is not supported: Helm 4's chart API v3 is experimental, "+
			"and Flux's controllers, Helm 4's release actions and this provider take charts of apiVersion v2 (and v1). "+
			"Set apiVersion: v2 in its Chart.yaml", ch.Metadata.Name, v)
	}
}
