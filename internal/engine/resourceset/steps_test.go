package resourceset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// stepErrs returns the attributes the errors of a joined error are about,
// space-separated.
func stepErrs(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var out []string
	for _, e := range errs {
		p := fielderr.PathOf(e)
		if p == "" {
			t.Fatalf("not about an attribute: %v", e)
		}
		out = append(out, p)
	}
	return strings.Join(out, " ")
}

func TestValidateSteps_errorsNameTheStepAndField(t *testing.T) {
	cm := []map[string]any{{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}}
	many := make([]Step, MaxSteps+1)
	for i := range many {
		many[i] = Step{Name: fmt.Sprintf("s%d", i), Resources: cm}
	}
	for _, tc := range []struct {
		name          string
		steps         []Step
		withResources bool
		want          string
	}{
		{"none", nil, true, ""},
		{"two", []Step{{Name: "db", Resources: cm}, {Name: "app", ResourcesTemplate: "x"}}, false, ""},
		{"max", many[:MaxSteps], false, ""},
		{"too many", many, false, "steps"},
		{"with resources", []Step{{Name: "db", Resources: cm}}, true, "steps"},
		{"duplicate name", []Step{{Name: "db", Resources: cm}, {Name: "db", Resources: cm}}, false, "steps[1].name"},
		{"bad name", []Step{{Name: "DB_1", Resources: cm}}, false, "steps[0].name"},
		{"no name", []Step{{Resources: cm}}, false, "steps[0].name"},
		{"empty", []Step{{Name: "db"}}, false, "steps[0]"},
		{"negative timeout", []Step{{Name: "db", Resources: cm, Timeout: -time.Second}}, false, "steps[0].timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stepErrs(t, ValidateSteps(tc.steps, tc.withResources)); got != tc.want {
				t.Fatalf("errors %q, want %q", got, tc.want)
			}
		})
	}
	err := ValidateSteps([]Step{{Name: "db", Resources: cm}, {Name: "db", Resources: cm}}, false)
	if want := `steps[1].name: step "db": name "db" is also the name of steps[0]: step names must be unique`; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

// Steps render with the set's inputs, each on its own: an object two steps
// render is an error naming both, and the plan's inventory names each
// object's step.
func TestEngine_stepsPlan(t *testing.T) {
	ctx := testenv.Context(t)
	e, _ := newEngine(t)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: << inputs.app >>-<< . >>\n"
	spec := &Spec{
		Name: "steps", Namespace: "default",
		Inputs: []map[string]any{{"app": "a"}, {"app": "b"}},
		Steps: []Step{
			{Name: "first", Resources: []map[string]any{mustMap(t, strings.Replace(cm, "<< . >>", "one", 1))}},
			{Name: "second", ResourcesTemplate: strings.Replace(cm, "<< . >>", "two", 1)},
		},
	}
	res, err := e.Plan(ctx, spec, nil, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"default_a-one__ConfigMap": "first", "default_b-one__ConfigMap": "first",
		"default_a-two__ConfigMap": "second", "default_b-two__ConfigMap": "second",
	}
	if len(res.Inventory) != 4 || fmt.Sprint(res.Steps) != fmt.Sprint(want) {
		t.Fatalf("inventory %s, steps %v", entryIDs(res.Inventory), res.Steps)
	}
	// An object of step 1 that step 2 renders again is refused, also when
	// one names the set's namespace and the other leaves it to the default.
	spec.Steps[1].ResourcesTemplate = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: << inputs.app >>-one, namespace: default}\n"
	_, err = e.Plan(ctx, spec, nil, PlanOptions{})
	if fielderr.PathOf(err) != "steps[1]" ||
		!strings.HasPrefix(err.Error(), `resourceset default/steps: steps[1]: step "second": ConfigMap/default/a-one is also defined in step "first" (steps[0]): a resource can be defined in only one step`+"\n") {
		t.Fatalf("want the duplicate refused in steps[1], got %v", err)
	}
	// A render error names its step and attribute.
	spec.Steps[1].ResourcesTemplate = "<< inputs.missing >>"
	_, err = e.Plan(ctx, spec, nil, PlanOptions{})
	if fielderr.PathOf(err) != "steps[1].resources_template" ||
		!strings.HasPrefix(err.Error(), `resourceset default/steps: steps[1].resources_template: step "second": resources_template: with inputs[0]: template: `) {
		t.Fatalf("want a render error in steps[1].resources_template, got %v", err)
	}
}

