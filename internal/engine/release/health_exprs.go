package release

import (
	"errors"
	"fmt"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// HealthCheckExpr is a health_check_exprs entry: helm-controller's
// healthCheckExprs (kube.HealthCheck). The checks apply where
// helm-controller applies them: to the waits of the `poller` wait strategy
// (install, upgrade and rollback, when their wait is not disabled; hooks
// and tests are waited for as before), and to the report of the objects
// not ready after a wait timed out (waitreport.go), so that it names what
// the wait waited for.
type HealthCheckExpr = kube.HealthCheck

// validateHealthCheckExprs compiles the checks, each error on the
// attribute at fault (health_check_exprs[i].current, ...).
func validateHealthCheckExprs(checks []HealthCheckExpr) []error {
	_, err := kube.CompileHealthChecks(checks)
	if err == nil {
		return nil
	}
	var out []error
	for _, e := range unjoin(err) {
		var he *kube.HealthCheckError
		if errors.As(e, &he) {
			out = append(out, &fielderr.Error{Path: fmt.Sprintf("%s.%s", fielderr.Index("health_check_exprs", he.Index), he.Field), Err: he.Err})
			continue
		}
		out = append(out, &fielderr.Error{Path: "health_check_exprs", Err: e})
	}
	return out
}

// unjoin is the errors errors.Join joined in err, or err.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// ValidateReleaseFields checks, without a cluster, the strategies and the
// health checks of spec: what the provider's ValidateConfig reports at
// validate, each error naming its attribute.
//
// A value not known yet is empty here: an empty required field of a check
// (api_version, current) is left to the schema, which requires it, and to
// the plan, which sees it known.
func ValidateReleaseFields(spec *Spec) error {
	errs := validateStrategies(spec)
	checks := make([]HealthCheckExpr, len(spec.HealthCheckExprs))
	for i, c := range spec.HealthCheckExprs {
		if c.APIVersion == "" {
			c.APIVersion = fmt.Sprintf("unknown-%d.stevedore.invalid/v1", i)
		}
		if c.Current == "" {
			c.Current = "true"
		}
		checks[i] = c
	}
	errs = append(errs, validateHealthCheckExprs(checks)...)
	return errors.Join(errs...)
}
