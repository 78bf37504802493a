package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Dependency is an object in the cluster that must exist, and with Ready be
// ready, before a resource set or a Helm release is applied: the cluster-side
// form of Flux's dependsOn.
type Dependency struct {
	APIVersion string
	Kind       string
	Name       string
	// Namespace is empty for a cluster-scoped object.
	Namespace string
	// Ready requires the object to be Current by kstatus, or ReadyExpr to
	// hold.
	Ready bool
	// ReadyExpr is a CEL expression returning bool whose variables are the
	// object's top-level fields (apiVersion, kind, metadata, spec, status,
	// data, type, subjects, ...); used only with Ready.
	ReadyExpr string
}

// String names the object: `Secret default/gate`.
func (d Dependency) String() string {
	if d.Namespace == "" {
		return d.Kind + " " + d.Name
	}
	return d.Kind + " " + d.Namespace + "/" + d.Name
}

// DependencyPollInterval is how often unmet dependencies are checked again.
const DependencyPollInterval = 5 * time.Second

// dependencyField is the path of field of dependency i.
func dependencyField(i int, field string) string { return fmt.Sprintf("dependencies[%d].%s", i, field) }

// IsDependencyError says whether err is, or joins, a terminal problem with a
// dependency's definition or with its ready_expr on the object it found (a
// *fielderr.Error under `dependencies`), not a dependency that is not ready
// yet.
func IsDependencyError(err error) bool {
	var fe *fielderr.Error
	return errors.As(err, &fe) && strings.HasPrefix(fe.Path, "dependencies[")
}

// UnmetDependency is a dependency that is not met, and why.
type UnmetDependency struct {
	Index      int
	Dependency Dependency
	Reason     string
}

func (u UnmetDependency) String() string { return u.Dependency.String() + ": " + u.Reason }

// DependencyNotReadyError says which dependencies were not met when the wait
// for them ended. It is not a failure of what waited: nothing was applied.
type DependencyNotReadyError struct {
	Unmet []UnmetDependency
}

func (e *DependencyNotReadyError) Error() string {
	parts := make([]string, len(e.Unmet))
	for i, u := range e.Unmet {
		parts[i] = u.String()
	}
	return "dependencies not met: " + strings.Join(parts, "; ")
}

// Dependencies are dependencies whose definitions were checked and whose
// ready_expr compiled, ready to be waited for.
type Dependencies struct {
	deps  []Dependency
	exprs []*readyExpr // by index; nil without ready_expr
}

// ValidateDependencies checks the dependencies' definitions and compiles every
// ready_expr (syntax and types), without the cluster, so that plan reports a
// bad definition before anything is applied. The errors are
// *fielderr.Error under `dependencies`, joined.
func ValidateDependencies(deps []Dependency) error {
	_, err := CompileDependencies(deps)
	return err
}

