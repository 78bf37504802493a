package release

import "github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"

// Kind names a helmrelease resource in errors: `helmrelease <namespace>/<name>: `.
const Kind = "helmrelease"

// objectError names the resource in front of err, once, as every error of
// the engine starts.
func objectError(spec *Spec, err error) error {
	return fielderr.Object(Kind, spec.Namespace+"/"+spec.Name, err)
}
