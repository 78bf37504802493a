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
// ms per release per plan; the provider's peak resident memory (max RSS over
// the plan's provider processes, from /usr/bin/time); and, per release, the
// CPU time of the provider processes and of tofu itself, which tell where a
// plan's time goes on a machine whose cores the cluster shares; and the
// apiserver's requests per release by verb (apiserver_request_total before
// and after each plan: all clients, so the kwok controllers' few background
// requests are in it too). Needs `make build`.
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
	wrapper := fmt.Sprintf("#!/bin/sh\nexec /usr/bin/time -f '%%M %%U %%S' -a -o %q %q \"$@\"\n", memLog, providerBin)
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		wrapper = fmt.Sprintf("#!/bin/sh\nexec %q \"$@\"\n", providerBin)
	}
	if err := os.WriteFile(filepath.Join(wrapDir, "terraform-provider-stevedore"), []byte(wrapper), 0o755); err != nil {
		b.Fatal(err)
	}
	rc := writeDevOverride(b, dir, wrapDir)
	ns := fmt.Sprintf("bench-hr-%d", n)
	cfg := releasesConfig(env.Cluster.Kubeconfig, filepath.Join(dir, "cache"), n, ns)
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
	var runs, providerCPU, tofuCPUs []time.Duration
	peak := 0
	requests := map[string][]float64{}
	for b.Loop() {
		b.StopTimer()
		before := apiserverRequests(b, env)
		b.StartTimer()
		start := time.Now()
		code, total := tofuCPU(b, dir, rc, "plan", "-input=false", "-detailed-exitcode")
		if code != 0 {
			b.Fatalf("plan of %d unchanged releases exited %d: want an empty plan", n, code)
		}
		runs = append(runs, time.Since(start))
		b.StopTimer()
		for verb, c := range apiserverRequests(b, env) {
			requests[verb] = append(requests[verb], (c-before[verb])/float64(n))
		}
		b.StartTimer()
		kib, cpu := providerUsage(memLog)
		_ = os.Remove(memLog)
		peak = max(peak, kib)
		providerCPU = append(providerCPU, cpu)
		tofuCPUs = append(tofuCPUs, total-cpu)
	}
	perRelease := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
	b.ReportMetric(perRelease(median(runs)), "ms/release-median")
	b.ReportMetric(float64(median(runs).Milliseconds()), "ms/plan-median")
	if peak > 0 {
		b.ReportMetric(float64(peak)/1024, "MiB-provider-peak")
		b.ReportMetric(perRelease(median(providerCPU)), "provider-cpu-ms/release")
		b.ReportMetric(perRelease(median(tofuCPUs)), "tofu-cpu-ms/release")
	}
	for verb, per := range requests {
		b.ReportMetric(slices.Sorted(slices.Values(per))[len(per)/2], "req-"+verb+"/release")
	}
}

// apiserverRequests reads apiserver_request_total from the apiserver's
// /metrics and sums it by verb, with "-dryrun" appended for server-side dry
// runs; requests for URLs that are not resources (the scrape itself) are left
// out.
func apiserverRequests(b *testing.B, env *testenv.Env) map[string]float64 {
	b.Helper()
	out, err := env.Cluster.Kubectl(context.Background(), "get", "--raw", "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	byVerb := map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		labels, value := line[len("apiserver_request_total{"):end], strings.TrimSpace(line[end+1:])
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				l[k] = strings.Trim(v, `"`)
			}
		}
		if l["resource"] == "" {
			continue
		}
		c, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		verb := l["verb"]
		if l["dry_run"] != "" {
			verb += "-dryrun"
		}
		byVerb[verb] += c
	}
	return byVerb
}

// releasesConfig is n releases of the podinfo chart in namespace ns, from one
// artifact, that the benchmarks plan.
func releasesConfig(kubeconfig, cacheDir string, n int, ns string) string {
	return fmt.Sprintf(`
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
`, kubeconfig, cacheDir, podinfoSrc(), n, ns)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// providerUsage reads /usr/bin/time's log of one plan's provider processes
// (lines of "maxRSS-KiB user-s system-s"): the largest RSS, and the CPU time
// of all of them.
func providerUsage(path string) (peakKiB int, cpu time.Duration) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue // a line about the exit status, or a truncated one
		}
		if v, err := strconv.Atoi(f[0]); err == nil {
			peakKiB = max(peakKiB, v)
		}
		for _, s := range f[1:] {
			if sec, err := strconv.ParseFloat(s, 64); err == nil {
				cpu += time.Duration(sec * float64(time.Second))
			}
		}
	}
	return peakKiB, cpu
}