// CompileDependencies is ValidateDependencies that keeps what it compiled.
func CompileDependencies(deps []Dependency) (*Dependencies, error) {
	out := &Dependencies{deps: deps, exprs: make([]*readyExpr, len(deps))}
	var base *cel.Env
	var errs []error
	for i, d := range deps {
		errs = append(errs, d.definitionErrors(i)...)
		if d.ReadyExpr == "" || !d.Ready {
			continue
		}
		if base == nil {
			var err error
			if base, err = celBaseEnv(); err != nil {
				return nil, err
			}
		}
		x, err := compileReadyExpr(base, d.ReadyExpr)
		if err != nil {
			errs = append(errs, &fielderr.Error{Path: dependencyField(i, "ready_expr"), Err: err})
			continue
		}
		out.exprs[i] = x
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// definitionErrors are the problems of d that need no cluster and no CEL.
func (d Dependency) definitionErrors(i int) []error {
	var errs []error
	for _, f := range []struct{ field, v string }{{"api_version", d.APIVersion}, {"kind", d.Kind}, {"name", d.Name}} {
		if f.v == "" {
			errs = append(errs, &fielderr.Error{Path: dependencyField(i, f.field), Err: errors.New("must be set")})
		}
	}
	// Malformed, the lookup of the kind would fail on every poll until the
	// timeout, and then blame the object.
	if gv, err := schema.ParseGroupVersion(d.APIVersion); d.APIVersion != "" && (err != nil || gv.Version == "") {
		errs = append(errs, &fielderr.Error{Path: dependencyField(i, "api_version"),
			Err: fmt.Errorf("%q is not <group>/<version> or <version> (v1, apps/v1)", d.APIVersion)})
	}
	if d.ReadyExpr != "" && !d.Ready {
		errs = append(errs, &fielderr.Error{Path: dependencyField(i, "ready_expr"), Err: errors.New("is only used with ready = true")})
	}
	return errs
}

// Len is the number of dependencies.
func (ds *Dependencies) Len() int {
	if ds == nil {
		return 0
	}
	return len(ds.deps)
}

// Wait polls every interval until every dependency is met, or until timeout:
// then it returns a *DependencyNotReadyError naming those that are not met and
// why. A ready_expr that fails on the object (not merely on a field it does
// not have yet) is a terminal *fielderr.Error under `dependencies`.
func (ds *Dependencies) Wait(ctx context.Context, c client.Reader, timeout, interval time.Duration) error {
	if ds.Len() == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last []UnmetDependency
	for {
		unmet, err := ds.Check(ctx, c)
		if err != nil {
			return err
		}
		if len(unmet) == 0 {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			// A check cut short by the deadline says less than the one
			// before it.
			last = unmet
		}
		select {
		case <-ctx.Done():
			return &DependencyNotReadyError{Unmet: last}
		case <-time.After(interval):
		}
	}
}

// Check looks at every dependency once and returns those not met.
func (ds *Dependencies) Check(ctx context.Context, c client.Reader) ([]UnmetDependency, error) {
	var unmet []UnmetDependency
	for i := range ds.Len() {
		reason, err := ds.check(ctx, c, i)
		if err != nil {
			return nil, &fielderr.Error{Path: dependencyField(i, "ready_expr"), Err: err}
		}
		if reason != "" {
			unmet = append(unmet, UnmetDependency{Index: i, Dependency: ds.deps[i], Reason: reason})
		}
	}
	return unmet, nil
}

// check returns why dependency i is not met, "" when it is.
func (ds *Dependencies) check(ctx context.Context, c client.Reader, i int) (reason string, terminal error) {
	d := ds.deps[i]
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(d.APIVersion)
	obj.SetKind(d.Kind)
	err := c.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return "not found", nil
	case err != nil:
		// The kind may not be served yet (a CRD still being installed) or
		// the API may be briefly unavailable: poll again.
		return err.Error(), nil
	case !d.Ready:
		return "", nil
	case ds.exprs[i] != nil:
		return ds.exprs[i].unmet(obj.Object)
	}
	res, err := status.Compute(obj)
	if err != nil {
		return err.Error(), nil
	}
	if res.Status != status.CurrentStatus {
		return fmt.Sprintf("status %s: %s", res.Status, res.Message), nil
	}
	return "", nil
}

// readyExpr is a compiled ready_expr.
type readyExpr struct {
	src string
	env *cel.Env
	prg cel.Program
	// fields are the top-level fields of the object the expression reads.
	fields []string
}

// celTypeNames are the identifiers CEL resolves to types: a top-level field
// of one of these names cannot be read.
var celTypeNames = map[string]bool{
	"bool": true, "bytes": true, "double": true, "dyn": true, "int": true, "list": true,
	"map": true, "null_type": true, "string": true, "uint": true, "optional_type": true,
}

// celVariable is the CEL variable of a top-level field. `type`, the field of
// a Secret or an Event, is also CEL's type of types, which no variable may
// overlap: it is read through a variable no expression can name.
func celVariable(field string) string {
	if field == "type" {
		return "@type"
	}
	return field
}

func celBaseEnv() (*cel.Env, error) {
	return cel.NewEnv(ext.Strings(), ext.Sets(), ext.Encoders(), cel.OptionalTypes())
}

// compileReadyExpr parses src, declares every identifier it reads as a
// variable of dynamic type (an object may have any top-level field), and
// type-checks it: a syntax error, a type error or a result that cannot be a
// bool is an error here, with no object at hand.
func compileReadyExpr(base *cel.Env, src string) (*readyExpr, error) {
	parsed, iss := base.Parse(src)
	if iss.Err() != nil {
		return nil, fmt.Errorf("invalid CEL expression %q: %w", src, iss.Err())
	}
	idents := freeIdents(parsed.NativeRep().Expr())
	candidates := make([]string, 0, len(idents))
	decls := make([]cel.EnvOption, 0, len(idents))
	fac := ast.NewExprFactory()
	for name, nodes := range idents {
		v := celVariable(name)
		if v != name {
			for _, n := range nodes {
				n.SetKindCase(fac.NewIdent(n.ID(), v))
			}
		}
		candidates = append(candidates, name)
		decls = append(decls, cel.Variable(v, cel.DynType))
	}
	slices.Sort(candidates)
	env, err := base.Extend(decls...)
	if err != nil {
		return nil, fmt.Errorf("CEL expression %q: %w", src, err)
	}
	checked, iss := env.Check(parsed)
	if iss.Err() != nil {
		return nil, fmt.Errorf("invalid CEL expression %q: %w", src, iss.Err())
	}
	if t := checked.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, fmt.Errorf("CEL expression %q returns %s, want bool", src, t)
	}
	prg, err := env.Program(checked, cel.EvalOptions(cel.OptPartialEval))
	if err != nil {
		return nil, fmt.Errorf("CEL expression %q: %w", src, err)
	}
	return &readyExpr{src: src, env: env, prg: prg, fields: readFields(checked.NativeRep(), candidates)}, nil
}

