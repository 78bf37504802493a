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
)

// addError adds err to diags with summary: one diagnostic per error that err
// joins, on the attribute a *fielderr.Error in it names, else on the
// resource. Its text is the error's, which names the resource and the
// attribute: the CLIs do not print an attribute path.
func addError(diags *diag.Diagnostics, summary string, err error) {
	if err == nil {
		return
	}
	for _, e := range joined(err) {
		var fe *fielderr.Error
		if errors.As(e, &fe) {
			diags.AddAttributeError(attributePath(fe.Path), summary, e.Error())
			continue
		}
		diags.AddError(summary, e.Error())
	}
}

// addWarning adds a warning about the attribute at p (fielderr's syntax; ""
// for the resource) with err's text, which names the resource.
func addWarning(diags *diag.Diagnostics, summary, p string, err error) {
	if p == "" {
		diags.AddWarning(summary, err.Error())
		return
	}
	diags.AddAttributeWarning(attributePath(p), summary, err.Error())
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
