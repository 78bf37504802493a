package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// The ownership model under real CLIs, one process per command, as teams run
// them: several configurations against one cluster, applies at once, applies
// killed part way (docs/guides/safety.md).

// ownedRelease is a configuration of one release of the podinfo chart in
// chartDir: release name in namespace ns, with body added to the release.
func ownedRelease(cacheDir, chartDir, ns, name, body string) string {
	return providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}

resource "stevedore_helmrelease" "podinfo" {
  name      = %q
  namespace = %q
  chart {
    path   = stevedore_helmchart_artifact.podinfo.path
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
%s
}
`, hcl(chartDir), name, ns, body)
}

// stuckValues make the chart's Deployment unschedulable, so that Helm's wait
// holds the release in pending-install until timeout.
const stuckValues = `values = { nodeSelector = { "stevedore.dev/nowhere" = "true" } }`

// forEachCLI runs f under every CLI, as parallel subtests.
func forEachCLI(t *testing.T, f func(t *testing.T, c cli)) {
	t.Helper()
	testenv.Need(t)
	for _, c := range clis(t, false) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f(t, c)
		})
	}
}

// applyAtOnce starts `apply` in both workspaces at once and fails the test
// unless exactly one succeeds; it returns their outputs and which won.
func applyAtOnce(t *testing.T, round int, ws []*workspace) (outs []string, won, lost int) {
	t.Helper()
	outs, codes := make([]string, 2), make([]int, 2)
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], codes[i] = w.apply()
		}()
	}
	wg.Wait()
	if (codes[0] == 0) == (codes[1] == 0) {
		t.Fatalf("round %d: exit codes %v, want exactly one success\n--- first:\n%s\n--- second:\n%s", round, codes, outs[0], outs[1])
	}
	won = slices.Index(codes, 0)
	return outs, won, 1 - won
}

// releaseOwnerID is the owner ID that release name's newest revision in
// storage records.
func releaseOwnerID(t *testing.T, ns, name string) string {
	t.Helper()
	var l corev1.SecretList
	if err := testClient(t).List(context.Background(), &l, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": name}); err != nil {
		t.Fatal(err)
	}
	var id, version string
	for _, s := range l.Items {
		if v := s.Labels["version"]; len(v) > len(version) || len(v) == len(version) && v > version {
			id, version = s.Labels[kube.OwnerLabel], v
		}
	}
	if id == "" {
		t.Fatalf("release %s/%s records no owner ID", ns, name)
	}
	return id
}

// eventually polls cond every 100ms until it holds, failing the test after
// two minutes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 2m", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Two configurations apply a release of one name at once: exactly one
// installs it; the other fails before it writes anything, naming the
// winner's owner ID, and saves nothing, so that its destroy leaves the
// winner's release alone. Five rounds under each CLI.
func TestAccOwnership_concurrentReleaseCreatesExactlyOneWins(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "own-race-"+c.name)
		chartDir := chartCopy(t, "1.0.0")
		for round := range 5 {
			name := fmt.Sprintf("race%d", round)
			ws := []*workspace{
				newWorkspace(t, c, ownedRelease(t.TempDir(), chartDir, ns, name, "")),
				newWorkspace(t, c, ownedRelease(t.TempDir(), chartDir, ns, name, "")),
			}
			outs, won, lost := applyAtOnce(t, round, ws)
			if !regexp.MustCompile(`(?s)Release already exists.*release\s+` + name + `.*made\s+by\s+stevedore_helmrelease\s+` + ns + `/` + name + `\s+\(owner\s+[0-9a-f]{32}\)`).MatchString(outs[lost]) {
				t.Fatalf("round %d: the loser does not name the winner:\n%s\nthe winner:\n%s", round, outs[lost], outs[won])
			}
			// The advice names the winner by the owner ID its release
			// records, and says that an import is for a release of this
			// configuration only, once no apply runs for it.
			winner := releaseOwnerID(t, ns, name)
			if !regexp.MustCompile(`(?s)Owner\s+` + winner + `.*another\s+configuration.*leave\s+it\s+to\s+that\s+one\s+and\s+choose\s+another\s+release_name.*` +
				`Only\s+if\s+it\s+is\s+this\s+configuration's.*once\s+no\s+apply\s+runs\s+for\s+it,\s+import\s+it.*with\s+the\s+ID\s+"` + ns + `/` + name + `"`).MatchString(outs[lost]) {
				t.Fatalf("round %d: the loser's advice does not name the winner's owner %s and when to import:\n%s", round, winner, outs[lost])
			}
			if got := releaseRevisions(t, ns, name); !slices.Equal(got, []string{"1:deployed"}) {
				t.Fatalf("round %d: revisions %v, want the winner's one", round, got)
			}
			ws[won].planEmpty()
			ws[lost].destroy()
			if got := releaseRevisions(t, ns, name); !slices.Equal(got, []string{"1:deployed"}) {
				t.Fatalf("round %d: the loser's destroy changed the winner's release: %v", round, got)
			}
			ws[won].destroy()
			if n := len(releaseSecrets(t, ns, name)); n != 0 {
				t.Fatalf("round %d: %d release Secrets left after the winner's destroy", round, n)
			}
		}
	})
}

