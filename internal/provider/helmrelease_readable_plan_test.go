package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// quickstartRelease is the release of examples/quickstart (make demo, whose
// upgrade plan is examples/resources/stevedore_helmrelease/upgrade-plan.txt)
// in ns, with its artifact from repo and the greeting as a variable.
func quickstartRelease(repo, ns string) string {
	return providerBlock(`repository_cache_ttl = "0s"`) + fmt.Sprintf(`
variable "greeting" {
  type    = string
  default = "hello from stevedore"
}

resource "stevedore_helmchart_artifact" "podinfo" {
  repository = %s
  chart      = "podinfo"
  version    = "*"
}

resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = %q

  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }

  values = {
    replicaCount = 2
    config = {
      greeting = var.greeting
    }
  }

  test {
    enable = true
  }

  upgrade {
    remediation {
      retries  = 2
      strategy = "rollback"
    }
  }
}
`, hcl(repo), ns)
}

// TestCLI_upgradePlanIsReadable: the plan of the demo's one-value upgrade, as
// each CLI prints it, shows the release in at most 35 lines with `changes`
// first, and hides nothing that apply changes: every attribute of the release
// whose value the apply of that saved plan changes is shown as changing.
func TestCLI_upgradePlanIsReadable(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		repo := startTestRepo(t, testenv.HelmRepoOptions{}, "1.0.0")
		ns := uniqueNamespace(t, "readable-"+c.name)
		w := newWorkspace(t, c, quickstartRelease(repo.URL(), ns))
		w.env = []string{"XDG_CACHE_HOME=" + t.TempDir()}
		w.must("apply", "-auto-approve", "-input=false")
		w.planEmpty()
		before := stateValues(t, w, releaseAddr)

		out := w.must("plan", "-input=false", "-var", "greeting=hello again", "-out=up.tfplan")
		block := planBlock(t, out, releaseAddr)
		t.Logf("%s shows the release in %d lines:\n%s", c.name, len(block), strings.Join(block, "\n"))
		if len(block) > 35 {
			t.Errorf("the release takes %d lines of the plan, want at most 35", len(block))
		}
		if len(block) < 3 || !regexp.MustCompile(`^\s+\+ changes\s+= \[$`).MatchString(block[2]) {
			t.Errorf("the release's first attribute is not changes:\n%s", strings.Join(block, "\n"))
		}
		if !strings.Contains(strings.Join(block, "\n"), `+ to   = "\"hello again\""`) {
			t.Errorf("the plan's changes do not show the new greeting")
		}

		w.must("apply", "-input=false", "up.tfplan")
		after := stateValues(t, w, releaseAddr)
		for attr, was := range before {
			if reflect.DeepEqual(was, after[attr]) {
				continue
			}
			if !regexp.MustCompile(`(?m)^      [~+-] ` + regexp.QuoteMeta(attr) + `\s+=`).MatchString(strings.Join(block, "\n")) {
				t.Errorf("apply changed %s (%v -> %v), which the plan does not show as changing", attr, was, after[attr])
			}
		}
		if out, code := w.run("plan", "-detailed-exitcode", "-input=false", "-var", "greeting=hello again"); code != 0 {
			t.Fatalf("plan after the apply: exit %d, want an empty plan\n%s", code, out)
		}
		w.destroy()

		// make demo runs OpenTofu: the example in the docs is its output, the
		// same lines but for the namespace and the date.
		if c.product == "opentofu" {
			example, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "resources", "stevedore_helmrelease", "upgrade-plan.txt"))
			if err != nil {
				t.Fatal(err)
			}
			date := regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"`)
			normal := func(lines []string, ns string) string {
				trimmed := make([]string, len(lines))
				for i, l := range lines {
					trimmed[i] = strings.TrimRight(l, " ")
				}
				s := strings.Join(trimmed, "\n")
				s = strings.ReplaceAll(s, `"`+ns+`_`, `"<ns>_`)
				s = strings.ReplaceAll(s, `"`+ns+`/`, `"<ns>/`)
				return date.ReplaceAllString(s, `"<date>"`)
			}
			if got, want := normal(block, ns), normal(planBlock(t, string(example), releaseAddr), "default"); got != want {
				t.Errorf("examples/resources/stevedore_helmrelease/upgrade-plan.txt shows the release as\n%s\nand %s now prints (run make demo)\n%s", want, c.name, got)
			}
		}
	})
}

// planBlock is the lines of out, a plan as the CLI prints it, that show the
// resource addr: from its "# addr will be ..." line to the closing brace of
// its block.
func planBlock(t *testing.T, out, addr string) []string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), "# "+addr+" ") {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if lines[j] == "    }" {
				return lines[i : j+1]
			}
		}
	}
	t.Fatalf("the plan shows no %s:\n%s", addr, out)
	return nil
}

// stateValues is the attributes of resource addr in w's state, as `show
// -json` gives them.
func stateValues(t *testing.T, w *workspace, addr string) map[string]any {
	t.Helper()
	cmd, stdout := w.command(t.Context(), "show", "-json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s show -json: %v\n%s", w.cli.name, err, stderr.String())
	}
	out := stdout.String()
	var st struct {
		Values struct {
			RootModule struct {
				Resources []struct {
					Address string         `json:"address"`
					Values  map[string]any `json:"values"`
				} `json:"resources"`
			} `json:"root_module"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%s show -json: %v\n%s", w.cli.name, err, out)
	}
	for _, r := range st.Values.RootModule.Resources {
		if r.Address == addr {
			return r.Values
		}
	}
	t.Fatalf("%s is not in the state", addr)
	return nil
}
