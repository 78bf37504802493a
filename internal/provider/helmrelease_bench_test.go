package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// BenchmarkTofuPlanHelmReleases times a whole `tofu plan` of N releases of the
// three-object podinfo chart that are up to date, drift detection on: refresh
// reads every release from Helm storage and dry-runs every object. Reported:
// ms per release per plan, and the provider's peak resident memory (max RSS
// over the plan's provider processes, from /usr/bin/time). Needs `make build`.
func BenchmarkTofuPlanHelmReleases(b *testing.B) {
	for _, n := range []int{30, 300} {
		b.Run("releases="+strconv.Itoa(n), func(b *testing.B) { benchReleases(b, n) })
	}
}

func benchReleases(b *testing.B, n int) {
	env := testenv.Need(b)
	providerBin := providerBinary(b)
	dir := b.TempDir()
	// The dev override points at a wrapper that records the provider's peak
	// RSS in mem.log, one line per provider process.
	wrapDir := filepath.Join(dir, "bin")
	memLog := filepath.Join(dir, "mem.log")
	if err := os.MkdirAll(wrapDir, 0o755); err != nil {
		b.Fatal(err)
	}
	wrapper := fmt.Sprintf("#!/bin/sh\nexec /usr/bin/time -f %%M -a -o %q %q \"$@\"\n", memLog, providerBin)
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		wrapper = fmt.Sprintf("#!/bin/sh\nexec %q \"$@\"\n", providerBin)
	}
	if err := os.WriteFile(filepath.Join(wrapDir, "terraform-provider-stevedore"), []byte(wrapper), 0o755); err != nil {
		b.Fatal(err)
	}
	rc := writeDevOverride(b, dir, wrapDir)
	ns := fmt.Sprintf("bench-hr-%d", n)
	cfg := fmt.Sprintf(`
terraform {
  required_providers {
    stevedore = { source = "stevedore-dev/stevedore" }
  }
}
provider "stevedore" {
  kubernetes { config_path = %q }
  cache_dir = %q
}
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %q
}
resource "stevedore_helmrelease" "r" {
  count     = %d
  name      = format("r%%03d", count.index)
  namespace = %q
  chart {
    path   = stevedore_helmchart_artifact.podinfo.path
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
  values = { config = { index = count.index } }
  install {
    disable_wait = true
  }
}
`, env.Cluster.Kubeconfig, filepath.Join(dir, "cache"), podinfoSrc(), n, ns)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	if _, err := env.Cluster.Kubectl(context.Background(), "create", "namespace", ns); err != nil {
		b.Fatal(err)
	}
	tofu(b, dir, rc, "apply", "-auto-approve", "-input=false", "-parallelism=20")
	b.Cleanup(func() { tofu(b, dir, rc, "destroy", "-auto-approve", "-input=false", "-parallelism=20") })
	_ = os.Remove(memLog)

	// Each plan is timed on its own: the figure the issue asks for is the
	// median, which one slow run (a GC, a busy apiserver) does not move.
	var runs []time.Duration
	for b.Loop() {
		start := time.Now()
		if code := tofu(b, dir, rc, "plan", "-input=false", "-detailed-exitcode"); code != 0 {
			b.Fatalf("plan of %d unchanged releases exited %d: want an empty plan", n, code)
		}
		runs = append(runs, time.Since(start))
	}
	slices.Sort(runs)
	median := runs[len(runs)/2]
	if len(runs)%2 == 0 {
		median = (runs[len(runs)/2-1] + runs[len(runs)/2]) / 2
	}
	b.ReportMetric(float64(median.Microseconds())/1000/float64(n), "ms/release-median")
	b.ReportMetric(float64(median.Milliseconds()), "ms/plan-median")
	if peak := peakKiB(memLog); peak > 0 {
		b.ReportMetric(float64(peak)/1024, "MiB-provider-peak")
	}
}

// peakKiB is the largest max-RSS line of /usr/bin/time's log, in KiB.
func peakKiB(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	peak := 0
	for _, line := range strings.Fields(string(data)) {
		if v, err := strconv.Atoi(line); err == nil && v > peak {
			peak = v
		}
	}
	return peak
}
