package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmcommon "helm.sh/helm/v4/pkg/release/common"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

const releaseAddr = "stevedore_helmrelease.podinfo"

// chartCopy copies the podinfo test chart into a new directory with version
// set in Chart.yaml, so that a test can publish a "new version" by writing
// another one into the same directory.
func chartCopy(t *testing.T, version string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "podinfo")
	if err := os.CopyFS(dir, os.DirFS(podinfoSrc())); err != nil {
		t.Fatal(err)
	}
	setChartVersion(t, dir, version)
	return dir
}

func setChartVersion(t *testing.T, dir, version string) {
	t.Helper()
	p := filepath.Join(dir, "Chart.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	out := regexp.MustCompile(`(?m)^version: .*$`).ReplaceAll(data, []byte("version: "+version))
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// testNamespace creates a namespace for one test: for one CLI's run of it
// when the case is built per run (accTestEach), else for both runs, one
// after the other (accTest).
func testNamespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := testClient(t).Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

// uniqueNamespace creates a namespace named prefix and a random suffix, so
// that a second run of the test (-count=2), or the other CLI's run at the
// same time, does not meet this one's releases.
func uniqueNamespace(t *testing.T, prefix string) string {
	t.Helper()
	return testNamespace(t, testenv.UniqueName(t, prefix))
}

// releaseConfig is an artifact of the chart in chartDir and a release of it
// in ns; body is added to the release.
func releaseConfig(cacheDir, chartDir, ns, body string) string {
	return providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}

resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = %q
  chart {
    path   = stevedore_helmchart_artifact.podinfo.path
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
%s
}
`, hcl(chartDir), ns, body)
}

// releaseConfigByDigest is releaseConfig with the chart named by its digest
// alone: the release finds the artifact's archive in the cache.
func releaseConfigByDigest(cacheDir, chartDir, ns, body string) string {
	return strings.Replace(releaseConfig(cacheDir, chartDir, ns, body), "    path   = stevedore_helmchart_artifact.podinfo.path\n", "", 1)
}

// expectPriorDrift checks the drift that refresh recorded before the plan:
// want maps object IDs to the JSON pointers that changed ("" for a missing
// object).
func expectPriorDrift(addr string, want map[string][]string) plancheck.PlanCheck {
	return priorDriftCheck{addr: addr, want: want}
}

type priorDriftCheck struct {
	addr string
	want map[string][]string
}

func (c priorDriftCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	got, err := priorDrift(req.Plan, c.addr)
	if err != nil {
		resp.Error = err
		return
	}
	if fmt.Sprint(got) != fmt.Sprint(c.want) {
		resp.Error = fmt.Errorf("drift found by refresh: %v, want %v", got, c.want)
	}
}

func priorDrift(plan *tfjson.Plan, addr string) (map[string][]string, error) {
	if plan.PriorState == nil || plan.PriorState.Values == nil {
		return nil, fmt.Errorf("plan has no prior state")
	}
	for _, r := range plan.PriorState.Values.RootModule.Resources {
		if r.Address != addr {
			continue
		}
		raw, _ := json.Marshal(r.AttributeValues["drift"])
		var drift []struct {
			ID      string `json:"id"`
			Type    string `json:"type"`
			Changes []struct {
				Path string `json:"path"`
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"changes"`
		}
		if err := json.Unmarshal(raw, &drift); err != nil {
			return nil, err
		}
		out := map[string][]string{}
		for _, d := range drift {
			paths := []string{}
			if d.Type == "create" {
				paths = append(paths, "")
			}
			for _, ch := range d.Changes {
				paths = append(paths, ch.Path+"="+ch.From+"->"+ch.To)
			}
			slices.Sort(paths)
			out[d.ID] = paths
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s not in the prior state", addr)
}

// expectPriorAttr checks a top-level attribute of the state that refresh
// left before the plan: what an apply that failed saved.
// releaseAttr is the path of a release attribute, by its name before
// version 1 of the schema: those that `status` holds now are under it.
func releaseAttr(name string) tfjsonpath.Path {
	if inner, ok := statusAttribute(name); ok {
		return tfjsonpath.New("status").AtMapKey(inner)
	}
	return tfjsonpath.New(name)
}

// statusAttribute is the name in `status` of the version 0 attribute name,
// if `status` holds it.
func statusAttribute(name string) (string, bool) {
	inner, ok := statusAttributesV0[name]
	_, held := releaseStatusType.AttrTypes[inner]
	return inner, ok && held
}

// priorAttr is the value of attribute name (as releaseAttr names it) in the
// JSON state values of a resource.
func priorAttr(values map[string]any, name string) any {
	if inner, ok := statusAttribute(name); ok {
		if status, ok := values["status"].(map[string]any); ok {
			return status[inner]
		}
		if _, isRelease := values["chart_digest"]; isRelease {
			return nil
		}
	}
	return values[name]
}

// expectTestHooks checks the test hooks of the latest revision in the
// bookkeeping of release id, each as `name=phase`, in order.
func expectTestHooks(rec *protocolRecord, id string, want ...string) bookCheck {
	return expectBook(rec, id, func(b *releaseBook) error {
		if len(b.History) == 0 {
			return errors.New("no history")
		}
		var got []string
		for _, h := range b.History[0].TestHooks {
			got = append(got, h.Name+"="+h.Phase)
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("test hooks of revision %d: %v, want %v", b.History[0].Version, got, want)
		}
		return nil
	})
}

// expectBookField checks a field of the bookkeeping (private state) that the
// latest refresh or apply of release id left: a failure counter
// (`failures`, `install_failures`, `upgrade_failures`),
// `last_attempted_release_action`, or `history` (its length).
func expectBookField(rec *protocolRecord, id, name string, want any) bookCheck {
	return expectBook(rec, id, func(b *releaseBook) error {
		got, ok := map[string]any{
			"failures": b.Failures, "install_failures": b.InstallFailures, "upgrade_failures": b.UpgradeFailures,
			"last_attempted_release_action": b.LastAttemptedReleaseAction, "history": len(b.History),
		}[name]
		if !ok {
			return fmt.Errorf("no bookkeeping field %q", name)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("%s = %v, want %v", name, got, want)
		}
		return nil
	})
}

// plannedChange is the change the plan makes to the resource at addr.
func plannedChange(req plancheck.CheckPlanRequest, addr string) (*tfjson.Change, error) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address == addr && rc.Change != nil {
			return rc.Change, nil
		}
	}
	return nil, fmt.Errorf("%s not in the plan", addr)
}