// The reproduction of the ownership issue: configuration p installs a release
// whose Deployment cannot schedule, and waits; while it waits, configuration q
// applies a release of the same name and namespace. q refuses p's
// pending-install revision (it does not carry q's owner ID), writes nothing
// and saves nothing; p's apply is undisturbed, and p's destroy uninstalls
// its own release.
func TestAccOwnership_createDuringAnotherConfigurationsInstall(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "own-wait-"+c.name)
		chartDir := chartCopy(t, "1.0.0")
		p := newWorkspace(t, c, ownedRelease(t.TempDir(), chartDir, ns, "conc", stuckValues+"\n  timeout = \"30s\""))
		q := newWorkspace(t, c, ownedRelease(t.TempDir(), chartDir, ns, "conc", ""))
		var pOut string
		var pCode int
		pDone := make(chan struct{})
		go func() {
			defer close(pDone)
			pOut, pCode = p.apply()
		}()
		eventually(t, "p's install pending", func() bool {
			revs, _ := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, ns, "conc")
			return slices.Equal(revs, []string{"1:pending-install"})
		})
		out, code := q.apply()
		if code == 0 || !regexp.MustCompile(`(?s)pending-install.*it\s+is\s+being\s+installed\s+right\s+now`).MatchString(out) {
			t.Fatalf("q: exit %d, want a refusal that says the release is being installed\n%s", code, out)
		}
		<-pDone
		if pCode == 0 || !strings.Contains(pOut, "install failed") {
			t.Fatalf("p: exit %d, want its own install to time out\n%s", pCode, pOut)
		}
		if got := releaseRevisions(t, ns, "conc"); !slices.Equal(got, []string{"1:failed"}) {
			t.Fatalf("revisions %v: q changed p's release", got)
		}
		q.destroy()
		if n := len(releaseSecrets(t, ns, "conc")); n != 1 {
			t.Fatalf("q's destroy touched p's release: %d Secrets left", n)
		}
		p.destroy()
		if n := len(releaseSecrets(t, ns, "conc")); n != 0 {
			t.Fatalf("%d release Secrets left after p's destroy", n)
		}
	})
}

