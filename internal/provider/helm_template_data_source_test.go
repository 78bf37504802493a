package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"helm.sh/helm/v4/pkg/action"
	chartutil "helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

const templateAddr = "data.stevedore_helm_template.t"

// renderAccTest runs a case of the render data sources under every CLI,
// at once. They need no cluster, so, like the artifact's cases, they run
// with and without TF_ACC, under `make unit` (-short) too.
func renderAccTest(t *testing.T, build func(t *testing.T) resource.TestCase) {
	t.Helper()
	underCLIsEach(t, true, func(t *testing.T, _ *protocolRecord) resource.TestCase { return build(t) },
		func(t *testing.T, tc resource.TestCase) { resource.UnitTest(t, tc) })
}

// packagedChart packages a chart of testenv into a directory of t's and
// returns the archive's path and digest, as stevedore_helmchart_artifact
// outputs them.
func packagedChart(t *testing.T, name string) (string, string) {
	t.Helper()
	tgz, err := testenv.PackageChart(filepath.Join(testenv.ChartsDir(), name), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return tgz, "sha256:" + hex.EncodeToString(sum[:])
}

// helmTemplateOutput is what `helm template` prints for the chart at path:
// Helm's install action in client-only dry-run mode, as the helm CLI runs
// and prints it.
func helmTemplateOutput(t *testing.T, path, name, namespace string, values map[string]any, kubeVersion string, apiVersions []string, includeCRDs bool) (string, string) {
	t.Helper()
	ch, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler)))
	in.DryRunStrategy, in.Replace, in.IncludeCRDs = action.DryRunClient, true, includeCRDs
	in.ReleaseName, in.Namespace, in.APIVersions = name, namespace, apiVersions
	if kubeVersion != "" {
		if in.KubeVersion, err = chartutil.ParseKubeVersion(kubeVersion); err != nil {
			t.Fatal(err)
		}
	}
	reli, err := in.Run(ch, values)
	if err != nil {
		t.Fatal(err)
	}
	rel := reli.(*helmrelease.Release)
	var b strings.Builder
	fmt.Fprintln(&b, strings.TrimSpace(rel.Manifest))
	for _, h := range rel.Hooks {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	return b.String(), rel.Info.Notes
}

