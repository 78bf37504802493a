package release

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Install, upgrade on new values and on a new chart version, and nothing on a
// second apply: the life of a release that works.
func TestReconcile_installUpgradeNoop(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	spec := &Spec{Name: "podinfo", Namespace: ns, Timeout: time.Minute, MaxHistory: ptr(5),
		ChartPath: path, ChartDigest: digest, Values: map[string]any{"replicaCount": 2}}

	plan, err := e.Plan(ctx, spec, nil)
	if err != nil || plan.Action != ActionInstall || plan.ReleaseName != "podinfo" || plan.ConfigDigest != DigestValues(spec.Values) {
		t.Fatalf("plan on create = %+v, %v", plan, err)
	}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "deployed" || st.Version != 1 || st.ChartName != "podinfo" || st.ChartVersion != "1.0.0" || st.AppVersion != "6.0.0" {
		t.Fatalf("after install: %+v", st)
	}
	wantCondition(t, st, CondReady, "True", ReasonInstallSucceeded)
	wantCondition(t, st, CondReleased, "True", ReasonInstallSucceeded)
	if !strings.Contains(condition(st, CondReady).Message, "podinfo@1.0.0") {
		t.Errorf("Ready message does not name the chart: %q", condition(st, CondReady).Message)
	}
	if len(st.History) != 1 || st.History[0].ChartDigest != digest || st.History[0].Digest == "" ||
		st.ConfigDigest != DigestValues(spec.Values) || st.LastAttemptedReleaseAction != "install" {
		t.Fatalf("history/digests after install: %+v", st)
	}
	dep, ok := get(t, c, "apps/v1", "Deployment", ns, "podinfo")
	if !ok {
		t.Fatal("no Deployment")
	}
	if r, _, _ := unstructuredInt(dep.Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas = %d", r)
	}
	if l := dep.GetLabels(); l[OriginNameLabel] != "podinfo" || l[OriginNamespaceLabel] != ns {
		t.Errorf("origin labels missing: %v", l)
	}

	// A second apply changes nothing.
	if p, err := e.Plan(ctx, spec, st); err != nil || p.Action != ActionNone || p.Reason != "" {
		t.Fatalf("plan in sync = %+v, %v", p, err)
	}
	st2, err := e.Reconcile(ctx, spec, st)
	if err != nil || st2.Version != 1 {
		t.Fatalf("second apply: version %d, %v", st2.Version, err)
	}

	// New values: upgrade.
	spec.Values = map[string]any{"replicaCount": 3}
	if p, err := e.Plan(ctx, spec, st2); err != nil || p.Action != ActionUpgrade || !strings.Contains(p.Reason, "values") {
		t.Fatalf("plan on new values = %+v, %v", p, err)
	}
	st3, err := e.Reconcile(ctx, spec, st2)
	if err != nil || st3.Version != 2 || st3.Status != "deployed" {
		t.Fatalf("upgrade on values: %+v, %v", st3, err)
	}
	wantCondition(t, st3, CondReady, "True", ReasonUpgradeSucceeded)
	if got := historyOf(st3); got != "podinfo.v2:deployed podinfo.v1:superseded" {
		t.Errorf("history = %s", got)
	}

	// New chart version: upgrade.
	spec.ChartPath, spec.ChartDigest = podinfo(t, "1.1.0")
	st4, err := e.Reconcile(ctx, spec, st3)
	if err != nil || st4.Version != 3 || st4.ChartVersion != "1.1.0" {
		t.Fatalf("upgrade on chart: %+v, %v", st4, err)
	}
	// The same version repackaged (a new digest) is a change too. Helm 4
	// keeps each file's modification time in the archive: a copy of the
	// chart's source, written now, packages to other bytes.
	src := filepath.Join(t.TempDir(), "podinfo")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(testenv.ChartsDir(), "podinfo"))); err != nil {
		t.Fatal(err)
	}
	old := spec.ChartDigest
	if spec.ChartPath, spec.ChartDigest = chartArchive(t, src, "1.1.0"); spec.ChartDigest == old {
		t.Fatal("repackaging made the same bytes")
	}
	if p, err := e.Plan(ctx, spec, st4); err != nil || p.Action != ActionUpgrade {
		t.Fatalf("plan on a repackaged chart = %+v, %v", p, err)
	}
	st5, err := e.Reconcile(ctx, spec, st4)
	if err != nil || st5.Version != 4 {
		t.Fatalf("upgrade on digest: %+v, %v", st5, err)
	}
	st6, err := e.Reconcile(ctx, spec, st5)
	if err != nil || st6.Version != 4 {
		t.Fatalf("apply after upgrade made revision %d, %v", st6.Version, err)
	}

	// Refresh reads the same; after uninstall it finds nothing.
	obs, err := e.Observe(ctx, spec, st6)
	if err != nil || obs == nil || obs.Version != 4 || obs.Status != "deployed" || len(obs.History) != len(st6.History) {
		t.Fatalf("observe = %+v, %v", obs, err)
	}
	if _, err := e.Uninstall(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, ok := get(t, c, "apps/v1", "Deployment", ns, "podinfo"); ok {
		t.Error("Deployment left after uninstall")
	}
	if obs, err := e.Observe(ctx, spec, st6); err != nil || obs != nil {
		t.Fatalf("observe after uninstall = %+v, %v", obs, err)
	}
	if _, err := e.Uninstall(ctx, spec); err != nil {
		t.Fatalf("second uninstall: %v", err)
	}
}