// expectUpgradeStatus checks what an upgrade's plan says of `status`: the
// Helm status `deployed`, the first deployment date and the apply method as
// they are, known; only last_deployed unknown; and nothing else in it (the bookkeeping is in
// private state, out of the plan).
func expectUpgradeStatus(addr string) plancheck.PlanCheck {
	return upgradeStatusCheck{addr: addr}
}

type upgradeStatusCheck struct{ addr string }

func (c upgradeStatusCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	change, err := plannedChange(req, c.addr)
	if err != nil {
		resp.Error = err
		return
	}
	before, _ := change.Before.(map[string]any)
	after, _ := change.After.(map[string]any)
	unknown, _ := change.AfterUnknown.(map[string]any)
	was, _ := before["status"].(map[string]any)
	planned, _ := after["status"].(map[string]any)
	unknownStatus, _ := unknown["status"].(map[string]any)
	switch {
	case planned == nil || was == nil:
		resp.Error = fmt.Errorf("%s: status before %v, planned %v (unknown: %v): want both objects", c.addr, before["status"], after["status"], unknown["status"])
	case planned["release_status"] != "deployed":
		resp.Error = fmt.Errorf("%s: planned status.release_status %v, want deployed", c.addr, planned["release_status"])
	case planned["first_deployed"] == nil || planned["first_deployed"] != was["first_deployed"]:
		resp.Error = fmt.Errorf("%s: planned status.first_deployed %v, want it kept: %v", c.addr, planned["first_deployed"], was["first_deployed"])
	case unknownStatus["last_deployed"] != true:
		resp.Error = fmt.Errorf("%s: status.last_deployed is known in the plan: %v", c.addr, planned["last_deployed"])
	case planned["apply_method"] == nil || planned["apply_method"] != was["apply_method"]:
		// An upgrade keeps the release's method (auto), and says so.
		resp.Error = fmt.Errorf("%s: planned status.apply_method %v, want it kept: %v", c.addr, planned["apply_method"], was["apply_method"])
	case len(planned)+len(unknownStatus) != 4 || len(was) != 4:
		resp.Error = fmt.Errorf("%s: status has more than release_status, first_deployed, last_deployed and apply_method: before %v, planned %v, unknown %v", c.addr, was, planned, unknownStatus)
	}
}

// expectHelmAction checks that the plan says apply runs Helm on the
// release: its revision unknown (an install or upgrade makes a new one), or
// its Helm status (a stalled release, which apply tries and fails).
func expectHelmAction(addr string) plancheck.PlanCheck {
	return helmActionCheck{addr: addr}
}

type helmActionCheck struct{ addr string }

func (c helmActionCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	change, err := plannedChange(req, c.addr)
	if err != nil {
		resp.Error = err
		return
	}
	unknown, _ := change.AfterUnknown.(map[string]any)
	if unknown["version"] == true {
		return
	}
	if s, ok := unknown["status"].(map[string]any); ok && s["release_status"] == true {
		return
	}
	resp.Error = fmt.Errorf("%s: the plan knows the revision and the Helm status: no Helm action (unknown: %v)", c.addr, unknown)
}

func expectPriorAttr(addr, attr string, want any) plancheck.PlanCheck {
	return priorAttrCheck{addr: addr, attr: attr, want: want}
}

type priorAttrCheck struct {
	addr, attr string
	want       any
}

func (c priorAttrCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	if req.Plan.PriorState == nil || req.Plan.PriorState.Values == nil {
		resp.Error = fmt.Errorf("plan has no prior state")
		return
	}
	for _, r := range req.Plan.PriorState.Values.RootModule.Resources {
		if r.Address == c.addr {
			if got := priorAttr(r.AttributeValues, c.attr); fmt.Sprint(got) != fmt.Sprint(c.want) {
				resp.Error = fmt.Errorf("%s.%s in state = %v, want %v", c.addr, c.attr, got, c.want)
			}
			return
		}
	}
	resp.Error = fmt.Errorf("%s not in the prior state", c.addr)
}

func releaseRevisions(t *testing.T, ns, name string) []string {
	t.Helper()
	revs, err := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return revs
}

func checkRevisions(t *testing.T, ns, name string, want ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if got := releaseRevisions(t, ns, name); !slices.Equal(got, want) {
			return fmt.Errorf("release %s/%s revisions %v, want %v", ns, name, got, want)
		}
		return nil
	}
}

