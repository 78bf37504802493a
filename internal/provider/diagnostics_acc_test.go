package provider

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// expectErrors is a PreConfig that checks the error diagnostics seen since
// the last resetWarnings (errorsSeen: `<attribute>: <summary>: <detail>`):
// each of want matches one, and none matches any of unwanted.
func expectErrors(t *testing.T, rec *protocolRecord, want []*regexp.Regexp, unwanted ...*regexp.Regexp) func() {
	return func() {
		seen := rec.errorsSeen()
		for _, w := range want {
			found := false
			for _, s := range seen {
				found = found || w.MatchString(s)
			}
			if !found {
				t.Errorf("no error diagnostic matching %s; seen:\n  %s", w, strings.Join(seen, "\n  "))
			}
		}
		for _, u := range unwanted {
			for _, s := range seen {
				if u.MatchString(s) {
					t.Errorf("error diagnostic matching %s: %s", u, s)
				}
			}
		}
		rec.resetWarnings()
	}
}

// TestAccResourceSet_refusedObjectOnItsElement: an object that the API
// server refuses in the plan's dry run is an error on the element of
// resources that renders it, in the set's words (no "drift detection").
func TestAccResourceSet_refusedObjectOnItsElement(t *testing.T) {
	t.Parallel()
	ns := uniqueNamespace(t, "refused")
	cfg := providerBlock("") + fmt.Sprintf(`
resource "stevedore_resourceset" "refused" {
  name      = "refused"
  namespace = %[1]q
  resources = [
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "fine" }, data = { a = "b" } },
    {
      apiVersion = "apps/v1", kind = "Deployment", metadata = { name = "bad" },
      spec = {
        replicas = -1
        selector = { matchLabels = { app = "bad" } }
        template = { metadata = { labels = { app = "bad" } }, spec = { containers = [{ name = "c", image = "x" }] } }
      }
    },
  ]
}
`, ns)
	rec := &protocolRecord{}
	accTestWith(t, rec, resource.TestCase{
		Steps: []resource.TestStep{
			{
				PreConfig:   rec.resetWarnings,
				Config:      cfg,
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`Deployment/` + ns + `/bad:\s+the\s+API\s+server\s+refuses\s+it`),
			},
			{
				PreConfig: expectErrors(t, rec,
					[]*regexp.Regexp{regexp.MustCompile(`^resources\[1\]: Cannot plan the resource set: resourceset ` + ns + `/refused: resources\[1\]: Deployment/` + ns + `/bad: the API server refuses it, so apply would fail: .*spec\.replicas`)},
					regexp.MustCompile(`drift detection`), regexp.MustCompile(`^-: `)),
				Config: providerBlock(""),
			},
		},
	})
}

// TestAccHelmRelease_renderErrorsOnValues: values that the chart's schema
// refuses, and a template that fails on the values (`required`), are errors
// on values, at the plan of an upgrade.
func TestAccHelmRelease_renderErrorsOnValues(t *testing.T) {
	t.Parallel()
	ns := uniqueNamespace(t, "render-errs")
	chartDir := t.TempDir()
	for name, content := range map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: strict\nversion: 0.1.0\n",
		"values.schema.json": `{"type": "object", "properties": {"replicaCount": {"type": "integer"}}}`,
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: strict\ndata:\n  greeting: {{ required \"values.greeting is required\" .Values.greeting | quote }}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(chartDir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(chartDir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cacheDir := t.TempDir()
	cfg := func(values string) string {
		return releaseConfig(cacheDir, chartDir, ns, "  values = "+values+"\n")
	}
	rec := &protocolRecord{}
	releaseErr := func(what string) *regexp.Regexp {
		return regexp.MustCompile(`(?s)^values: [^:]+: helmrelease ` + ns + `/podinfo: values: upgrade would fail: .*` + what)
	}
	good := cfg(`{ replicaCount = 1, greeting = "hi" }`)
	accTestWith(t, rec, resource.TestCase{
		Steps: []resource.TestStep{
			{Config: good},
			{
				PreConfig:   rec.resetWarnings,
				Config:      cfg(`{ replicaCount = "three", greeting = "hi" }`),
				ExpectError: regexp.MustCompile(`values\s+don't\s+meet\s+the\s+specifications\s+of\s+the\s+schema`),
			},
			{
				PreConfig:   expectErrors(t, rec, []*regexp.Regexp{releaseErr(`replicaCount`)}, regexp.MustCompile(`^-: .*schema`)),
				Config:      cfg(`{ replicaCount = 1 }`),
				ExpectError: regexp.MustCompile(`values\.greeting\s+is\s+required`),
			},
			{
				PreConfig: expectErrors(t, rec, []*regexp.Regexp{releaseErr(`values\.greeting is required`)}, regexp.MustCompile(`^-: .*required`)),
				Config:    good,
				PlanOnly:  true,
			},
		},
	})
}

// TestAccResourceSet_missingServiceAccount: a service_account_name that does
// not exist is a plan warning on the attribute, naming the service account,
// with changes unknown; the apply fails on the attribute, before any request
// made as the service account (so without their retries).
func TestAccResourceSet_missingServiceAccount(t *testing.T) {
	t.Parallel()
	ns := uniqueNamespace(t, "nosa")
	cfg := providerBlock("") + fmt.Sprintf(`
resource "stevedore_resourceset" "nosa" {
  name                 = "nosa"
  namespace            = %[1]q
  service_account_name = "nobody"
  resources = [
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "cm" }, data = { a = "b" } },
  ]
}
`, ns)
	rec := &protocolRecord{}
	accTestWith(t, rec, resource.TestCase{
		Steps: []resource.TestStep{
			{
				PreConfig: rec.resetWarnings,
				Config:    cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectWarning(rec, "Service account not found", regexp.MustCompile(
						`^resourceset `+ns+`/nosa: service_account_name: service account `+ns+`/nobody does not exist: every request that impersonates it \(system:serviceaccount:`+ns+`:nobody\) is denied`)),
					plancheck.ExpectUnknownValue("stevedore_resourceset.nosa", tfjsonpath.New("changes")),
				}},
				ExpectError: regexp.MustCompile(`service\s+account\s+` + ns + `/nobody\s+does\s+not\s+exist`),
			},
			{
				PreConfig: expectErrors(t, rec, []*regexp.Regexp{regexp.MustCompile(
					`^service_account_name: [^:]+: resourceset ` + ns + `/nosa: service_account_name: service account ` + ns + `/nobody does not exist`)},
					regexp.MustCompile(`cannot (get|patch|create)`)),
				Config: providerBlock(""),
			},
		},
	})
}

