package release

import (
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// health_check_exprs in the poller's wait, on the cluster: a Gadget (a CRD
// without a status subresource, so that the chart writes its status) that
// kstatus holds Current (no conditions) is waited for by its checks: a
// `failed` expression that is true fails the install at once, naming it; a
// `current` never true times out, and the not-ready report says the check's
// status; true installs. The legacy wait does not use the checks, as
// helm-controller's.
func TestHealthCheckExprs_pollerWait(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	group := makeNamespace(t, c) + ".stevedore.dev"
	path, digest := writeChart(t, "0.1.0", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: gadgets\nversion: 0.1.0\n",
		"values.yaml":       "phase: Ready\n",
		"crds/gadgets.yaml": testenv.GadgetCRD(group),
		"templates/cr.yaml": `apiVersion: ` + group + `/v1
kind: Gadget
metadata:
  name: g
spec: {size: 1}
status:
  phase: {{ .Values.phase }}
`,
	})
	checks := []HealthCheckExpr{{APIVersion: group + "/v1", Kind: "Gadget", Current: "status.phase == 'Ready'", Failed: "status.phase == 'Broken'"}}
	for _, tc := range []struct {
		name, phase, strategy string
		checks                []HealthCheckExpr
		wantErr               string
		fast                  bool
	}{
		{name: "no checks: kstatus's Current", phase: "Broken", fast: true},
		{name: "current", phase: "Ready", checks: checks, fast: true},
		{name: "failed fails at once", phase: "Broken", checks: checks, wantErr: "Gadget", fast: true},
		{name: "none true times out", phase: "Starting", checks: checks, wantErr: "no health check expression is true yet"},
		{name: "legacy ignores them", phase: "Broken", strategy: WaitLegacy, checks: checks, fast: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := makeNamespace(t, c)
			spec := &Spec{Name: "gadgets", Namespace: ns, Owner: kube.NewOwnerID(), Timeout: 8 * time.Second, ChartPath: path, ChartDigest: digest,
				WaitStrategy: tc.strategy, HealthCheckExprs: tc.checks, Values: map[string]any{"phase": tc.phase}}
			start := time.Now()
			_, err := e.Reconcile(ctx, spec, nil)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("install: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("install: %v, want an error with %q", err, tc.wantErr)
			}
			if took := time.Since(start); tc.fast && took > 6*time.Second {
				t.Errorf("install took %v: it waited for the timeout", took)
			}
		})
	}
}

// A check that does not parse is refused before anything is done, on the
// attribute of its entry.
func TestHealthCheckExprs_refusedBeforeAnyAction(t *testing.T) {
	spec := &Spec{Name: "x", Namespace: "y", HealthCheckExprs: []HealthCheckExpr{
		{APIVersion: "example.com/v1", Current: "true"},
		{APIVersion: "example.com/v1", Kind: "Widget", Current: "status.ok", InProgress: "status.(("},
	}}
	err := validateSpec(spec.withDefaults())
	if got := fielderr.PathOf(err); got != "health_check_exprs[1].in_progress" || !strings.Contains(err.Error(), "does not parse") {
		t.Fatalf("validateSpec = %v (on %q), want a parse error on health_check_exprs[1].in_progress", err, got)
	}
	if err := ValidateReleaseFields(&Spec{HealthCheckExprs: []HealthCheckExpr{{Kind: "Widget", InProgress: "status.busy"}}}); err != nil {
		t.Errorf("ValidateReleaseFields of values not known yet: %v", err)
	}
}