// TestAccHelmRelease_lifecycle installs, upgrades on a values change and on a
// new chart version (both known in the plan), then sees three kinds of drift
// (a Deployment scaled, a ConfigMap edited, a Service deleted) in the plan and
// corrects them in one apply without a new Helm revision. A field another
// manager sets that the chart does not is not drift. Every step ends with an
// empty plan (the harness checks it).
func TestAccHelmRelease_lifecycle(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-life")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		ctx := context.Background()
		id := func(kind, group string) string { return ns + "_podinfo_" + group + "_" + kind }

		return resource.TestCase{
			CheckDestroy: func(*terraform.State) error {
				if exists(t, "apps/v1", "Deployment", ns, "podinfo") {
					return fmt.Errorf("deployment still exists after destroy")
				}
				return nil
			},
			Steps: []resource.TestStep{
				{
					PreConfig: func() { setChartVersion(t, chartDir, "1.0.0") },
					Config:    releaseConfig(cacheDir, chartDir, ns, `values = { replicaCount = 1 }`),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionCreate),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, releaseAttr("status"), knownvalue.StringExact("deployed")),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(1)),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("release_name"), knownvalue.StringExact("podinfo")),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("storage_namespace"), knownvalue.StringExact(ns)),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_name"), knownvalue.StringExact("podinfo")),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_version"), knownvalue.StringExact("1.0.0")),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("app_version"), knownvalue.StringExact("6.0.0")),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("drift"), knownvalue.ListExact(nil)),
						expectBookField(rec, ns+"/podinfo", "install_failures", 0),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("config_digest"),
							knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
						expectBook(rec, ns+"/podinfo", func(b *releaseBook) error {
							if len(b.History) != 1 || b.History[0].Status != "deployed" {
								return errors.New("want one history entry, deployed")
							}
							return nil
						}),
					},
					Check: checkRevisions(t, ns, "podinfo", "1:deployed"),
				},
				{
					// Same values, written differently: no change.
					Config: releaseConfig(cacheDir, chartDir, ns, `values = { "replicaCount" = 1.0 }`),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectEmptyPlan(),
					}},
				},
				{
					// A values change: the new config digest is known in the plan.
					Config: releaseConfig(cacheDir, chartDir, ns, `values = { replicaCount = 2, config = { greeting = "hi" } }`),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("config_digest"),
							knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_version"), knownvalue.StringExact("1.0.0")),
						plancheck.ExpectUnknownValue(releaseAddr, tfjsonpath.New("version")),
						expectUpgradeStatus(releaseAddr),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(2)),
					},
					Check: checkRevisions(t, ns, "podinfo", "1:superseded", "2:deployed"),
				},
				{
					// A new chart version: the artifact is built at plan, so the
					// release plans the upgrade from it, object by object.
					PreConfig: func() { setChartVersion(t, chartDir, "1.1.0") },
					Config:    releaseConfig(cacheDir, chartDir, ns, `values = { replicaCount = 2, config = { greeting = "hi" } }`),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), knownvalue.StringExact("1.1.0")),
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_version"), knownvalue.StringExact("1.1.0")),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
						expectChartLabelChange(releaseAddr, "podinfo-1.1.0"),
						expectUpgradeStatus(releaseAddr),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_version"), knownvalue.StringExact("1.1.0")),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(3)),
					},
				},
				{
					// Drift: scaled, edited, deleted; plus an annotation and a field
					// of another manager that the chart does not set, which are not.
					PreConfig: func() {
						c := testClient(t)
						dep := &appsv1.Deployment{}
						if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, dep); err != nil {
							t.Fatal(err)
						}
						patch := []byte(`{"spec":{"replicas":5,"minReadySeconds":3},"metadata":{"annotations":{"example.com/owner":"hpa"}}}`)
						if err := c.Patch(ctx, dep, client.RawPatch("application/merge-patch+json", patch), client.FieldOwner("kubectl")); err != nil {
							t.Fatal(err)
						}
						cm := &corev1.ConfigMap{}
						if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, cm); err != nil {
							t.Fatal(err)
						}
						cm.Data["greeting"] = "edited"
						if err := c.Update(ctx, cm, client.FieldOwner("kubectl-edit")); err != nil {
							t.Fatal(err)
						}
						svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"}}
						if err := c.Delete(ctx, svc); err != nil {
							t.Fatal(err)
						}
					},
					Config: releaseConfig(cacheDir, chartDir, ns, `values = { replicaCount = 2, config = { greeting = "hi" } }`),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						expectPriorDrift(releaseAddr, map[string][]string{
							id("ConfigMap", ""):      {`/data/greeting="edited"->"hi"`},
							id("Deployment", "apps"): {`/spec/replicas=5->2`},
							id("Service", ""):        {""},
						}),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("drift"), knownvalue.ListExact(nil)),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(3)),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("drift"), knownvalue.ListExact(nil)),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(3)),
					},
					Check: func(*terraform.State) error {
						c := testClient(t)
						dep := &appsv1.Deployment{}
						if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, dep); err != nil {
							return err
						}
						if *dep.Spec.Replicas != 2 {
							return fmt.Errorf("replicas %d after correction, want 2", *dep.Spec.Replicas)
						}
						if dep.Spec.MinReadySeconds != 3 || dep.Annotations["example.com/owner"] != "hpa" {
							return fmt.Errorf("correction removed another manager's fields: %v %v", dep.Spec.MinReadySeconds, dep.Annotations)
						}
						cm := &corev1.ConfigMap{}
						if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, cm); err != nil {
							return err
						}
						if cm.Data["greeting"] != "hi" {
							return fmt.Errorf("configmap greeting %q after correction", cm.Data["greeting"])
						}
						if !exists(t, "v1", "Service", ns, "podinfo") {
							return fmt.Errorf("service not recreated")
						}
						if got := releaseRevisions(t, ns, "podinfo"); len(got) != 3 {
							return fmt.Errorf("drift correction made a Helm revision: %v", got)
						}
						return nil
					},
				},
			},
		}
	})
}