// kill -9 of the CLI while a release installs: the provider records the
// cancelled revision as failed and exits; no state was saved. The re-apply
// cannot prove the release is its own (it has a new owner ID), so the plan
// warns and the apply refuses with the exact import ID; the import takes the
// release's owner ID, and the apply after it converges; destroy leaves no
// release Secret and none of its objects.
func TestAccOwnership_killedReleaseInstallRecoversByImport(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "own-kill-"+c.name)
		chartDir := chartCopy(t, "1.0.0")
		cacheDir := t.TempDir()
		w := newWorkspace(t, c, ownedRelease(cacheDir, chartDir, ns, "podinfo", stuckValues+"\n  timeout = \"2m\""))
		w.killDuring(func() bool {
			revs, _ := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo")
			return slices.Equal(revs, []string{"1:pending-install"})
		})
		// The user fixes the values and applies again.
		w.write(ownedRelease(cacheDir, chartDir, ns, "podinfo", ""))
		out, code := w.run("plan", "-input=false")
		if code != 0 || !regexp.MustCompile(`(?s)Release already exists.*Apply\s+refuses.*"`+ns+`/podinfo"`).MatchString(out) {
			t.Fatalf("plan after the kill: exit %d, want a warning that apply refuses, with the import ID\n%s", code, out)
		}
		out, code = w.apply()
		if code == 0 || !regexp.MustCompile(`(?s)import\s+it.*with\s+the\s+ID\s+"`+ns+`/podinfo"`).MatchString(out) {
			t.Fatalf("apply after the kill: exit %d, want a refusal with the import ID\n%s", code, out)
		}
		w.importID("stevedore_helmrelease.podinfo", ns+"/podinfo")
		w.must("apply", "-auto-approve", "-input=false")
		w.planEmpty()
		if got := releaseRevisions(t, ns, "podinfo"); len(got) == 0 || got[len(got)-1] != fmt.Sprintf("%d:deployed", len(got)) {
			t.Fatalf("revisions after the recovery %v, want the newest deployed", got)
		}
		w.destroy()
		if n := len(releaseSecrets(t, ns, "podinfo")); n != 0 {
			t.Fatalf("%d release Secrets left after destroy", n)
		}
		if exists(t, "apps/v1", "Deployment", ns, "podinfo") {
			t.Fatal("the release's Deployment survived destroy")
		}
	})
}

// waitedSet is the body of a set that waits for its objects: n ConfigMaps
// cm-00, cm-01, ... (with data, a YAML line, when not empty) and a Deployment
// web, which no node can run when stuck, so that the apply waits until its
// timeout.
func waitedSet(n int, stuck bool, data string) string {
	sel := ""
	if stuck {
		sel = `nodeSelector = { "stevedore.dev/nowhere" = "true" },`
	}
	return fmt.Sprintf(`  wait    = true
  timeout = "2m"
  inputs  = [for i in range(%d) : { n = format("%%02d", i) }]
  resources_template = <<-EOT
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: cm-<< inputs.n >>}
    %s
  EOT
  resources = [{
    apiVersion = "apps/v1", kind = "Deployment", metadata = { name = "web" }
    spec = {
      selector = { matchLabels = { app = "web" } }
      template = {
        metadata = { labels = { app = "web" } }
        spec     = { %s containers = [{ name = "web", image = "nginx" }] }
      }
    }
  }]
`, n, data, sel)
}

// setConfig is a stevedore_resourceset named name in ns with the given body.
func setConfig(ns, name, body string) string {
	return providerBlock("") + fmt.Sprintf(`
resource "stevedore_resourceset" "set" {
  name      = %q
  namespace = %q
%s
}
`, name, ns, body)
}

// configMapTemplate renders ConfigMap name with data v.
func configMapTemplate(name, v string) string {
	return fmt.Sprintf("  resources_template = <<-EOT\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: %s}\n    data: {v: %q}\n  EOT\n", name, v)
}

func cmState(t *testing.T, ns, name string) (map[string]string, map[string]string, bool) {
	t.Helper()
	var cm corev1.ConfigMap
	err := testClient(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm)
	if err != nil {
		return nil, nil, false
	}
	return cm.Data, cm.Labels, true
}

