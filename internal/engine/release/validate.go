package release

import (
	"errors"
	"fmt"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// validateSpec checks what needs neither the cluster nor the chart.
func validateSpec(spec *Spec) error {
	var errs []error
	if spec.Name == "" {
		errs = append(errs, &fielderr.Error{Path: "name", Err: errors.New("must not be empty")})
	}
	if spec.Namespace == "" {
		errs = append(errs, &fielderr.Error{Path: "namespace", Err: errors.New("must not be empty")})
	}
	if n := len(spec.ReleaseName); n > maxReleaseNameLen {
		// An explicit name is the user's choice: shortening it silently would
		// install under a name they did not write.
		errs = append(errs, &fielderr.Error{Path: "release_name",
			Err: fmt.Errorf("%q is %d characters long, Helm allows at most %d", spec.ReleaseName, n, maxReleaseNameLen)})
	}
	switch spec.Upgrade.Remediation.Strategy {
	case "", StrategyRollback, StrategyUninstall:
	default:
		errs = append(errs, &fielderr.Error{Path: "upgrade.remediation.strategy",
			Err: fmt.Errorf("unknown remediation strategy %q, want %q or %q", spec.Upgrade.Remediation.Strategy, StrategyRollback, StrategyUninstall)})
	}
	for _, c := range []struct {
		field  string
		policy CRDPolicy
	}{{"install.crds", spec.Install.CRDs}, {"upgrade.crds", spec.Upgrade.CRDs}} {
		switch c.policy {
		case "", CRDsSkip, CRDsCreate, CRDsCreateReplace:
		default:
			errs = append(errs, &fielderr.Error{Path: c.field,
				Err: fmt.Errorf("unknown CRD policy %q, want %q, %q or %q", c.policy, CRDsSkip, CRDsCreate, CRDsCreateReplace)})
		}
	}
	if !validChartNameChangeStrategy(spec.Upgrade.ChartNameChangeStrategy) {
		errs = append(errs, &fielderr.Error{Path: "upgrade.chart_name_change_strategy",
			Err: fmt.Errorf("unknown chart name change strategy %q, want %q or %q", spec.Upgrade.ChartNameChangeStrategy, ChartNameReinstall, ChartNameInPlaceUpdate)})
	}
	errs = append(errs, validateCommonMetadata(spec.CommonMetadata)...)
	if !spec.DriftDetection.Mode.valid() {
		errs = append(errs, &fielderr.Error{Path: "drift_detection.mode",
			Err: fmt.Errorf("unknown mode %q, want one of %q", spec.DriftDetection.Mode, DriftModes)})
	}
	switch spec.Uninstall.DeletionPropagation {
	case "", "background", "foreground", "orphan":
	default:
		errs = append(errs, &fielderr.Error{Path: "uninstall.deletion_propagation",
			Err: fmt.Errorf("unknown deletion propagation %q, want background, foreground or orphan", spec.Uninstall.DeletionPropagation)})
	}
	for i, ref := range spec.ValuesFrom {
		if ref.Kind != "ConfigMap" && ref.Kind != "Secret" {
			errs = append(errs, &fielderr.Error{Path: fmt.Sprintf("values_from[%d].kind", i),
				Err: fmt.Errorf("unsupported kind %q, want ConfigMap or Secret", ref.Kind)})
		}
		if ref.Name == "" {
			errs = append(errs, &fielderr.Error{Path: fmt.Sprintf("values_from[%d].name", i), Err: errors.New("must not be empty")})
		}
	}
	errs = append(errs, validateStrategies(spec)...)
	errs = append(errs, validateHealthCheckExprs(spec.HealthCheckExprs)...)
	return errors.Join(errs...)
}