// TestAccHelmRelease_driftIgnoreAndWarn: an ignore rule hides a scaled
// Deployment; mode warn shows an edited ConfigMap as a warning and plans
// nothing.
func TestAccHelmRelease_driftIgnoreAndWarn(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-ignore")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		ctx := context.Background()
		body := func(mode string) string {
			return fmt.Sprintf(`
  drift_detection {
    mode = %q
    ignore {
      paths = ["/spec/replicas"]
      target {
        kind = "Deployment"
      }
    }
  }`, mode)
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{Config: releaseConfig(cacheDir, chartDir, ns, body("enabled"))},
				{
					PreConfig: func() {
						patch := []byte(`{"spec":{"replicas":4}}`)
						dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"}}
						if err := testClient(t).Patch(ctx, dep, client.RawPatch("application/merge-patch+json", patch), client.FieldOwner("kubectl")); err != nil {
							t.Fatal(err)
						}
					},
					Config:           releaseConfig(cacheDir, chartDir, ns, body("enabled")),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				},
				{
					Config: releaseConfig(cacheDir, chartDir, ns, body("warn")),
					PreConfig: func() {
						cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"}}
						patch := []byte(`{"data":{"greeting":"edited"}}`)
						if err := testClient(t).Patch(ctx, cm, client.RawPatch("application/merge-patch+json", patch), client.FieldOwner("kubectl")); err != nil {
							t.Fatal(err)
						}
					},
					// Only the mode changes; the drift stays in the cluster.
					Check: func(*terraform.State) error {
						cm := &corev1.ConfigMap{}
						if err := testClient(t).Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, cm); err != nil {
							return err
						}
						if cm.Data["greeting"] != "edited" {
							return fmt.Errorf("warn mode corrected the drift")
						}
						return nil
					},
				},
				{
					// The drift is left, and said: a warning naming the object.
					PreConfig: rec.resetWarnings,
					Config:    releaseConfig(cacheDir, chartDir, ns, body("warn")),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectEmptyPlan(),
						expectWarning(rec, "Release drifted", regexp.MustCompile(`helmrelease `+ns+`/podinfo: 1 object\(s\) differ from the release: `+
							ns+`_podinfo__ConfigMap \(update\); drift_detection.mode is warn, so apply leaves it`)),
					}},
				},
			},
		}
	})
}

// TestAccHelmRelease_failedInstallRetriedThenFixed: an install the API server
// rejects is remediated (uninstalled) and retried, then left failed with the
// failure counted and the state saved; fixing the values converges in one
// apply, with no "cannot re-use a name".
func TestAccHelmRelease_failedInstallRetriedThenFixed(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-failinst")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		const good, bad = "{}", `{ "stevedore.dev/no-such-node" = "true" }`
		// Pods no node can run fail Helm's wait: a failure the plan cannot see.
		// Their installs wait out install.timeout (stuckTimeout); the
		// remediation's uninstall keeps timeout.
		body := func(nodeSelector string) string {
			installTimeout := ""
			if nodeSelector == bad {
				installTimeout = fmt.Sprintf("timeout = %q", stuckTimeout)
			}
			return fmt.Sprintf(`
  timeout = "10s"
  values  = { nodeSelector = %s }
  install {
    %s
    remediation {
      retries = 1
    }
  }`, nodeSelector, installTimeout)
		}
		// The plan of the replacement (a create: Terraform plans it from no
		// state) cannot tell the tainted resource's release from another
		// owner's: it names the owner and says what happens in either case.
		replaced := expectWarning(rec, "Release already exists",
			regexp.MustCompile(`helmrelease `+ns+`/podinfo: release podinfo already exists in storage namespace `+ns+` \(failed, revision 1, chart podinfo@1.0.0\), `+
				`made by stevedore_helmrelease `+ns+`/podinfo \(owner [0-9a-f]{32}\).*Apply refuses to create this resource over it and changes nothing, `+
				`unless Terraform replaces this resource \(the plan says it "must be replaced"\): then the resource's destroy uninstalls its release first`))
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config:      releaseConfig(cacheDir, chartDir, ns, body(bad)),
					ExpectError: regexp.MustCompile(`helmrelease ` + ns + `/podinfo: install`),
				},
				{
					// The failed release is in state with its failures counted.
					// Terraform taints a resource whose create failed, so the next
					// apply replaces it: uninstall, then install.
					PreConfig: rec.resetWarnings,
					Config:    releaseConfig(cacheDir, chartDir, ns, body(bad)),
					PlanOnly:  true, ExpectNonEmptyPlan: true,
					ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionDestroyBeforeCreate),
						expectPriorAttr(releaseAddr, "status", "failed"),
						expectBookField(rec, ns+"/podinfo", "install_failures", 2),
						replaced,
						// The warning that promised a replace whatever the
						// owner (it misled after a killed create) is gone.
						expectNoWarning(rec, "Failed release will be replaced"),
					}},
				},
				{
					PreConfig: rec.resetWarnings,
					Config:    releaseConfig(cacheDir, chartDir, ns, body(good)),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionDestroyBeforeCreate),
						replaced,
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, releaseAttr("status"), knownvalue.StringExact("deployed")),
					},
				},
			},
		}
	})
}