// Two configurations reuse a set's name and namespace by accident: the
// second's plan warns that its apply will refuse the first's object, the
// apply refuses it and changes nothing, the second's destroy leaves it, and
// the first's destroy deletes it.
func TestAccOwnership_sameNameSetsInTwoConfigurations(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "own-same-"+c.name)
		first := newWorkspace(t, c, setConfig(ns, "same", configMapTemplate("cm-shared", "first")))
		second := newWorkspace(t, c, setConfig(ns, "same", configMapTemplate("cm-shared", "second")))
		first.must("apply", "-auto-approve", "-input=false")
		first.planEmpty()
		out, code := second.run("plan", "-input=false")
		if code != 0 || !regexp.MustCompile(`(?s)Objects of another set of this name.*ConfigMap/`+ns+`/cm-shared.*Apply\s+refuses`).MatchString(out) {
			t.Fatalf("second plan: exit %d, want a warning\n%s", code, out)
		}
		out, code = second.apply()
		if code == 0 || !regexp.MustCompile(`(?s)another\s+instance\s+of\s+a\s+set\s+of\s+this\s+name.*"`+ns+`/same"`).MatchString(out) {
			t.Fatalf("second apply: exit %d, want a refusal\n%s", code, out)
		}
		if data, _, _ := cmState(t, ns, "cm-shared"); data["v"] != "first" {
			t.Fatalf("the first set's object was overwritten: %v", data)
		}
		second.destroy()
		if data, labels, ok := cmState(t, ns, "cm-shared"); !ok || data["v"] != "first" || labels[kube.SetNameLabel] != "same" {
			t.Fatalf("the second set's destroy changed the first's object: %v %v %v", ok, data, labels)
		}
		first.planEmpty()
		first.destroy()
		if _, _, ok := cmState(t, ns, "cm-shared"); ok {
			t.Fatal("the first set's destroy left its object")
		}
	})
}

// Two sets of different names apply one new ConfigMap at once: the API
// server lets exactly one create it; the other fails before it writes it,
// naming the winner, and records nothing; its destroy just works. Five
// rounds under each CLI.
func TestAccOwnership_concurrentSetsClaimOneObject(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "own-claim-"+c.name)
		husks := 0
		for round := range 5 {
			cm := fmt.Sprintf("contested-%d", round)
			ws := []*workspace{
				newWorkspace(t, c, setConfig(ns, fmt.Sprintf("a%d", round), configMapTemplate(cm, "a"))),
				newWorkspace(t, c, setConfig(ns, fmt.Sprintf("b%d", round), configMapTemplate(cm, "b"))),
			}
			outs, won, lost := applyAtOnce(t, round, ws)
			winner := []string{"a", "b"}[won]
			if !regexp.MustCompile(`(?s)stevedore_resourceset\s+` + ns + `/` + winner + fmt.Sprint(round) + `\s+\(owner\s+[0-9a-f]{32}\)`).MatchString(outs[lost]) {
				t.Fatalf("round %d: the loser does not name the winner %s:\n%s", round, winner, outs[lost])
			}
			if data, labels, _ := cmState(t, ns, cm); data["v"] != winner || labels[kube.SetNameLabel] != winner+fmt.Sprint(round) {
				t.Fatalf("round %d: object %v %v, want the winner's", round, data, labels)
			}
			ws[won].planEmpty()
			if st, _ := ws[lost].run("state", "list"); strings.Contains(st, "stevedore_resourceset") {
				t.Fatalf("round %d: the loser saved state:\n%s\n--- its apply:\n%s", round, st, outs[lost])
			}
			// The loser saved nothing; when it lost at the plan apply
			// makes again, the CLI keeps a resource with no instance, so
			// its destroy plans the create first (with the refresh): the
			// winner's object is a warning there, not the apply's
			// refusal, and the destroy, without -refresh=false, has
			// nothing to do.
			if st, _ := ws[lost].run("state", "pull"); regexp.MustCompile(`"type":\s*"stevedore_resourceset"`).MatchString(st) {
				husks++
			}
			if out := ws[lost].destroy(); !regexp.MustCompile(`Resources:\s+0\s+destroyed`).MatchString(out) {
				t.Fatalf("round %d: the loser's destroy:\n%s", round, out)
			}
			if _, _, ok := cmState(t, ns, cm); !ok {
				t.Fatalf("round %d: the loser's destroy deleted the winner's object", round)
			}
			ws[won].destroy()
			if _, _, ok := cmState(t, ns, cm); ok {
				t.Fatalf("round %d: the winner's destroy left its object", round)
			}
		}
		t.Logf("%d of 5 losers kept a resource without an instance", husks)
	})
}

