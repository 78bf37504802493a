package release

import (
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// A hook and a template of one kind and name, installed under each
// post-render strategy with a kustomize post-renderer that labels both:
// nohooks post-renders the template only; separate post-renders each in its
// own stream; combined sends both in one stream, where kustomize refuses two
// objects of one ID, and the install fails before it writes anything, with
// an error on post_render_strategy that names the strategy that fixes it.
func TestPostRenderStrategies_hookAndTemplateOfOneName(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	path, digest := writeChart(t, "0.1.0", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: twins\nversion: 0.1.0\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: twin
data:
  from: template
`,
		"templates/hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: twin
  annotations:
    helm.sh/hook: post-install
    helm.sh/hook-delete-policy: before-hook-creation
data:
  from: hook
`,
	})
	patch := `apiVersion: v1
kind: ConfigMap
metadata:
  name: twin
  labels:
    patched: "yes"
`
	for _, tc := range []struct {
		strategy    string
		wantErr     string
		hookPatched bool
	}{
		{PostRenderNoHooks, "", false},
		{PostRenderSeparate, "", true},
		{PostRenderCombined, "post_render_strategy", false},
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			t.Parallel()
			ns := makeNamespace(t, c)
			spec := &Spec{Name: "twins", Namespace: ns, Owner: kube.NewOwnerID(), Timeout: time.Minute, ChartPath: path, ChartDigest: digest,
				PostRenderStrategy: tc.strategy,
				PostRenderers:      []PostRenderer{{Kustomize: &Kustomize{Patches: []KustomizePatch{{Patch: patch}}}}}}
			// The plan says it first: its dry run post-renders as apply does.
			if _, perr := e.Plan(ctx, spec, nil); (tc.wantErr == "") != (perr == nil) || tc.wantErr != "" && fielderr.PathOf(perr) != tc.wantErr {
				t.Fatalf("plan under %s: %v", tc.strategy, perr)
			}
			_, err := e.Reconcile(ctx, spec, nil)
			if tc.wantErr != "" {
				if err == nil || fielderr.PathOf(err) != tc.wantErr || !strings.Contains(err.Error(), PostRenderSeparate) {
					t.Fatalf("install under %s: %v, want an error naming %s and %q", tc.strategy, err, tc.wantErr, PostRenderSeparate)
				}
				if got, _ := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, ns, "twins"); len(got) != 0 {
					t.Errorf("revisions %v: the refused install wrote one", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("install under %s: %v", tc.strategy, err)
			}
			// What Helm recorded of the hook is what was post-rendered.
			rls, err := testenv.ReleaseRecord(testenv.Need(t).Cluster.Kubeconfig, ns, "twins", 1)
			if err != nil || len(rls.Hooks) != 1 {
				t.Fatalf("release record: %v, %d hooks", err, len(rls.Hooks))
			}
			hook := rls.Hooks[0].Manifest
			if got := strings.Contains(hook, "patched: \"yes\"") || strings.Contains(hook, "patched: yes"); got != tc.hookPatched {
				t.Errorf("hook patched = %v, want %v under %s:\n%s", got, tc.hookPatched, tc.strategy, hook)
			}
			// Hooks get the origin labels only when they are post-rendered.
			if got := strings.Contains(hook, OriginNameLabel+": twins"); got != tc.hookPatched {
				t.Errorf("hook has origin labels = %v, want %v under %s:\n%s", got, tc.hookPatched, tc.strategy, hook)
			}
			// The template is post-rendered under every strategy.
			if !strings.Contains(rls.Manifest, "patched:") || !strings.Contains(rls.Manifest, OriginNameLabel+": twins") {
				t.Errorf("template not post-rendered under %s:\n%s", tc.strategy, rls.Manifest)
			}
		})
	}
}

