package provider

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// addError adds err to diags: one diagnostic per error that err joins, each
// as the error says (fielderr.Describe): on the attribute it names
// (fielderr.Attributed, an *fielderr.Error among them), else on the resource;
// with its own summary (fielderr.Summarized), else summary; its text, then
// its advice (fielderr.Advised). Its text names the resource and the
// attribute: the CLIs do not print an attribute path. This and addWarning
// are the provider's one way to turn an error value into a diagnostic.
//
// The failures of several objects because the API server did not answer
// (kube.ServerDown) have one cause: they are one diagnostic, which names the
// cause once and says how many objects it failed.
func addError(diags *diag.Diagnostics, summary string, err error) {
	if err == nil {
		return
	}
	parts := joined(err)
	var down []error
	for _, e := range parts {
		if len(parts) > 1 && kube.ServerDown(e) {
			down = append(down, e)
			continue
		}
		add(diags, diag.SeverityError, summary, e)
	}
	switch len(down) {
	case 0:
	case 1:
		diags.AddError(summary, down[0].Error())
	default:
		diags.AddError(summary, serverDownMessage(down))
	}
}

// serverDownMessage names once the cause of down, the failures of several
// objects of one resource because the API server did not answer: the
// unreachable server if one of them says so (it names the first failure),
// else the first failure.
func serverDownMessage(down []error) string {
	cause := down[0]
	for _, e := range down {
		var un *kube.UnreachableError
		if errors.As(e, &un) {
			cause = un
			break
		}
	}
	var oe *fielderr.ObjectError
	if errors.As(cause, &oe) {
		cause = oe.Err
	}
	msg := fmt.Sprintf("the Kubernetes API server did not answer for %d objects: %v", len(down), cause)
	if errors.As(down[0], &oe) {
		return fielderr.Object(oe.Kind, oe.ID, errors.New(msg)).Error()
	}
	return msg
}

// addWarning adds a warning with err's text, which names the resource, as
// addError adds an error: on the attribute err names, with its summary and
// advice.
func addWarning(diags *diag.Diagnostics, summary string, err error) {
	if err != nil {
		add(diags, diag.SeverityWarning, summary, err)
	}
}

// add adds one diagnostic of severity for err, as err describes it
// (fielderr.Describe).
func add(diags *diag.Diagnostics, severity diag.Severity, summary string, err error) {
	p, s, advice := fielderr.Describe(err)
	if s != "" {
		summary = s
	}
	detail := err.Error()
	if advice != "" {
		detail += ". " + advice
	}
	switch {
	case severity == diag.SeverityWarning && p != "":
		diags.AddAttributeWarning(attributePath(p), summary, detail)
	case severity == diag.SeverityWarning:
		diags.AddWarning(summary, detail)
	case p != "":
		diags.AddAttributeError(attributePath(p), summary, detail)
	default:
		diags.AddError(summary, detail)
	}
}

// about is a message about the resource kind id, which it names as every
// error does (fielderr.ObjectError): `helmrelease default/app: ...`.
func about(kind, id, format string, args ...any) string {
	return fielderr.Object(kind, id, fmt.Errorf(format, args...)).Error()
}

// joined is the errors err joins (errors.Join), each named by the resource
// err names; err alone when it joins none.
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if oe, ok := err.(*fielderr.ObjectError); ok {
		parts := joined(oe.Err)
		if len(parts) > 1 {
			for i, p := range parts {
				parts[i] = fielderr.Object(oe.Kind, oe.ID, p)
			}
			return parts
		}
	}
	return []error{err}
}

// attributePath is the framework's path of a fielderr path in Terraform's
// syntax (`values_from[0].kind`): names joined by dots, list elements as [N].
// It ends at the first step it cannot read.
func attributePath(p string) path.Path {
	out := path.Empty()
	for i, step := range strings.Split(p, ".") {
		m := attributeStep.FindStringSubmatch(step)
		if m == nil {
			break
		}
		if i == 0 {
			out = path.Root(m[1])
		} else {
			out = out.AtName(m[1])
		}
		for _, idx := range attributeIndex.FindAllStringSubmatch(m[2], -1) {
			n, _ := strconv.Atoi(idx[1])
			out = out.AtListIndex(n)
		}
	}
	return out
}

var (
	attributeStep  = regexp.MustCompile(`^([a-z_][a-z0-9_]*)((?:\[\d+\])*)$`)
	attributeIndex = regexp.MustCompile(`\[(\d+)\]`)
)
