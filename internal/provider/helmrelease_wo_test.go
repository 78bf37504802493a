package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// woRelease is a release of the podinfo chart in chartDir whose ConfigMap
// (named as the release, one key per config value) shows what reached Helm.
func woRelease(cacheDir, chartDir, ns, body string) string {
	return providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmrelease" "web" {
  name      = "web"
  namespace = %q
  chart {
    source_path = %s
  }
  values = { config = { greeting = "hello" } }
%s
}
`, ns, hcl(chartDir), body)
}

func releaseConfigMap(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	var cm corev1.ConfigMap
	if err := testClient(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data
}

// notInState fails if the state file or any of outs holds secret.
func notInState(t *testing.T, w *workspace, secret string, outs ...string) {
	t.Helper()
	state, err := os.ReadFile(filepath.Join(w.dir, "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(state), secret) {
		t.Fatalf("%s: the state file holds %q", w.cli.name, secret)
	}
	for _, out := range outs {
		if strings.Contains(out, secret) {
			t.Fatalf("%s: CLI output shows %q\n%s", w.cli.name, secret, out)
		}
	}
}

// TestAccHelmRelease_valuesWriteOnly: values_wo reaches the release (its
// ConfigMap shows it) and never the state file nor plan or apply output; a
// new write-only value alone plans nothing; a new values_wo_version upgrades
// with it. Under OpenTofu 1.12.6 and Terraform 1.15.9. Under a CLI without
// write-only attributes (cliWriteOnly) the test checks that the framework
// refuses the attribute with its error, and applies nothing.
func TestAccHelmRelease_valuesWriteOnly(t *testing.T) {
	needAcc(t)
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "hr-wo-"+c.name)
		chartDir := chartCopy(t, "1.0.0")
		cache := t.TempDir()
		body := func(secret string, version int) string {
			// At a path the chart renders into no object: `changes` and
			// `drift` show what the chart renders (only Secret data is
			// masked), so a chart that put it into a ConfigMap would show it
			// there, as the docs say.
			return fmt.Sprintf("  values_wo = { secret = { password = %q } }\n  values_wo_version = %d\n", secret, version)
		}
		w := newWorkspace(t, c, woRelease(cache, chartDir, ns, body("wo-secret-one", 1)))
		why, err := c.lacks(cliWriteOnly)
		if err != nil {
			t.Fatal(err)
		}
		if why != "" {
			// A CLI without write-only attributes: the framework refuses
			// the attribute with a clear error, and nothing is applied.
			out, code := w.run("plan", "-input=false")
			if code == 0 || !regexp.MustCompile(`(?i)write-only`).MatchString(out) {
				t.Fatalf("%s plan with values_wo: exit %d, want the framework's write-only error\n%s", c.name, code, out)
			}
			t.Skip(why + ": checked its clear error only")
		}
		out := w.must("apply", "-auto-approve", "-input=false")
		if got := woPassword(t, ns); got != "wo-secret-one" || releaseConfigMap(t, ns, "web")["greeting"] != "hello" {
			t.Fatalf("release password %v, want the write-only one merged in with the values", got)
		}
		notInState(t, w, "wo-secret-one", out)
		w.planEmpty()

		// A new write-only value alone is no change: it is never stored.
		w.write(woRelease(cache, chartDir, ns, body("wo-secret-two", 1)))
		out, code := w.run("plan", "-detailed-exitcode", "-input=false")
		if code != 0 {
			t.Fatalf("plan with a new write-only value and the same version: exit %d, want no change\n%s", code, out)
		}
		notInState(t, w, "wo-secret-two", out)

		// A new version upgrades with it.
		w.write(woRelease(cache, chartDir, ns, body("wo-secret-two", 2)))
		out = w.must("apply", "-auto-approve", "-input=false")
		if got := woPassword(t, ns); got != "wo-secret-two" {
			t.Fatalf("release password %v after values_wo_version 2, want the new one", got)
		}
		if got := releaseRevisions(t, ns, "web"); !slices.Equal(got, []string{"1:superseded", "2:deployed"}) {
			t.Fatalf("revisions %v, want one upgrade", got)
		}
		notInState(t, w, "wo-secret-two", out)
		w.planEmpty()

		// Removing it upgrades the release without it.
		w.write(woRelease(cache, chartDir, ns, ""))
		w.must("apply", "-auto-approve", "-input=false")
		if got := woPassword(t, ns); got != nil {
			t.Fatalf("release password %v after values_wo was removed, want none", got)
		}
		w.planEmpty()
		w.destroy()
	})
}

// woPassword is the password values_wo set in the release's stored values.
func woPassword(t *testing.T, ns string) any {
	t.Helper()
	vals, err := testenv.ReleaseValues(testenv.Need(t).Cluster.Kubeconfig, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if sec, ok := vals["secret"].(map[string]any); ok {
		return sec["password"]
	}
	return nil
}

// TestAccHelmRelease_valuesFromSecretNotInState: values read from a
// values_from Secret reach the release and never the state file or the
// CLI's output (only config_digest covers them).
func TestAccHelmRelease_valuesFromSecretNotInState(t *testing.T) {
	needAcc(t)
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "hr-vfsecret-"+c.name)
		sec := &corev1.Secret{StringData: map[string]string{"values.yaml": "config:\n  token: from-secret-xyz-123\n"}}
		sec.Namespace, sec.Name = ns, "web-values"
		if err := testClient(t).Create(context.Background(), sec); err != nil {
			t.Fatal(err)
		}
		w := newWorkspace(t, c, woRelease(t.TempDir(), chartCopy(t, "1.0.0"), ns, `
  values_from {
    kind = "Secret"
    name = "web-values"
  }`))
		out := w.must("apply", "-auto-approve", "-input=false")
		if got := releaseConfigMap(t, ns, "web"); got["token"] != "from-secret-xyz-123" {
			t.Fatalf("release values %v, want the Secret's token", got)
		}
		plan := w.must("plan", "-input=false")
		show := w.must("show")
		notInState(t, w, "from-secret-xyz-123", out, plan, show)
		w.destroy()
	})
}
