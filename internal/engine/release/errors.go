package release

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
