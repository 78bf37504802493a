package provider

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// generateConfig runs `plan -generate-config-out=generated.tf` in w, which must
// succeed, and returns its output, the file, and the file with its
// whitespace folded to single spaces.
func generateConfig(t *testing.T, w *workspace) (out, gen, flat string) {
	t.Helper()
	out = w.must("plan", "-generate-config-out=generated.tf", "-input=false")
	data, err := os.ReadFile(filepath.Join(w.dir, "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	gen = string(data)
	t.Logf("%s generated.tf:\n%s", w.cli.name, gen)
	return out, gen, strings.Join(strings.Fields(gen), " ")
}

// TestAccResourceSet_generateConfig: a set whose state is lost (another
// workspace applied it) is imported by an import block alone, and `plan
// -generate-config-out` writes its resource block with `resources` holding
// the objects as the set applied them: a ConfigMap, a Deployment and a
// Service (whose server-defaulted fields, clusterIP among them, are left
// out) and a namespaced custom resource, without status, server metadata or
// the set's owner labels. The generated file applies unchanged: no object
// written (resourceVersions unchanged), and the next plan is empty.
// OpenTofu and Terraform.
func TestAccResourceSet_generateConfig(t *testing.T) {
	t.Parallel()
	kc := testClient(t)
	testenv.InstallInputProviderCRD(t, kc)
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "rsgen-"+c.name)
		other := newWorkspace(t, c, providerBlock("")+fmt.Sprintf(`
resource "stevedore_resourceset" "apps" {
  name      = "apps"
  namespace = %q
  wait      = true # the Deployment's status settles before the versions are read
  common_metadata {
    labels = { team = "a" }
  }
  resources = [
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "conf" }, data = { "app.yaml" = "a: 1\n", tmpl = "x" } },
    {
      apiVersion = "apps/v1", kind = "Deployment", metadata = { name = "web", labels = { app = "web" } }
      spec = {
        replicas = 2
        selector = { matchLabels = { app = "web" } }
        template = {
          metadata = { labels = { app = "web" } }
          spec     = { containers = [{ name = "web", image = "nginx:1.27", ports = [{ containerPort = 80 }] }] }
        }
      }
    },
    {
      apiVersion = "v1", kind = "Service", metadata = { name = "web" }
      spec = { selector = { app = "web" }, ports = [{ port = 80, targetPort = 80 }] }
    },
    {
      apiVersion = "fluxcd.controlplane.io/v1", kind = "ResourceSetInputProvider", metadata = { name = "inputs" }
      spec = { type = "Static", defaultValues = { env = "prod", replicas = 3 } }
    },
  ]
}
`, ns))
		other.must("apply", "-auto-approve", "-input=false")
		versions := func() map[string]string {
			out := map[string]string{}
			for _, k := range []struct{ apiVersion, kind string }{{"v1", "ConfigMap"}, {"v1", "Service"}, {"apps/v1", "Deployment"},
				{"fluxcd.controlplane.io/v1", "ResourceSetInputProvider"}} {
				list := &unstructured.UnstructuredList{}
				list.SetAPIVersion(k.apiVersion)
				list.SetKind(k.kind + "List")
				if err := kc.List(testenv.Context(t), list, client.InNamespace(ns)); err != nil {
					t.Fatal(err)
				}
				for _, o := range list.Items {
					out[k.kind+"/"+o.GetName()] = o.GetResourceVersion()
				}
			}
			return out
		}
		before := versions()
		if len(before) < 4 {
			t.Fatalf("objects: %v", before)
		}

		w := newWorkspace(t, c, providerBlock("")+fmt.Sprintf("import {\n  to = stevedore_resourceset.apps\n  id = \"%s/apps\"\n}\n", ns))
		_, gen, flat := generateConfig(t, w)
		for _, s := range []string{`kind = "ConfigMap"`, `kind = "Deployment"`, `kind = "Service"`, `kind = "ResourceSetInputProvider"`,
			`replicas = 2`, `image = "nginx:1.27"`, `team = "a"`, `env = "prod"`, `targetPort = 80`} {
			if !strings.Contains(flat, s) {
				t.Errorf("%s: the generated file lacks %s", c.name, s)
			}
		}
		generatedUnset(t, c, flat, "force", "timeout", "wait")
		for _, s := range []string{"clusterIP", "status", "managedFields", "resourceVersion", "uid =", "creationTimestamp", "generation",
			"stevedore.dev/", "strategy", "Endpoints", "EndpointSlice", "revisionHistoryLimit", "imagePullPolicy", "sessionAffinity", "resources = null"} {
			if strings.Contains(gen, s) {
				t.Errorf("%s: the generated file has %s", c.name, s)
			}
		}

		if out, code := w.apply(); code != 0 {
			t.Fatalf("%s apply of the generated configuration: exit %d\n%s", c.name, code, out)
		}
		if after := versions(); !maps.Equal(before, after) {
			t.Errorf("%s: objects written by the adoption: resourceVersions before %v, after %v", c.name, before, after)
		}
		w.planEmpty()
	})
}

