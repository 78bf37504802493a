// Package fielderr is the engines' one error about an attribute of a resource's
// configuration, the resource an error is about, and what an error tells the
// provider's one adapter (addError and addWarning in
// internal/provider/diagnostics.go) about the diagnostic it becomes:
//
//   - the attribute it is on: an error that implements Attributed (an *Error
//     does, with its Path; a release.ExistsError is on `release_name`);
//     without one, the diagnostic is on the resource;
//   - its summary: an error that implements Summarized names its own
//     (`Release already exists`); else the caller's summary;
//   - its advice: an error that implements Advised says what to do, and the
//     adapter puts it after the error's text (`<text>. <advice>`).
//
// The engines add an *ObjectError once, at their entry points, so that every
// message names the resource once.
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

// AttributePath is Path (Attributed).
func (e *Error) AttributePath() string { return e.Path }

// Attributed is an error about one attribute of the configuration: the
// provider puts its diagnostic on the attribute at AttributePath (an *Error's
// syntax), or on the resource when it is "".
type Attributed interface {
	error
	AttributePath() string
}

// Summarized is an error that names the summary of its diagnostic, in place
// of the one the provider's caller gives.
type Summarized interface {
	error
	Summary() string
}

// Advised is an error that says what to do about it: the provider's
// diagnostic is the error's text, ". ", and the advice.
type Advised interface {
	error
	Advice() string
}

// Describe is what err says of its diagnostic: the attribute path ("" for
// the resource), the summary ("" for the caller's) and the advice ("" for
// none), each from the outermost error in err's chain that says it.
func Describe(err error) (path, summary, advice string) {
	var a Attributed
	if errors.As(err, &a) {
		path = a.AttributePath()
	}
	var s Summarized
	if errors.As(err, &s) {
		summary = s.Summary()
	}
	var ad Advised
	if errors.As(err, &ad) {
		advice = ad.Advice()
	}
	return path, summary, advice
}

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
