package resourceset

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	sprig "github.com/go-task/slim-sprig/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// sample returns fresh argument values of type t, a few per type, so that a
// function that changes its arguments (set, unset, append ...) cannot change
// the next call's. The maps have enough keys for an order that follows Go's
// map iteration to differ between calls.
func sample(t reflect.Type) []any {
	day := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	dict := func() map[string]any {
		return map[string]any{"a": 1, "b": "two", "c": []any{3, "x"}, "d": map[string]any{"e": true}, "f": nil, "g": 1.5}
	}
	switch {
	case t == reflect.TypeFor[time.Time]():
		return []any{day, time.Time{}}
	case t.Kind() == reflect.String:
		return []any{"", "a", "Hello World", "2006-01-02", "1h30m", "42", "a,b.c", "x(y)*"}
	case t.Kind() == reflect.Int:
		return []any{0, 2, -1}
	case t.Kind() == reflect.Int64:
		return []any{int64(0), int64(3)}
	case t.Kind() == reflect.Float64:
		return []any{0.0, 1.5}
	case t.Kind() == reflect.Bool:
		return []any{true, false}
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.Interface:
		return []any{dict(), map[string]any{}}
	case t.Kind() == reflect.Interface:
		return []any{"", "b a", 2, int64(3), 1.5, true, nil, []any{"b", "a", 1}, dict(), day}
	case t.Kind() == reflect.Slice:
		elems := sample(t.Elem())
		s := reflect.MakeSlice(t, 0, len(elems))
		for _, e := range elems {
			s = reflect.Append(s, value(e, t.Elem()))
		}
		return []any{reflect.MakeSlice(t, 0, 0).Interface(), s.Interface()}
	}
	return nil
}

// value is v as a reflect.Value assignable to t (nil as t's zero value).
func value(v any, t reflect.Type) reflect.Value {
	if v == nil {
		return reflect.Zero(t)
	}
	return reflect.ValueOf(v)
}

// argLists returns every combination of samples for the parameters of ft,
// with zero to two variadic arguments, as functions making fresh arguments;
// nil when a parameter type has no samples.
func argLists(ft reflect.Type) []func() []reflect.Value {
	var params []reflect.Type
	for i := range ft.NumIn() {
		params = append(params, ft.In(i))
	}
	extras := [][]reflect.Type{params}
	if ft.IsVariadic() {
		fixed, elem := params[:len(params)-1], params[len(params)-1].Elem()
		extras = [][]reflect.Type{fixed, append(slices.Clip(fixed), elem), append(slices.Clip(fixed), elem, elem)}
	}
	var lists []func() []reflect.Value
	for _, types := range extras {
		n := 1
		for _, pt := range types {
			if len(sample(pt)) == 0 {
				return nil
			}
			n *= len(sample(pt))
		}
		for combo := range n {
			lists = append(lists, func() []reflect.Value {
				args := make([]reflect.Value, len(types))
				c := combo
				for i, pt := range types {
					s := sample(pt)
					args[i] = value(s[c%len(s)], pt)
					c /= len(s)
				}
				return args
			})
		}
	}
	return lists
}

// outcome is what one call did: its results, or the panic.
type outcome struct {
	Results []any
	Panic   string
}

func call(fn reflect.Value, args []reflect.Value) (o outcome) {
	defer func() {
		if r := recover(); r != nil {
			o.Panic = fmt.Sprint(r)
		}
	}()
	for _, r := range fn.Call(args) {
		if err, ok := r.Interface().(error); ok {
			o.Results = append(o.Results, "error: "+err.Error())
			continue
		}
		o.Results = append(o.Results, r.Interface())
	}
	return o
}

// TestFuncMap_deterministic calls every function of the map, with every
// combination of sample arguments, five times, and wants the same results
// (or the same panic) each time: a template renders at plan and again at
// apply, so a function whose output changes between calls makes a plan that
// never settles. A function added to the map (a new sprig) is called too; one
// whose parameter types have no samples fails the test until they get some.
func TestFuncMap_deterministic(t *testing.T) {
	fm := funcMap(func() any { return map[string]any{"tenant": "a"} })
	for _, name := range slices.Sorted(maps.Keys(fm)) {
		if _, refused := unavailable[name]; refused {
			continue // TestRender_unavailableFunctions
		}
		fn := reflect.ValueOf(fm[name])
		lists := argLists(fn.Type())
		if len(lists) == 0 {
			t.Errorf("%s %v: no sample arguments for its parameters; add them to sample", name, fn.Type())
			continue
		}
		for _, args := range lists {
			first := call(fn, args())
			for range 4 {
				if again := call(fn, args()); !reflect.DeepEqual(first, again) {
					t.Errorf("%s%v is not deterministic: %#v, then %#v", name, args(), first, again)
					break
				}
			}
		}
	}
}

