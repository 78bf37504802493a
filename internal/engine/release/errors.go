package release

import (
	"fmt"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// Kind names a helmrelease resource in errors: `helmrelease <namespace>/<name>: `.
const Kind = "helmrelease"

// objectError names the resource in front of err, once, as every error of
// the engine starts.
func objectError(spec *Spec, err error) error {
	return fielderr.Object(Kind, spec.Namespace+"/"+spec.Name, err)
}

// StaleValuesError says that the values composed at apply are not those the
// plan showed: a values_from object changed between plan and apply. Applying
// them would do what the plan did not show, so Reconcile refuses before any
// action. Reconcile returns it inside a *fielderr.Error on values_from.
// StaleApplyMethodError is an apply refused before any action because the
// release would be written with another apply method than the plan showed:
// a revision written since the plan (by another client) has the other
// method, which upgrade.server_side_apply = "auto" follows.
type StaleApplyMethodError struct {
	Planned, Now string
	Version      int // the latest revision, written since the plan
}

func (e *StaleApplyMethodError) Error() string {
	return fmt.Sprintf("the release's latest revision (%d) changed since the plan: the upgrade would now write with apply method %s, "+
		"not %s as planned (status.apply_method); nothing was applied. Plan again", e.Version, e.Now, e.Planned)
}

type StaleValuesError struct {
	Planned, Now string // config digests
}

func (e *StaleValuesError) Error() string {
	return fmt.Sprintf("the values changed since the plan (planned config digest %s, now %s: a values_from object changed); nothing was applied. Plan again", e.Planned, e.Now)
}