func unstructuredInt(obj map[string]any, fields ...string) (int64, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false, nil
		}
		cur = m[f]
	}
	n, ok := cur.(int64)
	return n, ok, nil
}

// A failing install is retried `retries` times with an uninstall between
// attempts, then left failed; the counters say so; a later apply with a
// fixed configuration converges.
func TestReconcile_installRetriesThenConverges(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := breakable(t, "0.1.0")
	spec := &Spec{Name: "brk", Namespace: ns, Timeout: 30 * time.Second, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest,
		Values:  map[string]any{"broken": true},
		Install: Install{Remediation: InstallRemediation{Retries: 2}}}

	st, err := e.Reconcile(ctx, spec, nil)
	if err == nil {
		t.Fatal("a broken install succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"helmrelease " + ns + "/brk: ", "install failed:", "INVALID_name", "install retries exhausted"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if st.InstallFailures != 3 || st.Failures != 3 || st.UpgradeFailures != 0 {
		t.Errorf("counters: install %d, all %d, upgrade %d; want 3, 3, 0", st.InstallFailures, st.Failures, st.UpgradeFailures)
	}
	if st.Status != "failed" || st.Version != 1 {
		t.Errorf("left %q v%d, want the last failed install", st.Status, st.Version)
	}
	wantCondition(t, st, CondReleased, "False", ReasonInstallFailed)
	wantCondition(t, st, CondReady, "False", ReasonInstallFailed)
	if !strings.Contains(condition(st, CondReleased).Message, "Helm install failed for release "+ns+"/brk with chart breakable@0.1.0") {
		t.Errorf("Released message: %q", condition(st, CondReleased).Message)
	}

	// The same configuration again: nothing is tried.
	if p, err := e.Plan(ctx, spec, st); err != nil || p.Action != ActionNone || !strings.Contains(p.Stalled, "retries exhausted") {
		t.Fatalf("plan when exhausted = %+v, %v", p, err)
	}
	st2, err := e.Reconcile(ctx, spec, st)
	if err == nil || !strings.Contains(err.Error(), "retries exhausted") || st2.InstallFailures != 3 || st2.Version != 1 {
		t.Fatalf("apply when exhausted: failures %d v%d, %v", st2.InstallFailures, st2.Version, err)
	}

	// A fixed chart (same values): counters reset, the failed release is
	// upgraded.
	spec.ChartPath, spec.ChartDigest = writeChart(t, "0.2.0", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: breakable\nversion: 0.2.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  v: fixed\n",
	})
	st3, err := e.Reconcile(ctx, spec, st2)
	if err != nil {
		t.Fatal(err)
	}
	if st3.Status != "deployed" || st3.InstallFailures != 0 || st3.Failures != 0 {
		t.Errorf("after the fix: %q, failures %d/%d", st3.Status, st3.InstallFailures, st3.Failures)
	}
	wantCondition(t, st3, CondReady, "True", ReasonUpgradeSucceeded)
	if _, ok := get(t, c, "v1", "ConfigMap", ns, "brk"); !ok {
		t.Error("ConfigMap missing")
	}
}

