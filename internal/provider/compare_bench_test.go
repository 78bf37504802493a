package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// compareReleases is the number of releases in each of the two working
// directories of BenchmarkTofuPlanVersusHelmProvider.
const compareReleases = 30

// BenchmarkTofuPlanVersusHelmProvider measures a stevedore plan against a
// hashicorp/helm provider plan, side by side on one cluster: 30 releases of the
// three-object podinfo chart, up to date, applied once with each provider in
// two working directories (two namespaces), then planned alternately, back to
// back (`tofu plan -input=false -detailed-exitcode -parallelism=10`, both
// must be empty), b.N rounds, the order swapped every round. Alternating is the
// point: on a shared, noisy machine both medians see the same noise.
//
// The stevedore plan detects drift (refresh reads every release from Helm
// storage and dry-runs every object); the helm provider's plan reads each
// release from Helm storage and checks no drift of the objects (its default,
// the manifest experiment off). Reported: ms/plan-median of each, the ratio of
// the two medians as stevedore/helm-ratio (the target: at most 0.8),
// the median of the per-round ratios, and the median CPU time of each side's
// provider processes and peak resident memory (from /usr/bin/time).
//
// Needs make build (./bin) and the helm provider v3.1.2: the one in
// STEVEDORE_HELM_PROVIDER_DIR, else the one tools/helm-provider/build.sh
// builds into the user's cache for the acceptance tests (make test builds it
// once; this benchmark builds it if it is not there, and skips, saying why,
// when it cannot), so that make bench prints the ratio in one run:
//
//	make build
//	go test -run '^$' -bench BenchmarkTofuPlanVersusHelmProvider -benchtime 7x -timeout 40m ./internal/provider/
func BenchmarkTofuPlanVersusHelmProvider(b *testing.B) {
	helmDir := os.Getenv("STEVEDORE_HELM_PROVIDER_DIR")
	if helmDir == "" {
		dir, err := buildHelmProvider()
		if err != nil {
			b.Skip(err)
		}
		helmDir = dir
	}
	helmBin := filepath.Join(helmDir, "terraform-provider-helm")
	if _, err := os.Stat(helmBin); err != nil {
		b.Fatalf("STEVEDORE_HELM_PROVIDER_DIR: %v: build it with tools/helm-provider/build.sh", err)
	}
	env := testenv.Need(b)
	stevedoreBin := providerBinary(b)
	dir := b.TempDir()

	// Each provider runs through a wrapper that appends its peak RSS and CPU
	// time to a log, one line per provider process, as in benchReleases.
	helmWrap, helmLog := compareWrapper(b, dir, "helm", helmBin)
	stevedoreWrap, stevedoreLog := compareWrapper(b, dir, "stevedore", stevedoreBin)
	rc := writeDevOverrides(b, dir, map[string]string{
		"hashicorp/helm":          helmWrap,
		"stevedore-dev/stevedore": stevedoreWrap,
	})

	helmNS, stevedoreNS := "bench-cmp-helm", "bench-cmp-stevedore"
	helmWD, stevedoreWD := filepath.Join(dir, "helm"), filepath.Join(dir, "stevedore")
	helmState := filepath.Join(dir, "helm-home")
	writeMainTF(b, helmWD, helmReleasesConfig(env.Cluster.Kubeconfig, helmState, compareReleases, helmNS, "\n  wait      = false"))
	writeMainTF(b, stevedoreWD, releasesConfig(env.Cluster.Kubeconfig, filepath.Join(dir, "stevedore-cache"), compareReleases, stevedoreNS))

	for _, ns := range []string{helmNS, stevedoreNS} {
		if _, err := env.Cluster.Kubectl(context.Background(), "create", "namespace", ns); err != nil {
			b.Fatal(err)
		}
	}
	for _, wd := range []string{helmWD, stevedoreWD} {
		tofu(b, wd, rc, "apply", "-auto-approve", "-input=false", "-parallelism=20")
		b.Cleanup(func() { tofu(b, wd, rc, "destroy", "-auto-approve", "-input=false", "-parallelism=20") })
	}

	type side struct {
		name, wd, log string
		runs, cpu     []time.Duration
		peakKiB       int
	}
	helm := &side{name: "helm", wd: helmWD, log: helmLog}
	stevedore := &side{name: "stevedore", wd: stevedoreWD, log: stevedoreLog}
	plan := func(s *side) time.Duration {
		_ = os.Remove(s.log)
		start := time.Now()
		code, _ := tofuCPU(b, s.wd, rc, "plan", "-input=false", "-detailed-exitcode", "-parallelism=10")
		elapsed := time.Since(start)
		if code != 0 {
			b.Fatalf("%s: plan of %d unchanged releases exited %d: want an empty plan", s.name, compareReleases, code)
		}
		s.runs = append(s.runs, elapsed)
		kib, cpu := providerUsage(s.log)
		s.peakKiB = max(s.peakKiB, kib)
		s.cpu = append(s.cpu, cpu)
		return elapsed
	}
	var ratios []float64
	round := 0
	for b.Loop() {
		order := []*side{helm, stevedore}
		if round%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		round++
		got := map[*side]time.Duration{}
		for _, s := range order {
			got[s] = plan(s)
		}
		ratios = append(ratios, float64(got[stevedore])/float64(got[helm]))
	}

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, s := range []*side{helm, stevedore} {
		b.ReportMetric(ms(median(s.runs)), s.name+"-ms/plan-median")
		if s.peakKiB > 0 {
			b.ReportMetric(ms(median(s.cpu)), s.name+"-provider-cpu-ms/plan")
			b.ReportMetric(float64(s.peakKiB)/1024, s.name+"-MiB-provider-peak")
		}
		b.Logf("%s plans (ms, in order): %s", s.name, formatMillis(s.runs))
	}
	b.ReportMetric(ms(median(stevedore.runs))/ms(median(helm.runs)), "stevedore/helm-ratio")
	b.ReportMetric(medianFloat(ratios), "stevedore/helm-round-ratio-median")
}