// TestAccHelmTemplate_isHelmTemplate renders the test charts with a provider
// that has no kubernetes block, one whose cluster does not exist, and one
// whose cluster is not known at plan: the data source never needs it, and
// gives what helm template gives.
func TestAccHelmTemplate_isHelmTemplate(t *testing.T) {
	t.Parallel()
	renderAccTest(t, func(t *testing.T) resource.TestCase {
		podinfo, podinfoDigest := packagedChart(t, "podinfo")
		crds, crdsDigest := packagedChart(t, "crds")
		withNotes := filepath.Join(t.TempDir(), "notes")
		testenv.WriteFiles(t, withNotes, map[string]string{
			"Chart.yaml":          "apiVersion: v2\nname: notes\nversion: 0.3.0\nappVersion: \"9\"\n",
			"values.yaml":         "greeting: hello\n",
			"templates/NOTES.txt": "{{ .Release.Name }} says {{ .Values.greeting }} to {{ .Capabilities.KubeVersion.Version }}\n",
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n" +
				"data:\n  monitoring: {{ .Capabilities.APIVersions.Has \"monitoring.coreos.com/v1/ServiceMonitor\" | quote }}\n",
		})
		podinfoManifest, _ := helmTemplateOutput(t, podinfo, "web", "apps", map[string]any{"replicaCount": 2, "config": map[string]any{"greeting": "hi"}}, "", nil, false)
		crdsManifest, _ := helmTemplateOutput(t, crds, "w", "apps", map[string]any{"size": "XL"}, "", nil, true)
		// The values the sets data source composes, as the release composes
		// them: the documents of values merged in order, then set, set_list
		// and set_sensitive, each later one over the earlier (Helm's strvals
		// types: auto gives an int, string and literal keep strings).
		setsManifest, _ := helmTemplateOutput(t, podinfo, "web", "apps", map[string]any{
			"replicaCount": int64(3),
			"config": map[string]any{"greeting": "hello", "extra": "from-the-second-document", "level": int64(4), "tag": "007",
				"csv": "a,b", "hosts": []any{"a.example.com", "b.example.com"}, "password": "pa55-word"},
		}, "", nil, false)
		for _, want := range []string{"replicas: 3", `level: "4"`, `tag: "007"`, `csv: "a,b"`, `hosts: "[a.example.com b.example.com]"`, `password: "pa55-word"`} {
			if !strings.Contains(setsManifest, want) {
				t.Fatalf("helm's manifest lacks %q:\n%s", want, setsManifest)
			}
		}
		notesManifest, notes := helmTemplateOutput(t, withNotes, "n", "apps", nil, "v1.30.2", []string{"monitoring.coreos.com/v1/ServiceMonitor"}, false)
		for _, want := range []string{"replicas: 2", `greeting: "hi"`} {
			if !strings.Contains(podinfoManifest, want) {
				t.Fatalf("helm's manifest lacks %q:\n%s", want, podinfoManifest)
			}
		}
		templates := fmt.Sprintf(`
data "stevedore_helm_template" "t" {
  release_name = "web"
  namespace    = "apps"
  chart {
    path   = %q
    digest = %q
  }
  values = { replicaCount = 2, config = { greeting = "hi" } }
}
data "stevedore_helm_template" "crds" {
  release_name = "w"
  namespace    = "apps"
  include_crds = true
  chart {
    path   = %q
    digest = %q
  }
  values = "size: XL"
}
data "stevedore_helm_template" "sets" {
  release_name = "web"
  namespace    = "apps"
  chart {
    path   = %q
    digest = %q
  }
  values = [
    yamlencode({ replicaCount = 1, config = { greeting = "hello", level = "1" } }),
    "config:\n  extra: from-the-second-document\n",
  ]
  set = [
    { name = "replicaCount", value = "3" },
    { name = "config.level", value = "2" },
    { name = "config.tag", value = "007", type = "string" },
    { name = "config.csv", value = "a,b", type = "literal" },
    { name = "config.hosts", value = "replaced by set_list" },
  ]
  set_list = [
    { name = "config.hosts", value = ["a.example.com", "b.example.com"] },
  ]
  set_sensitive = [
    { name = "config.password", value = "pa55-word" },
    { name = "config.level", value = "4" },
  ]
}
data "stevedore_helm_template" "notes" {
  release_name = "n"
  namespace    = "apps"
  kube_version = "v1.30.2"
  api_versions = ["monitoring.coreos.com/v1/ServiceMonitor"]
  chart {
    source_path = %q
  }
}
`, podinfo, podinfoDigest, crds, crdsDigest, podinfo, podinfoDigest, withNotes)
		obj := func(apiVersion, kind, namespace, name string) knownvalue.Check {
			return knownvalue.ObjectPartial(map[string]knownvalue.Check{
				"api_version": knownvalue.StringExact(apiVersion), "kind": knownvalue.StringExact(kind),
				"namespace": knownvalue.StringExact(namespace), "name": knownvalue.StringExact(name),
			})
		}
		checks := []statecheck.StateCheck{
			statecheck.ExpectKnownValue(templateAddr, tfjsonpath.New("manifest"), knownvalue.StringExact(podinfoManifest)),
			statecheck.ExpectKnownValue(templateAddr, tfjsonpath.New("objects"), knownvalue.ListExact([]knownvalue.Check{
				obj("v1", "ConfigMap", "", "web"), obj("v1", "Service", "", "web"),
				obj("apps/v1", "Deployment", "", "web"), obj("v1", "Pod", "", "web-test"),
			})),
			statecheck.ExpectKnownValue(templateAddr, tfjsonpath.New("objects").AtSliceIndex(2).AtMapKey("manifest"),
				knownvalue.StringRegexp(regexp.MustCompile(`(?s)^# Source: podinfo/templates/deployment.yaml\n.*replicas: 2\n`))),
			statecheck.ExpectKnownValue(templateAddr, tfjsonpath.New("notes"), knownvalue.StringExact("")),
			statecheck.ExpectKnownValue(templateAddr, tfjsonpath.New("chart_digest"), knownvalue.StringExact(podinfoDigest)),
			statecheck.ExpectKnownValue(templateAddr, tfjsonpath.New("chart_version"), knownvalue.StringExact("1.0.0")),
			statecheck.ExpectKnownValue(templateAddr, tfjsonpath.New("app_version"), knownvalue.StringExact("6.0.0")),
			statecheck.ExpectKnownValue(templateAddr, tfjsonpath.New("config_digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
			statecheck.ExpectKnownValue("data.stevedore_helm_template.crds", tfjsonpath.New("manifest"), knownvalue.StringExact(crdsManifest)),
			statecheck.ExpectKnownValue("data.stevedore_helm_template.crds", tfjsonpath.New("objects"), knownvalue.ListExact([]knownvalue.Check{
				obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.stevedore.dev"), obj("stevedore.dev/v1", "Widget", "", "w"),
			})),
			statecheck.ExpectKnownValue("data.stevedore_helm_template.sets", tfjsonpath.New("manifest"), knownvalue.StringExact(setsManifest)),
			// The digest of the values a release composes of the same
			// configuration (setsReleaseDigest), which the release's plan shows.
			statecheck.ExpectKnownValue("data.stevedore_helm_template.sets", tfjsonpath.New("config_digest"), knownvalue.StringExact(setsReleaseDigest(t))),
			statecheck.ExpectSensitiveValue("data.stevedore_helm_template.sets", tfjsonpath.New("set_sensitive").AtSliceIndex(0).AtMapKey("value")),
			statecheck.ExpectKnownValue("data.stevedore_helm_template.notes", tfjsonpath.New("manifest"), knownvalue.StringExact(notesManifest)),
			statecheck.ExpectKnownValue("data.stevedore_helm_template.notes", tfjsonpath.New("notes"), knownvalue.StringExact(notes)),
			statecheck.ExpectKnownValue("data.stevedore_helm_template.notes", tfjsonpath.New("notes"), knownvalue.StringExact("n says hello to v1.30.2\n")),
			statecheck.ExpectKnownValue("data.stevedore_helm_template.notes", tfjsonpath.New("objects").AtSliceIndex(0).AtMapKey("manifest"),
				knownvalue.StringRegexp(regexp.MustCompile(`monitoring: "true"`))),
			statecheck.ExpectKnownValue("data.stevedore_helm_template.notes", tfjsonpath.New("chart_digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:`))),
		}
		return resource.TestCase{Steps: []resource.TestStep{
			{
				Config:            `provider "stevedore" {}` + templates,
				ConfigStateChecks: checks,
			},
			{
				// A cluster that does not exist: never contacted.
				Config: `
provider "stevedore" {
  kubernetes {
    host  = "https://127.0.0.1:1"
    token = "none"
  }
}` + templates,
				ConfigStateChecks: checks,
			},
			{
				// A cluster not known at the plan of this step, which creates
				// terraform_data: the provider is configured with unknown
				// values, and the data sources are read all the same.
				Config: `
resource "terraform_data" "host" {
  input = "https://127.0.0.1:1"
}
provider "stevedore" {
  kubernetes {
    host = terraform_data.host.output
  }
}` + templates,
				ConfigStateChecks: checks,
			},
		}}
	})
}

// TestAccHelmTemplate_postRenderersAndErrors renders with the release's
// post_renderers, and refuses bad input on the attribute it is about.
func TestAccHelmTemplate_postRenderersAndErrors(t *testing.T) {
	t.Parallel()
	renderAccTest(t, func(t *testing.T) resource.TestCase {
		podinfo, digest := packagedChart(t, "podinfo")
		other := "sha256:" + strings.Repeat("0", 64)
		config := func(chart, extra string) string {
			return fmt.Sprintf(`
provider "stevedore" {}
data "stevedore_helm_template" "t" {
  release_name = "web"
  namespace    = "apps"
  chart {
    %s
  }
  %s
}
`, chart, extra)
		}
		artifact := fmt.Sprintf("path = %q\n    digest = %q", podinfo, digest)
		return resource.TestCase{Steps: []resource.TestStep{
			{
				Config: config(artifact, `
  post_renderers {
    kustomize {
      images {
        name    = "ghcr.io/stefanprodan/podinfo"
        new_tag = "6.9.9"
      }
      patches {
        patch = "[{\"op\": \"add\", \"path\": \"/metadata/annotations\", \"value\": {\"policy\": \"checked\"}}]"
        target {
          kind = "Service"
        }
      }
    }
  }`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(templateAddr, tfjsonpath.New("manifest"),
						knownvalue.StringRegexp(regexp.MustCompile(`image: ghcr.io/stefanprodan/podinfo:6.9.9\n`))),
					statecheck.ExpectKnownValue(templateAddr, tfjsonpath.New("objects").AtSliceIndex(1).AtMapKey("manifest"),
						knownvalue.StringRegexp(regexp.MustCompile(`(?s)kind: Service\n.*policy: checked`))),
				},
			},
			{Config: config(fmt.Sprintf("path = %q\n    digest = %q", podinfo, other), ""), ExpectError: regexp.MustCompile(`chart\.digest:\s+sha256:0+\s+is\s+not\s+the\s+digest`)},
			{Config: config(artifact+"\n    source_path = \"/nowhere\"", ""), ExpectError: regexp.MustCompile(`Conflicting chart sources`)},
			// A digest alone names an archive of the provider's cache, which
			// this one is not in.
			{Config: config(fmt.Sprintf("digest = %q", other), ""), ExpectError: regexp.MustCompile(`(?s)chart\.digest:\s+no\s+chart\s+archive\s+with\s+digest`)},
			{Config: config(artifact, `kube_version = "one"`), ExpectError: regexp.MustCompile(`kube_version`)},
			{Config: config(artifact, `values = "- a list"`), ExpectError: regexp.MustCompile(`(?s)Invalid values.*YAML\s+mapping`)},
			// A bad set is refused on its attribute path, as the release's
			// is; a sensitive one without quoting its value.
			{Config: config(artifact, `set = [{ name = "a", value = "1" }, { name = "b[x", value = "2" }]`),
				ExpectError: regexp.MustCompile(`(?s)Invalid set value.*set\[1\]\.name = "b\[x"`)},
			{Config: config(artifact, `set = [{ name = "a", value = "{", type = "json" }]`),
				ExpectError: regexp.MustCompile(`(?s)Invalid set value.*set\[0\]\.value = "a"`)},
			{Config: config(artifact, `set_list = [{ name = "ok", value = ["x"] }, { name = "l[", value = ["y"] }]`),
				ExpectError: regexp.MustCompile(`(?s)Invalid set value.*set_list\[1\]\.name = "l\["`)},
			{Config: config(artifact, `set_sensitive = [{ name = "s[x", value = "do-not-print-me" }]`),
				ExpectError: regexp.MustCompile(`(?s)Invalid set value.*set_sensitive\[0\]\.name = "s\[x".*details hidden`)},
			{Config: config(artifact, `set = [{ name = "a", value = "1", type = "yaml" }]`), ExpectError: regexp.MustCompile(`(?s)set\[0\]\.type`)},
			// Last: the post-test destroy runs this configuration, which
			// validates.
			{Config: config(artifact, `values = { image = "not a map" }`), ExpectError: regexp.MustCompile(`chart\s+does\s+not\s+render`)},
		}}
	})
}

// setsReleaseDigest is the config_digest of a stevedore_helmrelease given the
// values and sets of the "sets" data source, worked out by the release's own
// conversion of its configuration.
func setsReleaseDigest(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	str := func(s string) types.String { return types.StringValue(s) }
	entry := func(name, value, typ string) attr.Value {
		ty := types.StringNull()
		if typ != "" {
			ty = str(typ)
		}
		return types.ObjectValueMust(setEntryType.AttrTypes, map[string]attr.Value{"name": str(name), "value": str(value), "type": ty})
	}
	m := &helmReleaseModel{
		Name: str("web"), Namespace: str("apps"),
		Values: types.DynamicValue(types.TupleValueMust([]attr.Type{types.StringType, types.StringType}, []attr.Value{
			str("\"config\":\n  \"greeting\": \"hello\"\n  \"level\": \"1\"\n\"replicaCount\": 1\n"),
			str("config:\n  extra: from-the-second-document\n"),
		})),
		Set: types.ListValueMust(setEntryType, []attr.Value{
			entry("replicaCount", "3", ""), entry("config.level", "2", ""), entry("config.tag", "007", "string"),
			entry("config.csv", "a,b", "literal"), entry("config.hosts", "replaced by set_list", ""),
		}),
		SetList: types.ListValueMust(setListEntryType, []attr.Value{types.ObjectValueMust(setListEntryType.AttrTypes, map[string]attr.Value{
			"name": str("config.hosts"), "value": types.ListValueMust(types.StringType, []attr.Value{str("a.example.com"), str("b.example.com")}),
		})}),
		SetSensitive: types.ListValueMust(setEntryType, []attr.Value{entry("config.password", "pa55-word", ""), entry("config.level", "4", "")}),
	}
	spec, known, diags := helmReleaseSpec(ctx, m)
	if diags.HasError() || !known {
		t.Fatalf("release spec: known %v, %v", known, diags)
	}
	values, err := release.InlineValues(spec.Values, spec.Sets)
	if err != nil {
		t.Fatal(err)
	}
	return release.DigestValues(values)
}
