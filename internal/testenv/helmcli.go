package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// HelmCLIs are the pinned Helm CLIs `make tools` builds into BinDir (tools/helm3,
// tools/helm4): the tests make releases "from outside" with them, as users of
// Helm 3 and Helm 4 do.
var HelmCLIs = []string{"helm3", "helm4"}

// HelmCLI runs the pinned Helm CLI cli (helm3 or helm4) against the cluster of
// kubeconfig and returns its stdout. Each run has its own Helm home (cache,
// configuration, data), so that runs in parallel share nothing.
func HelmCLI(ctx context.Context, kubeconfig, cli string, args ...string) (string, error) {
	home, err := os.MkdirTemp("", "stevedore-helm-home-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	cmd := exec.CommandContext(ctx, filepath.Join(BinDir(), cli), append(args, "--kubeconfig", kubeconfig)...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", cli, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// ReleaseRecord is revision version of a release, as Helm storage holds it.
func ReleaseRecord(kubeconfig, namespace, name string, version int) (*helmrelease.Release, error) {
	cfg, err := helmConfig(kubeconfig, namespace)
	if err != nil {
		return nil, err
	}
	rlsi, err := cfg.Releases.Get(name, version)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s.v%d: %w", namespace, name, version, err)
	}
	rls, ok := rlsi.(*helmrelease.Release)
	if !ok {
		return nil, fmt.Errorf("release %s/%s.v%d: of type %T", namespace, name, version, rlsi)
	}
	return rls, nil
}
