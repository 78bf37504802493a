package resourceset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DependencyError is a terminal problem with a dependency's definition (not a
// dependency that is not ready yet), tied to its position.
type DependencyError struct {
	Index int
	Field string
	Err   error
}

func (e *DependencyError) Error() string {
	return fmt.Sprintf("dependencies[%d].%s: %v", e.Index, e.Field, e.Err)
}

func (e *DependencyError) Unwrap() error { return e.Err }

// celVariables are the object's top-level fields an expression can read.
var celVariables = []string{"apiVersion", "kind", "metadata", "spec", "status", "data"}

func celEnv() (*cel.Env, error) {
	opts := []cel.EnvOption{
		ext.Strings(), ext.Sets(), ext.Encoders(), cel.OptionalTypes(),
	}
	for _, v := range celVariables {
		opts = append(opts, cel.Variable(v, cel.DynType))
	}
	return cel.NewEnv(opts...)
}

// compileReadyExpr compiles a ready_expr and checks that it can return a bool.
func compileReadyExpr(env *cel.Env, expr string) (cel.Program, error) {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("invalid CEL expression %q: %w", expr, iss.Err())
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, fmt.Errorf("CEL expression %q returns %s, want bool", expr, t)
	}
	prg, err := env.Program(ast)
	if err != nil {
		return nil, fmt.Errorf("CEL expression %q: %w", expr, err)
	}
	return prg, nil
}

// ValidateDependencies checks the dependencies' definitions, compiling every
// ready_expr, without the cluster. Plan calls it so that a bad expression is a
// diagnostic before anything is applied.
func ValidateDependencies(deps []Dependency) error {
	_, err := compileDependencies(deps)
	return err
}

type compiledDependency struct {
	Dependency
	program cel.Program
}

func compileDependencies(deps []Dependency) ([]compiledDependency, error) {
	out := make([]compiledDependency, len(deps))
	var env *cel.Env
	var errs []error
	for i, d := range deps {
		out[i].Dependency = d
		for _, f := range []struct{ field, v string }{{"api_version", d.APIVersion}, {"kind", d.Kind}, {"name", d.Name}} {
			if f.v == "" {
				errs = append(errs, &DependencyError{Index: i, Field: f.field, Err: errors.New("must be set")})
			}
		}
		// Malformed, the lookup of the kind would fail on every poll until
		// the timeout, and then blame the object.
		if gv, err := schema.ParseGroupVersion(d.APIVersion); d.APIVersion != "" && (err != nil || gv.Version == "") {
			errs = append(errs, &DependencyError{Index: i, Field: "api_version",
				Err: fmt.Errorf("%q is not <group>/<version> or <version> (v1, apps/v1)", d.APIVersion)})
		}
		if d.ReadyExpr == "" {
			continue
		}
		if !d.Ready {
			errs = append(errs, &DependencyError{Index: i, Field: "ready_expr", Err: errors.New("is only used with ready = true")})
			continue
		}
		if env == nil {
			var err error
			if env, err = celEnv(); err != nil {
				return nil, err
			}
		}
		prg, err := compileReadyExpr(env, d.ReadyExpr)
		if err != nil {
			errs = append(errs, &DependencyError{Index: i, Field: "ready_expr", Err: err})
			continue
		}
		out[i].program = prg
	}
	return out, errors.Join(errs...)
}

// dependencyPollInterval is how often unmet dependencies are checked again.
const dependencyPollInterval = 5 * time.Second

// waitForDependencies polls until every dependency is met or the context ends;
// then it names the dependencies that are not met and why. A ready_expr that
// fails to evaluate or returns a non-bool is terminal.
func waitForDependencies(ctx context.Context, c client.Reader, deps []compiledDependency, interval time.Duration) error {
	if len(deps) == 0 {
		return nil
	}
	for {
		var unmet []string
		for i, d := range deps {
			ok, why, err := checkDependency(ctx, c, d)
			if err != nil {
				return &DependencyError{Index: i, Field: "ready_expr", Err: err}
			}
			if !ok {
				unmet = append(unmet, fmt.Sprintf("%s %s: %s", d.Kind, nsName(d.Namespace, d.Name), why))
			}
		}
		if len(unmet) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dependencies not met: %s", strings.Join(unmet, "; "))
		case <-time.After(interval):
		}
	}
}

func checkDependency(ctx context.Context, c client.Reader, d compiledDependency) (ok bool, why string, terminal error) {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(d.APIVersion)
	obj.SetKind(d.Kind)
	err := c.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, "not found", nil
	case err != nil:
		// The kind may not be served yet (a CRD still being installed) or the
		// API may be briefly unavailable: poll again.
		return false, err.Error(), nil
	}
	if !d.Ready {
		return true, "", nil
	}
	if d.program != nil {
		vars := map[string]any{}
		for _, v := range celVariables {
			vars[v] = obj.Object[v]
		}
		out, _, err := d.program.Eval(vars)
		if err != nil {
			// A missing field (status not written yet) is not ready yet, not
			// an error: the expression may hold later.
			if strings.Contains(err.Error(), "no such key") || strings.Contains(err.Error(), "no such attribute") {
				return false, fmt.Sprintf("ready_expr: %v", err), nil
			}
			return false, "", fmt.Errorf("evaluating %q on %s %s: %w", d.ReadyExpr, d.Kind, nsName(d.Namespace, d.Name), err)
		}
		b, isBool := out.Value().(bool)
		if !isBool {
			return false, "", fmt.Errorf("%q returned %v (%s), want bool", d.ReadyExpr, out.Value(), out.Type())
		}
		if !b {
			return false, "ready_expr is false", nil
		}
		return true, "", nil
	}
	res, err := status.Compute(obj)
	if err != nil {
		return false, err.Error(), nil
	}
	if res.Status != status.CurrentStatus {
		return false, fmt.Sprintf("status %s: %s", res.Status, res.Message), nil
	}
	return true, "", nil
}

func nsName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
