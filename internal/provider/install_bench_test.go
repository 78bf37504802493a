package provider

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// BenchmarkTofuInstall30 measures the apply of a fresh configuration of 30
// releases of the three-object podinfo chart, waited for, side by side on one
// cluster: stevedore with server-side apply (the default), stevedore with
// client-side apply (install.server_side_apply = false, the legacy wait: the
// provider's helm3_defaults), and hashicorp/helm v3.1.2 (Helm 3, its default
// wait). Each round applies each configuration into its own namespace and
// destroys it, in an order that rotates every round, so that all three see
// the same noise. Reported: the median apply time of each
// (`tofu apply -auto-approve -parallelism=10`).
//
//	make build
//	go test -run '^$' -bench BenchmarkTofuInstall30 -benchtime 3x -timeout 60m ./internal/provider/
func BenchmarkTofuInstall30(b *testing.B) {
	helmDir := os.Getenv("STEVEDORE_HELM_PROVIDER_DIR")
	if helmDir == "" {
		dir, err := buildHelmProvider()
		if err != nil {
			b.Skip(err)
		}
		helmDir = dir
	}
	env := testenv.Need(b)
	dir := b.TempDir()
	rc := writeDevOverrides(b, dir, map[string]string{
		"hashicorp/helm":          helmDir,
		"stevedore-dev/stevedore": filepath.Dir(providerBinary(b)),
	})
	helmState := filepath.Join(dir, "helm-home")
	type side struct {
		name, wd string
		runs     []time.Duration
	}
	var sides []*side
	for _, name := range []string{"stevedore-ssa", "stevedore-csa", "helm"} {
		ns := "bench-install-" + name
		wd := filepath.Join(dir, name)
		var cfg string
		switch name {
		case "helm":
			cfg = helmReleasesConfig(env.Cluster.Kubeconfig, helmState, compareReleases, ns, "")
		default:
			// releasesConfig without disable_wait: installs wait as a user's do.
			cfg = strings.Replace(releasesConfig(env.Cluster.Kubeconfig, filepath.Join(dir, name+"-cache"), compareReleases, ns),
				"    disable_wait = true\n", "", 1)
			if name == "stevedore-csa" {
				cfg = strings.Replace(cfg, "  cache_dir = ", "  helm3_defaults = true\n  cache_dir = ", 1)
			}
		}
		writeMainTF(b, wd, cfg)
		if _, err := env.Cluster.Kubectl(context.Background(), "create", "namespace", ns); err != nil {
			b.Fatal(err)
		}
		sides = append(sides, &side{name: name, wd: wd})
	}
	round := 0
	for b.Loop() {
		for i := range sides {
			s := sides[(i+round)%len(sides)]
			start := time.Now()
			tofu(b, s.wd, rc, "apply", "-auto-approve", "-input=false", "-parallelism=10")
			s.runs = append(s.runs, time.Since(start))
			tofu(b, s.wd, rc, "destroy", "-auto-approve", "-input=false", "-parallelism=20")
		}
		round++
	}
	for _, s := range sides {
		b.ReportMetric(float64(median(s.runs).Milliseconds()), s.name+"-ms/apply-median")
		b.Logf("%s applies (ms, in order): %s", s.name, formatMillis(s.runs))
	}
}
