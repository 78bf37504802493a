package kube

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/engine"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/statusreaders"
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/pkg/ssa"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// HealthCheck is one of Flux's custom health checks (helm-controller's and
// kustomize-controller's healthCheckExprs, fluxcd/pkg's
// kustomize.CustomHealthCheck): CEL expressions that say the status of the
// objects of one group, or of one kind of it.
type HealthCheck struct {
	// APIVersion selects the objects by its group only: every served
	// version of the group matches.
	APIVersion string
	// Kind narrows the check to one kind of the group; empty matches every
	// kind of it, unless another check names the kind.
	Kind string
	// Current is required: true means the object is Current.
	Current string
	// InProgress and Failed are optional: true means InProgress, Failed.
	InProgress string
	Failed     string
}

// HealthCheckError is an expression of a check that does not parse, or a
// check that is not valid: Index is the check's position, Field the name of
// its field at fault (api_version, kind, current, in_progress, failed).
type HealthCheckError struct {
	Index int
	Field string
	Err   error
}

func (e *HealthCheckError) Error() string { return e.Err.Error() }
func (e *HealthCheckError) Unwrap() error { return e.Err }

// HealthChecks are compiled HealthChecks, by group and kind.
type HealthChecks struct {
	evaluators map[schema.GroupKind]*healthEvaluator
}

// healthEvaluator holds the programs of one check.
type healthEvaluator struct {
	current, inProgress, failed cel.Program
}

// CompileHealthChecks parses every expression of checks, as fluxcd/pkg's
// cel.NewStatusReader does (parsed, not type-checked: custom resources
// follow no schema the checker could be given). The error joins a
// *HealthCheckError per fault. No checks give nil HealthChecks.
func CompileHealthChecks(checks []HealthCheck) (*HealthChecks, error) {
	if len(checks) == 0 {
		return nil, nil
	}
	env, err := healthEnv()
	if err != nil {
		return nil, err
	}
	h := &HealthChecks{evaluators: map[schema.GroupKind]*healthEvaluator{}}
	var errs []error
	for i, c := range checks {
		if c.APIVersion == "" {
			errs = append(errs, &HealthCheckError{i, "api_version", errors.New("must not be empty")})
			continue
		}
		gv, err := schema.ParseGroupVersion(c.APIVersion)
		if err != nil {
			errs = append(errs, &HealthCheckError{i, "api_version", fmt.Errorf("%q: %w", c.APIVersion, err)})
			continue
		}
		gk := schema.GroupKind{Group: gv.Group, Kind: c.Kind}
		if _, dup := h.evaluators[gk]; dup {
			field := "api_version"
			if c.Kind != "" {
				field = "kind"
			}
			errs = append(errs, &HealthCheckError{i, field, fmt.Errorf("a health check for %s is given twice", describeGK(gk))})
			continue
		}
		e := &healthEvaluator{}
		for _, x := range []struct {
			field, src string
			prg        *cel.Program
			required   bool
		}{{"current", c.Current, &e.current, true}, {"in_progress", c.InProgress, &e.inProgress, false}, {"failed", c.Failed, &e.failed, false}} {
			if x.src == "" {
				if x.required {
					errs = append(errs, &HealthCheckError{i, x.field, errors.New("must be set: the CEL expression that is true when the object is ready")})
				}
				continue
			}
			prg, err := parseHealthExpr(env, x.src)
			if err != nil {
				errs = append(errs, &HealthCheckError{i, x.field, err})
				continue
			}
			*x.prg = prg
		}
		h.evaluators[gk] = e
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return h, nil
}

func describeGK(gk schema.GroupKind) string {
	g := gk.Group
	if g == "" {
		g = "the core group"
	}
	if gk.Kind == "" {
		return "every kind of " + g
	}
	return gk.Kind + " of " + g
}

// healthEnv is the CEL environment of health checks: fluxcd/pkg's
// runtime/cel options, so that an expression means what it means in Flux.
func healthEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
	)
}

func parseHealthExpr(env *cel.Env, src string) (cel.Program, error) {
	ast, iss := env.Parse(src)
	if iss.Err() != nil {
		return nil, fmt.Errorf("the CEL expression %q does not parse: %s", src, iss.String())
	}
	// 100 is Kubernetes' (and Flux's) interrupt check frequency.
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("the CEL expression %q: %w", src, err)
	}
	return prg, nil
}

