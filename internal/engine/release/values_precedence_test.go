package release

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	fluxchartutil "github.com/fluxcd/pkg/chartutil"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// TestComposeValues_asHelmController pins which of `values` and a
// `values_from` entry wins, and that it is what helm-controller computes:
// for each case, composeValues gives what fluxcd/pkg/chartutil's
// ChartValuesFromReferences gives when called as helm-controller calls it
// (the HelmRelease's values freshly decoded from JSON, its valuesFrom
// references), and the case's expected values, which the docs describe:
// `values` wins, except where a target_path lands in a map that `values` has
// and no earlier entry has, where the target_path value is written into
// `values` itself and wins, over later entries too. literal sets the value
// verbatim (helm --set-literal).
func TestComposeValues_asHelmController(t *testing.T) {
	const ns = "ns"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}, Data: map[string]string{
		"values.yaml": "a: from\nimage:\n  repository: from-repo\n  tag: from-doc\n",
		"later.yaml":  "image:\n  tag: later-doc\n",
		"tag":         "from-target",
		"raw":         `{"k": [1, 2]},x=y`,
		"quoted":      `"007"`,
	}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sec"}, Data: map[string][]byte{"token": []byte("a,b,c")}}
	c := fake.NewClientBuilder().WithObjects(cm, secret).Build()
	ref := func(key, target string, literal bool) ValuesReference {
		return ValuesReference{Kind: "ConfigMap", Name: "cm", ValuesKey: key, TargetPath: target, Literal: literal}
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		from   []ValuesReference
		want   map[string]any
	}{{
		name:   "values over a whole document",
		values: map[string]any{"a": "values", "image": map[string]any{"tag": "values"}},
		from:   []ValuesReference{ref("values.yaml", "", false)},
		want:   map[string]any{"a": "values", "image": map[string]any{"repository": "from-repo", "tag": "values"}},
	}, {
		name:   "values over a top-level target_path",
		values: map[string]any{"a": "values"},
		from:   []ValuesReference{ref("tag", "a", false)},
		want:   map[string]any{"a": "values"},
	}, {
		name:   "target_path wins inside a map only values has",
		values: map[string]any{"image": map[string]any{"tag": "values", "pullPolicy": "Always"}},
		from:   []ValuesReference{ref("tag", "image.tag", false)},
		want:   map[string]any{"image": map[string]any{"tag": "from-target", "pullPolicy": "Always"}},
	}, {
		name:   "there it wins over a later entry too",
		values: map[string]any{"image": map[string]any{"tag": "values"}},
		from:   []ValuesReference{ref("tag", "image.tag", false), ref("later.yaml", "", false)},
		want:   map[string]any{"image": map[string]any{"tag": "from-target"}},
	}, {
		name:   "values wins inside a map an earlier entry has",
		values: map[string]any{"image": map[string]any{"tag": "values"}},
		from:   []ValuesReference{ref("values.yaml", "", false), ref("tag", "image.tag", false)},
		want:   map[string]any{"a": "from", "image": map[string]any{"repository": "from-repo", "tag": "values"}},
	}, {
		name: "a target_path values does not set",
		from: []ValuesReference{ref("tag", "image.tag", false)},
		want: map[string]any{"image": map[string]any{"tag": "from-target"}},
	}, {
		name: "literal: verbatim, as helm --set-literal",
		from: []ValuesReference{ref("raw", "config.json", true), ref("quoted", "q", true),
			{Kind: "Secret", Name: "sec", ValuesKey: "token", TargetPath: "auth.token", Literal: true}},
		want: map[string]any{"config": map[string]any{"json": `{"k": [1, 2]},x=y`}, "q": `"007"`, "auth": map[string]any{"token": "a,b,c"}},
	}, {
		name: "without literal: Helm's --set parser",
		from: []ValuesReference{ref("quoted", "q", false)},
		want: map[string]any{"q": "007"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &Spec{Namespace: ns, Values: tc.values, ValuesFrom: tc.from}
			got, _, err := composeValues(context.Background(), c, spec.withDefaults())
			if err != nil {
				t.Fatal(err)
			}

			// helm-controller: obj.GetValues() decodes spec.values anew.
			var inline map[string]any
			raw, err := json.Marshal(tc.values)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &inline); err != nil {
				t.Fatal(err)
			}
			refs := make([]meta.ValuesReference, 0, len(tc.from))
			for _, r := range tc.from {
				refs = append(refs, meta.ValuesReference{Kind: r.Kind, Name: r.Name, ValuesKey: r.ValuesKey, TargetPath: r.TargetPath, Literal: r.Literal})
			}
			hc, err := fluxchartutil.ChartValuesFromReferences(context.Background(), logr.Discard(), c, ns, inline, refs...)
			if err != nil {
				t.Fatal(err)
			}
			if g, h := asJSON(t, got), asJSON(t, hc.AsMap()); !reflect.DeepEqual(g, h) {
				t.Errorf("stevedore composes\n  %v\nhelm-controller\n  %v", g, h)
			}
			if g, w := asJSON(t, got), asJSON(t, tc.want); !reflect.DeepEqual(g, w) {
				t.Errorf("values\n  %v\nwant\n  %v", g, w)
			}
			if tc.values != nil && !reflect.DeepEqual(asJSON(t, tc.values), asJSON(t, spec.Values)) {
				t.Errorf("the spec's values were written: %v", spec.Values)
			}
		})
	}
	// Without literal, a value that --set cannot parse is an error on the
	// entry's target_path, the Secret's data not quoted.
	spec := &Spec{Namespace: ns, ValuesFrom: []ValuesReference{ref("quoted", "q", false),
		{Kind: "Secret", Name: "sec", ValuesKey: "token", TargetPath: "auth.token"}}}
	_, _, err := composeValues(context.Background(), c, spec.withDefaults())
	var fe *fielderr.Error
	if !errors.As(err, &fe) || fe.Path != "values_from[1].target_path" || strings.Contains(err.Error(), "a,b,c") {
		t.Errorf("a Secret value --set cannot parse: %v", err)
	}
}

// asJSON is v through JSON, as helm-controller's values are (numbers become
// float64), for comparisons.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