// An upgrade whose test fails is rolled back; the rollback target is the
// release before it.
func TestReconcile_failingTestRollsBack(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	spec := &Spec{Name: "tested", Namespace: ns, Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest,
		Test:    Test{Enable: true},
		Upgrade: Upgrade{Remediation: UpgradeRemediation{RemediateLastFailure: ptr(true)}}}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantCondition(t, st, CondTestSuccess, "True", ReasonTestSucceeded)
	if len(st.History[0].TestHooks) != 1 || st.History[0].TestHooks[0].Phase != "Succeeded" || st.History[0].TestHooks[0].LastCompleted.IsZero() {
		t.Fatalf("test hooks after install: %+v", st.History[0].TestHooks)
	}
	if p, err := e.Plan(ctx, spec, st); err != nil || p.Action != ActionNone {
		t.Fatalf("plan after tested install = %+v, %v", p, err)
	}

	spec.Values = map[string]any{"test": map[string]any{"fail": true}}
	st2, err := e.Reconcile(ctx, spec, st)
	if err == nil || !strings.Contains(err.Error(), "test failed") || !strings.Contains(err.Error(), "upgrade retries exhausted") {
		t.Fatalf("want a test failure and exhausted retries, got %v", err)
	}
	if st2.Status != "deployed" || st2.Version != 3 || st2.UpgradeFailures != 1 {
		t.Fatalf("after remediation: %q v%d upgrade failures %d", st2.Status, st2.Version, st2.UpgradeFailures)
	}
	if got := historyOf(st2); got != "tested.v3:deployed tested.v2:superseded tested.v1:superseded" {
		t.Errorf("history = %s", got)
	}
	if !st2.History[1].hasFailedTest() {
		t.Errorf("v2 test result not recorded: %+v", st2.History[1].TestHooks)
	}
	wantCondition(t, st2, CondRemediated, "True", ReasonRollbackSucceeded)
	wantCondition(t, st2, CondReady, "False", ReasonRollbackSucceeded)
	if !strings.Contains(condition(st2, CondRemediated).Message, "Helm rollback to previous release "+ns+"/tested.v1 with chart podinfo@1.0.0 succeeded") {
		t.Errorf("Remediated message: %q", condition(st2, CondRemediated).Message)
	}
	// Back to the values that work: the rolled-back release is what is
	// wanted, only its tests are due.
	spec.Values = nil
	if p, err := e.Plan(ctx, spec, st2); err != nil || p.Action != ActionTest {
		t.Fatalf("plan back to good values = %+v, %v", p, err)
	}
	st3, err := e.Reconcile(ctx, spec, st2)
	if err != nil || st3.Version != 3 {
		t.Fatalf("apply back to good values: v%d, %v", st3.Version, err)
	}
	wantCondition(t, st3, CondReady, "True", ReasonTestSucceeded)
	if condition(st3, CondRemediated).Type != "" {
		t.Errorf("Remediated left after convergence: %+v", st3.Conditions)
	}
}

// remediate_last_failure decides whether the last failed upgrade is rolled
// back or left for the user to look at.
func TestReconcile_remediateLastFailure(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := breakable(t, "0.1.0")
	spec := &Spec{Name: "rlf", Namespace: ns, Timeout: 30 * time.Second, MaxHistory: ptr(10), ChartPath: path, ChartDigest: digest}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}

	spec.Values = map[string]any{"broken": true}
	spec.Upgrade.Remediation = UpgradeRemediation{Retries: 1, RemediateLastFailure: ptr(false)}
	st2, err := e.Reconcile(ctx, spec, st)
	if err == nil || !strings.Contains(err.Error(), "upgrade failed:") || !strings.Contains(err.Error(), "upgrade retries exhausted") {
		t.Fatalf("want exhausted upgrade retries, got %v; history %s", err, historyOf(st2))
	}
	// upgrade v2 fails, rollback v3, upgrade v4 fails and stays.
	if st2.Status != "failed" || st2.Version != 4 || st2.UpgradeFailures != 2 {
		t.Fatalf("without remediate_last_failure: %q v%d failures %d; history %s", st2.Status, st2.Version, st2.UpgradeFailures, historyOf(st2))
	}
	wantCondition(t, st2, CondReady, "False", ReasonUpgradeFailed)

	// Now the last failure is remediated: a rollback, and still exhausted.
	spec.Upgrade.Remediation.RemediateLastFailure = ptr(true)
	if p, err := e.Plan(ctx, spec, st2); err != nil || p.Action != ActionRollback {
		t.Fatalf("plan = %+v, %v", p, err)
	}
	st3, err := e.Reconcile(ctx, spec, st2)
	if err == nil || !strings.Contains(err.Error(), "upgrade retries exhausted") {
		t.Fatalf("want exhausted upgrade retries, got %v", err)
	}
	if st3.Status != "deployed" || st3.Version != 5 || st3.UpgradeFailures != 2 {
		t.Fatalf("with remediate_last_failure: %q v%d failures %d", st3.Status, st3.Version, st3.UpgradeFailures)
	}
	wantCondition(t, st3, CondRemediated, "True", ReasonRollbackSucceeded)
	if cm, ok := get(t, c, "v1", "ConfigMap", ns, "rlf"); !ok || cm.Object["data"].(map[string]any)["v"] != "one" {
		t.Errorf("ConfigMap after rollback: %v", cm)
	}
}

