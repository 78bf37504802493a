package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv/objdiff"
)

// upgradeOfTestChart is, per chart of the test data, the values of an upgrade
// after an install with the chart's defaults.
var upgradeOfTestChart = map[string]map[string]any{
	"podinfo": {"replicaCount": 2, "config": map[string]any{"greeting": "bonjour", "farewell": "bye"}},
	"withdep": {"message": "changed", "podinfo": map[string]any{"config": map[string]any{"greeting": "changed"}}},
	"crds":    {"size": "large"},
}

// TestCLI_plannedChangesAreTheUpgrades: for every chart of the test data,
// installed with server-side apply (the default) and with client-side apply,
// the `changes` a saved plan of an upgrade shows, through each CLI, equal
// object by object the difference the apply of that plan makes to the live
// objects of the release (read before and after, without what the API server
// and controllers write: resourceVersion, generation, managedFields, status).
// TestPlan_previewEqualsTheUpgrade checks the same of the engine alone.
func TestCLI_plannedChangesAreTheUpgrades(t *testing.T) {
	entries, err := os.ReadDir(testenv.ChartsDir())
	if err != nil {
		t.Fatal(err)
	}
	var charts []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, ok := upgradeOfTestChart[e.Name()]; !ok {
			t.Errorf("test chart %s has no upgrade in upgradeOfTestChart", e.Name())
			continue
		}
		charts = append(charts, e.Name())
	}
	forEachCLI(t, func(t *testing.T, c cli) {
		src := filepath.Join(t.TempDir(), "charts")
		testenv.CopyDir(t, testenv.ChartsDir(), src)
		cacheDir := t.TempDir()
		nss := map[string]string{}
		config := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + `
variable "upgrade" {
  type    = bool
  default = false
}
`
		// Each chart twice: <chart>_ssa and <chart>_csa, the releases'
		// apply methods (upgrades keep them: auto).
		var releases []string
		for _, name := range charts {
			upgrade, err := json.Marshal(upgradeOfTestChart[name])
			if err != nil {
				t.Fatal(err)
			}
			config += fmt.Sprintf(`
resource "stevedore_helmchart_artifact" %[1]q {
  source_path = %[2]s
}
`, name, hcl(filepath.Join(src, name)))
			for _, method := range []string{"ssa", "csa"} {
				ch := name + "_" + method
				releases = append(releases, ch)
				nss[ch] = uniqueNamespace(t, "chg-"+name+"-"+method+"-"+c.name)
				config += fmt.Sprintf(`
resource "stevedore_helmrelease" %[1]q {
  name      = %[5]q
  namespace = %[2]q
  chart {
    digest = stevedore_helmchart_artifact.%[5]s.digest
  }
  values = var.upgrade ? %[3]s : "{}"
  install {
    server_side_apply = %[4]t
  }
}
`, ch, nss[ch], hcl(string(upgrade)), method == "ssa", name)
			}
		}
		charts := releases
		w := newWorkspace(t, c, config)
		w.must("apply", "-auto-approve", "-input=false")
		w.planEmpty()

		w.must("plan", "-input=false", "-var", "upgrade=true", "-out=up.tfplan")
		planned := showPlan(t, w, "up.tfplan")
		kc := testenv.Need(t).Cluster.Kubeconfig
		ids := map[string]map[string]bool{}
		plannedChanges := map[string]map[string]kube.Drift{}
		before := map[string]map[string]*unstructured.Unstructured{}
		for _, ch := range charts {
			plannedChanges[ch] = changesIn(t, planned.after("stevedore_helmrelease." + ch)["changes"])
			if len(plannedChanges[ch]) == 0 {
				t.Fatalf("%s: the upgrade plans no change: the test changes nothing", ch)
			}
			ids[ch] = manifestIDs(t, kc, nss[ch], releaseNameOf(ch))
			for id := range plannedChanges[ch] {
				ids[ch][id] = true
			}
			before[ch] = map[string]*unstructured.Unstructured{}
			for id := range ids[ch] {
				before[ch][id] = objdiff.Live(t.Context(), t, testClient(t), id)
			}
		}

		w.must("apply", "-input=false", "up.tfplan")
		for _, ch := range charts {
			for id := range manifestIDs(t, kc, nss[ch], releaseNameOf(ch)) {
				ids[ch][id] = true
			}
			for id := range ids[ch] {
				done := objdiff.Diff(t, id, before[ch][id], objdiff.Live(t.Context(), t, testClient(t), id))
				got := plannedChanges[ch][id]
				if done.Type != got.Type || !slices.Equal(objdiff.Sorted(done.Changes), objdiff.Sorted(got.Changes)) {
					t.Errorf("%s %s:\n planned  %s %+v\n upgraded %s %+v", ch, id, got.Type, got.Changes, done.Type, done.Changes)
				}
			}
		}
		for _, ch := range charts {
			method := strings.TrimPrefix(ch[strings.LastIndex(ch, "_"):], "_")
			if got := planned.after("stevedore_helmrelease." + ch)["status"].(map[string]any)["apply_method"]; got != method {
				t.Errorf("%s: planned status.apply_method %v, want %s", ch, got, method)
			}
		}
		w.must("plan", "-input=false", "-var", "upgrade=true", "-detailed-exitcode")
		w.destroy()
	})
}

// releaseNameOf is the release name of the test resource ch: its chart's.
func releaseNameOf(ch string) string { return ch[:strings.LastIndex(ch, "_")] }

// changesIn reads the `changes` of a planned release, by object ID.
func changesIn(t *testing.T, v any) map[string]kube.Drift {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Changes []struct {
			Op   string `json:"op"`
			Path string `json:"path"`
			From string `json:"from"`
			To   string `json:"to"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("planned changes %s: %v", b, err)
	}
	out := map[string]kube.Drift{}
	for _, d := range list {
		drift := kube.Drift{ID: d.ID, Type: d.Type}
		for _, c := range d.Changes {
			drift.Changes = append(drift.Changes, kube.Change{Op: c.Op, Path: c.Path, From: c.From, To: c.To})
		}
		out[d.ID] = drift
	}
	return out
}

// manifestIDs is the inventory IDs of the objects of the latest release of
// name in ns, as its manifest has them, in ns when they are namespaced.
func manifestIDs(t *testing.T, kubeconfig, ns, name string) map[string]bool {
	t.Helper()
	manifest, err := testenv.ReleaseManifest(kubeconfig, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	mapper := testClient(t).RESTMapper()
	ids := map[string]bool{}
	dec := k8syaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("manifest of %s/%s: %v", ns, name, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetNamespace() == "" {
			m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
			if err != nil {
				t.Fatalf("%s: %v", kube.ID(u), err)
			}
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				u.SetNamespace(ns)
			}
		}
		ids[kube.ID(u)] = true
	}
	return ids
}