// helmReleasesConfig is the hashicorp/helm configuration of the benchmarks:
// n releases of podinfo in ns, the provider's Helm state under helmState,
// extra added to each release.
func helmReleasesConfig(kubeconfig, helmState string, n int, ns, extra string) string {
	return fmt.Sprintf(`
terraform {
  required_providers {
    helm = { source = "hashicorp/helm" }
  }
}
provider "helm" {
  kubernetes = { config_path = %q }
  repository_cache       = %q
  repository_config_path = %q
  registry_config_path   = %q
  plugins_path           = %q
}
resource "helm_release" "r" {
  count     = %d
  name      = format("r%%03d", count.index)
  namespace = %q
  chart     = %q
  values    = [yamlencode({ config = { index = count.index } })]%s
}
`, kubeconfig, filepath.Join(helmState, "cache"), filepath.Join(helmState, "repositories.yaml"),
		filepath.Join(helmState, "registry.json"), filepath.Join(helmState, "plugins"), n, ns, podinfoSrc(), extra)
}

// compareWrapper writes dir/<name>-bin/terraform-provider-<name>, a script
// that runs bin under /usr/bin/time (when there is one) appending
// "maxRSS-KiB user-s system-s" to the log it returns, one line per provider
// process; it returns the wrapper's directory and the log's path.
func compareWrapper(b *testing.B, dir, name, bin string) (wrapDir, log string) {
	b.Helper()
	wrapDir = filepath.Join(dir, name+"-bin")
	log = filepath.Join(dir, name+"-usage.log")
	if err := os.MkdirAll(wrapDir, 0o755); err != nil {
		b.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nexec /usr/bin/time -f '%%M %%U %%S' -a -o %q %q \"$@\"\n", log, bin)
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		script = fmt.Sprintf("#!/bin/sh\nexec %q \"$@\"\n", bin)
	}
	if err := os.WriteFile(filepath.Join(wrapDir, "terraform-provider-"+name), []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	return wrapDir, log
}

// writeDevOverrides is writeDevOverride for several providers: it writes, into
// dir, a CLI configuration taking each provider source address from its
// directory, and returns its path.
func writeDevOverrides(b *testing.B, dir string, providerDirs map[string]string) string {
	b.Helper()
	var cfg strings.Builder
	cfg.WriteString("provider_installation {\n  dev_overrides {\n")
	for source, providerDir := range providerDirs {
		fmt.Fprintf(&cfg, "    %q = %q\n", source, providerDir)
	}
	cfg.WriteString("  }\n  direct {}\n}\n")
	rc := filepath.Join(dir, "tofurc")
	if err := os.WriteFile(rc, []byte(cfg.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	return rc
}

// writeMainTF creates the working directory wd with cfg as its main.tf.
func writeMainTF(b *testing.B, wd, cfg string) {
	b.Helper()
	if err := os.MkdirAll(wd, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, "main.tf"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
}

func medianFloat(fs []float64) float64 {
	if len(fs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(fs))
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

func formatMillis(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprint(d.Milliseconds())
	}
	return strings.Join(parts, " ")
}