// A set that declares an object of a Helm release is refused at plan, naming
// the release and how to take the object over; nothing is written, and the
// release keeps its object.
func TestAccOwnership_setRefusesAHelmReleasesObject(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "own-helm-"+c.name)
		if err := testenv.HelmInstall(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo", chartCopy(t, "1.0.0"), nil); err != nil {
			t.Fatal(err)
		}
		w := newWorkspace(t, c, setConfig(ns, "grabby", configMapTemplate("podinfo", "mine")))
		out, code := w.run("plan", "-input=false")
		if code == 0 || !regexp.MustCompile(`(?s)ConfigMap/`+ns+`/podinfo\s+is\s+owned\s+by\s+Helm\s+release\s+`+ns+`/podinfo.*add\s+"helm"\s+to\s+take_over_from`).MatchString(out) {
			t.Fatalf("plan: exit %d, want a refusal naming the Helm release\n%s", code, out)
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		if err := testClient(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "podinfo"}, u); err != nil {
			t.Fatal(err)
		}
		if _, ok := u.GetLabels()[kube.SetNameLabel]; ok {
			t.Fatal("the refused set labelled the release's object")
		}
	})
}

// kill -9 of the CLI while a set's create waits for its objects: the objects
// it created carry its owner ID, and the one it adopted (it existed before)
// carries its adoption record. The re-apply refuses them with the import ID;
// the import reads them back, created and adopted as they were; the apply
// after it converges; destroy deletes every object the set created and leaves
// the adopted one, without the set's labels.
func TestAccOwnership_killedSetCreateRecoversByImport(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "own-skill-"+c.name)
		pre := &corev1.ConfigMap{Data: map[string]string{"v": "before"}}
		pre.Namespace, pre.Name = ns, "cm-00"
		if err := testClient(t).Create(context.Background(), pre); err != nil {
			t.Fatal(err)
		}
		w := newWorkspace(t, c, setConfig(ns, "big", waitedSet(20, true, "data: {v: set}")))
		w.killDuring(func() bool { return exists(t, "apps/v1", "Deployment", ns, "web") })
		w.write(setConfig(ns, "big", waitedSet(20, false, "data: {v: set}")))
		out, code := w.apply()
		if code == 0 || !regexp.MustCompile(`(?s)another\s+instance\s+of\s+a\s+set\s+of\s+this\s+name.*"`+ns+`/big"`).MatchString(out) {
			t.Fatalf("apply after the kill: exit %d, want a refusal with the import ID\n%s", code, out)
		}
		// One cause, one diagnostic: the 21 objects of the killed create
		// (20 ConfigMaps, cm-00 adopted, and the Deployment) are counted
		// and named in one error, which gives the import ID once.
		if n := strings.Count(out, "Error: "); n != 1 || !regexp.MustCompile(`(?s)21\s+objects\s+\(.*Deployment/`+ns+`/web.*\)\s+are\s+owned\s+by`).MatchString(out) ||
			len(regexp.MustCompile(`import\s+it\s+with\s+the\s+ID\s+"`+ns+`/big"`).FindAllString(out, -1)) != 1 {
			t.Fatalf("apply after the kill: %d errors, want one that counts the 21 objects and gives the import ID once\n%s", n, out)
		}
		w.importID("stevedore_resourceset.set", ns+"/big")
		w.must("apply", "-auto-approve", "-input=false")
		w.planEmpty()
		state := w.must("state", "show", "-no-color", "stevedore_resourceset.set")
		if !regexp.MustCompile(`(?s)adopted\s+=\s+true\s+id\s+=\s+"` + ns + `_cm-00__ConfigMap"`).MatchString(state) {
			t.Fatalf("the pre-existing ConfigMap is not recorded as adopted:\n%s", state)
		}
		w.destroy()
		data, labels, ok := cmState(t, ns, "cm-00")
		if !ok || data["v"] != "set" {
			t.Fatalf("the adopted ConfigMap was deleted, or is not as the set left it: %v %v", ok, data)
		}
		if _, ok := labels[kube.SetNameLabel]; ok {
			t.Fatalf("the adopted ConfigMap keeps the set's labels: %v", labels)
		}
		for i := 1; i < 20; i++ {
			if _, _, ok := cmState(t, ns, fmt.Sprintf("cm-%02d", i)); ok {
				t.Fatalf("cm-%02d, which the set created, survived destroy", i)
			}
		}
		if exists(t, "apps/v1", "Deployment", ns, "web") {
			t.Fatal("the Deployment the set created survived destroy")
		}
	})
}