// TestAccHelmRelease_testFailureRolledBack: an upgrade whose test hook fails
// is rolled back to the last good release; the failure is counted and state
// saved; the next good configuration converges.
func TestAccHelmRelease_testFailureRolledBack(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-testfail")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		body := func(fail bool, lastFailure string) string {
			return fmt.Sprintf(`
  values = { test = { fail = %t } }
  test {
    enable = true
  }
  upgrade {
    remediation {
      retries                = 0
      strategy               = "rollback"
      remediate_last_failure = %s
    }
  }`, fail, lastFailure)
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config: releaseConfig(cacheDir, chartDir, ns, body(false, "true")),
					ConfigStateChecks: []statecheck.StateCheck{
						expectTestHooks(rec, ns+"/podinfo", "podinfo-test=Succeeded"),
					},
				},
				{
					// remediate_last_failure: the failed upgrade is rolled back.
					Config:      releaseConfig(cacheDir, chartDir, ns, body(true, "true")),
					ExpectError: regexp.MustCompile(`(?s)helmrelease ` + ns + `/podinfo: .*test`),
				},
				{
					// Rolled back: revision 3 is the first release again. The
					// configuration is not what runs and no retry is left: the plan
					// is not empty and apply fails with RetriesExceeded, doing
					// nothing, until the configuration changes. Drift found by
					// refresh stays in the plan: the stalled apply corrects nothing.
					PreConfig: func() {
						revs := releaseRevisions(t, ns, "podinfo")
						if last := revs[len(revs)-1]; !strings.HasSuffix(last, ":deployed") || len(revs) != 3 {
							t.Errorf("want a rollback as revision 3, got %v", revs)
						}
						scaleDeployment(t, ns, "podinfo", 3)
					},
					Config: releaseConfig(cacheDir, chartDir, ns, body(true, "true")),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						expectHelmAction(releaseAddr),
						expectPriorDrift(releaseAddr, map[string][]string{ns + "_podinfo_apps_Deployment": {"/spec/replicas=3->1"}}),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("drift"), knownvalue.ListSizeExact(1)),
						expectBookField(rec, ns+"/podinfo", "upgrade_failures", 1),
						expectPriorAttr(releaseAddr, "status", "deployed"),
					}},
					ExpectError: regexp.MustCompile(`RetriesExceeded`),
				},
				{
					PreConfig: func() {
						// The stalled apply made no Helm action.
						if err := checkRevisions(t, ns, "podinfo", "1:superseded", "2:superseded", "3:deployed")(nil); err != nil {
							t.Error(err)
						}
					},
					// Back to good values: the tests that are due run, and the drift
					// is corrected, in one apply.
					Config: releaseConfig(cacheDir, chartDir, ns, body(false, "true")),
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, releaseAttr("status"), knownvalue.StringExact("deployed")),
						expectBookField(rec, ns+"/podinfo", "upgrade_failures", 0),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("drift"), knownvalue.ListExact(nil)),
					},
				},
				{
					// Without remediate_last_failure the failed release stays.
					Config:      releaseConfig(cacheDir, chartDir, ns, body(true, "false")),
					ExpectError: regexp.MustCompile(`(?s)helmrelease ` + ns + `/podinfo: .*test`),
				},
				{
					// Without remediate_last_failure the upgrade whose tests failed
					// stays (Helm keeps it deployed), with no rollback after it.
					PreConfig: func() {
						revs := releaseRevisions(t, ns, "podinfo")
						if len(revs) != 4 || !strings.HasSuffix(revs[3], ":deployed") {
							t.Errorf("want the tested upgrade left in place as revision 4, got %v", revs)
						}
					},
					Config: releaseConfig(cacheDir, chartDir, ns, body(true, "false")),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						expectPriorAttr(releaseAddr, "version", 4),
					}},
					ExpectError: regexp.MustCompile(`RetriesExceeded`),
				},
			},
		}
	})
}

// TestAccHelmRelease_pendingUnlocked: a release left pending-upgrade by an
// apply that was killed is unlocked and upgraded by the next apply.
func TestAccHelmRelease_pendingUnlocked(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-pending")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		return resource.TestCase{
			Steps: []resource.TestStep{
				{Config: releaseConfig(cacheDir, chartDir, ns, "")},
				{
					PreConfig: func() {
						if err := testenv.SetReleaseStatus(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo", helmcommon.StatusPendingUpgrade); err != nil {
							t.Fatal(err)
						}
					},
					Config: releaseConfig(cacheDir, chartDir, ns, ""),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						expectHelmAction(releaseAddr),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, releaseAttr("status"), knownvalue.StringExact("deployed")),
					},
				},
			},
		}
	})
}

// TestAccHelmRelease_importHelmInstalled: a release installed by the Helm SDK
// is imported with an import block into a configuration that matches it (the
// same chart artifact, by path and digest, and values): the plan sets
// chart.path in state and changes nothing else, and the apply makes no
// revision.
func TestAccHelmRelease_importHelmInstalled(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-import")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		artifactOnly := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}
`, hcl(chartDir))
		body := `values = { replicaCount = 2, config = { greeting = "imported" } }`
		withImport := releaseConfig(cacheDir, chartDir, ns, body) + fmt.Sprintf(`
import {
  to = stevedore_helmrelease.podinfo
  id = "%s/podinfo"
}
`, ns)
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config: artifactOnly,
					Check: func(s *terraform.State) error {
						path := s.RootModule().Resources[artifactAddr].Primary.Attributes["path"]
						return testenv.HelmInstall(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo", path,
							map[string]any{"replicaCount": 2, "config": map[string]any{"greeting": "imported"}})
					},
				},
				{
					Config: withImport,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						expectImportSetsChartPath(releaseAddr),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(1)),
					},
					Check: checkRevisions(t, ns, "podinfo", "1:deployed"),
				},
			},
		}
	})
}

// TestAccHelmRelease_importWithItsNewArtifact: a release installed with the
// Helm CLI is imported in the same plan that creates its artifact. The
// artifact is built at plan and the release names it by digest alone, so the
// plan imports the release with no change, and the apply creates no Helm
// revision.
func TestAccHelmRelease_importWithItsNewArtifact(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-import-new")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		config := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}

resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = %q
  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
  values = { replicaCount = 2 }
}

import {
  to = stevedore_helmrelease.podinfo
  id = "%s/podinfo"
}
`, hcl(chartDir), ns, ns)
		return resource.TestCase{
			Steps: []resource.TestStep{{
				PreConfig: func() {
					tgz, err := testenv.PackageChart(chartDir, "", t.TempDir())
					if err != nil {
						t.Fatal(err)
					}
					if err := testenv.HelmInstall(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo", tgz, map[string]any{"replicaCount": 2}); err != nil {
						t.Fatal(err)
					}
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(artifactAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(1)),
				},
				Check: checkRevisions(t, ns, "podinfo", "1:deployed"),
			}},
		}
	})
}