// A custom resource whose status says it is not ready (Ready=False), from a
// CRD without a status subresource, so that the chart writes the status:
// the poller (kstatus) waits for it and the install times out, naming it;
// the legacy wait, which does not know custom resources, installs at once.
// A custom resource without any status is ready for both.
func TestWaitStrategies_customResources(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	group := makeNamespace(t, c) + ".stevedore.dev" // unique, as TestReconcile_crdPolicies's
	crd := testenv.GadgetCRD(group)
	template := `apiVersion: ` + group + `/v1
kind: Gadget
metadata:
  name: g
spec: {size: 1}
{{- if .Values.notReady }}
status:
  observedGeneration: 1
  conditions:
  - type: Ready
    status: "False"
    reason: Provisioning
    message: still provisioning
{{- end }}
`
	path, digest := writeChart(t, "0.1.0", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: gadgets\nversion: 0.1.0\n",
		"values.yaml":       "notReady: false\n",
		"crds/gadgets.yaml": crd,
		"templates/cr.yaml": template,
	})
	for _, tc := range []struct {
		name, strategy string
		notReady       bool
		wantErr        string
	}{
		{"poller, no status", WaitPoller, false, ""},
		{"legacy, no status", WaitLegacy, false, ""},
		{"legacy, not ready", WaitLegacy, true, ""},
		{"poller, not ready", WaitPoller, true, "not ready: [Gadget/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := makeNamespace(t, c)
			spec := &Spec{Name: "gadgets", Namespace: ns, Owner: kube.NewOwnerID(), Timeout: 8 * time.Second, ChartPath: path, ChartDigest: digest,
				WaitStrategy: tc.strategy, Values: map[string]any{"notReady": tc.notReady}}
			start := time.Now()
			_, err := e.Reconcile(ctx, spec, nil)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("install: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "still provisioning")):
				t.Fatalf("install: %v, want a timeout naming the Gadget and its condition", err)
			case tc.wantErr == "" && time.Since(start) > 6*time.Second:
				t.Errorf("install took %v: it waited for what it should not", time.Since(start))
			}
		})
	}
}

// Template post-renders as a release under each strategy: the hook that
// `helm template` prints is patched under combined (the default) and
// separate, not under nohooks (the default with Helm3Defaults); a hook and a
// template of one kind and name clash under combined, as the release's
// install does, with an error on post_render_strategy.
func TestPostRenderStrategies_template(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	hook := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  annotations:\n    helm.sh/hook: post-install\ndata:\n  from: hook\n"
	}
	path, digest := writeChart(t, "0.1.0", map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: hooked\nversion: 0.1.0\n",
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  from: template\n",
		"templates/hook.yaml": hook("hook"),
	})
	twins, twinsDigest := writeChart(t, "0.1.0", map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: twins\nversion: 0.1.0\n",
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: twin\ndata:\n  from: template\n",
		"templates/hook.yaml": hook("twin"),
	})
	// Every ConfigMap of the stream it is given: no stream lacks a target.
	label := []KustomizePatch{{Patch: `[{"op": "add", "path": "/metadata/labels", "value": {"patched": "yes"}}]`,
		Target: &KustomizeSelector{Kind: "ConfigMap"}}}
	for _, tc := range []struct {
		name, strategy string
		helm3, twins   bool
		wantErr        string
		hookPatched    bool
	}{
		{name: "nohooks", strategy: PostRenderNoHooks},
		{name: "separate", strategy: PostRenderSeparate, hookPatched: true},
		{name: "combined", strategy: PostRenderCombined, hookPatched: true},
		{name: "default is combined", hookPatched: true},
		{name: "default under helm3 is nohooks", helm3: true},
		{name: "combined clashes on twins", strategy: PostRenderCombined, twins: true, wantErr: "post_render_strategy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := &Spec{Name: "hooked", Namespace: "default", ChartPath: path, ChartDigest: digest, PostRenderStrategy: tc.strategy,
				Helm3Defaults: tc.helm3, PostRenderers: []PostRenderer{{Kustomize: &Kustomize{Patches: label}}}}
			if tc.twins {
				spec.ChartPath, spec.ChartDigest = twins, twinsDigest
			}
			out, err := Template(ctx, spec, TemplateOptions{})
			if tc.wantErr != "" {
				if err == nil || fielderr.PathOf(err) != tc.wantErr || !strings.Contains(err.Error(), PostRenderSeparate) {
					t.Fatalf("template: %v, want an error on %s naming %q", err, tc.wantErr, PostRenderSeparate)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			patched := map[string]bool{}
			for _, o := range out.Objects {
				patched[o.Object.GetName()] = o.Object.GetLabels()["patched"] == "yes"
			}
			if !patched["cm"] || patched["hook"] != tc.hookPatched {
				t.Errorf("patched %v, want the template cm, and the hook %v:\n%s", patched, tc.hookPatched, out.Manifest)
			}
		})
	}
}
