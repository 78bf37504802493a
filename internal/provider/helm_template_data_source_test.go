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
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"helm.sh/helm/v4/pkg/action"
	chartutil "helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

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

// commonMetadataChart is a chart whose objects carry labels and annotations
// of their own, a Service whose selector common_metadata must not touch, and
// a test hook (not run by an install).
func commonMetadataChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "common")
	testenv.WriteFiles(t, dir, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: common\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n" +
			"  labels:\n    team: chart\n    app: common\n  annotations:\n    example.com/note: chart\ndata:\n  v: one\n",
		"templates/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-svc\nspec:\n" +
			"  selector:\n    app: common\n  ports:\n  - port: 80\n",
		"templates/tests/test.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}-test\n" +
			"  annotations:\n    helm.sh/hook: test\nspec:\n  restartPolicy: Never\n  containers:\n  - name: t\n    image: busybox\n",
	})
	return dir
}

// templateObjectsIn is the objects of the data source at addr in s, each
// parsed from its manifest.
func templateObjectsIn(s *terraform.State, addr string) ([]*unstructured.Unstructured, error) {
	rs, ok := s.RootModule().Resources[addr]
	if !ok {
		return nil, fmt.Errorf("%s not in state", addr)
	}
	n, err := strconv.Atoi(rs.Primary.Attributes["objects.#"])
	if err != nil {
		return nil, fmt.Errorf("%s: objects.#: %w", addr, err)
	}
	out := make([]*unstructured.Unstructured, n)
	for i := range n {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(rs.Primary.Attributes[fmt.Sprintf("objects.%d.manifest", i)]), &obj); err != nil {
			return nil, fmt.Errorf("%s: objects[%d]: %w", addr, i, err)
		}
		out[i] = &unstructured.Unstructured{Object: obj}
	}
	return out, nil
}

// metadataHas says how o's labels and annotations differ from want (nil:
// they hold every key of want with its value).
func metadataHas(o *unstructured.Unstructured, labels, annotations map[string]string) error {
	for k, v := range labels {
		if got, ok := o.GetLabels()[k]; !ok || got != v {
			return fmt.Errorf("%s %s: label %s = %q, want %q (labels %v)", o.GetKind(), o.GetName(), k, got, v, o.GetLabels())
		}
	}
	for k, v := range annotations {
		if got, ok := o.GetAnnotations()[k]; !ok || got != v {
			return fmt.Errorf("%s %s: annotation %s = %q, want %q (annotations %v)", o.GetKind(), o.GetName(), k, got, v, o.GetAnnotations())
		}
	}
	return nil
}

// templateHasCommonMetadata checks that every object of the data source at
// addr (hooks included, unless hooks says they are left alone) carries
// labels and annotations, in objects and in manifest, and that the
// Service's selector is the chart's.
func templateHasCommonMetadata(addr string, labels, annotations map[string]string, hooks bool) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		objs, err := templateObjectsIn(s, addr)
		if err != nil {
			return err
		}
		if len(objs) != 3 {
			return fmt.Errorf("%d objects, want the ConfigMap, the Service and the test Pod", len(objs))
		}
		tagged := 0
		for _, o := range objs {
			err := metadataHas(o, labels, annotations)
			switch {
			case o.GetKind() == "Pod" && !hooks:
				if err == nil {
					return fmt.Errorf("the test hook got common_metadata under nohooks: %v %v", o.GetLabels(), o.GetAnnotations())
				}
				continue
			case err != nil:
				return err
			}
			tagged++
			if o.GetKind() == "Service" {
				if sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector"); len(sel) != 1 || sel["app"] != "common" {
					return fmt.Errorf("the Service's selector is %v, want the chart's", sel)
				}
			}
		}
		// The manifest is what objects are cut from: each key once per
		// object that has it.
		manifest := s.RootModule().Resources[addr].Primary.Attributes["manifest"]
		for k, v := range labels {
			if got := strings.Count(manifest, fmt.Sprintf("%s: %s\n", k, v)); got != tagged {
				return fmt.Errorf("manifest has %s: %s %d times, want %d:\n%s", k, v, got, tagged, manifest)
			}
		}
		return nil
	}
}