// stalledKubeconfig is a kubeconfig of the test cluster whose API server
// accepts connections and never answers (a stalled server, not a refused
// connection).
func stalledKubeconfig(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read nor answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	cfg, err := clientcmd.LoadFromFile(testenv.Need(t).Cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range cfg.Clusters {
		u, err := url.Parse(cl.Server)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = ln.Addr().String()
		cl.Server = u.String()
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAccServerDown_causeNamedOnce: a set of 20 objects and a release
// applied against an API server that does not answer fail with one
// diagnostic each, which names the cause once (and, for the set, how many
// objects it failed), not one per object.
func TestAccServerDown_causeNamedOnce(t *testing.T) {
	t.Parallel()
	ns := uniqueNamespace(t, "down")
	chartDir := t.TempDir()
	for name, content := range map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: small\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: small\ndata:\n  a: b\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(chartDir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(chartDir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := stalledKubeconfig(t)
	cfg := fmt.Sprintf(`
provider "stevedore" {
  kubernetes {
    config_path     = %[1]q
    request_timeout = "2s"
  }
  cache_dir = %[2]q
}

resource "stevedore_resourceset" "twenty" {
  name      = "twenty"
  namespace = %[3]q
  resources = [for i in range(20) : { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "cm-${i}" }, data = { a = "b" } }]
}

resource "stevedore_helmchart_artifact" "small" {
  source_path = %[4]q
}

resource "stevedore_helmrelease" "small" {
  name      = "small"
  namespace = %[3]q
  chart {
    path   = stevedore_helmchart_artifact.small.path
    digest = stevedore_helmchart_artifact.small.digest
  }
}
`, kubeconfig, t.TempDir(), ns, chartDir)
	rec := &protocolRecord{}
	perResource := func() {
		seen := rec.errorsSeen()
		t.Logf("error diagnostics:\n  %s", strings.Join(seen, "\n  "))
		count := map[string]int{}
		for _, s := range seen {
			for _, who := range []string{"resourceset " + ns + "/twenty", "helmrelease " + ns + "/small"} {
				if strings.Contains(s, who+": ") {
					count[who]++
				}
			}
		}
		if len(seen) == 0 || len(seen) > 2 || count["resourceset "+ns+"/twenty"] > 1 || count["helmrelease "+ns+"/small"] > 1 {
			t.Errorf("%d error diagnostics, want at most one per resource:\n  %s", len(seen), strings.Join(seen, "\n  "))
		}
		for _, s := range seen {
			if !strings.Contains(s, "did not answer") && !strings.Contains(s, "unreachable") && !strings.Contains(s, "no answer") {
				t.Errorf("an error that does not name the server not answering: %s", s)
			}
			if n := strings.Count(s, "kubernetes.request_timeout"); n > 1 {
				t.Errorf("the cause is named %d times: %s", n, s)
			}
		}
		rec.resetWarnings()
	}
	accTestWith(t, rec, resource.TestCase{
		Steps: []resource.TestStep{
			{
				PreConfig:   rec.resetWarnings,
				Config:      cfg,
				ExpectError: regexp.MustCompile(`(did\s+not\s+answer|unreachable|no\s+answer)`),
			},
			{
				PreConfig: perResource,
				Config:    providerBlock(""),
			},
		},
	})
}