// pendingInstall writes revision 1 of release name in ns as an install
// killed halfway leaves it: pending-install, with a manifest whose objects
// carry the origin labels of the resource origin (namespace/name).
func pendingInstall(t *testing.T, e *Engine, ns, name, chartPath, origin, owner string) releaseStore {
	t.Helper()
	ch, err := loader.Load(chartPath)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := e.kube.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	store := releaseStore{storage.Init(driver.NewSecrets(cs.CoreV1().Secrets(ns)))}
	originNS, originName, _ := strings.Cut(origin, "/")
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  labels:\n" +
		"    " + OriginNameLabel + ": " + originName + "\n    " + OriginNamespaceLabel + ": " + originNS + "\n"
	now := time.Now()
	stuck := &helmrelease.Release{Name: name, Namespace: ns, Version: 1, Chart: ch, Config: map[string]any{}, Manifest: manifest,
		Info: &helmrelease.Info{Status: helmcommon.StatusPendingInstall, FirstDeployed: now, LastDeployed: now, Description: "Initial install underway"}}
	if owner != "" {
		stuck.Labels = map[string]string{kube.OwnerLabel: owner}
	}
	if err := store.Create(stuck); err != nil {
		t.Fatal(err)
	}
	return store
}

// A release stuck in pending-install by an earlier round of this same create
// (it carries the instance's owner ID) is unlocked (marked failed) and
// upgraded.
func TestReconcile_unlocksPendingInstall(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	owner := kube.NewOwnerID()
	store := pendingInstall(t, e, ns, "locked", path, ns+"/locked", owner)

	spec := &Spec{Name: "locked", Namespace: ns, Owner: owner, Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest}
	if p, err := e.Plan(ctx, spec, nil); err != nil || p.Action != ActionUnlock || p.Conflict != nil {
		t.Fatalf("plan = %+v, %v", p, err)
	}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "deployed" || st.Version != 2 {
		t.Fatalf("after unlock: %q v%d", st.Status, st.Version)
	}
	v1, err := store.Get("locked", 1)
	if err != nil {
		t.Fatal(err)
	}
	// Unlocked to failed, then superseded by the upgrade.
	if v1.Info.Status != helmcommon.StatusSuperseded || !strings.Contains(v1.Info.Description, "unlocked from stale 'pending-install' state") {
		t.Errorf("v1 = %s: %s", v1.Info.Status, v1.Info.Description)
	}
	wantCondition(t, st, CondReady, "True", ReasonUpgradeSucceeded)
}