// TestAccHelmTemplate_commonMetadata: common_metadata's labels and
// annotations are on every object the data source renders, in objects and in
// manifest, over the chart's and over post_renderers' (as the release's),
// on hooks unless post_render_strategy is nohooks; the keys a release refuses
// are refused here, naming the attribute.
func TestAccHelmTemplate_commonMetadata(t *testing.T) {
	t.Parallel()
	renderAccTest(t, func(t *testing.T) resource.TestCase {
		chart := commonMetadataChart(t)
		config := func(strategy, labels string) string {
			return fmt.Sprintf(`
provider "stevedore" {}
data "stevedore_helm_template" "t" {
  release_name         = "web"
  namespace            = "apps"
  post_render_strategy = %q
  chart {
    source_path = %q
  }
  post_renderers {
    kustomize {
      patches {
        patch = "[{\"op\": \"add\", \"path\": \"/metadata/labels/team\", \"value\": \"patched\"}]"
        target {
          kind = "ConfigMap"
        }
      }
    }
  }
  common_metadata {
    labels      = %s
    annotations = { "example.com/note" = "common", "example.com/owner" = "sre" }
  }
}
`, strategy, chart, labels)
		}
		labels := map[string]string{"team": "platform", "example.com/tier": "web"}
		annotations := map[string]string{"example.com/note": "common", "example.com/owner": "sre"}
		good := `{ team = "platform", "example.com/tier" = "web" }`
		return resource.TestCase{Steps: []resource.TestStep{
			{
				Config: config("combined", good),
				Check: resource.ComposeTestCheckFunc(templateHasCommonMetadata(templateAddr, labels, annotations, true),
					func(s *terraform.State) error {
						objs, err := templateObjectsIn(s, templateAddr)
						if err != nil {
							return err
						}
						// The chart's other label stays; the patch's team
						// lost to common_metadata's.
						return metadataHas(objs[0], map[string]string{"app": "common", "team": "platform"}, nil)
					}),
			},
			{
				Config: config("nohooks", good),
				Check:  templateHasCommonMetadata(templateAddr, labels, annotations, false),
			},
			{
				Config:      config("combined", `{ "stevedore.dev/name" = "other" }`),
				ExpectError: regexp.MustCompile(`common_metadata\.labels:\s+"stevedore\.dev/name"\s+records\s+who\s+owns`),
			},
			{
				Config:      config("combined", `{ "app.kubernetes.io/managed-by" = "me", tier = "not valid!" }`),
				ExpectError: regexp.MustCompile(`(?s)common_metadata\.labels:\s+"app\.kubernetes\.io/managed-by"\s+records.*common_metadata\.labels:\s+label\s+"tier"`),
			},
			// Last: the post-test destroy runs this configuration.
			{
				Config: config("combined", good),
				Check:  templateHasCommonMetadata(templateAddr, labels, annotations, true),
			},
		}}
	})
}

// TestAccHelmTemplate_disableSchemaValidation: values that the chart's
// values.schema.json refuses fail the read on `values` with the schema's
// error, as a release's plan does; disable_schema_validation renders them,
// as `helm template --skip-schema-validation`.
func TestAccHelmTemplate_disableSchemaValidation(t *testing.T) {
	t.Parallel()
	renderAccTest(t, func(t *testing.T) resource.TestCase {
		chart := filepath.Join(t.TempDir(), "strict")
		testenv.WriteFiles(t, chart, map[string]string{
			"Chart.yaml":         "apiVersion: v2\nname: strict\nversion: 0.1.0\n",
			"values.yaml":        "replicaCount: 1\n",
			"values.schema.json": `{"type": "object", "properties": {"replicaCount": {"type": "integer"}}, "additionalProperties": false}`,
			"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  replicas: {{ .Values.replicaCount | quote }}\n",
		})
		config := func(values, skip string) string {
			return fmt.Sprintf(`
provider "stevedore" {}
data "stevedore_helm_template" "t" {
  release_name = "web"
  namespace    = "apps"
  chart {
    source_path = %q
  }
  values = %s
  %s
}
`, chart, values, skip)
		}
		manifestHas := func(want string) []statecheck.StateCheck {
			return []statecheck.StateCheck{statecheck.ExpectKnownValue(templateAddr, tfjsonpath.New("manifest"),
				knownvalue.StringRegexp(regexp.MustCompile(regexp.QuoteMeta(want))))}
		}
		schemaErr := func(key string) *regexp.Regexp {
			return regexp.MustCompile(`(?s)values:\s+template\s+failed:\s+chart\s+does\s+not\s+render:.*values\s+don't\s+meet\s+the\s+specifications\s+of\s+the\s+schema.*` + key)
		}
		return resource.TestCase{Steps: []resource.TestStep{
			{Config: config(`{ replicaCount = "three" }`, "disable_schema_validation = true"), ConfigStateChecks: manifestHas(`replicas: "three"`)},
			{Config: config(`{ replicaCount = "three" }`, ""), ExpectError: schemaErr("replicaCount")},
			{Config: config(`{ replicas = 2 }`, "disable_schema_validation = false"), ExpectError: schemaErr("replicas")},
			{Config: config(`{ replicas = 2 }`, "disable_schema_validation = true"), ConfigStateChecks: manifestHas(`replicas: "1"`)},
			// Last: the post-test destroy runs this configuration.
			{Config: config(`{ replicaCount = 2 }`, "disable_schema_validation = false"), ConfigStateChecks: manifestHas(`replicas: "2"`)},
		}}
	})
}