// kill -9 of the CLI while a release upgrades: the revision the provider
// cancelled is recorded as failed; the state keeps the release, and the next
// apply (the values fixed) continues from the failed revision and converges;
// destroy leaves nothing.
func TestAccOwnership_killedReleaseUpgradeConverges(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "own-kup-"+c.name)
		chartDir := chartCopy(t, "1.0.0")
		cacheDir := t.TempDir()
		w := newWorkspace(t, c, ownedRelease(cacheDir, chartDir, ns, "podinfo", ""))
		w.must("apply", "-auto-approve", "-input=false")
		w.write(ownedRelease(cacheDir, chartDir, ns, "podinfo", stuckValues+"\n  timeout = \"2m\""))
		w.killDuring(func() bool {
			revs, _ := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo")
			return slices.Contains(revs, "2:pending-upgrade")
		})
		w.write(ownedRelease(cacheDir, chartDir, ns, "podinfo", `values = { replicaCount = 2 }`))
		w.must("apply", "-auto-approve", "-input=false")
		w.planEmpty()
		if got := releaseRevisions(t, ns, "podinfo"); got[len(got)-1] != fmt.Sprintf("%d:deployed", len(got)) {
			t.Fatalf("revisions after the recovery %v, want the newest deployed", got)
		}
		w.destroy()
		if n := len(releaseSecrets(t, ns, "podinfo")); n != 0 {
			t.Fatalf("%d release Secrets left after destroy", n)
		}
	})
}

