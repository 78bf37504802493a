package release

import "testing"

func TestDigestValues_pinnedWhateverTheNumberType(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"nil", nil, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"empty", map[string]any{}, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"nested", map[string]any{
			"replicaCount": 2,
			"image":        map[string]any{"tag": "1.0.0", "repository": "nginx"},
		}, "sha256:08f11b86955217e6b44c45fa137e9e456ce8c6f5d3f667e1e52427254ad818c1"},
		// As read back from Helm storage: JSON numbers are float64.
		{"float64", map[string]any{
			"image":        map[string]any{"repository": "nginx", "tag": "1.0.0"},
			"replicaCount": float64(2),
		}, "sha256:08f11b86955217e6b44c45fa137e9e456ce8c6f5d3f667e1e52427254ad818c1"},
	} {
		if got := DigestValues(tc.values); got != tc.want {
			t.Errorf("%s: DigestValues = %s, want %s", tc.name, got, tc.want)
		}
	}
	// Numbers digest alike whatever their Go type.
	if DigestValues(map[string]any{"n": 1000000}) != DigestValues(map[string]any{"n": float64(1000000)}) {
		t.Error("int and float64 of the same number digest differently")
	}
}

func TestDeepCopyValues_sharesNoNestedValues(t *testing.T) {
	in := map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": 1}}}}
	out := deepCopyValues(in)
	out["a"].(map[string]any)["b"].([]any)[0].(map[string]any)["c"] = 2
	if in["a"].(map[string]any)["b"].([]any)[0].(map[string]any)["c"] != 1 {
		t.Error("the copy shares nested values with its input")
	}
}
