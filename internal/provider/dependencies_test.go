package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

func dependencyBlock(apiVersion, kind, name string, ready bool, expr string) dependencyModel {
	m := dependencyModel{
		APIVersion: types.StringValue(apiVersion), Kind: types.StringValue(kind), Name: types.StringValue(name),
		Namespace: types.StringValue("default"), Ready: types.BoolValue(ready), ReadyExpr: types.StringNull(),
	}
	if expr != "" {
		m.ReadyExpr = types.StringValue(expr)
	}
	return m
}

// diagPaths lists diagnostics as `path: summary`.
func diagPaths(diags diag.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		p := ""
		if wp, ok := d.(diag.DiagnosticWithPath); ok {
			p = wp.Path().String()
		}
		out = append(out, p+": "+d.Summary())
	}
	return out
}

// A bad definition is a diagnostic on the attribute at fault, for both
// resources (validation and the engine's errors at plan and apply); a block
// with unknown values is left to the plan.
func TestDependencies_diagnosticsNameTheAttribute(t *testing.T) {
	var diags diag.Diagnostics
	validateDependencies(&diags, []dependencyModel{
		dependencyBlock("v1", "Secret", "ok", true, "type == 'kubernetes.io/tls'"),
		dependencyBlock("v1", "Secret", "bad", true, "type == "),
		dependencyBlock("apps/", "Deployment", "web", false, ""),
		dependencyBlock("v1", "Secret", "typed", true, "1 + 'a' == 2"),
	})
	want := []string{
		"dependencies[1].ready_expr: Invalid dependency",
		"dependencies[2].api_version: Invalid dependency",
		"dependencies[3].ready_expr: Invalid dependency",
	}
	if got := diagPaths(diags); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("validation:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	unknown := dependencyBlock("v1", "Secret", "x", true, "")
	unknown.ReadyExpr = types.StringUnknown()
	diags = nil
	validateDependencies(&diags, []dependencyModel{dependencyBlock("", "Secret", "y", false, ""), unknown})
	if len(diags) != 0 {
		t.Errorf("a block with unknown values was validated: %v", diagPaths(diags))
	}
	if _, known := dependenciesFrom([]dependencyModel{unknown}); known {
		t.Error("dependenciesFrom: an unknown ready_expr is known")
	}

	// The release engine's errors: definitions (at plan, inside the
	// resource's error), and an expression that fails on its object (at
	// apply).
	defErr := kube.ValidateDependencies([]kube.Dependency{{APIVersion: "v1", Kind: "Secret", Name: "a", Ready: true, ReadyExpr: "("}})
	diags = nil
	addError(&diags, "Cannot plan the release", fielderr.Object(release.Kind, "ns/app", errors.Join(defErr)))
	if got := diagPaths(diags); len(got) != 1 || got[0] != "dependencies[0].ready_expr: Cannot plan the release" ||
		!strings.HasPrefix(diags[0].Detail(), "helmrelease ns/app: dependencies[0].ready_expr: invalid CEL expression") {
		t.Errorf("plan error: %v %v", got, diags)
	}
	diags = nil
	notReady := &kube.DependencyNotReadyError{Unmet: []kube.UnmetDependency{{
		Dependency: kube.Dependency{APIVersion: "v1", Kind: "Secret", Name: "gate", Namespace: "ns"}, Reason: "not found"}}}
	addError(&diags, "Release failed", fielderr.Object(release.Kind, "ns/app", &release.DependenciesNotReadyError{Err: notReady}))
	if len(diags) != 1 || diags[0].Summary() != "Dependencies not ready" ||
		!strings.HasPrefix(diags[0].Detail(), "helmrelease ns/app: dependencies not met: Secret ns/gate: not found") {
		t.Errorf("unmet dependency: %v", diags)
	}
}

// putObject replaces obj in the cluster (a Secret's type cannot change).
func putObject(t *testing.T, obj client.Object) {
	t.Helper()
	c := testClient(t)
	if err := c.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	obj.SetResourceVersion("")
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func deleteObjects(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := testClient(t).Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}

func tlsSecret(ns, name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("crt"), "tls.key": []byte("key")}}
}