// kill -9 of the CLI while a set's update waits: the objects the killed apply
// created are not in the state, but carry the set's owner ID and no adoption
// record, so the next apply takes them as the set's own (not adopted) and
// destroy deletes them. Then kill -9 of the CLI while the destroy waits for an
// object to go (a finalizer holds it): the next destroy, once the finalizer is
// gone, converges and leaves nothing.
func TestAccOwnership_killedSetUpdateAndDestroyConverge(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "own-sup-"+c.name)
		w := newWorkspace(t, c, setConfig(ns, "grow", waitedSet(5, false, "")))
		w.must("apply", "-auto-approve", "-input=false")
		w.write(setConfig(ns, "grow", waitedSet(15, true, "")))
		w.killDuring(func() bool {
			_, _, ok := cmState(t, ns, "cm-14")
			d := &unstructured.Unstructured{}
			d.SetAPIVersion("apps/v1")
			d.SetKind("Deployment")
			_ = testClient(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, d)
			sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "spec", "nodeSelector")
			return ok && len(sel) > 0
		})
		w.write(setConfig(ns, "grow", waitedSet(15, false, "")))
		w.must("apply", "-auto-approve", "-input=false")
		w.planEmpty()
		state := w.must("state", "show", "-no-color", "stevedore_resourceset.set")
		if strings.Contains(state, "adopted = true") {
			t.Fatalf("objects the killed apply created are recorded as adopted:\n%s", state)
		}

		// A finalizer holds cm-00 when the destroy deletes it.
		held := &corev1.ConfigMap{}
		if err := testClient(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cm-00"}, held); err != nil {
			t.Fatal(err)
		}
		held.Finalizers = append(held.Finalizers, "stevedore.dev/test-hold")
		if err := testClient(t).Update(context.Background(), held); err != nil {
			t.Fatal(err)
		}
		w.write(strings.Replace(setConfig(ns, "grow", waitedSet(15, false, "")), `timeout = "2m"`, `timeout = "1m"`, 1))
		w.must("apply", "-auto-approve", "-input=false")
		w.killDuring2("destroy", func() bool {
			var cm corev1.ConfigMap
			err := testClient(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cm-00"}, &cm)
			return err == nil && cm.DeletionTimestamp != nil
		})
		if err := testClient(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cm-00"}, held); err != nil {
			t.Fatal(err)
		}
		held.Finalizers = nil
		if err := testClient(t).Update(context.Background(), held); err != nil {
			t.Fatal(err)
		}
		w.destroy()
		for i := range 15 {
			if _, _, ok := cmState(t, ns, fmt.Sprintf("cm-%02d", i)); ok {
				t.Fatalf("cm-%02d survived destroy", i)
			}
		}
		if exists(t, "apps/v1", "Deployment", ns, "web") {
			t.Fatal("the Deployment survived destroy")
		}
	})
}

// kill -9 of the CLI while a release's destroy waits for its objects to go (a
// finalizer holds one): the next destroy, once the finalizer is gone,
// converges and leaves no release Secret.
func TestAccOwnership_killedReleaseDestroyConverges(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "own-kdel-"+c.name)
		w := newWorkspace(t, c, ownedRelease(t.TempDir(), chartCopy(t, "1.0.0"), ns, "podinfo", `timeout = "2m"`))
		w.must("apply", "-auto-approve", "-input=false")
		held := &corev1.ConfigMap{}
		key := client.ObjectKey{Namespace: ns, Name: "podinfo"}
		if err := testClient(t).Get(context.Background(), key, held); err != nil {
			t.Fatal(err)
		}
		held.Finalizers = append(held.Finalizers, "stevedore.dev/test-hold")
		if err := testClient(t).Update(context.Background(), held); err != nil {
			t.Fatal(err)
		}
		w.killDuring2("destroy", func() bool {
			var cm corev1.ConfigMap
			err := testClient(t).Get(context.Background(), key, &cm)
			return err == nil && cm.DeletionTimestamp != nil
		})
		if err := testClient(t).Get(context.Background(), key, held); err != nil {
			t.Fatal(err)
		}
		held.Finalizers = nil
		if err := testClient(t).Update(context.Background(), held); err != nil {
			t.Fatal(err)
		}
		w.destroy()
		if n := len(releaseSecrets(t, ns, "podinfo")); n != 0 {
			t.Fatalf("%d release Secrets left after destroy", n)
		}
		if exists(t, "apps/v1", "Deployment", ns, "podinfo") {
			t.Fatal("the release's Deployment survived destroy")
		}
	})
}

