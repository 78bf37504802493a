package provider

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// BenchmarkTofuInstall30 measures the life of a configuration of 30 releases
// of the three-object podinfo chart, waited for, side by side on one cluster:
// its install (the apply of a fresh configuration), its upgrade (one value of
// every release changed: the ConfigMap's) and its destroy. The sides are
// stevedore with server-side apply (the default), stevedore with
// helm3_defaults (client-side apply, the legacy wait), and hashicorp/helm
// v3.1.2 (Helm 3, its default wait). Each round runs each side's install,
// upgrade and destroy back to back into its own namespace, the sides in an
// order that rotates every round, so that all three see the same noise.
// Reported: the median time of each phase of each side
// (`tofu apply -auto-approve -parallelism=10`, `tofu destroy
// -auto-approve -parallelism=10`), and the ratio of each stevedore median to
// the helm provider's.
//
// Beside them, for reference, the Helm 4 CLI does the same with no Terraform:
// 30 `helm install --wait` (Helm 4's watcher wait, server-side apply), 10 at a
// time, then 30 `helm upgrade --wait` with the value changed, then 30 `helm
// uninstall --wait`, into a namespace of its own (side helm4-cli).
//
// With STEVEDORE_BENCH_LOG_DIR=<dir>, what tofu printed goes to <dir>/<side>.log.
// With STEVEDORE_BENCH_API_COUNTS=1 it also logs the API server's requests
// of each phase of each side by verb and resource (from its
// apiserver_request_total metric), summed over the rounds.
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
	phases := []string{"install", "upgrade", "destroy"}
	type side struct {
		name, wd string
		cfg      [2]string // the install's configuration, the upgrade's
		runs     map[string][]time.Duration
		cpu      map[string][]time.Duration
		requests map[string]map[string]float64
	}
	var sides []*side
	for _, name := range []string{"stevedore-ssa", "stevedore-csa", "helm", "helm4-cli"} {
		ns := "bench-install-" + name
		s := &side{name: name, wd: filepath.Join(dir, name), runs: map[string][]time.Duration{}, cpu: map[string][]time.Duration{}, requests: map[string]map[string]float64{}}
		switch name {
		case "helm4-cli":
			s.cfg = [2]string{ns, ns}
		case "helm":
			s.cfg[0] = helmReleasesConfig(env.Cluster.Kubeconfig, helmState, compareReleases, ns, "")
		default:
			// releasesConfig without disable_wait: installs wait as a user's do.
			s.cfg[0] = strings.Replace(releasesConfig(env.Cluster.Kubeconfig, filepath.Join(dir, name+"-cache"), compareReleases, ns),
				"    disable_wait = true\n", "", 1)
			if name == "stevedore-csa" {
				s.cfg[0] = strings.Replace(s.cfg[0], "  cache_dir = ", "  helm3_defaults = true\n  cache_dir = ", 1)
			}
		}
		// The upgrade: every release's config.index changes.
		s.cfg[1] = strings.Replace(s.cfg[0], "index = count.index", "index = count.index + 1000", 1)
		if s.cfg[1] == s.cfg[0] && name != "helm4-cli" {
			b.Fatalf("%s: the upgrade's configuration is the install's", name)
		}
		if _, err := env.Cluster.Kubectl(context.Background(), "create", "namespace", ns); err != nil {
			b.Fatal(err)
		}
		sides = append(sides, s)
	}
	counting := os.Getenv("STEVEDORE_BENCH_API_COUNTS") != ""
	round := 0
	for b.Loop() {
		for i := range sides {
			s := sides[(i+round)%len(sides)]
			for _, phase := range phases {
				var args []string
				if s.name == "helm4-cli" {
					start := time.Now()
					helm4CLI(b, env, s.cfg[0], phase)
					s.runs[phase] = append(s.runs[phase], time.Since(start))
					continue
				}
				switch phase {
				case "install", "upgrade":
					cfg := s.cfg[0]
					if phase == "upgrade" {
						cfg = s.cfg[1]
					}
					writeMainTF(b, s.wd, cfg)
					args = []string{"apply", "-auto-approve", "-input=false", "-parallelism=10"}
				case "destroy":
					args = []string{"destroy", "-auto-approve", "-input=false", "-parallelism=10"}
				}
				var before map[string]float64
				if counting {
					before = apiRequests(b, env)
				}
				start := time.Now()
				_, cpu := tofuCPU(b, s.wd, rc, args...)
				s.runs[phase] = append(s.runs[phase], time.Since(start))
				s.cpu[phase] = append(s.cpu[phase], cpu)
				if counting {
					after := apiRequests(b, env)
					if s.requests[phase] == nil {
						s.requests[phase] = map[string]float64{}
					}
					for k, v := range after {
						if d := v - before[k]; d > 0 {
							s.requests[phase][k] += d
						}
					}
				}
			}
		}
		round++
	}
	helm := sides[2]
	for _, s := range sides {
		for _, phase := range phases {
			m := median(s.runs[phase])
			b.ReportMetric(float64(m.Milliseconds()), s.name+"-ms/"+phase+"-median")
			if s.name != "helm" && s.name != "helm4-cli" {
				b.ReportMetric(float64(m)/float64(median(helm.runs[phase])), s.name+"/helm-"+phase+"-ratio")
			}
			// On stderr: the testing package truncates a benchmark's log.
			fmt.Fprintf(os.Stderr, "%s %s (ms, in order): %s; CPU of tofu and its providers (ms): %s\n", s.name, phase, formatMillis(s.runs[phase]), formatMillis(s.cpu[phase]))
			if counting {
				fmt.Fprintf(os.Stderr, "%s %s requests over %d rounds: %s\n", s.name, phase, round, formatRequests(s.requests[phase]))
			}
		}
	}
}

