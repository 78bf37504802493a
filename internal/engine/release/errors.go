package release

import (
	"errors"
	"strings"
)

// FieldError is an error about one field of the Spec. Field is the attribute
// path in the provider's snake_case terms (`values_from[0]`,
// `upgrade.remediation.strategy`, `post_renderers[1].kustomize.patches[0].patch`),
// so that the diagnostic points at what the user wrote.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

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
