package resourceset

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// fastOutputs are what a template may write for a value: words, numbers in
// every spelling YAML knows, booleans and nulls, quoted strings, YAML syntax,
// several lines and documents.
var fastOutputs = []string{
	"tenant-0001", "flux", "a_b", "a/b", "a.b", "ghcr.io/org/app:v1.2.3", "a:b", "a::b", "a:", "a: b", "a :b",
	"3", "-3", "0", "-0", "+5", "007", "08", "1.10", "1.", ".5", "1e3", "0x1F", "0o17", "0b101", "1_000", "1:20",
	"9223372036854775807", "9223372036854775808", "123456789012345678", "1234567890123456789",
	"2001-12-14", "2001-12-14T21:59:43.10-05:00", ".inf", "-.inf", ".nan", "Infinity", "NaN", "e10", "E1",
	"true", "True", "TRUE", "false", "yes", "Yes", "no", "NO", "y", "Y", "n", "N", "on", "ON", "off", "Off", "o", "t", "f",
	"null", "Null", "NULL", "~", "", " ", "a b", " a", "a ", "\t", "#x", "a#b", "a #b", "'q'", `"q"`, `"3"`, "'true'",
	"x\ny", "x\n", "\nx", "---", "x\n---\ny", "...", "[1, 2]", "[]", "{a: 1}", "{}", "- a", "-", "- ", "a\n- b",
	"!!str 3", "!x", "&a", "*a", "|", ">", "%", "@a", "`a", "<<", "ä", "aä", "a,b", "a[0]", "a{b}", "a?", "?a", "a!",
	"a|b", "a>b", "a%b", "a@b", "a&b", "a*b", "a=b", "a\\b", "a\"b", "a'b", "a\tb", strings.Repeat("x", 200),
	strings.Repeat("long ", 30),
}

// fastResources are resources whose templated strings sit in every place of
// a YAML document, with numbers, nulls and lists around them.
var fastResources = []string{
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  v: << inputs.v >>\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-<< inputs.v >>\n  labels: {a: << inputs.v >>x}\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\nspec:\n  replicas: 3\n  ratio: 1.5\n  none: null\n  flag: true\n" +
		"  list: [1, 2.5, << inputs.v >>, [<< inputs.v >>, {x: << inputs.v >>}], {}, []]\n  empty: ''\n  s: '3'\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  v: 'pre << inputs.v >> post'\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  v: '<< inputs.v >>: quoted because of the colon'\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  v: \"<< inputs.v >>\\nsecond line\"\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  v: '<< inputs.v >> and a literal tail long enough to take the line past eighty columns, so it is folded'\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  v: '<< len `a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d e f g h i j k l m n o p q r s t u` >>'\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  << inputs.v >>: key\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: <<- inputs.v >>\n  b: << inputs.v ->>\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: << $x := inputs.v >>\n  b: << $x >>\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: << define \"t\" >>d-<< inputs.v >><< end >>x\n  b: << template \"t\" >>\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  v: << if eq inputs.v \"3\" >>three<< else >><< inputs.v | quote >><< end >>\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  v: << inputs.v | slugify >>\n  n: << inputs.missing >>\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: << inputs.v >>\n",
	"apiVersion: v1\nkind: << inputs.v >>\nmetadata:\n  name: x\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    stevedore.dev/a: << inputs.v >>\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  v: << inputs.v >>\n  w: no template\n  n: 1\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  v: <</* a comment */>>x\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  ü: << inputs.v >>\n  \"a: b\": << inputs.v >>\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
}

// TestFastRender_sameAsText renders every resource with every output both
// ways: where the fast render gives an object, the text render gives the same
// object, numbers typed alike; and of the outputs of a bare value, the words
// and integers are read fast and no other.
func TestFastRender_sameAsText(t *testing.T) {
	fastCount := map[string]int{}
	for i, src := range fastResources {
		spec := &Spec{Name: "s", Namespace: "ns", Resources: []map[string]any{mustMap(t, src)}}
		r, err := newRenderer(spec)
		if err != nil {
			t.Fatalf("resources %d: %v", i, err)
		}
		for _, v := range fastOutputs {
			in := map[string]any{"v": v}
			var buf bytes.Buffer
			text := r.render(r.resources[0], in, true, &buf)
			if r.fast[0] == nil {
				continue
			}
			o, ok := r.fast[0].render(r, in, &buf)
			if !ok {
				continue
			}
			if i == 0 { // the value is the input
				fastCount[v]++
			}
			if text.err != nil || len(text.objs) != 1 {
				t.Fatalf("resource %d with %q: fast render gave %v, the text render %d objects, error %v", i, v, o.Object, len(text.objs), text.err)
			}
			if !reflect.DeepEqual(o.Object, text.objs[0].Object) {
				t.Fatalf("resource %d with %q:\nfast %#v\ntext %#v", i, v, o.Object, text.objs[0].Object)
			}
		}
	}
	for _, v := range []string{"tenant-0001", "ghcr.io/org/app:v1.2.3", "a:b", "3", "-3", "0", "123456789012345678"} {
		if fastCount[v] == 0 {
			t.Errorf("%q is never rendered fast", v)
		}
	}
	for _, v := range []string{"007", "1.10", "true", "yes", "NO", "null", "~", "", "a b", "a:", "'q'", `"3"`, "x\ny", "---", "-0", "+5",
		"1234567890123456789", "2001-12-14", ".inf", "[1, 2]", "{a: 1}"} {
		if fastCount[v] != 0 {
			t.Errorf("%q is rendered fast, %d times: YAML does not read it as a plain word or integer", v, fastCount[v])
		}
	}
}