// install.crds Create creates and never updates; upgrade.crds defaults to
// Skip; CreateReplace replaces; objects other than CRDs in crds/ are dropped.
func TestReconcile_crdPolicies(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	crd := func(group, shortName string) string {
		short := ""
		if shortName != "" {
			short = "\n    shortNames: [" + shortName + "]"
		}
		return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.` + group + `
spec:
  group: ` + group + `
  names:
    kind: Gadget
    listKind: GadgetList
    plural: gadgets
    singular: gadget` + short + `
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: not-a-crd
  namespace: ` + ns + `
`
	}
	group := ns + ".stevedore.dev"
	chart := func(version, shortName string) (string, string) {
		return writeChart(t, version, map[string]string{
			"Chart.yaml":          "apiVersion: v2\nname: gadgets\nversion: 0.1.0\n",
			"crds/gadgets.yaml":   crd(group, shortName),
			"templates/this.yaml": "apiVersion: " + group + "/v1\nkind: Gadget\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  size: {{ .Chart.Version | quote }}\n",
		})
	}
	shortNames := func() []any {
		u, ok := get(t, c, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "gadgets."+group)
		if !ok {
			t.Fatal("CRD missing")
		}
		s, _ := u.Object["spec"].(map[string]any)["names"].(map[string]any)["shortNames"].([]any)
		if u.GetLabels()[OriginNameLabel] != "gadgets" {
			t.Errorf("CRD origin labels: %v", u.GetLabels())
		}
		return s
	}

	path, digest := chart("0.1.0", "")
	spec := &Spec{Name: "gadgets", Namespace: ns, Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := get(t, c, group+"/v1", "Gadget", ns, "gadgets"); !ok {
		t.Fatal("the custom resource of the new CRD is missing")
	}
	if _, ok := get(t, c, "v1", "ConfigMap", ns, "not-a-crd"); ok {
		t.Error("a non-CRD object in crds/ was created")
	}

	// Upgrade with the default (Skip) and with Create: the CRD stays.
	spec.ChartPath, spec.ChartDigest = chart("0.2.0", "gd")
	if st, err = e.Reconcile(ctx, spec, st); err != nil {
		t.Fatal(err)
	}
	if s := shortNames(); len(s) != 0 {
		t.Errorf("Skip updated the CRD: %v", s)
	}
	spec.Upgrade.CRDs = CRDsCreate
	spec.ChartPath, spec.ChartDigest = chart("0.3.0", "gd")
	if st, err = e.Reconcile(ctx, spec, st); err != nil {
		t.Fatal(err)
	}
	if s := shortNames(); len(s) != 0 {
		t.Errorf("Create updated the CRD: %v", s)
	}
	spec.Upgrade.CRDs = CRDsCreateReplace
	spec.ChartPath, spec.ChartDigest = chart("0.4.0", "gd")
	if _, err = e.Reconcile(ctx, spec, st); err != nil {
		t.Fatal(err)
	}
	if s := shortNames(); len(s) != 1 || s[0] != "gd" {
		t.Errorf("CreateReplace did not update the CRD: %v", s)
	}
	if _, ok := get(t, c, "v1", "ConfigMap", ns, "not-a-crd"); ok {
		t.Error("a non-CRD object in crds/ was created")
	}
}

// values_from: a ConfigMap merged under the inline values, a Secret key at a
// target_path over even the inline values, optional objects; bad references
// are errors on the entry.
func TestReconcile_valuesFrom(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = ns, "base"
	cm.Data = map[string]string{"values.yaml": "replicaCount: 3\nconfig:\n  greeting: from-configmap\n  extra: kept\nimage:\n  tag: from-configmap\n"}
	sec := &corev1.Secret{}
	sec.Namespace, sec.Name = ns, "tag"
	sec.Data = map[string][]byte{"tag": []byte("6.1.0")}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	path, digest := podinfo(t, "1.0.0")
	spec := &Spec{Name: "vf", Namespace: ns, Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest,
		Values: map[string]any{"config": map[string]any{"greeting": "inline"}, "image": map[string]any{"tag": "inline"}},
		ValuesFrom: []ValuesReference{
			{Kind: "ConfigMap", Name: "base"},
			{Kind: "Secret", Name: "tag", ValuesKey: "tag", TargetPath: "image.tag"},
			{Kind: "ConfigMap", Name: "absent", Optional: true},
		}}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	dep, _ := get(t, c, "apps/v1", "Deployment", ns, "vf")
	img := dep.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]
	if img != "ghcr.io/stefanprodan/podinfo:inline" {
		t.Errorf("image = %v, want the inline tag over the Secret's target_path value, as Flux merges", img)
	}
	if r, _, _ := unstructuredInt(dep.Object, "spec", "replicas"); r != 3 {
		t.Errorf("replicas = %d, want the ConfigMap's 3", r)
	}
	data, _ := get(t, c, "v1", "ConfigMap", ns, "vf")
	if d := data.Object["data"].(map[string]any); d["greeting"] != "inline" || d["extra"] != "kept" {
		t.Errorf("config = %v, want inline over the ConfigMap", d)
	}
	want := DigestValues(map[string]any{"replicaCount": 3, "config": map[string]any{"greeting": "inline", "extra": "kept"}, "image": map[string]any{"tag": "inline"}})
	if st.ConfigDigest != want {
		t.Errorf("config digest %s, want %s", st.ConfigDigest, want)
	}

	// A missing object is no plan error (another resource may create it
	// first): the plan says so, and apply fails on it.
	absent := *spec
	absent.ValuesFrom = []ValuesReference{spec.ValuesFrom[0], {Kind: "ConfigMap", Name: "absent"}}
	if p, err := e.Plan(ctx, &absent, st); err != nil || !strings.Contains(p.ValuesMissing, "values_from[1]: ConfigMap "+ns+"/absent not found") {
		t.Errorf("plan with a missing values_from object: %+v, %v", p, err)
	}
	if _, err := e.Reconcile(ctx, &absent, st); err == nil || !strings.Contains(err.Error(), "values_from[1]: ConfigMap "+ns+"/absent not found") {
		t.Errorf("apply with a missing values_from object: %v", err)
	}

	for _, tc := range []struct {
		ref   ValuesReference
		field string
	}{
		{ValuesReference{Kind: "ConfigMap", Name: "base", ValuesKey: "nope.yaml", Optional: true}, "values_from[1].values_key"},
		{ValuesReference{Kind: "Secret", Name: "tag", ValuesKey: "tag"}, "values_from[1]"}, // "6.1.0" is no mapping
	} {
		bad := *spec
		bad.ValuesFrom = []ValuesReference{spec.ValuesFrom[0], tc.ref}
		_, err := e.Plan(ctx, &bad, st)
		var fe *fielderr.Error
		if !errors.As(err, &fe) || fe.Path != tc.field {
			t.Errorf("%+v: want a FieldError on %s, got %v", tc.ref, tc.field, err)
		}
		if err != nil && strings.Contains(err.Error(), "6.1.0") {
			t.Errorf("error shows Secret data: %v", err)
		}
	}
}

// A service account without rights: the error says who was denied what.
func TestReconcile_impersonationDenied(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	sa := &corev1.ServiceAccount{}
	sa.Namespace, sa.Name = ns, "nobody"
	if err := c.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	path, digest := podinfo(t, "1.0.0")
	spec := &Spec{Name: "imp", Namespace: ns, ServiceAccountName: "nobody", Timeout: 30 * time.Second, ChartPath: path, ChartDigest: digest}
	st, err := e.Reconcile(ctx, spec, nil)
	if err == nil {
		t.Fatal("a service account without rights installed a release")
	}
	for _, want := range []string{"helmrelease " + ns + "/imp: ", `"system:serviceaccount:` + ns + `:nobody" cannot`, "as service account " + ns + "/nobody"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if st == nil || condition(st, CondReady).Status != "False" {
		t.Errorf("status after denial: %+v", st)
	}
	if _, ok := get(t, c, "apps/v1", "Deployment", ns, "imp"); ok {
		t.Error("objects were created")
	}
}

// Import reads the user-supplied values back, and a configuration made of
// them plans nothing.
func TestImport_readsValuesBackAndPlansNothing(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	spec := &Spec{Name: "imported", Namespace: ns, Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest,
		Values: map[string]any{"replicaCount": 2, "config": map[string]any{"greeting": "hi"}}}
	if _, err := e.Reconcile(ctx, spec, nil); err != nil {
		t.Fatal(err)
	}
	imp, err := e.Import(ctx, ns, "imported")
	if err != nil {
		t.Fatal(err)
	}
	if DigestValues(imp.Values) != DigestValues(spec.Values) || imp.TargetNamespace != ns {
		t.Fatalf("imported values %v in %s", imp.Values, imp.TargetNamespace)
	}
	if st := imp.Status; st.Status != "deployed" || st.Version != 1 || len(st.History) != 1 || st.ConfigDigest != DigestValues(spec.Values) {
		t.Fatalf("imported status %+v", st)
	}
	wantCondition(t, imp.Status, CondReady, "True", ReasonInstallSucceeded)

	fresh := &Spec{Name: "imported", Namespace: ns, Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest, Values: imp.Values}
	if p, err := e.Plan(ctx, fresh, imp.Status); err != nil || p.Action != ActionNone {
		t.Fatalf("plan after import = %+v, %v", p, err)
	}
	st, err := e.Reconcile(ctx, fresh, imp.Status)
	if err != nil || st.Version != 1 {
		t.Fatalf("apply after import made v%d, %v", st.Version, err)
	}
	if _, err := e.Import(ctx, ns, "nothing"); err == nil || !strings.Contains(err.Error(), "no release") {
		t.Errorf("import of nothing: %v", err)
	}
}

// A template error is an error on the chart, with Helm's text; nothing is
// written and nothing counts against retries.
func TestReconcile_renderError(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := writeChart(t, "0.1.0", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: bad\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: {{ required \"value v is required\" .Values.v }}\n",
	})
	spec := &Spec{Name: "bad", Namespace: ns, Timeout: 30 * time.Second, ChartPath: path, ChartDigest: digest}
	st, err := e.Reconcile(ctx, spec, nil)
	var fe *fielderr.Error
	if !errors.As(err, &fe) || fe.Path != "values" || !strings.Contains(err.Error(), "value v is required") {
		t.Fatalf("want a values FieldError with Helm's message, got %v", err)
	}
	if st.InstallFailures != 0 || st.Failures != 1 || st.Status != "" {
		t.Errorf("counters after a render error: %d/%d, status %q", st.InstallFailures, st.Failures, st.Status)
	}
	wantCondition(t, st, CondReady, "False", ReasonInstallFailed)
}

// A rollback that fails (its pre-rollback hook fails) fails once and stops
// the apply; it does not loop.
func TestReconcile_failedRollbackStops(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := writeChart(t, "0.1.0", map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: renamer\nversion: 0.1.0\n",
		"values.yaml": "broken: false\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n" +
			"  name: {{ if .Values.broken }}INVALID_name{{ else }}{{ .Release.Name }}{{ end }}\ndata: {}\n",
		// The rollback to revision 1 runs its pre-rollback hook, a Pod that
		// the test cluster fails.
		"templates/pre-rollback.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-pre-rollback
  labels:
    stevedore.dev/test-fail: "true"
  annotations:
    helm.sh/hook: pre-rollback
spec:
  restartPolicy: Never
  containers:
    - name: fail
      image: busybox:1
      command: ["false"]
`,
	})
	spec := &Spec{Name: "ren", Namespace: ns, Timeout: 30 * time.Second, MaxHistory: ptr(10), ChartPath: path, ChartDigest: digest}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec.Values = map[string]any{"broken": true}
	spec.Upgrade.Remediation.Retries = 3
	st2, err := e.Reconcile(ctx, spec, st)
	if err == nil || !strings.Contains(err.Error(), "rollback failed:") {
		t.Fatalf("want a failed rollback, got %v", err)
	}
	// One upgrade (revision 3), one failure: no retry after the rollback failed.
	if st2.Version != 3 || st2.UpgradeFailures != 1 {
		t.Fatalf("after a failed rollback: v%d, upgrade failures %d", st2.Version, st2.UpgradeFailures)
	}
	wantCondition(t, st2, CondRemediated, "False", ReasonRollbackFailed)
	wantCondition(t, st2, CondReady, "False", ReasonRollbackFailed)
}

