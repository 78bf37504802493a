package resourceset

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// MaxSteps is the most steps a set may have, as flux-operator allows.
const MaxSteps = 20

// Step is a named part of a set, flux-operator's `.spec.steps[]`: the steps are
// applied in order, and the objects of each but the last (the last too with
// Spec.Wait) are health-checked with kstatus before the next starts.
type Step struct {
	// Name is a DNS label unique in the set.
	Name string
	// Timeout bounds the step's health check; 0 is the set's timeout.
	Timeout time.Duration
	// Resources and ResourcesTemplate render the step's objects, as the
	// set's do, with the set's inputs.
	Resources         []map[string]any
	ResourcesTemplate string
}

// StepFieldError is err about the attribute field of the step at position
// index named name, or about the step itself when field is "":
// `steps[1].name: step "db": ...`. The errors of a step are *fielderr.Error
// so, on the step or on its attribute (`steps[1].resources[0]`), with
// flux-operator's messages (`step "db-migration" health check failed: ...`);
// those of the steps as a whole (too many, or set together with resources)
// are on `steps`.
func StepFieldError(index int, name, field string, err error) error {
	path := fielderr.Index("steps", index)
	if field != "" {
		path += "." + field
	}
	return &fielderr.Error{Path: path, Err: fmt.Errorf("step %q: %w", name, err)}
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateSteps checks steps as flux-operator's API does: at most MaxSteps,
// not together with the set's resources (withResources), each named with a
// DNS label no other step has and rendering resources, resources_template or
// both. The errors are *fielderr.Error, joined.
func ValidateSteps(steps []Step, withResources bool) error {
	var errs []error
	if len(steps) > MaxSteps {
		errs = append(errs, fielderr.Errorf("steps", "%d steps, at most %d are allowed", len(steps), MaxSteps))
	}
	if len(steps) > 0 && withResources {
		errs = append(errs, fielderr.Errorf("steps", "steps are mutually exclusive with resources and resources_template"))
	}
	first := map[string]int{}
	for i, st := range steps {
		bad := func(field, format string, args ...any) {
			errs = append(errs, StepFieldError(i, st.Name, field, fmt.Errorf(format, args...)))
		}
		switch j, seen := first[st.Name]; {
		case len(st.Name) > 63 || !dnsLabel.MatchString(st.Name):
			bad("name", "name %q must be a DNS label (at most 63 lowercase letters, digits and '-')", st.Name)
		case seen:
			bad("name", "name %q is also the name of steps[%d]: step names must be unique", st.Name, j)
		default:
			first[st.Name] = i
		}
		if st.Timeout < 0 {
			bad("timeout", "timeout %s is negative", st.Timeout)
		}
		if len(st.Resources) == 0 && st.ResourcesTemplate == "" {
			bad("", "at least one of resources or resources_template must be set")
		}
	}
	return errors.Join(errs...)
}

// part is the rendered objects of one step; a set without steps is one
// anonymous part (index -1, no name), so that both apply the same way.
type part struct {
	index   int
	name    string
	timeout time.Duration
	objs    []*unstructured.Unstructured
}

// parts returns the parts of spec, not rendered yet, with their timeouts
// defaulted to the set's.
func (s *Spec) parts() []part {
	timeout := s.Timeout
	if len(s.Steps) == 0 {
		return []part{{index: -1, timeout: timeout}}
	}
	out := make([]part, len(s.Steps))
	for i, st := range s.Steps {
		out[i] = part{index: i, name: st.Name, timeout: timeout}
		if st.Timeout > 0 {
			out[i].timeout = st.Timeout
		}
	}
	return out
}

// forPart is spec with the resources of p: the set's own, or its step's.
func (s *Spec) forPart(p part) *Spec {
	if p.index < 0 {
		return s
	}
	c := *s
	c.Steps = nil
	c.Resources = s.Steps[p.index].Resources
	c.ResourcesTemplate = s.Steps[p.index].ResourcesTemplate
	return &c
}

// wrap names p in err, of the action that failed ("" for the render), unless
// p is the anonymous part: a set without steps says what it always said. A
// step's error is on the step (`steps[1]`), or on the attribute of the step
// err is about (`steps[1].resources_template`).
func (p part) wrap(action string, err error) error {
	if err == nil || p.index < 0 {
		return err
	}
	what := fmt.Sprintf("step %q", p.name)
	if action != "" {
		what += " " + action
	}
	return fielderr.Under(fielderr.Index("steps", p.index), fmt.Errorf("%s: %w", what, err))
}

// failed is err of an action of p: wrapped for a step, and for the anonymous
// part err after legacy, as a set without steps always said it.
func (p part) failed(action, legacy string, err error) error {
	if p.index < 0 {
		return fmt.Errorf("%s: %w", legacy, err)
	}
	return p.wrap(action, err)
}

// crossStepDuplicates refuses an object that two steps render: which step
// would own it is not for the set to guess (flux-operator refuses it too).
func crossStepDuplicates(parts []part) error {
	owner := map[string]int{}
	var errs []error
	for i, p := range parts {
		for _, o := range p.objs {
			key := objectKey(o)
			j, seen := owner[key]
			switch {
			case !seen:
				owner[key] = i
			case j != i:
				errs = append(errs, p.wrap("", fmt.Errorf("%s is also defined in step %q (steps[%d]): a resource can be defined in only one step",
					describe(o), parts[j].name, parts[j].index)))
			}
		}
	}
	return errors.Join(errs...)
}

// flatten is the objects of parts in step order.
func flatten(parts []part) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, p := range parts {
		out = append(out, p.objs...)
	}
	return out
}

// stepsOf maps the inventory ID of each object of parts to its step's name,
// "" for a set without steps.
func stepsOf(parts []part) map[string]string {
	out := map[string]string{}
	for _, p := range parts {
		for _, o := range p.objs {
			out[kube.ID(o)] = p.name
		}
	}
	return out
}