// TestFuncMap_isFluxOperators: the map is flux-operator's (slim-sprig's
// hermetic map, slugify, toYaml, mustToYaml, inputs) with bool added and
// only the functions whose output is not a function of their arguments taken
// out.
func TestFuncMap_isFluxOperators(t *testing.T) {
	fm := funcMap(func() any { return nil })
	slim := sprig.HermeticTxtFuncMap()
	var missing, added []string
	for name := range slim {
		if _, ok := deterministicFuncs[name]; !ok {
			missing = append(missing, name)
		}
	}
	for name := range fm {
		_, refused := unavailable[name]
		if _, ok := slim[name]; !ok && !refused {
			added = append(added, name)
		}
	}
	slices.Sort(missing)
	slices.Sort(added)
	if got, want := strings.Join(missing, " "), "ago randInt"; got != want {
		t.Errorf("slim-sprig functions left out = %s, want %s", got, want)
	}
	if got, want := strings.Join(added, " "), "bool inputs mustToYaml slugify toYaml"; got != want {
		t.Errorf("functions added to slim-sprig's = %s, want %s", got, want)
	}
}

// renderData renders one ConfigMap template with input and returns its data.
func renderData(t *testing.T, tmpl string, input map[string]any) (map[string]any, error) {
	t.Helper()
	objs, err := Render(&Spec{Name: "s", Namespace: "ns", Inputs: []map[string]any{input},
		ResourcesTemplate: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n" + tmpl})
	if err != nil {
		return nil, err
	}
	data, _, _ := unstructured.NestedMap(objs[0].Object, "data")
	return data, nil
}

func TestRender_yaml(t *testing.T) {
	input := map[string]any{"labels": map[string]any{"tier": "gold", "app": "web"}, "nan": "NaN"}
	data, err := renderData(t, `data:
  quoted: << toYaml inputs.labels | quote >>
  must: << mustToYaml inputs.labels | quote >>
  scalar: << toYaml "x" | quote >>
  unencodable: << float64 inputs.nan | toYaml | quote >>
nested: << inputs.labels | toYaml | nindent 2 >>
`, input)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"quoted": "app: web\ntier: gold\n", "must": "app: web\ntier: gold\n", "scalar": "x\n", "unencodable": ""}
	if !reflect.DeepEqual(data, want) {
		t.Errorf("data = %#v, want %#v (toYaml keeps the trailing newline, and is empty when it cannot encode)", data, want)
	}

	_, err = renderData(t, "data:\n  v: << float64 inputs.nan | mustToYaml | quote >>\n", input)
	if fielderr.PathOf(err) == "" || !strings.Contains(err.Error(), "error calling mustToYaml") || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("mustToYaml of NaN: error = %v, want an error on the resource from mustToYaml", err)
	}
}