// templateMatchesCluster checks that each object of the data source at addr
// that the release installed (every object but the test hook, which an
// install does not run) has on the cluster the labels and annotations the
// template shows, with the same values, and no other but those a release
// adds itself (origin and Helm ownership keys); and that the keys of
// common_metadata are among them.
func templateMatchesCluster(t *testing.T, addr, ns string, labels, annotations map[string]string) resource.TestCheckFunc {
	releaseOwn := map[string]bool{release.OriginNameLabel: true, release.OriginNamespaceLabel: true,
		"app.kubernetes.io/managed-by": true, "meta.helm.sh/release-name": true, "meta.helm.sh/release-namespace": true}
	same := func(what string, tmpl, live map[string]string) error {
		for k, v := range tmpl {
			if got, ok := live[k]; !ok || got != v {
				return fmt.Errorf("%s %s: the template has %q, the cluster %q", what, k, v, got)
			}
		}
		for k := range live {
			if _, ok := tmpl[k]; !ok && !releaseOwn[k] {
				return fmt.Errorf("%s %s is on the cluster, not in the template", what, k)
			}
		}
		return nil
	}
	return func(s *terraform.State) error {
		objs, err := templateObjectsIn(s, addr)
		if err != nil {
			return err
		}
		compared := 0
		for _, o := range objs {
			if err := metadataHas(o, labels, annotations); err != nil {
				return fmt.Errorf("template: %w", err)
			}
			if o.GetKind() == "Pod" {
				continue // the test hook: rendered, not installed
			}
			live, err := getObject(t, o.GetAPIVersion(), o.GetKind(), ns, o.GetName())
			if err != nil {
				return err
			}
			if err := same(o.GetKind()+" "+o.GetName()+" label", o.GetLabels(), live.GetLabels()); err != nil {
				return err
			}
			if err := same(o.GetKind()+" "+o.GetName()+" annotation", o.GetAnnotations(), live.GetAnnotations()); err != nil {
				return err
			}
			compared++
		}
		if compared != 2 {
			return fmt.Errorf("compared %d objects with the cluster, want the ConfigMap and the Service", compared)
		}
		return nil
	}
}

// TestAccHelmTemplate_commonMetadataIsTheRelease: a stevedore_helmrelease
// and a stevedore_helm_template of the same chart archive, values and
// common_metadata: every object the template renders has the labels and
// annotations the release put on the cluster, the same values, and the
// cluster has no others but the release's own origin and ownership keys;
// also after common_metadata changes (the release upgrades, a key removed
// from both).
func TestAccHelmTemplate_commonMetadataIsTheRelease(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "tmpl-common")
		cacheDir := t.TempDir()
		chart := commonMetadataChart(t)
		config := func(metadata string) string {
			return releaseConfig(cacheDir, chart, ns, metadata) + fmt.Sprintf(`
data "stevedore_helm_template" "t" {
  release_name = "podinfo"
  namespace    = %q
  chart {
    path   = stevedore_helmchart_artifact.podinfo.path
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
%s
}
`, ns, metadata)
		}
		return resource.TestCase{Steps: []resource.TestStep{
			{
				Config: config(`  common_metadata {
    labels      = { team = "platform", "example.com/tier" = "web" }
    annotations = { "example.com/note" = "common" }
  }
`),
				Check: templateMatchesCluster(t, templateAddr, ns, map[string]string{"team": "platform", "example.com/tier": "web"},
					map[string]string{"example.com/note": "common"}),
			},
			{
				Config: config(`  common_metadata {
    labels      = { team = "apps" }
    annotations = { "example.com/owner" = "sre" }
  }
`),
				ConfigPlanChecks: expectAction(plancheck.ResourceActionUpdate),
				Check: templateMatchesCluster(t, templateAddr, ns, map[string]string{"team": "apps"},
					map[string]string{"example.com/owner": "sre"}),
			},
		}}
	})
}
