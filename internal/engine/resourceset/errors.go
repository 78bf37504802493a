package resourceset

import "github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"

// Kind names a resource set in errors: `resourceset <namespace>/<name>: `.
const Kind = "resourceset"

// objectError names spec's set in front of err, once: the engine's entry
// points (Render, ResolveInputs, Desired, Plan, Preview, Apply, CheckDrift,
// Drift, Delete) return their errors so. What an error is about in the
// configuration is a *fielderr.Error inside it: `resources[2]`,
// `steps[1].resources_template`, `inputs_from[0]`, `dependencies[0].ready_expr`.
func objectError(spec *Spec, err error) error {
	return fielderr.Object(Kind, spec.Namespace+"/"+spec.Name, err)
}