// Drift: refresh reports it, plan says correct, apply corrects it without a
// new revision; in warn mode apply leaves it and says so in the status.
func TestReconcile_correctsDrift(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := breakable(t, "0.1.0")
	spec := &Spec{Name: "drifty", Namespace: ns, Timeout: 30 * time.Second, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Drift) != 0 {
		t.Fatalf("drift right after install: %+v", st.Drift)
	}
	edit := func() {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "drifty"}, cm); err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] = "edited"
		if err := c.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	edit()
	obs, err := e.Observe(ctx, spec, st)
	if err != nil || len(obs.Drift) != 1 {
		t.Fatalf("observe after an edit: %+v, %v", obs, err)
	}
	if p, err := e.Plan(ctx, spec, obs); err != nil || p.Action != ActionCorrect {
		t.Fatalf("plan with drift = %+v, %v", p, err)
	}
	st2, err := e.Reconcile(ctx, spec, obs)
	if err != nil || st2.Version != 1 || len(st2.Drift) != 0 {
		t.Fatalf("after correction: v%d drift %+v, %v", st2.Version, st2.Drift, err)
	}
	if cm, _ := get(t, c, "v1", "ConfigMap", ns, "drifty"); cm.Object["data"].(map[string]any)["v"] != "one" {
		t.Errorf("ConfigMap not corrected: %v", cm.Object["data"])
	}

	spec.DriftDetection.Mode = DriftWarn
	edit()
	obs2, err := e.Observe(ctx, spec, st2)
	if err != nil || len(obs2.Drift) != 1 {
		t.Fatalf("observe in warn mode: %+v, %v", obs2, err)
	}
	if p, err := e.Plan(ctx, spec, obs2); err != nil || p.Action != ActionNone {
		t.Fatalf("plan in warn mode = %+v, %v", p, err)
	}
	st3, err := e.Reconcile(ctx, spec, obs2)
	if err != nil || len(st3.Drift) != 1 {
		t.Fatalf("apply in warn mode: drift %+v, %v", st3.Drift, err)
	}
}