// A flux-operator ResourceSet's objects (applied server-side by field manager
// flux-operator, labelled resourceset.fluxcd.controlplane.io/name|namespace,
// no owner references, as flux-operator applies them) are refused until
// take_over_from names flux-operator; then the plan lists them as taken over,
// the first apply takes them over in place (their UIDs do not change), they
// are the set's (not adopted), the next plan is empty; one that leaves the
// set is pruned, and destroy deletes the rest
// (docs/guides/migrating-from-flux-operator.md).
func TestAccOwnership_takeOverFromFluxOperator(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "own-take-"+c.name)
		ctx := context.Background()
		uids := map[string]string{}
		for _, name := range []string{"tenant-a", "tenant-b"} {
			cm := &unstructured.Unstructured{}
			cm.SetAPIVersion("v1")
			cm.SetKind("ConfigMap")
			cm.SetNamespace(ns)
			cm.SetName(name)
			cm.SetLabels(map[string]string{"resourceset.fluxcd.controlplane.io/name": "tenants", "resourceset.fluxcd.controlplane.io/namespace": "flux-system"})
			cm.Object["data"] = map[string]any{"v": "flux-operator"}
			if err := testClient(t).Apply(ctx, client.ApplyConfigurationFromUnstructured(cm), client.FieldOwner("flux-operator"), client.ForceOwnership); err != nil {
				t.Fatal(err)
			}
			var applied corev1.ConfigMap
			if err := testClient(t).Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &applied); err != nil {
				t.Fatal(err)
			}
			uids[name] = string(applied.UID)
		}
		body := func(takeOver string, tenants ...string) string {
			var inputs []string
			for _, tenant := range tenants {
				inputs = append(inputs, fmt.Sprintf("{ t = %q }", tenant))
			}
			return takeOver + `
  inputs = [` + strings.Join(inputs, ", ") + `]
  resources_template = <<-EOT
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: tenant-<< inputs.t >>}
    data: {v: stevedore}
  EOT
`
		}
		const takeOver = `  take_over_from = ["flux-operator"]`
		w := newWorkspace(t, c, setConfig(ns, "tenants", body("", "a", "b")))
		out, code := w.run("plan", "-input=false")
		if code == 0 || !regexp.MustCompile(`(?s)owned\s+by\s+flux-operator\s+ResourceSet\s+flux-system/tenants.*add\s+"flux-operator"\s+to\s+take_over_from`).MatchString(out) {
			t.Fatalf("plan without take_over_from: exit %d, want a refusal\n%s", code, out)
		}
		w.write(setConfig(ns, "tenants", body(takeOver, "a", "b")))
		out, code = w.run("plan", "-input=false")
		if code != 0 || !regexp.MustCompile(`(?s)Objects\s+taken\s+over.*2\s+object\(s\).*ConfigMap/`+ns+`/tenant-a\s+from\s+flux-operator\s+ResourceSet\s+flux-system/tenants`).MatchString(out) {
			t.Fatalf("plan with take_over_from: exit %d, want a warning listing the objects\n%s", code, out)
		}
		w.must("apply", "-auto-approve", "-input=false")
		w.planEmpty()
		for name, uid := range uids {
			var cm corev1.ConfigMap
			if err := testClient(t).Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
				t.Fatal(err)
			}
			if string(cm.UID) != uid || cm.Data["v"] != "stevedore" || cm.Labels[kube.SetNameLabel] != "tenants" {
				t.Fatalf("%s not taken over in place: uid %s (was %s), data %v, labels %v", name, cm.UID, uid, cm.Data, cm.Labels)
			}
		}
		if state := w.must("state", "show", "-no-color", "stevedore_resourceset.set"); strings.Contains(state, "adopted = true") {
			t.Fatalf("taken-over objects are recorded as adopted:\n%s", state)
		}
		// Tenant b leaves the set: it is pruned as any object of the set.
		w.write(setConfig(ns, "tenants", body(takeOver, "a")))
		w.must("apply", "-auto-approve", "-input=false")
		w.planEmpty()
		if _, _, ok := cmState(t, ns, "tenant-b"); ok {
			t.Fatal("tenant-b, taken over by the set, survived its prune")
		}
		if _, _, ok := cmState(t, ns, "tenant-a"); !ok {
			t.Fatal("tenant-a, still in the set, was deleted by the prune")
		}
		w.destroy()
		if _, _, ok := cmState(t, ns, "tenant-a"); ok {
			t.Fatal("tenant-a, taken over by the set, survived its destroy")
		}
	})
}
