package release

import (
	"reflect"
	"testing"
)

func TestSetInto(t *testing.T) {
	for _, tc := range []struct {
		name string
		base map[string]any
		sets []SetValue
		want map[string]any
		err  bool
	}{
		{name: "auto types the value", sets: []SetValue{{Name: "image.tag", Value: "2"}, {Name: "on", Value: "true", Type: "auto"}},
			want: map[string]any{"image": map[string]any{"tag": int64(2)}, "on": true}},
		{name: "string keeps it a string", sets: []SetValue{{Name: "image.tag", Value: "2", Type: "string"}},
			want: map[string]any{"image": map[string]any{"tag": "2"}}},
		{name: "escaped dots and list indexes",
			sets: []SetValue{{Name: `annotations.kubernetes\.io/class`, Value: "nginx"}, {Name: "servers[1].port", Value: "80"}},
			want: map[string]any{"annotations": map[string]any{"kubernetes.io/class": "nginx"},
				"servers": []any{nil, map[string]any{"port": int64(80)}}}},
		{name: "literal keeps commas", sets: []SetValue{{Name: "a.b", Value: "x,y=z", Type: "literal"}},
			want: map[string]any{"a": map[string]any{"b": "x,y=z"}}},
		{name: "json", sets: []SetValue{{Name: "a", Value: `{"b":[1,"c"]}`, Type: "json"}},
			want: map[string]any{"a": map[string]any{"b": []any{float64(1), "c"}}}},
		{name: "list as hashicorp/helm's set_list", sets: []SetValue{{Name: "hosts", List: []string{"a", "b"}, IsList: true}},
			want: map[string]any{"hosts": []any{"a", "b"}}},
		{name: "merged into existing values, later wins",
			base: map[string]any{"image": map[string]any{"repository": "nginx", "tag": "1"}},
			sets: []SetValue{{Name: "image.tag", Value: "x"}, {Name: "image.tag", Value: "y"}},
			want: map[string]any{"image": map[string]any{"repository": "nginx", "tag": "y"}}},
		{name: "bad path", sets: []SetValue{{Name: "a[x", Value: "1"}}, err: true},
		{name: "unclosed index", sets: []SetValue{{Name: "a[0", Value: "1"}}, err: true},
		{name: "index without a name", sets: []SetValue{{Name: "[0]", Value: "1", Type: "string"}}, err: true},
		{name: "null is a value", sets: []SetValue{{Name: "a", Value: "null"}}, want: map[string]any{"a": nil}},
		{name: "bad json", sets: []SetValue{{Name: "a", Value: "{", Type: "json"}}, err: true},
		{name: "bad type", sets: []SetValue{{Name: "a", Value: "1", Type: "yaml"}}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := tc.base
			if vals == nil {
				vals = map[string]any{}
			}
			var err error
			for _, s := range tc.sets {
				if err = SetInto(vals, s); err != nil {
					break
				}
			}
			if tc.err {
				if err == nil {
					t.Fatalf("no error; values %v", vals)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(vals, tc.want) {
				t.Fatalf("got %#v, want %#v", vals, tc.want)
			}
		})
	}
}

func TestWriteOnlyValuesDigest(t *testing.T) {
	values := map[string]any{"config": map[string]any{"greeting": "hi", "password": "placeholder"}, "replicas": 1}
	wo := map[string]any{"config": map[string]any{"password": "s3cr3t"}, "token": "t"}
	merged := MergeValues(values, wo)
	if got := merged["config"].(map[string]any)["password"]; got != "s3cr3t" {
		t.Fatalf("merged password %v", got)
	}
	if values["config"].(map[string]any)["password"] != "placeholder" {
		t.Fatal("MergeValues modified its input")
	}
	want := map[string]any{"config": map[string]any{"greeting": "hi"}, "replicas": 1}
	if got := withoutWriteOnly(merged, wo); !reflect.DeepEqual(got, want) {
		t.Fatalf("withoutWriteOnly = %v, want %v", got, want)
	}
	// Another write-only value digests the same; other values do not.
	other := MergeValues(values, map[string]any{"config": map[string]any{"password": "changed"}, "token": "u"})
	if DigestValues(withoutWriteOnly(other, wo)) != DigestValues(withoutWriteOnly(merged, wo)) {
		t.Fatal("a new write-only value changed the digest")
	}
	values["replicas"] = 2
	if DigestValues(withoutWriteOnly(MergeValues(values, wo), wo)) == DigestValues(withoutWriteOnly(merged, wo)) {
		t.Fatal("a new value did not change the digest")
	}
}