// freeIdents are the identifiers of e not bound by a comprehension (the
// variables of exists, all, map, filter, ...), except CEL's type names, with
// the nodes that name each. Some may be the first part of a qualified
// function name (`base64.decode`), which the checker resolves as the
// function.
func freeIdents(e ast.Expr) map[string][]ast.Expr {
	free := map[string][]ast.Expr{}
	var walk func(e ast.Expr, bound []string)
	walk = func(e ast.Expr, bound []string) {
		switch e.Kind() {
		case ast.IdentKind:
			if name := e.AsIdent(); !slices.Contains(bound, name) && !celTypeNames[name] {
				free[name] = append(free[name], e)
			}
		case ast.SelectKind:
			walk(e.AsSelect().Operand(), bound)
		case ast.CallKind:
			call := e.AsCall()
			if call.IsMemberFunction() {
				walk(call.Target(), bound)
			}
			for _, a := range call.Args() {
				walk(a, bound)
			}
		case ast.ListKind:
			for _, el := range e.AsList().Elements() {
				walk(el, bound)
			}
		case ast.MapKind:
			for _, en := range e.AsMap().Entries() {
				walk(en.AsMapEntry().Key(), bound)
				walk(en.AsMapEntry().Value(), bound)
			}
		case ast.StructKind:
			for _, f := range e.AsStruct().Fields() {
				walk(f.AsStructField().Value(), bound)
			}
		case ast.ComprehensionKind:
			c := e.AsComprehension()
			walk(c.IterRange(), bound)
			walk(c.AccuInit(), bound)
			loop := append(slices.Clip(bound), c.IterVar(), c.IterVar2(), c.AccuVar())
			walk(c.LoopCondition(), loop)
			walk(c.LoopStep(), loop)
			walk(c.Result(), append(slices.Clip(bound), c.AccuVar()))
		}
	}
	walk(e, nil)
	return free
}

// readFields are the candidate fields that the checked expression reads as
// variables rather than as the prefix of a function name, sorted.
func readFields(checked *ast.AST, candidates []string) []string {
	read := map[string]bool{}
	for _, ref := range checked.ReferenceMap() {
		if len(ref.OverloadIDs) == 0 {
			read[ref.Name] = true
		}
	}
	var out []string
	for _, name := range candidates {
		if read[celVariable(name)] {
			out = append(out, name)
		}
	}
	return out
}

// unmet evaluates the expression on obj: "" when it holds, why not when it
// does not or cannot tell yet (a field it reads is not there: status not
// written yet), an error when it cannot be evaluated on obj.
func (x *readyExpr) unmet(obj map[string]any) (string, error) {
	vars := make(map[string]any, len(x.fields))
	var missing []string
	for _, f := range x.fields {
		if v, ok := obj[f]; ok && v != nil {
			vars[celVariable(f)] = v
		} else {
			missing = append(missing, f)
		}
	}
	// Fields the object does not have are unknown: the result is unknown
	// when it depends on them, and known when it does not (`a || b`).
	act, err := x.env.PartialVars(vars)
	if err != nil {
		return "", err
	}
	out, _, err := x.prg.Eval(act)
	switch {
	case err != nil && missingData(err):
		return "ready_expr: " + err.Error(), nil
	case err != nil:
		return "", fmt.Errorf("evaluating %q: %w", x.src, err)
	case types.IsUnknown(out):
		return fmt.Sprintf("ready_expr reads %s, which the object does not have (yet)", strings.Join(missing, ", ")), nil
	}
	b, isBool := out.Value().(bool)
	switch {
	case !isBool:
		return "", fmt.Errorf("%q returned %v (%s), want bool", x.src, out.Value(), out.Type())
	case !b:
		return "ready_expr is false", nil
	}
	return "", nil
}

// missingData reports whether an evaluation failed on a map key or a list
// element that is not there (`status.conditions` before the controller writes
// it, `status.conditions[0]` of an empty list): data that may appear later,
// so the dependency is not ready yet rather than broken. CEL reports these
// only as messages (cel-go's resolution errors are not exported).
func missingData(err error) bool {
	msg := err.Error()
	for _, prefix := range []string{"no such key", "no such attribute", "index out of bounds"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}