// TestAccHelmRelease_postRenderersAndValuesFrom: kustomize patches and image
// overrides reach the cluster with no drift afterwards; values_from merges a
// ConfigMap, a Secret value at a target path and a missing optional object, and
// a change of the ConfigMap is an upgrade the plan shows.
func TestAccHelmRelease_postRenderersAndValuesFrom(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-post")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		ctx := context.Background()
		c := testClient(t)
		setValues := func(greeting string) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo-values"}}
			_ = c.Delete(ctx, cm)
			cm.Data = map[string]string{"values.yaml": "config:\n  greeting: " + greeting + "\nreplicaCount: 2\n"}
			if err := c.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo-secret"}, StringData: map[string]string{"token": "s3cr3t"}}
		if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		body := `
  values_from {
    kind = "ConfigMap"
    name = "podinfo-values"
  }
  values_from {
    kind        = "Secret"
    name        = "podinfo-secret"
    values_key  = "token"
    target_path = "config.token"
  }
  values_from {
    kind     = "ConfigMap"
    name     = "does-not-exist"
    optional = true
  }
  values = { config = { greeting = "inline wins" } }
  post_renderers {
    kustomize {
      patches {
        patch = <<-EOT
          apiVersion: apps/v1
          kind: Deployment
          metadata:
            name: podinfo
            labels:
              patched: "yes"
        EOT
        target {
          kind = "Deployment"
        }
      }
      images {
        name    = "ghcr.io/stefanprodan/podinfo"
        new_tag = "6.1.0"
      }
    }
  }`
		check := func(greeting string) resource.TestCheckFunc {
			return func(*terraform.State) error {
				dep := &appsv1.Deployment{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, dep); err != nil {
					return err
				}
				if dep.Labels["patched"] != "yes" || dep.Labels["stevedore.dev/name"] != "podinfo" || dep.Labels["stevedore.dev/namespace"] != ns {
					return fmt.Errorf("deployment labels %v", dep.Labels)
				}
				if img := dep.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/stefanprodan/podinfo:6.1.0" {
					return fmt.Errorf("image %s", img)
				}
				if *dep.Spec.Replicas != 2 {
					return fmt.Errorf("replicas %d from values_from, want 2", *dep.Spec.Replicas)
				}
				cm := &corev1.ConfigMap{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, cm); err != nil {
					return err
				}
				if cm.Data["greeting"] != greeting || cm.Data["token"] != "s3cr3t" {
					return fmt.Errorf("configmap data %v", cm.Data)
				}
				return nil
			}
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					PreConfig: func() { setValues("from-configmap") },
					Config:    releaseConfig(cacheDir, chartDir, ns, body),
					Check:     check("inline wins"),
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("drift"), knownvalue.ListExact(nil)),
					},
				},
				{
					// The ConfigMap changes replicas: the plan shows a new digest.
					PreConfig: func() {
						cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo-values"}}
						patch := []byte(`{"data":{"values.yaml":"replicaCount: 3\n"}}`)
						if err := c.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", patch)); err != nil {
							t.Fatal(err)
						}
					},
					Config: releaseConfig(cacheDir, chartDir, ns, body),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("config_digest"),
							knownvalue.StringRegexp(regexp.MustCompile(`^sha256:`))),
					}},
					Check: func(*terraform.State) error {
						dep := &appsv1.Deployment{}
						if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, dep); err != nil {
							return err
						}
						if *dep.Spec.Replicas != 3 {
							return fmt.Errorf("replicas %d, want 3", *dep.Spec.Replicas)
						}
						return nil
					},
				},
			},
		}
	})
}

// TestAccHelmRelease_impersonationDenied: a service account without rights
// cannot install, and the error says who was denied what.
func TestAccHelmRelease_impersonationDenied(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-sa")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nobody"}}
		if err := testClient(t).Create(context.Background(), sa); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		return resource.TestCase{
			Steps: []resource.TestStep{{
				Config:      releaseConfig(cacheDir, chartDir, ns, `service_account_name = "nobody"`),
				ExpectError: regexp.MustCompile(`(?s)helmrelease ` + ns + `/podinfo: .*system:serviceaccount:` + ns + `:nobody.*forbidden|forbidden.*system:serviceaccount:` + ns + `:nobody`),
			}},
		}
	})
}

