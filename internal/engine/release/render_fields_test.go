package release

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// helm-controller 1.4-1.6's fields of a release, decided without a cluster:
// disable_schema_validation, chart_name_change_strategy and common_metadata.

// TestChartNameChange_decision: Reinstall (the default) replaces, InPlaceUpdate
// upgrades; no change, or a name not known, decides nothing.
func TestChartNameChange_decision(t *testing.T) {
	for _, tc := range []struct {
		strategy, from, to string
		want               ChartNameChange
	}{
		{"", "podinfo", "podinfo", ChartNameUnchanged},
		{"", "", "webapp", ChartNameUnchanged},
		{"", "podinfo", "", ChartNameUnchanged},
		{"", "podinfo", "webapp", ChartNameReinstalls},
		{ChartNameReinstall, "podinfo", "webapp", ChartNameReinstalls},
		{ChartNameInPlaceUpdate, "podinfo", "webapp", ChartNameUpgradesInPlace},
		{ChartNameInPlaceUpdate, "podinfo", "podinfo", ChartNameUnchanged},
	} {
		if got := DecideChartNameChange(tc.strategy, tc.from, tc.to); got != tc.want {
			t.Errorf("DecideChartNameChange(%q, %q, %q) = %v, want %v", tc.strategy, tc.from, tc.to, got, tc.want)
		}
	}
	if s := ChartNameReinstalls.Sentence("podinfo", "webapp"); !strings.Contains(s, `from "podinfo" to "webapp"`) || !strings.Contains(s, "uninstalled and installed again") {
		t.Errorf("reinstall sentence %q", s)
	}
	if s := ChartNameUpgradesInPlace.Sentence("podinfo", "webapp"); !strings.Contains(s, "upgraded in place") {
		t.Errorf("in-place sentence %q", s)
	}
	if (&Spec{}).withDefaults().Upgrade.ChartNameChangeStrategy != ChartNameReinstall {
		t.Error("the default strategy is not Reinstall")
	}
	err := validateSpec(&Spec{Name: "a", Namespace: "b", Upgrade: Upgrade{ChartNameChangeStrategy: "Recreate"}})
	var fe *fielderr.Error
	if !errors.As(err, &fe) || fe.Path != "upgrade.chart_name_change_strategy" || !strings.Contains(err.Error(), `"Recreate"`) {
		t.Errorf("an unknown strategy: %v", err)
	}
}