// migrationJob is a Job in the first step; unschedulable, its deadline fails
// it within seconds.
func migrationJob(name string, fail bool) map[string]any {
	pod := map[string]any{
		"restartPolicy": "Never",
		"containers":    []any{map[string]any{"name": "migrate", "image": "busybox"}},
	}
	spec := map[string]any{"backoffLimit": int64(0), "template": map[string]any{"spec": pod}}
	if fail {
		pod["nodeSelector"] = map[string]any{"stevedore.dev/no-such-node": "true"}
		spec["activeDeadlineSeconds"] = int64(2)
	}
	return map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": name}, "spec": spec}
}

// The migration example: a failed Job in step 1 stops the apply before step
// 2, records what was applied and prunes nothing; a fixed step 1 converges,
// prunes the failed Job, and a second apply leaves the completed Job as it is.
func TestEngine_stepsApply(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := testenv.Namespace(t, c, "")
	app := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "app"}}
	spec := func(job string, fail bool) *Spec {
		return &Spec{Name: "migrate", Namespace: ns, Timeout: time.Minute, Wait: true, Steps: []Step{
			{Name: "db-migration", Resources: []map[string]any{migrationJob(job, fail)}},
			{Name: "app", Resources: []map[string]any{app}},
		}}
	}

	res, err := e.Apply(ctx, spec("migrate-v1", true), nil, ApplyOptions{})
	if fielderr.PathOf(err) != "steps[0]" || !strings.HasPrefix(err.Error(), "resourceset "+ns+`/migrate: steps[0]: step "db-migration" health check failed: `) {
		t.Fatalf("want step 1's health check to fail, got %v", err)
	}
	if msg := res.Conditions[0].Message; !strings.HasPrefix(msg, `steps[0]: step "db-migration" health check failed: `) {
		t.Fatalf("Ready condition %q, want the step's failure, without the set's name", msg)
	}
	if res.Conditions[0].Reason != ReasonHealthCheckFailed || entryIDs(res.Inventory) != ns+"_migrate-v1_batch_Job" {
		t.Fatalf("conditions %+v, inventory %s", res.Conditions, entryIDs(res.Inventory))
	}
	if _, ok := get(t, c, "v1", "ConfigMap", ns, "app"); ok {
		t.Fatal("step 2 applied after step 1 failed")
	}

	res, err = e.Apply(ctx, spec("migrate-v2", false), res.Inventory, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := entryIDs(res.Inventory); got != ns+"_app__ConfigMap "+ns+"_migrate-v2_batch_Job" {
		t.Fatalf("inventory %s", got)
	}
	if res.Steps[ns+"_migrate-v2_batch_Job"] != "db-migration" || res.Steps[ns+"_app__ConfigMap"] != "app" {
		t.Fatalf("steps %v", res.Steps)
	}
	if _, ok := get(t, c, "batch/v1", "Job", ns, "migrate-v1"); ok {
		t.Fatal("the failed Job was not pruned")
	}
	job, _ := get(t, c, "batch/v1", "Job", ns, "migrate-v2")

	if _, err = e.Apply(ctx, spec("migrate-v2", false), res.Inventory, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	again, _ := get(t, c, "batch/v1", "Job", ns, "migrate-v2")
	if again.GetUID() != job.GetUID() || again.GetGeneration() != job.GetGeneration() {
		t.Fatal("re-applying the completed Job changed it")
	}
}
