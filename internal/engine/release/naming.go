package release

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// maxReleaseNameLen is Helm's limit on release names: the name ends up in
// labels and Secret names with a suffix.
const maxReleaseNameLen = 53

// ReleaseName is the Helm release name of spec: spec.ReleaseName, else
// `<target_namespace>-<name>` when a target namespace is set, else the name.
// A composed name over 53 bytes is shortened to its first 40 bytes, a dash and
// the first 12 hex digits of its sha256, as helm-controller does, so that the
// same spec names the same release under both.
func ReleaseName(spec *Spec) string {
	if spec.ReleaseName != "" {
		return spec.ReleaseName
	}
	name := spec.Name
	if spec.TargetNamespace != "" {
		name = spec.TargetNamespace + "-" + spec.Name
	}
	return shortenName(name)
}

func shortenName(name string) string {
	if len(name) <= maxReleaseNameLen {
		return name
	}
	const hashLen = 12
	sum := sha256.Sum256([]byte(name))
	return name[:maxReleaseNameLen-hashLen-1] + "-" + hex.EncodeToString(sum[:])[:hashLen]
}

// releaseNamespace is where the release's objects go.
func releaseNamespace(spec *Spec) string {
	if spec.TargetNamespace != "" {
		return spec.TargetNamespace
	}
	return spec.Namespace
}

// storageNamespace is where Helm keeps the release Secrets. The contract says
// it defaults to the target namespace (Helm's own convention, and where a
// `helm` CLI user looks), not to the resource namespace as helm-controller's.
func storageNamespace(spec *Spec) string {
	if spec.StorageNamespace != "" {
		return spec.StorageNamespace
	}
	return releaseNamespace(spec)
}

// validateSpec checks what needs neither the cluster nor the chart.
func validateSpec(spec *Spec) error {
	var errs []error
	if spec.Name == "" {
		errs = append(errs, &FieldError{Field: "name", Err: errors.New("must not be empty")})
	}
	if spec.Namespace == "" {
		errs = append(errs, &FieldError{Field: "namespace", Err: errors.New("must not be empty")})
	}
	if n := len(spec.ReleaseName); n > maxReleaseNameLen {
		// An explicit name is the user's choice: shortening it silently would
		// install under a name they did not write.
		errs = append(errs, &FieldError{Field: "release_name",
			Err: fmt.Errorf("%q is %d characters long, Helm allows at most %d", spec.ReleaseName, n, maxReleaseNameLen)})
	}
	switch spec.Upgrade.Remediation.Strategy {
	case "", StrategyRollback, StrategyUninstall:
	default:
		errs = append(errs, &FieldError{Field: "upgrade.remediation.strategy",
			Err: fmt.Errorf("unknown remediation strategy %q, want %q or %q", spec.Upgrade.Remediation.Strategy, StrategyRollback, StrategyUninstall)})
	}
	for _, c := range []struct {
		field  string
		policy CRDPolicy
	}{{"install.crds", spec.Install.CRDs}, {"upgrade.crds", spec.Upgrade.CRDs}} {
		switch c.policy {
		case "", CRDsSkip, CRDsCreate, CRDsCreateReplace:
		default:
			errs = append(errs, &FieldError{Field: c.field,
				Err: fmt.Errorf("unknown CRD policy %q, want %q, %q or %q", c.policy, CRDsSkip, CRDsCreate, CRDsCreateReplace)})
		}
	}
	switch spec.DriftDetection.Mode {
	case "", DriftEnabled, DriftWarn, DriftDisabled:
	default:
		errs = append(errs, &FieldError{Field: "drift_detection.mode",
			Err: fmt.Errorf("unknown mode %q, want %q, %q or %q", spec.DriftDetection.Mode, DriftEnabled, DriftWarn, DriftDisabled)})
	}
	switch spec.Uninstall.DeletionPropagation {
	case "", "background", "foreground", "orphan":
	default:
		errs = append(errs, &FieldError{Field: "uninstall.deletion_propagation",
			Err: fmt.Errorf("unknown deletion propagation %q, want background, foreground or orphan", spec.Uninstall.DeletionPropagation)})
	}
	for i, ref := range spec.ValuesFrom {
		if ref.Kind != "ConfigMap" && ref.Kind != "Secret" {
			errs = append(errs, &FieldError{Field: fmt.Sprintf("values_from[%d].kind", i),
				Err: fmt.Errorf("unsupported kind %q, want ConfigMap or Secret", ref.Kind)})
		}
		if ref.Name == "" {
			errs = append(errs, &FieldError{Field: fmt.Sprintf("values_from[%d].name", i), Err: errors.New("must not be empty")})
		}
	}
	return errors.Join(errs...)
}

// objectError names the resource in front of err, as every error of the
// engine starts: `helmrelease <namespace>/<name>: `.
func objectError(spec *Spec, err error) error {
	if err == nil {
		return nil
	}
	var oe *ObjectError
	if errors.As(err, &oe) || strings.HasPrefix(err.Error(), "helmrelease "+spec.Namespace+"/"+spec.Name+": ") {
		return err // drift detection names the object itself
	}
	return &ObjectError{Namespace: spec.Namespace, Name: spec.Name, Err: err}
}

// ObjectError is an error about one helmrelease resource. It wraps the cause,
// so errors.As still finds a *FieldError inside.
type ObjectError struct {
	Namespace, Name string
	Err             error
}

func (e *ObjectError) Error() string {
	return "helmrelease " + e.Namespace + "/" + e.Name + ": " + e.Err.Error()
}
func (e *ObjectError) Unwrap() error { return e.Err }