// TestChartNameChange_onHelmStorage: a release of chart podinfo given a chart
// named webapp. InPlaceUpdate: the state machine finds it out of sync and
// upgrades it, storage keeping both revisions (the old one of podinfo, the
// new one of webapp). Reinstall, which the plan shows as a replacement, is
// refused at apply when the plan could not see the new name, before anything
// is written.
func TestChartNameChange_onHelmStorage(t *testing.T) {
	deployed := []*helmrelease.Release{fxRelease(1, helmcommon.StatusDeployed, map[string]any{"replicaCount": 1})}
	made := func(stored []*helmrelease.Release) *Status {
		return &Status{History: fxHistory(stored...), LastAttemptedReleaseAction: actionInstall, ChartName: "podinfo"}
	}
	for _, strategy := range []string{"", ChartNameReinstall, ChartNameInPlaceUpdate} {
		t.Run("strategy "+strategy, func(t *testing.T) {
			req, store := actionFixture(t, runnerCase{stored: deployed, status: made,
				spec: func(s *Spec) { s.Upgrade.ChartNameChangeStrategy = strategy }})
			req.chart.Metadata.Name, req.desired.chartName = "webapp", "webapp"
			prev := cloneStatus(req.st)
			err := checkChartNameChange(req.spec, prev, req.chart.Name())
			if strategy != ChartNameInPlaceUpdate {
				var ce *ChartNameChangeError
				if !errors.As(err, &ce) || ce.From != "podinfo" || ce.To != "webapp" || fielderr.Attributed(ce).AttributePath() != "upgrade.chart_name_change_strategy" {
					t.Fatalf("error %v, want a ChartNameChangeError", err)
				}
				if got := storageOf(t, store); got != "podinfo.v1:deployed" {
					t.Errorf("storage %q: something was written", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rls := deployed[0]
			reason := outOfSync(rls, latest(req.st.History), req.st, req.desired)
			if !strings.Contains(reason, "podinfo@1.0.0 -> webapp@1.0.0") {
				t.Fatalf("out of sync: %q", reason)
			}
			s := releaseState{kind: stateOutOfSync, rls: rls, reason: reason}
			if act, _, err := decide(s, req.st, req.spec); err != nil || act != ActionUpgrade {
				t.Fatalf("decided %q (%v), want an upgrade", act, err)
			}
			if err := (upgradeRunner{}).run(context.Background(), req, s); err != nil {
				t.Fatal(err)
			}
			runnerWant{conditions: "Ready=True/UpgradeSucceeded Released=True/UpgradeSucceeded",
				history: "podinfo.v2:deployed podinfo.v1:superseded", stored: "podinfo.v2:deployed podinfo.v1:superseded",
				lastAction: actionUpgrade}.check(t, req, store, nil)
			if cur := latest(req.st.History); cur.ChartName != "webapp" {
				t.Errorf("latest revision's chart %q, want webapp", cur.ChartName)
			}
			for v, want := range map[int]string{1: "podinfo", 2: "webapp"} {
				r, err := store.Get(fxName, v)
				if err != nil {
					t.Fatal(err)
				}
				if r.Chart.Name() != want {
					t.Errorf("v%d has chart %s, want %s", v, r.Chart.Name(), want)
				}
			}
		})
	}
	if err := checkChartNameChange((&Spec{}).withDefaults(), nil, "webapp"); err != nil {
		t.Errorf("a create refused: %v", err)
	}
}

// TestDisableSchemaValidation_onHelmStorage: Helm's install and upgrade
// actions skip the chart's values.schema.json exactly when
// disable_schema_validation says so; the runners (and the preview, which
// builds the same actions) then install and upgrade values it refuses.
func TestDisableSchemaValidation_onHelmStorage(t *testing.T) {
	cfg := &action.Configuration{}
	for _, skip := range []bool{false, true} {
		spec := (&Spec{Install: Install{DisableSchemaValidation: skip}, Upgrade: Upgrade{DisableSchemaValidation: skip}}).withDefaults()
		if in := newInstall(cfg, spec, "r", "ns", releaseState{}); in.SkipSchemaValidation != skip {
			t.Errorf("install: SkipSchemaValidation %v, want %v", in.SkipSchemaValidation, skip)
		}
		if up := newUpgrade(cfg, spec, "ns", writeMode{}); up.SkipSchemaValidation != skip {
			t.Errorf("upgrade: SkipSchemaValidation %v, want %v", up.SkipSchemaValidation, skip)
		}
	}
	// The two are separate, as helm-controller's.
	spec := (&Spec{Install: Install{DisableSchemaValidation: true}}).withDefaults()
	if up := newUpgrade(cfg, spec, "ns", writeMode{}); up.SkipSchemaValidation {
		t.Error("install.disable_schema_validation skipped the upgrade's schema")
	}

	strict := func(req *actionRequest) {
		req.chart.Schema = []byte(`{"type": "object", "properties": {"replicaCount": {"type": "integer"}}}`)
		req.values = map[string]any{"replicaCount": "three"}
	}
	for _, tc := range []struct {
		name    string
		skip    bool
		upgrade bool
		want    runnerWant
	}{
		{name: "install validates", want: runnerWant{err: "values don't meet the specifications of the schema",
			conditions: "Ready=False/InstallFailed Released=False/InstallFailed", failures: [3]int64{1, 0, 0}, lastAction: actionInstall}},
		{name: "install skips", skip: true, want: runnerWant{conditions: "Ready=True/InstallSucceeded Released=True/InstallSucceeded",
			history: "podinfo.v1:deployed", stored: "podinfo.v1:deployed", lastAction: actionInstall}},
		{name: "upgrade validates", upgrade: true, want: runnerWant{err: "values don't meet the specifications of the schema",
			conditions: "Ready=False/UpgradeFailed Released=False/UpgradeFailed", history: "podinfo.v1:deployed", stored: "podinfo.v1:deployed",
			failures: [3]int64{1, 0, 0}, lastAction: actionUpgrade}},
		{name: "upgrade skips", skip: true, upgrade: true, want: runnerWant{conditions: "Ready=True/UpgradeSucceeded Released=True/UpgradeSucceeded",
			history: "podinfo.v2:deployed podinfo.v1:superseded", stored: "podinfo.v2:deployed podinfo.v1:superseded", lastAction: actionUpgrade}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runnerCase{spec: func(s *Spec) { s.Install.DisableSchemaValidation, s.Upgrade.DisableSchemaValidation = tc.skip, tc.skip }}
			if tc.upgrade {
				c.stored = []*helmrelease.Release{fxRelease(1, helmcommon.StatusDeployed, map[string]any{"replicaCount": 1})}
				c.status = func(stored []*helmrelease.Release) *Status {
					return &Status{History: fxHistory(stored...), LastAttemptedReleaseAction: actionInstall}
				}
			}
			req, store := actionFixture(t, c)
			strict(req)
			var err error
			if tc.upgrade {
				err = upgradeRunner{}.run(context.Background(), req, releaseState{kind: stateOutOfSync, rls: c.stored[0]})
			} else {
				err = installRunner{}.run(context.Background(), req, releaseState{kind: stateAbsent})
			}
			tc.want.check(t, req, store, err)
		})
	}
}

// manifestOf is the objects of a rendered manifest, by kind/name.
func manifestOf(t *testing.T, b []byte) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		if o == nil {
			continue
		}
		md := o["metadata"].(map[string]any)
		out[o["kind"].(string)+"/"+md["name"].(string)] = o
	}
	return out
}

