package provider

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

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
		w.must("plan", "-generate-config-out=generated.tf", "-input=false")
		data, err := os.ReadFile(filepath.Join(w.dir, "generated.tf"))
		if err != nil {
			t.Fatal(err)
		}
		gen := string(data)
		t.Logf("%s generated.tf:\n%s", c.name, gen)
		flat := strings.Join(strings.Fields(gen), " ")
		for _, s := range []string{`kind = "ConfigMap"`, `kind = "Deployment"`, `kind = "Service"`, `kind = "ResourceSetInputProvider"`,
			`replicas = 2`, `image = "nginx:1.27"`, "force = null", "timeout = null", "wait = null", `team = "a"`, `env = "prod"`, `targetPort = 80`} {
			if !strings.Contains(flat, s) {
				t.Errorf("%s: the generated file lacks %s", c.name, s)
			}
		}
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
