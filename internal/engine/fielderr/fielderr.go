// Package fielderr is the engines' one error about an attribute of a resource's
// configuration, and the resource an error is about. The provider turns an
// *Error into a diagnostic on the attribute (one adapter, in
// internal/provider/diagnostics.go); the engines add an *ObjectError once, at
// their entry points, so that every message names the resource once.
package fielderr

import (
	"errors"
	"fmt"
)

// Error is an error about one attribute. Path is the attribute in the
// provider's terms and Terraform's syntax: names joined by dots, list
// elements as [N] (`values_from[0].kind`, `upgrade.remediation.strategy`,
// `dependencies[1].ready_expr`), relative to the resource, or to the block an
// engine is given (Under adds the block's path).
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf is an *Error at path with a formatted message.
func Errorf(path, format string, args ...any) *Error {
	return &Error{Path: path, Err: fmt.Errorf(format, args...)}
}

// Wrap is err as an *Error at path; nil stays nil, and an error that already
// names its attribute keeps it.
func Wrap(path string, err error) error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		return err
	}
	return &Error{Path: path, Err: err}
}

// Under puts the attribute err is about under the block at parent: the
// chart engine's `version` is a release's `chart.version`. An error about no
// attribute is about parent.
func Under(parent string, err error) error {
	if err == nil {
		return nil
	}
	var fe *Error
	switch {
	case !errors.As(err, &fe):
		return &Error{Path: parent, Err: err}
	case error(fe) == err:
		return &Error{Path: parent + "." + fe.Path, Err: fe.Err}
	default:
		// Wrapped in context of its own: keep all of it (its text names the
		// inner path once more).
		return &Error{Path: parent + "." + fe.Path, Err: err}
	}
}

// PathOf is the path of the attribute err is about, or "".
func PathOf(err error) string {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Path
	}
	return ""
}

// Index is the path of element i of the list at path.
func Index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// ObjectError is an error about one resource, `<kind> <id>: ` in front of its
// cause: `helmrelease <namespace>/<name>: `, `helmchart_artifact <source>: `.
// It wraps the cause, so errors.As still finds an *Error inside.
type ObjectError struct {
	Kind, ID string
	Err      error
}

func (e *ObjectError) Error() string { return e.Kind + " " + e.ID + ": " + e.Err.Error() }
func (e *ObjectError) Unwrap() error { return e.Err }

// Object names the resource kind id in front of err, once: an error that
// names a resource already is returned as it is.
func Object(kind, id string, err error) error {
	if err == nil {
		return nil
	}
	var oe *ObjectError
	if errors.As(err, &oe) {
		return err
	}
	return &ObjectError{Kind: kind, ID: id, Err: err}
}