// TestAccHelmRelease_badInput: each bad input is a diagnostic naming its
// attribute, before anything is installed.
func TestAccHelmRelease_badInput(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-bad")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		steps := []struct{ body, want string }{
			{`values = "replicaCount: [1"`, `(?s)values.*YAML`},
			{`values = ["a"]`, `(?s)values\[0\].*YAML\s+mapping.*holding\s+a\s+string`},
			// What was given, in HCL's terms: no Go type (float64, []interface {}).
			{`values = [1]`, wrappedText(`values[0] must be an object or a YAML string holding a mapping, got a number`)},
			{`values = true`, wrappedText(`values must be an object, a YAML string holding a mapping, or a list of them, got a bool`)},
			{`values = [["a"]]`, wrappedText(`values[0] must be an object or a YAML string holding a mapping, got a list`)},
			{`release_name = "` + strings.Repeat("a", 54) + `"`, `(?s)release_name.*53`},
			{"upgrade {\n remediation {\n strategy = \"retry\"\n }\n }", `(?s)strategy.*rollback`},
			{"drift_detection {\n ignore {\n paths = [\"spec/replicas\"]\n }\n }", `(?s)drift_detection.*ignore.*paths`},
			{"post_renderers {\n kustomize {\n patches {\n patch = \"- op: [\"\n }\n }\n }", `(?s)post_renderers.*patch`},
			{"upgrade {\n server_side_apply = \"on\"\n }", `(?s)upgrade\.server_side_apply.*"enabled"\s+"disabled"\s+"auto"`},
			{"rollback {\n server_side_apply = \"true\"\n }", `(?s)rollback\.server_side_apply.*"enabled"\s+"disabled"\s+"auto"`},
			{`wait_strategy = "watcher"`, `(?s)wait_strategy.*"poller"\s+"legacy"`},
			{`post_render_strategy = "hooks"`, `(?s)post_render_strategy.*"nohooks"\s+"combined"\s+"separate"`},
			// Last: a plan-time error, so that the CLI's destroy with it validates.
			{"values_from {\n kind = \"ConfigMap\"\n name = \"missing\"\n }", `(?s)values_from.*missing`},
		}
		// Two chart sources: the artifact's path (unknown until it exists) and a
		// directory. Not the last step: the CLI destroys with the last one.
		twoSources := strings.Replace(releaseConfig(cacheDir, chartDir, ns, ""),
			"    digest = stevedore_helmchart_artifact.podinfo.digest\n",
			"    digest = stevedore_helmchart_artifact.podinfo.digest\n    source_path = "+hcl(chartDir)+"\n", 1)
		ts := []resource.TestStep{{Config: twoSources, ExpectError: regexp.MustCompile(`(?s)chart\.source_path.*exactly\s+one\s+of`)}}
		for _, s := range steps {
			ts = append(ts, resource.TestStep{
				Config:      releaseConfig(cacheDir, chartDir, ns, s.body),
				ExpectError: regexp.MustCompile(s.want),
			})
		}
		return resource.TestCase{Steps: ts}
	})
}

// TestAccHelmRelease_inlineChart: a chart given by its repository is resolved
// at plan, so a version published later shows in the release's own plan as
// chart_version "1.0.0" -> "1.1.0", and apply fetches and installs exactly it.
// Each CLI's run publishes newer versions than the last run did.
func TestAccHelmRelease_inlineChart(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-inline")
		repo := startTestRepo(t, testenv.HelmRepoOptions{Username: "u", Password: "p"})
		cacheDir := t.TempDir()
		config := providerBlock(fmt.Sprintf("cache_dir = %s\nrepository_cache_ttl = \"0s\"", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = %q
  chart {
    repository = %s
    chart      = "podinfo"
    version    = "1.x"
    username   = "u"
    password   = "p"
  }
}
`, ns, hcl(repo.URL()))
		minor := 0
		want := &dynamic{}
		publishNext := func() {
			v := fmt.Sprintf("1.%d.0", minor)
			minor++
			if err := repo.PublishDir(podinfoSrc(), v); err != nil {
				t.Error(err)
			}
			want.set(v)
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					PreConfig: publishNext,
					Config:    config,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionCreate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_version"), want.check()),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_name"), knownvalue.StringExact("podinfo")),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_version"), want.check()),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:`))),
					},
				},
				{
					PreConfig: publishNext,
					Config:    config,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_version"), want.check()),
						// Fetched at plan: the digest apply installs is known.
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:`))),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_version"), want.check()),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(2)),
					},
				},
			},
		}
	})
}

// TestAccHelmRelease_crdPolicies: install creates the chart's CRDs (crds/);
// an upgrade with the default policy (Skip) leaves a changed CRD as it is, and
// upgrade.crds = "CreateReplace" really updates it. The CRD is cluster-scoped
// and outlives the release (Helm never deletes CRDs), so each run starts by
// removing it.
// It stays serial (no t.Parallel): its CRD is cluster-scoped with a fixed
// name, and creating and deleting a CRD changes the API discovery that every
// other test reads.
func TestAccHelmRelease_crdPolicies(t *testing.T) {
	ns := uniqueNamespace(t, "hr-crds")
	cacheDir := t.TempDir()
	const group = "crdpolicy.stevedore.dev"
	crdName := "widgets." + group
	chartDir := filepath.Join(t.TempDir(), "crds")
	if err := os.CopyFS(chartDir, os.DirFS(filepath.Join(testenv.ChartsDir(), "crds"))); err != nil {
		t.Fatal(err)
	}
	// writeChart sets the chart's version and its CRD, with shortNames when
	// short is set, so that an update of the CRD can be seen in the cluster.
	writeChart := func(version, short string) {
		setChartVersion(t, chartDir, version)
		crd, err := os.ReadFile(filepath.Join(testenv.ChartsDir(), "crds", "crds", "widgets.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		out := strings.ReplaceAll(string(crd), "stevedore.dev", group)
		if short != "" {
			out = strings.Replace(out, "    singular: widget\n", "    singular: widget\n    shortNames: ["+short+"]\n", 1)
		}
		if err := os.WriteFile(filepath.Join(chartDir, "crds", "widgets.yaml"), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		tpl := strings.ReplaceAll(mustRead(t, filepath.Join(testenv.ChartsDir(), "crds", "templates", "widget.yaml")), "stevedore.dev/v1", group+"/v1")
		if err := os.WriteFile(filepath.Join(chartDir, "templates", "widget.yaml"), []byte(tpl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	c := testClient(t)
	crd := func() (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		return u, c.Get(ctx, client.ObjectKey{Name: crdName}, u)
	}
	removeCRD := func() {
		u, err := crd()
		if apierrors.IsNotFound(err) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		for i := 0; i < 300; i++ {
			if _, err := crd(); apierrors.IsNotFound(err) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("CRD %s was not deleted", crdName)
	}
	shortNames := func(want ...string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			u, err := crd()
			if err != nil {
				return fmt.Errorf("CRD %s: %w", crdName, err)
			}
			got, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "names", "shortNames")
			if !slices.Equal(got, want) {
				return fmt.Errorf("CRD %s shortNames %v, want %v", crdName, got, want)
			}
			return nil
		}
	}
	widget := func(size string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(group + "/v1")
			u.SetKind("Widget")
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, u); err != nil {
				return fmt.Errorf("widget %s/podinfo: %w", ns, err)
			}
			if got, _, _ := unstructured.NestedString(u.Object, "spec", "size"); got != size {
				return fmt.Errorf("widget size %q, want %q", got, size)
			}
			return nil
		}
	}
	accTest(t, resource.TestCase{
		Steps: []resource.TestStep{
			{
				// Install (default policy Create): the CRD and an instance of it.
				PreConfig: func() { removeCRD(); writeChart("0.1.0", "") },
				Config:    releaseConfig(cacheDir, chartDir, ns, `values = { size = "s" }`),
				Check:     resource.ComposeTestCheckFunc(shortNames(), widget("s")),
			},
			{
				// Upgrade with the default policy (Skip): the CRD stays as it was.
				PreConfig: func() { writeChart("0.2.0", "wd") },
				Config:    releaseConfig(cacheDir, chartDir, ns, `values = { size = "m" }`),
				Check:     resource.ComposeTestCheckFunc(shortNames(), widget("m")),
			},
			{
				// CreateReplace updates it.
				PreConfig: func() { writeChart("0.3.0", "wd") },
				Config: releaseConfig(cacheDir, chartDir, ns, `values = { size = "l" }
  upgrade {
    crds = "CreateReplace"
  }`),
				Check: resource.ComposeTestCheckFunc(shortNames("wd"), widget("l")),
			},
		},
	})
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// expectChartLabelChange checks that the release's planned changes set the
// chart label of its objects to want: the upgrade to a new chart version is
// in the plan, object by object.
func expectChartLabelChange(addr, want string) plancheck.PlanCheck {
	return chartLabelCheck{addr: addr, want: want}
}

type chartLabelCheck struct{ addr, want string }

func (c chartLabelCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	change, err := plannedChange(req, c.addr)
	if err != nil {
		resp.Error = err
		return
	}
	after, _ := change.After.(map[string]any)
	raw, _ := json.Marshal(after["changes"])
	var changes []struct {
		ID      string `json:"id"`
		Changes []struct {
			Path string `json:"path"`
			To   string `json:"to"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(raw, &changes); err != nil {
		resp.Error = fmt.Errorf("%s: planned changes: %w", c.addr, err)
		return
	}
	var objects []string
	for _, o := range changes {
		for _, ch := range o.Changes {
			if strings.HasSuffix(ch.Path, "/labels/helm.sh~1chart") && strings.Contains(ch.To, c.want) {
				objects = append(objects, o.ID)
			}
		}
	}
	if len(objects) == 0 {
		resp.Error = fmt.Errorf("%s: no planned change sets helm.sh/chart to %s; planned changes: %s", c.addr, c.want, raw)
	}
}