// TestFastRender_eligibility: which resources render fast at all.
func TestFastRender_eligibility(t *testing.T) {
	for _, c := range []struct {
		src  string
		fast bool
	}{
		{fastResources[0], true},
		{fastResources[2], true},                                      // numbers, nulls, nested lists around the values
		{fastResources[3], true},                                      // text around the action
		{fastResources[4], false},                                     // quoted in the YAML
		{fastResources[5], false},                                     // several lines
		{fastResources[6], false},                                     // folded over two lines
		{fastResources[7], false},                                     // folded inside the action
		{fastResources[8], false},                                     // a templated key
		{fastResources[9], false},                                     // trim markers reach the YAML around
		{fastResources[10], false},                                    // a variable across values
		{fastResources[12], true},                                     // if/else in one value
		{fastResources[20], true},                                     // nothing to render
		{"apiVersion: v1\nkind: A\nmetadata:\n  name: '<<'\n", false}, // does not parse
	} {
		spec := &Spec{Name: "s", Namespace: "ns", Resources: []map[string]any{mustMap(t, c.src)}}
		r, err := newRenderer(spec)
		if err != nil {
			if c.fast {
				t.Errorf("%q: %v", c.src, err)
			}
			continue
		}
		if got := r.fast[0] != nil; got != c.fast {
			t.Errorf("%q renders fast: %v, want %v", c.src, got, c.fast)
		}
	}
}

// TestRender_fastErrorsAsText: an input the fast render cannot take renders
// as text, errors and all, with the same message.
func TestRender_fastErrorsAsText(t *testing.T) {
	spec := &Spec{Name: "s", Namespace: "ns",
		Inputs:    []map[string]any{{"v": "a"}, {"v": "b"}, {}},
		Resources: []map[string]any{mustMap(t, fastResources[0])}}
	_, err := Render(spec)
	if err == nil || !strings.Contains(err.Error(), "resources[0]") || !strings.Contains(err.Error(), "with inputs[2]") ||
		!strings.Contains(err.Error(), `map has no entry for key "v"`) {
		t.Fatalf("error = %v", err)
	}
	spec.Inputs = []map[string]any{{"v": "a"}, {"v": "a: b"}}
	if _, err := Render(spec); err == nil || !strings.Contains(err.Error(), "with inputs[1]") {
		t.Fatalf("error = %v", err)
	}
	spec.Resources = []map[string]any{mustMap(t, fastResources[14])} // metadata.name
	spec.Inputs = []map[string]any{{"v": "a"}, {"v": "null"}}
	if _, err := Render(spec); err == nil || !strings.Contains(err.Error(), "with inputs[1]") || !strings.Contains(err.Error(), "metadata.name") {
		t.Fatalf("error = %v", err)
	}
}

// FuzzFastRender_sameAsText: for any resource and any output, the fast
// render gives the text render's object or leaves it to the text render.
func FuzzFastRender_sameAsText(f *testing.F) {
	for i, v := range fastOutputs {
		f.Add(fastResources[i%len(fastResources)], v)
	}
	f.Fuzz(func(t *testing.T, src, v string) {
		var res map[string]any
		if err := yaml.Unmarshal([]byte(src), &res); err != nil {
			return
		}
		r, err := newRenderer(&Spec{Name: "s", Namespace: "ns", Resources: []map[string]any{res}})
		if err != nil || r.fast[0] == nil {
			return
		}
		in := map[string]any{"v": v, "n": 3, "l": []any{"a", 1.5}}
		var buf bytes.Buffer
		o, ok := r.fast[0].render(r, in, &buf)
		if !ok {
			return
		}
		text := r.render(r.resources[0], in, true, &buf)
		if text.err != nil || len(text.objs) != 1 || !reflect.DeepEqual(o.Object, text.objs[0].Object) {
			t.Fatalf("fast %#v, text %v %v", o.Object, text.objs, text.err)
		}
	})
}