// TestAccResourceSet_generateConfigFluxOperator: a flux-operator ResourceSet
// (reconciliation disabled, as the migration guide says) whose objects
// flux-operator applied (field manager flux-operator, its labels, in two
// steps, for two inputs, with common metadata and a dependency) is imported
// by an import block with the ID `flux-operator:<namespace>/<name>`, and
// `plan -generate-config-out` writes the ResourceSet's spec: its inputs,
// steps and templates as they are, its dependency and common metadata, and
// `take_over_from = ["flux-operator"]`. The plan lists every object the
// apply takes over. The generated file applies unchanged, and the apply's
// only write is the take-over: each object keeps its UID and its content,
// and gains the set's owner labels (flux-operator's stay). The next plan is
// empty. OpenTofu and Terraform.
func TestAccResourceSet_generateConfigFluxOperator(t *testing.T) {
	t.Parallel()
	kc := testClient(t)
	testenv.InstallResourceSetCRD(t, kc)
	forEachCLI(t, func(t *testing.T, c cli) {
		ctx := testenv.Context(t)
		ns := uniqueNamespace(t, "rsfo-"+c.name)
		foLabels := map[string]any{"team": "platform", "resourceset.fluxcd.controlplane.io/name": "tenants",
			"resourceset.fluxcd.controlplane.io/namespace": ns}
		apply := func(manager string, obj map[string]any) {
			t.Helper()
			u := &unstructured.Unstructured{Object: obj}
			if err := kc.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership); err != nil {
				t.Fatal(err)
			}
		}
		// The dependency, another writer's.
		apply("kubectl", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "base", "namespace": ns}})
		// What flux-operator applied for the inputs a (2) and b (1).
		var objects []string
		for tenant, replicas := range map[string]string{"a": "2", "b": "1"} {
			apply("flux-operator", map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "cfg-" + tenant, "namespace": ns, "labels": foLabels},
				"data":     map[string]any{"replicas": replicas, "tenant": tenant}})
			apply("flux-operator", map[string]any{"apiVersion": "v1", "kind": "ServiceAccount",
				"metadata": map[string]any{"name": "sa-" + tenant, "namespace": ns, "labels": foLabels}})
			objects = append(objects, "ConfigMap/cfg-"+tenant, "ServiceAccount/sa-"+tenant)
		}
		rs := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"commonMetadata": map[string]any{"labels": map[string]any{"team": "platform"}},
			"inputs":         []any{map[string]any{"tenant": "a", "replicas": int64(2)}, map[string]any{"tenant": "b", "replicas": int64(1)}},
			"dependsOn":      []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "base", "namespace": ns}},
			"steps": []any{
				map[string]any{"name": "config", "timeout": "1m", "resourcesTemplate": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg-<< inputs.tenant >>\ndata:\n  replicas: \"<< inputs.replicas >>\"\n  tenant: << inputs.tenant >>\n"},
				map[string]any{"name": "accounts", "resources": []any{map[string]any{"apiVersion": "v1", "kind": "ServiceAccount",
					"metadata": map[string]any{"name": "sa-<< inputs.tenant >>"}}}},
			},
		}}}
		rs.SetGroupVersionKind(resourceset.FluxOperatorResourceSet)
		rs.SetNamespace(ns)
		rs.SetName("tenants")
		rs.SetAnnotations(map[string]string{"fluxcd.controlplane.io/reconcile": "disabled"})
		if err := kc.Create(ctx, rs); err != nil {
			t.Fatal(err)
		}
		get := func(o string) *unstructured.Unstructured {
			t.Helper()
			kind, name, _ := strings.Cut(o, "/")
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("v1")
			u.SetKind(kind)
			if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
				t.Fatal(err)
			}
			return u
		}
		type live struct{ uid, content string }
		read := func() map[string]live {
			out := map[string]live{}
			for _, o := range objects {
				u := get(o)
				labels := u.GetLabels()
				for k := range labels {
					if strings.HasPrefix(k, "stevedore.dev/") {
						delete(labels, k)
					}
				}
				content := fmt.Sprintf("labels=%v annotations=%v data=%v", labels, u.GetAnnotations(), u.Object["data"])
				out[o] = live{string(u.GetUID()), content}
			}
			return out
		}
		before := read()

		w := newWorkspace(t, c, providerBlock("")+fmt.Sprintf("import {\n  to = stevedore_resourceset.tenants\n  id = \"flux-operator:%s/tenants\"\n}\n", ns))
		out, _, flat := generateConfig(t, w)
		for _, s := range []string{`take_over_from = ["flux-operator"]`, `name = "config"`, `timeout = "1m"`, `name = "accounts"`,
			"cfg-<< inputs.tenant >>", `name = "sa-<< inputs.tenant >>"`, `tenant = "a"`, `replicas = 2`, `team = "platform"`,
			`kind = "ConfigMap"`, `name = "base"`, "resources = null"} {
			if !strings.Contains(flat, s) {
				t.Errorf("%s: the generated file lacks %s", c.name, s)
			}
		}
		generatedUnset(t, c, flat, "wait", "force")
		plan := strings.Join(strings.Fields(strings.ReplaceAll(out, "│", "")), " ")
		for _, o := range objects {
			kind, name, _ := strings.Cut(o, "/")
			if s := fmt.Sprintf("%s/%s/%s from flux-operator ResourceSet %s/tenants", kind, ns, name, ns); !strings.Contains(plan, s) {
				t.Errorf("%s: the plan does not list the take-over %q:\n%s", c.name, s, out)
			}
		}

		if out, code := w.apply(); code != 0 {
			t.Fatalf("%s apply of the generated configuration: exit %d\n%s", c.name, code, out)
		}
		after := read()
		if !maps.Equal(before, after) {
			t.Errorf("%s: the take-over changed more than the owner labels:\nbefore %v\nafter  %v", c.name, before, after)
		}
		for _, o := range objects {
			if u := get(o); u.GetLabels()[kube.SetNameLabel] != "tenants" {
				t.Errorf("%s: %s not taken over: labels %v", c.name, o, u.GetLabels())
			}
		}
		state := w.must("state", "show", "-no-color", "stevedore_resourceset.tenants")
		if strings.Contains(state, "adopted = true") || strings.Count(state, `step    = "`) != 4 {
			t.Errorf("%s: inventory after the take-over, want 4 objects in steps, none adopted:\n%s", c.name, state)
		}
		w.planEmpty()
	})
}

// generatedUnset fails t when the generated configuration flat sets one of
// the optional and computed attributes names to a value: an import leaves
// them null, so that the configuration keeps the provider's defaults. OpenTofu
// and Terraform before 1.14 write such an attribute as `name = null`;
// Terraform 1.14 and later leave it out (its config generation skips computed
// attributes whose value is null). Either is unset.
func generatedUnset(t *testing.T, c cli, flat string, names ...string) {
	t.Helper()
	for _, name := range names {
		for _, m := range regexp.MustCompile(`(?:^|\s)`+regexp.QuoteMeta(name)+` = (\S+)`).FindAllStringSubmatch(flat, -1) {
			if m[1] != "null" {
				t.Errorf("%s: the generated file sets %s = %s, want it unset (null or left out)", c.name, name, m[1])
			}
		}
	}
}