// evaluator is the check that applies to gk: its kind's, else its group's;
// nil when none does.
func (h *HealthChecks) evaluator(gk schema.GroupKind) *healthEvaluator {
	if h == nil {
		return nil
	}
	if e, ok := h.evaluators[gk]; ok {
		return e
	}
	return h.evaluators[schema.GroupKind{Group: gk.Group}]
}

// Supports says whether a check applies to objects of gk.
func (h *HealthChecks) Supports(gk schema.GroupKind) bool { return h.evaluator(gk) != nil }

// Status is the status of obj: by its health check when one applies (Flux's
// RFC 0009 rules, see evaluate), else kube.Status's.
func (h *HealthChecks) Status(obj *unstructured.Unstructured, completeJobs bool) (*status.Result, error) {
	if e := h.evaluator(obj.GroupVersionKind().GroupKind()); e != nil {
		return e.evaluate(context.Background(), obj)
	}
	return Status(obj, completeJobs)
}

// evaluate is Flux's evaluation of a health check (fluxcd/pkg runtime/cel,
// RFC 0009): an object whose status.observedGeneration (an integer) is not
// its metadata.generation is InProgress; then in_progress, failed and
// current are evaluated in this order, and the first that is true says the
// status; none true is InProgress. An expression that cannot be evaluated
// (a field that does not exist) is an error, which the wait reports and
// retries until its timeout.
func (e *healthEvaluator) evaluate(ctx context.Context, u *unstructured.Unstructured) (*status.Result, error) {
	obj := u.UnstructuredContent()
	if og, ok, err := unstructured.NestedInt64(obj, "status", "observedGeneration"); err == nil && ok {
		if g, ok, err := unstructured.NestedInt64(obj, "metadata", "generation"); err == nil && ok && og != g {
			return &status.Result{Status: status.InProgressStatus, Message: "status.observedGeneration is not metadata.generation"}, nil
		}
	}
	for _, x := range []struct {
		prg    cel.Program
		status status.Status
		name   string
	}{{e.inProgress, status.InProgressStatus, "in_progress"}, {e.failed, status.FailedStatus, "failed"}, {e.current, status.CurrentStatus, "current"}} {
		if x.prg == nil {
			continue
		}
		val, _, err := x.prg.ContextEval(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("health check %s: %w", x.name, err)
		}
		b, ok := val.(types.Bool)
		if !ok {
			return nil, fmt.Errorf("health check %s: the expression returned %s, not a bool", x.name, val.Type().TypeName())
		}
		if b {
			return &status.Result{Status: x.status, Message: "health check " + x.name + " is true"}, nil
		}
	}
	return &status.Result{Status: status.InProgressStatus, Message: "no health check expression is true yet"}, nil
}

// healthStatusReader reads the status of the objects a check applies to.
type healthStatusReader struct {
	engine.StatusReader
	h *HealthChecks
}

func (r healthStatusReader) Supports(gk schema.GroupKind) bool { return r.h.Supports(gk) }

// WithHealthChecks returns a manager whose waits read the status of the
// objects a check of h applies to with that check, and of the others as
// kstatus does (a Job complete only with completeJobs, as
// WithCompleteJobs). A nil h is m, or m.WithCompleteJobs().
func (m *Manager) WithHealthChecks(h *HealthChecks, completeJobs bool) *Manager {
	if h == nil {
		if completeJobs {
			return m.WithCompleteJobs()
		}
		return m
	}
	readers := []engine.StatusReader{healthStatusReader{
		StatusReader: statusreaders.NewGenericStatusReader(m.mapper, func(u *unstructured.Unstructured) (*status.Result, error) {
			return h.Status(u, completeJobs)
		}),
		h: h,
	}}
	if completeJobs {
		readers = append(readers, jobStatusReader{statusreaders.NewGenericStatusReader(m.mapper, jobStatus)})
	}
	poller := newPoller(m.client, m.mapper, readers...)
	rm := ssa.NewResourceManager(m.client, poller, ssa.Owner{Field: m.fieldManager, Group: OwnerGroup})
	rm.SetConcurrency(managerConcurrency)
	c := *m
	c.rm = rm
	return &c
}