func TestRender_nindentToYaml(t *testing.T) {
	objs, err := Render(&Spec{Name: "s", Namespace: "ns",
		Inputs: []map[string]any{{"selector": map[string]any{"mediaType": "application/x-tar", "operation": "copy"}}},
		Resources: []map[string]any{mustMap(t, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: r}
spec:
  layerSelector: << inputs.selector | toYaml | nindent 4 >>
`)}})
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedMap(objs[0].Object, "spec", "layerSelector")
	if want := map[string]any{"mediaType": "application/x-tar", "operation": "copy"}; !reflect.DeepEqual(got, want) {
		t.Errorf("layerSelector = %#v, want %#v", got, want)
	}
}

func TestRender_bool(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want bool
	}{
		{true, true}, {false, false}, {"true", true}, {"False", false}, {" 1 ", true}, {"0", false}, {"t", true},
		{int64(1), true}, {int64(0), false}, {0.5, true},
	} {
		data, err := renderData(t, "data:\n  v: << inputs.v | bool | quote >>\n", map[string]any{"v": tc.in})
		if err != nil {
			t.Errorf("bool %#v: %v", tc.in, err)
			continue
		}
		if got := data["v"]; got != fmt.Sprint(tc.want) {
			t.Errorf("bool %#v = %v, want %v", tc.in, got, tc.want)
		}
	}
	for _, in := range []any{"yes", "", nil, []any{}} {
		_, err := renderData(t, "immutable: << inputs.v | bool >>\n", map[string]any{"v": in})
		if fielderr.PathOf(err) == "" || !strings.Contains(err.Error(), "error calling bool: bool: ") {
			t.Errorf("bool %#v: error = %v, want an error on the resource from bool", in, err)
		}
	}
	objs, err := Render(&Spec{Name: "s", Namespace: "ns", Inputs: []map[string]any{{"enabled": "true"}},
		ResourcesTemplate: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa}\nautomountServiceAccountToken: << inputs.enabled | bool >>\n"})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := unstructured.NestedBool(objs[0].Object, "automountServiceAccountToken"); !ok || !v {
		t.Errorf("automountServiceAccountToken = %#v, want the boolean true", objs[0].Object["automountServiceAccountToken"])
	}
}

func TestRender_keysAndValuesInKeyOrder(t *testing.T) {
	input := map[string]any{"m": map[string]any{"e": 5, "c": 3, "a": 1, "d": 4, "b": 2}, "n": map[string]any{"z": 0, "y": 9}}
	for range 10 {
		data, err := renderData(t, `data:
  keys: << keys inputs.m inputs.n | join "," | quote >>
  values: << values inputs.m | join "," | quote >>
`, input)
		if err != nil {
			t.Fatal(err)
		}
		if data["keys"] != "a,b,c,d,e,y,z" || data["values"] != "1,2,3,4,5" {
			t.Fatalf("keys = %v, values = %v: want each map's keys sorted, values in key order", data["keys"], data["values"])
		}
	}
}

func TestDurationRound_roundsDurationsAndRefusesDates(t *testing.T) {
	if got, err := durationRound("1h30m"); err != nil || got != "1h" {
		t.Errorf(`durationRound "1h30m" = %q, %v; want "1h"`, got, err)
	}
	var ne *NondeterministicArgError
	if _, err := durationRound(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)); !errors.As(err, &ne) || ne.Func != "durationRound" {
		t.Errorf("durationRound of a date: error = %v, want a NondeterministicArgError", err)
	}
	_, err := renderData(t, "data:\n  age: << toDate \"2006-01-02\" \"2020-01-01\" | durationRound >>\n", nil)
	if !errors.As(err, &ne) {
		t.Errorf("rendering durationRound of a date: error = %v, want a NondeterministicArgError", err)
	}
}

// Every unavailable function is refused when the template is parsed, in
// resources and resources_template, in a branch no input takes and in a
// defined template, with an error that names the function and the resource.
func TestRender_unavailableFunctions(t *testing.T) {
	cm := func(value string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "data": map[string]any{"v": value}}
	}
	for _, name := range slices.Sorted(maps.Keys(unavailable)) {
		cases := []struct {
			where string
			spec  Spec
			path  string
		}{
			{"resources", Spec{Resources: []map[string]any{cm("x"), cm("<< " + name + " >>")}}, "resources[1]"},
			{"untaken branch", Spec{Resources: []map[string]any{cm(`<< if false >><< ` + name + ` "a" 1 >><< end >>`)}}, "resources[0]"},
			{"resources_template", Spec{ResourcesTemplate: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  v: << with inputs >><< " + name + " | quote >><< end >>\n"}, "resources_template"},
			{"defined template", Spec{ResourcesTemplate: `<< define "k" >><< ` + name + ` >><< end >>apiVersion: v1
kind: ConfigMap
metadata: {name: c}
`}, "resources_template"},
		}
		for _, tc := range cases {
			t.Run(name+"/"+tc.where, func(t *testing.T) {
				tc.spec.Name, tc.spec.Namespace = "s", "ns"
				tc.spec.Inputs = []map[string]any{{"a": 1}}
				_, err := Render(&tc.spec)
				var ue *UnavailableFuncError
				if !errors.As(err, &ue) {
					t.Fatalf("error = %v, want an UnavailableFuncError", err)
				}
				// Refused at parse: before any input is rendered.
				if got := fielderr.PathOf(err); got != tc.path || strings.Contains(err.Error(), "with inputs[") || ue.Name != name {
					t.Errorf("error %q on %s naming %q, want one on %s naming %q and no input", err, got, ue.Name, tc.path, name)
				}
				if want := fmt.Sprintf("function %q is not available: %s, and the plan renders the templates again at apply", name, unavailable[name]); !strings.Contains(err.Error(), want) {
					t.Errorf("error = %v, want it to contain %q", err, want)
				}
			})
		}
	}
}