// Unlimited retries stop within one apply (here by the spec's timeout, the
// context having no deadline) with an error that says so.
func TestReconcile_unlimitedRetriesAreBounded(t *testing.T) {
	t.Parallel()
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := breakable(t, "0.1.0")
	spec := &Spec{Name: "forever", Namespace: ns, Timeout: 3 * time.Second, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest,
		Values:  map[string]any{"broken": true},
		Install: Install{Remediation: InstallRemediation{Retries: -1}}}
	start := time.Now()
	st, err := e.Reconcile(context.Background(), spec, nil)
	if err == nil || !strings.Contains(err.Error(), "retries are unlimited") || !strings.Contains(err.Error(), "install failed:") {
		t.Fatalf("want the unlimited retries to stop with an error, got %v", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %s", d)
	}
	if st.InstallFailures < 2 {
		t.Errorf("install failures %d, want retries", st.InstallFailures)
	}
}

// Uninstall with keep_history leaves an uninstalled release: refresh reports
// it gone, and a new apply installs over it.
func TestUninstall_keepHistoryThenReinstall(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := breakable(t, "0.1.0")
	spec := &Spec{Name: "kept", Namespace: ns, Timeout: 30 * time.Second, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest,
		Uninstall: Uninstall{KeepHistory: true, DeletionPropagation: "foreground"}}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Uninstall(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, ok := get(t, c, "v1", "ConfigMap", ns, "kept"); ok {
		t.Error("ConfigMap left after uninstall")
	}
	if obs, err := e.Observe(ctx, spec, st); err != nil || obs != nil {
		t.Fatalf("observe after uninstall = %+v, %v", obs, err)
	}
	if _, err := e.Uninstall(ctx, spec); err != nil {
		t.Fatalf("second uninstall: %v", err)
	}
	if p, err := e.Plan(ctx, spec, nil); err != nil || p.Action != ActionInstall {
		t.Fatalf("plan after uninstall = %+v, %v", p, err)
	}
	st2, err := e.Reconcile(ctx, spec, nil)
	if err != nil || st2.Status != "deployed" || st2.Version != 2 {
		t.Fatalf("reinstall: %+v, %v", st2, err)
	}
}

// install.create_namespace creates the release namespace also when it is the
// resource's own namespace (no target_namespace), as Flux's does.
func TestReconcile_createNamespaceWithoutTargetNamespace(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	ns := "create-ns-" + hex.EncodeToString(b) // unique: a deleted namespace lingers while it terminates
	t.Cleanup(func() {
		n := &corev1.Namespace{}
		n.Name = ns
		_ = c.Delete(context.Background(), n)
	})
	path, digest := podinfo(t, "1.0.0")
	spec := &Spec{Name: "podinfo", Namespace: ns, Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest,
		Install: Install{CreateNamespace: true}}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "deployed" || st.StorageNamespace != ns {
		t.Fatalf("%q in storage namespace %q", st.Status, st.StorageNamespace)
	}
	if _, ok := get(t, c, "v1", "Namespace", "", ns); !ok {
		t.Error("namespace not created")
	}
	if _, ok := get(t, c, "apps/v1", "Deployment", ns, "podinfo"); !ok {
		t.Error("Deployment not installed into the created namespace")
	}
}

// A spec with a target namespace and no storage namespace keeps its release
// in the resource's namespace, as helm-controller keeps a HelmRelease's: the
// release Secrets are in the namespace, the objects in the target namespace.
func TestReconcile_storageDefaultsToNamespace(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	home := makeNamespace(t, c)
	apps := home + "-apps"
	target := &corev1.Namespace{}
	target.Name = apps
	if err := c.Create(ctx, target); err != nil {
		t.Fatal(err)
	}
	path, digest := podinfo(t, "1.0.0")
	spec := &Spec{Name: "podinfo", Namespace: home, TargetNamespace: apps, Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.ReleaseName != apps+"-podinfo" || st.StorageNamespace != home {
		t.Fatalf("release %s in storage namespace %s, want %s-podinfo in %s", st.ReleaseName, st.StorageNamespace, apps, home)
	}
	if _, ok := get(t, c, "v1", "Secret", home, "sh.helm.release.v1."+apps+"-podinfo.v1"); !ok {
		t.Errorf("no release Secret in %s", home)
	}
	if _, ok := get(t, c, "v1", "Secret", apps, "sh.helm.release.v1."+apps+"-podinfo.v1"); ok {
		t.Errorf("a release Secret in the target namespace %s", apps)
	}
	if _, ok := get(t, c, "apps/v1", "Deployment", apps, apps+"-podinfo"); !ok {
		t.Errorf("Deployment not in the target namespace %s", apps)
	}
	imp, err := e.Import(ctx, home, apps+"-podinfo")
	if err != nil || imp.TargetNamespace != apps {
		t.Fatalf("import from %s: %+v, %v", home, imp, err)
	}
}

// Uninstall leaves an object of the release that another writer took (its
// `meta.helm.sh/release-name` annotation no longer names the release: Helm
// 4.3 checks it before deleting) and says so; the other objects are deleted.
func TestUninstall_saysWhatHelmKept(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	spec := &Spec{Name: "podinfo", Namespace: ns, Timeout: time.Minute, ChartPath: path, ChartDigest: digest}
	if _, err := e.Reconcile(ctx, spec, nil); err != nil {
		t.Fatal(err)
	}
	svc, ok := get(t, c, "v1", "Service", ns, "podinfo")
	if !ok {
		t.Fatal("no Service")
	}
	ann := svc.GetAnnotations()
	ann["meta.helm.sh/release-name"] = "another"
	svc.SetAnnotations(ann)
	if err := c.Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	kept, err := e.Uninstall(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(kept, "not owned by this release") || !strings.Contains(kept, "[Service] podinfo") {
		t.Errorf("kept = %q, want the Service named as not owned", kept)
	}
	if _, ok := get(t, c, "v1", "Service", ns, "podinfo"); !ok {
		t.Error("the Service another release took was deleted")
	}
	if _, ok := get(t, c, "apps/v1", "Deployment", ns, "podinfo"); ok {
		t.Error("Deployment left after uninstall")
	}
	if kept, err := e.Uninstall(ctx, spec); err != nil || kept != "" {
		t.Fatalf("second uninstall: %q, %v", kept, err)
	}
}
