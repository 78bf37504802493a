package release

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// TestComposeValues_order pins the one order of the values, which
// composeValues alone layers: values_from in order (target_path set into the
// result so far), then `values` with set, set_list and set_sensitive set
// into it (the inline layer), then values_wo over everything; the config
// digest covers all but values_wo.
func TestComposeValues_order(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "base"}, Data: map[string]string{
		"values.yaml": "a: from\nb: from\nlist: [x, w]\nkeep: from\n",
		"tag":         "from-target",
	}}
	c := fake.NewClientBuilder().WithObjects(cm).Build()
	from := []ValuesReference{{Kind: "ConfigMap", Name: "base", ValuesKey: "values.yaml"}, {Kind: "ConfigMap", Name: "base", ValuesKey: "tag", TargetPath: "image.tag"}}
	for _, tc := range []struct {
		name         string
		spec         Spec
		want, digest map[string]any
	}{
		{name: "nothing: empty values", spec: Spec{}, want: map[string]any{}},
		{name: "values over values_from", spec: Spec{ValuesFrom: from, Values: map[string]any{"a": "values"}},
			want: map[string]any{"a": "values", "b": "from", "list": []any{"x", "w"}, "keep": "from", "image": map[string]any{"tag": "from-target"}}},
		{name: "sets into values, the layer over values_from: a list set replaces values_from's list",
			spec: Spec{ValuesFrom: from, Values: map[string]any{"a": "values"},
				Sets: []SetValue{{Name: "b", Value: "set"}, {Name: "list[0]", Value: "z"}, {Name: "image.tag", Value: "set-tag"}}},
			// A target_path reference is set into the inline layer itself
			// (fluxcd/pkg/chartutil writes into the map it is given), so it
			// wins over a set of the same path, as over `values`.
			want: map[string]any{"a": "values", "b": "set", "list": []any{"z"}, "keep": "from", "image": map[string]any{"tag": "from-target"}}},
		{name: "set, then set_list, then set_sensitive: the last entry wins",
			spec: Spec{Values: map[string]any{"a": "values"},
				Sets: []SetValue{{Name: "a", Value: "set"}, {Name: "a", IsList: true, List: []string{"l1", "l2"}}, {Name: "n", Value: "2"}, {Name: "a", Value: "secret", Sensitive: true}}},
			want: map[string]any{"a": "secret", "n": int64(2)}},
		{name: "set types as Helm's flags",
			spec: Spec{Sets: []SetValue{{Name: "s", Value: "007", Type: "string"}, {Name: "l", Value: "a,b", Type: "literal"}, {Name: "j", Value: `{"k":[1]}`, Type: "json"}}},
			want: map[string]any{"s": "007", "l": "a,b", "j": map[string]any{"k": []any{float64(1)}}}},
		{name: "values_wo over everything, not digested",
			spec: Spec{ValuesFrom: from, Values: map[string]any{"a": "values"}, Sets: []SetValue{{Name: "b", Value: "set"}},
				ValuesWriteOnly: map[string]any{"a": "wo", "secret": "wo"}},
			want:   map[string]any{"a": "wo", "b": "set", "secret": "wo", "list": []any{"x", "w"}, "keep": "from", "image": map[string]any{"tag": "from-target"}},
			digest: map[string]any{"b": "set", "list": []any{"x", "w"}, "keep": "from", "image": map[string]any{"tag": "from-target"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Namespace = "ns"
			values, digested, err := composeValues(context.Background(), c, &tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(values, tc.want) {
				t.Errorf("values\n  %#v\nwant\n  %#v", values, tc.want)
			}
			wantDigest := tc.digest
			if wantDigest == nil {
				wantDigest = tc.want
			}
			if DigestValues(digested) != DigestValues(wantDigest) {
				t.Errorf("digested %#v, want %#v", digested, wantDigest)
			}
		})
	}
}

// TestInlineValues_errorsOnTheEntry: an entry that cannot be set is an error
// on its attribute, one per entry, and a sensitive value is never quoted; the
// other entries are set, and the given values are not written.
func TestInlineValues_errorsOnTheEntry(t *testing.T) {
	in := map[string]any{"a": "values"}
	out, err := InlineValues(in, []SetValue{
		{Name: "ok", Value: "1", Path: "set[0].name"},
		{Name: "bad[x", Value: "v", Path: "set[1].name"},
		{Name: "j", Value: "{not json", Type: "json", Path: "set[2].value"},
		{Name: "s[", Value: "hunter2", Path: "set_sensitive[0].name", Sensitive: true},
	})
	if !reflect.DeepEqual(in, map[string]any{"a": "values"}) || out["ok"] != int64(1) {
		t.Errorf("in %v, out %v", in, out)
	}
	var paths []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var se *SetError
		if !errors.As(e, &se) || se.Summary() != "Invalid set value" {
			t.Fatalf("not a *SetError: %v", e)
		}
		paths = append(paths, fielderr.Attributed(se).AttributePath())
		if !strings.HasPrefix(e.Error(), se.Entry.Path+" = "+`"`+se.Entry.Name+`": `) || strings.Contains(e.Error(), "hunter2") {
			t.Errorf("text %q", e.Error())
		}
	}
	if want := []string{"set[1].name", "set[2].value", "set_sensitive[0].name"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("paths %v, want %v", paths, want)
	}
	if out, err := InlineValues(nil, nil); out != nil || err != nil {
		t.Errorf("nothing: %v %v", out, err)
	}
}