// expectBookCondition checks that the bookkeeping that the latest refresh or
// apply of release id left has the condition typ with status and reason.
func expectBookCondition(rec *protocolRecord, id, typ, status, reason string) bookCheck {
	return expectBook(rec, id, func(b *releaseBook) error {
		for _, cond := range b.Conditions {
			if cond.Type == typ && cond.Status == status && cond.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("no condition %s=%s (%s)", typ, status, reason)
	})
}

// TestAccHelmRelease_dependencies: a release waits for objects in the
// cluster, as a HelmRelease's dependsOn. A bad ready_expr is a plan error on
// its attribute. A create whose dependency does not exist fails naming it,
// installs nothing and saves nothing; once the object exists, apply installs.
// An upgrade whose new dependency is not met writes no release and counts no
// failure: the state keeps the release with Ready=False (DependencyNotReady),
// the plan still shows the upgrade, and once the object exists it converges.
func TestAccHelmRelease_dependencies(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-deps")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		gate, later := tlsSecret(ns, "gate"), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: ns}}
		// The spec's timeout bounds the wait for dependencies; the Helm actions
		// have their own.
		body := func(replicas int, deps string) string {
			return fmt.Sprintf(`
  timeout = "3s"
  values  = { replicaCount = %d }
  install {
    timeout = "2m"
  }
  upgrade {
    timeout = "2m"
  }
  uninstall {
    timeout = "2m"
  }
%s`, replicas, deps)
		}
		gateDep := fmt.Sprintf(`
  dependencies {
    api_version = "v1"
    kind        = "Secret"
    name        = "gate"
    namespace   = %q
    ready       = true
    ready_expr  = "type == 'kubernetes.io/tls' && size(data) == 2"
  }`, ns)
		laterDep := fmt.Sprintf(`
  dependencies {
    api_version = "v1"
    kind        = "ConfigMap"
    name        = "later"
    namespace   = %q
  }`, ns)
		badExpr := strings.Replace(gateDep, "size(data) == 2", "size(data) == 'two'", 1)
		first := releaseConfig(cacheDir, chartDir, ns, body(1, gateDep))
		second := releaseConfig(cacheDir, chartDir, ns, body(2, gateDep+laterDep))
		noRelease := func() {
			if revs := storedRevisions(t, ns, "podinfo"); len(revs) != 0 {
				t.Fatalf("an unmet dependency left release revisions %v", revs)
			}
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					PreConfig: func() { deleteObjects(t, gate, later) },
					Config:    releaseConfig(cacheDir, chartDir, ns, body(1, badExpr)),
					PlanOnly:  true,
					// A type error, on the attribute: the CLI quotes its line.
					ExpectError: wrapped(`Invalid dependency.*ready_expr = "type ==.*dependencies\[0\]\.ready_expr: invalid CEL expression.*no matching overload`),
				},
				{
					Config:      first,
					ExpectError: wrapped(`Dependencies not ready.*helmrelease ` + ns + `/podinfo: dependencies not met: Secret ` + ns + `/gate: not found`),
				},
				{
					// Nothing was installed, and nothing saved: the plan creates.
					PreConfig: func() {
						noRelease()
						putObject(t, tlsSecret(ns, "gate"))
					},
					Config: first,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionCreate),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, releaseAttr("status"), knownvalue.StringExact("deployed")),
					},
					Check: checkRevisions(t, ns, "podinfo", "1:deployed"),
				},
				{
					Config:      second,
					ExpectError: wrapped(`helmrelease ` + ns + `/podinfo: dependencies not met: ConfigMap ` + ns + `/later: not found`),
				},
				{
					// No release was written and no failure counted; the upgrade
					// is still to do.
					Config:   second,
					PlanOnly: true, ExpectNonEmptyPlan: true,
					ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						expectBookCondition(rec, ns+"/podinfo", "Ready", "False", release.ReasonDependencyNotReady),
						expectPriorAttr(releaseAddr, "version", 1),
						expectBookField(rec, ns+"/podinfo", "failures", 0),
						expectBookField(rec, ns+"/podinfo", "upgrade_failures", 0),
					}},
					Check: checkRevisions(t, ns, "podinfo", "1:deployed"),
				},
				{
					PreConfig: func() { putObject(t, later) },
					Config:    second,
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(2)),
					},
					Check: checkRevisions(t, ns, "podinfo", "1:superseded", "2:deployed"),
				},
			},
		}
	})
}

// TestAccResourceSet_readyExprOnSecretType: ready_expr reads any top-level
// field of the object, here a Secret's type: an Opaque Secret keeps the set
// waiting until the timeout, a TLS one lets it apply.
func TestAccResourceSet_readyExprOnSecretType(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "rs-deps")
		cfg := providerBlock("") + fmt.Sprintf(`
resource "stevedore_resourceset" "gated" {
  name      = "gated"
  namespace = %[1]q
  timeout   = "3s"
  resources = [{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "gated" }, data = { a = "b" } }]
  dependencies {
    api_version = "v1"
    kind        = "Secret"
    name        = "cert"
    namespace   = %[1]q
    ready       = true
    ready_expr  = "type == 'kubernetes.io/tls'"
  }
}
`, ns)
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					PreConfig: func() {
						putObject(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cert", Namespace: ns}, StringData: map[string]string{"a": "b"}})
					},
					Config:      cfg,
					ExpectError: wrapped(`dependencies not met: Secret ` + ns + `/cert: ready_expr is false`),
				},
				{
					PreConfig: func() { putObject(t, tlsSecret(ns, "cert")) },
					Config:    cfg,
					Check:     checkExists(t, true, "v1", "ConfigMap", ns, "gated"),
				},
			},
		}
	})
}