// TestCommonMetadata_postRender: the labels and annotations go on every
// object's metadata, over the chart's and the post-renderers' (a patch that
// sets the same label loses), not on selectors or pod templates, and under
// the origin labels; an empty common_metadata changes nothing.
func TestCommonMetadata_postRender(t *testing.T) {
	manifest := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    team: chart
spec:
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers: [{name: web, image: nginx}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  annotations:
    note: chart
`
	spec := &Spec{Name: "rel", Namespace: "apps",
		CommonMetadata: CommonMetadata{Labels: map[string]string{"team": "platform", "tier": "web"}, Annotations: map[string]string{"note": "common", "owner": "ops"}},
		PostRenderers: []PostRenderer{{Kustomize: &Kustomize{Patches: []KustomizePatch{{
			Patch:  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    team: patch\n    patched: \"yes\"\n",
			Target: &KustomizeSelector{Kind: "Deployment"}}}}}}}
	out, err := newPostRenderer(spec).Run(bytes.NewBufferString(manifest))
	if err != nil {
		t.Fatal(err)
	}
	objs := manifestOf(t, out.Bytes())
	dep, cm := objs["Deployment/web"], objs["ConfigMap/cfg"]
	md := func(o map[string]any, key string) map[string]any {
		m, _ := o["metadata"].(map[string]any)[key].(map[string]any)
		return m
	}
	if want := map[string]any{"team": "platform", "tier": "web", "patched": "yes", OriginNameLabel: "rel", OriginNamespaceLabel: "apps"}; !reflect.DeepEqual(md(dep, "labels"), want) {
		t.Errorf("deployment labels %v, want %v", md(dep, "labels"), want)
	}
	if want := map[string]any{"note": "common", "owner": "ops"}; !reflect.DeepEqual(md(dep, "annotations"), want) || !reflect.DeepEqual(md(cm, "annotations"), want) {
		t.Errorf("annotations %v and %v, want %v", md(dep, "annotations"), md(cm, "annotations"), want)
	}
	if want := map[string]any{"tier": "web", "team": "platform", OriginNameLabel: "rel", OriginNamespaceLabel: "apps"}; !reflect.DeepEqual(md(cm, "labels"), want) {
		t.Errorf("configmap labels %v, want %v", md(cm, "labels"), want)
	}
	tpl := dep["spec"].(map[string]any)["template"].(map[string]any)
	if l := tpl["metadata"].(map[string]any)["labels"]; !reflect.DeepEqual(l, map[string]any{"app": "web"}) {
		t.Errorf("pod template labels %v: common_metadata is for metadata only", l)
	}
	if s := dep["spec"].(map[string]any)["selector"]; !reflect.DeepEqual(s, map[string]any{"matchLabels": map[string]any{"app": "web"}}) {
		t.Errorf("selector %v", s)
	}

	plain := &Spec{Name: "rel", Namespace: "apps", CommonMetadata: CommonMetadata{Labels: map[string]string{}}}
	if commonMetadataStep(plain.CommonMetadata) != nil {
		t.Error("an empty common_metadata adds a post-render step")
	}
	if out, err := addCommonMetadata([]byte("# only a comment\n"), spec.CommonMetadata); err != nil || string(out) != "# only a comment\n" {
		t.Errorf("empty manifest: %q %v", out, err)
	}
}

// TestCommonMetadata_digest: no common_metadata keeps the post-renderers'
// digest (releases made before it plan nothing); labels or annotations make
// another digest (an upgrade), stable whatever the maps' order, and each key
// and value counts.
func TestCommonMetadata_digest(t *testing.T) {
	prs := []PostRenderer{{Kustomize: &Kustomize{Images: []KustomizeImage{{Name: "nginx", NewTag: "1"}}}}}
	base := &Spec{PostRenderers: prs}
	if renderDigest(base) != postRenderersDigest(prs) || renderDigest(&Spec{}) != postRenderersDigest(nil) {
		t.Fatal("without common_metadata the digest is not the post-renderers'")
	}
	if renderDigest(&Spec{PostRenderers: prs, CommonMetadata: CommonMetadata{Labels: map[string]string{}, Annotations: map[string]string{}}}) != postRenderersDigest(prs) {
		t.Error("an empty common_metadata changes the digest")
	}
	seen := map[string]string{renderDigest(base): "none"}
	for name, cm := range map[string]CommonMetadata{
		"label":       {Labels: map[string]string{"a": "1"}},
		"label value": {Labels: map[string]string{"a": "2"}},
		"annotation":  {Annotations: map[string]string{"a": "1"}},
		"both":        {Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"a": "1"}},
		"two labels":  {Labels: map[string]string{"a": "1", "b": "2"}},
	} {
		d := renderDigest(&Spec{PostRenderers: prs, CommonMetadata: cm})
		if prev, ok := seen[d]; ok {
			t.Errorf("%s and %s have one digest", name, prev)
		}
		seen[d] = name
		for range 5 {
			if again := renderDigest(&Spec{PostRenderers: prs, CommonMetadata: cm}); again != d {
				t.Fatalf("%s: digest not stable", name)
			}
		}
	}
	if renderDigest(&Spec{CommonMetadata: CommonMetadata{Labels: map[string]string{"a": "1"}}}) == renderDigest(&Spec{PostRenderers: prs, CommonMetadata: CommonMetadata{Labels: map[string]string{"a": "1"}}}) {
		t.Error("the post-renderers do not count with common_metadata")
	}
}

// TestCommonMetadata_validation: keys and values as the API server checks
// them, and no key that records ownership, each an error on its attribute.
func TestCommonMetadata_validation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cm   CommonMetadata
		want []string // path: text
	}{
		{name: "good", cm: CommonMetadata{Labels: map[string]string{"team": "a", "example.com/tier": ""}, Annotations: map[string]string{"example.com/note": "any text, even: this"}}},
		{name: "origin label", cm: CommonMetadata{Labels: map[string]string{"stevedore.dev/name": "x"}},
			want: []string{`common_metadata.labels: "stevedore.dev/name" records who owns`}},
		{name: "owner annotation", cm: CommonMetadata{Annotations: map[string]string{"stevedore.dev/adopted-by": "x"}},
			want: []string{`common_metadata.annotations: "stevedore.dev/adopted-by" records who owns`}},
		{name: "Helm's keys", cm: CommonMetadata{Labels: map[string]string{"app.kubernetes.io/managed-by": "me"}, Annotations: map[string]string{"meta.helm.sh/release-name": "x"}},
			want: []string{`common_metadata.labels: "app.kubernetes.io/managed-by"`, `common_metadata.annotations: "meta.helm.sh/release-name"`}},
		{name: "bad key and value", cm: CommonMetadata{Labels: map[string]string{"bad key": "v", "ok": "bad value!"}, Annotations: map[string]string{"/x": "v"}},
			want: []string{`common_metadata.labels: key "bad key"`, `common_metadata.labels: label "ok": value "bad value!"`, `common_metadata.annotations: key "/x"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := validateCommonMetadata(tc.cm)
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %d", errs, len(tc.want))
			}
			for i, err := range errs {
				var fe *fielderr.Error
				if !errors.As(err, &fe) || !strings.HasPrefix(fe.Path+": "+fe.Err.Error(), tc.want[i]) {
					t.Errorf("error %d: %v, want %q", i, err, tc.want[i])
				}
			}
			if err := validateSpec(&Spec{Name: "a", Namespace: "b", CommonMetadata: tc.cm}); (err != nil) != (len(tc.want) > 0) {
				t.Errorf("validateSpec: %v", err)
			}
		})
	}
}