// expectImportSetsChartPath checks the plan of an import into a
// configuration that names its chart by path and digest: the import's state
// has no chart.path (a machine path is never written in state from an
// import, which `plan -generate-config-out` would copy), so the plan updates
// addr in place, and chart.path is the only attribute that changes. No
// attribute the apply computes is unknown: no Helm action.
func expectImportSetsChartPath(addr string) plancheck.PlanCheck {
	return chartPathOnlyCheck{addr: addr}
}

type chartPathOnlyCheck struct{ addr string }

func (c chartPathOnlyCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != c.addr {
			continue
		}
		if !rc.Change.Actions.Update() {
			resp.Error = fmt.Errorf("%s: actions %v, want update (chart.path set)", c.addr, rc.Change.Actions)
			return
		}
		if rc.Change.Importing == nil {
			resp.Error = fmt.Errorf("%s: not imported by this plan", c.addr)
			return
		}
		before, _ := rc.Change.Before.(map[string]any)
		after, _ := rc.Change.After.(map[string]any)
		if before == nil || after == nil {
			resp.Error = fmt.Errorf("%s: no before or after value", c.addr)
			return
		}
		if u, _ := rc.Change.AfterUnknown.(map[string]any); len(unknownPaths(u)) > 0 {
			resp.Error = fmt.Errorf("%s: unknown after the plan: %v, want none (no Helm action)", c.addr, unknownPaths(u))
			return
		}
		bc, ac := chartBlock(before), chartBlock(after)
		if bc == nil || ac == nil || bc["path"] != nil || ac["path"] == nil || ac["path"] == "" {
			resp.Error = fmt.Errorf("%s: chart before %v, after %v: want chart.path null -> the artifact's path", c.addr, bc, ac)
			return
		}
		bc, ac = maps.Clone(bc), maps.Clone(ac)
		delete(bc, "path")
		delete(ac, "path")
		b, a := maps.Clone(before), maps.Clone(after)
		b["chart"], a["chart"] = bc, ac
		if !reflect.DeepEqual(b, a) {
			for k := range a {
				if !reflect.DeepEqual(a[k], b[k]) {
					resp.Error = fmt.Errorf("%s: %s changes too: %v -> %v; want only chart.path", c.addr, k, b[k], a[k])
					return
				}
			}
		}
		return
	}
	resp.Error = fmt.Errorf("%s: not in the plan", c.addr)
}

// chartBlock is the chart block of a release's plan value.
func chartBlock(v map[string]any) map[string]any {
	switch c := v["chart"].(type) {
	case []any:
		if len(c) == 1 {
			m, _ := c[0].(map[string]any)
			return m
		}
	case map[string]any:
		return c
	}
	return nil
}

// unknownPaths lists the top-level attributes that are (or hold) unknown
// values in a plan's after_unknown.
func unknownPaths(u map[string]any) []string {
	var out []string
	for k, v := range u {
		if hasTrue(v) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func hasTrue(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case []any:
		return slices.ContainsFunc(x, hasTrue)
	case map[string]any:
		for _, e := range x {
			if hasTrue(e) {
				return true
			}
		}
	}
	return false
}