// helm4CLI runs phase (install, upgrade, destroy) of the 30 releases with the
// Helm 4 CLI in namespace ns, 10 at a time, each waited for.
func helm4CLI(b *testing.B, env *testenv.Env, ns, phase string) {
	b.Helper()
	sem := make(chan struct{}, 10)
	errs := make(chan error, compareReleases)
	for i := range compareReleases {
		name := fmt.Sprintf("r%03d", i)
		var args []string
		switch phase {
		case "install":
			args = []string{"install", name, podinfoSrc(), "-n", ns, "--wait", "--set", fmt.Sprintf("config.index=%d", i)}
		case "upgrade":
			args = []string{"upgrade", name, podinfoSrc(), "-n", ns, "--wait", "--set", fmt.Sprintf("config.index=%d", i+1000)}
		case "destroy":
			args = []string{"uninstall", name, "-n", ns, "--wait"}
		}
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			_, err := testenv.HelmCLI(context.Background(), env.Cluster.Kubeconfig, "helm4", args...)
			errs <- err
		}()
	}
	for range compareReleases {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}

// apiRequestLine is a sample of the API server's apiserver_request_total.
var apiRequestLine = regexp.MustCompile(`^apiserver_request_total\{(.*)\} ([0-9.e+]+)$`)

// apiRequests reads the API server's request counters, summed by verb,
// resource and subresource (the dry runs are counted apart).
func apiRequests(b *testing.B, env *testenv.Env) map[string]float64 {
	b.Helper()
	out, err := env.Cluster.Kubectl(context.Background(), "get", "--raw", "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	label := regexp.MustCompile(`(\w+)="([^"]*)"`)
	sums := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := apiRequestLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range label.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		if labels["resource"] == "" {
			continue
		}
		key := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		if labels["dry_run"] != "" {
			key += " (dry run)"
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			b.Fatal(err)
		}
		sums[key] += v
	}
	return sums
}

// formatRequests lists counts, largest first, with their total.
func formatRequests(counts map[string]float64) string {
	keys := make([]string, 0, len(counts))
	var total float64
	for k, v := range counts {
		keys = append(keys, k)
		total += v
	}
	sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	parts := []string{fmt.Sprintf("total %.0f", total)}
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}
