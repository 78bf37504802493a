package indexscan

import (
	"reflect"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func yamlIndex(t *testing.T, data []byte) (*Index, error) {
	t.Helper()
	var raw Index
	err := yaml.Unmarshal(data, &raw)
	return &raw, err
}

// normalise makes nil and empty URL lists and entry lists compare equal, as
// they are for resolution.
func normalise(r *Index) *Index {
	out := &Index{APIVersion: r.APIVersion, Entries: map[string][]Entry{}}
	for k, list := range r.Entries {
		n := make([]Entry, 0, len(list))
		for _, e := range list {
			if len(e.URLs) == 0 {
				e.URLs = nil
			}
			n = append(n, e)
		}
		out.Entries[k] = n
	}
	return out
}

// TestScan_agreesWithYAML: the line scanner reads what a YAML decoder
// reads, or declines.
func TestScan_agreesWithYAML(t *testing.T) {
	const helmStyle = `apiVersion: v1
entries:
  podinfo:
  - annotations:
      artifacthub.io/changes: |
        - kind: added
          version: 9.9.9
    apiVersion: v2
    appVersion: 6.0.0
    created: "2026-11-22T13:57:00.123456789Z"
    description: A long description that Helm wraps
      over several lines, with colons:and - dashes
      version 7.7.7
    digest: 0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0
    keywords:
    - a
    - b
    maintainers:
    - email: a@example.com
      name: a
    name: podinfo
    urls:
    - charts/podinfo-1.1.0.tgz
    - https://mirror.example.com/podinfo-1.1.0.tgz
    version: 1.1.0
  - apiVersion: v2
    created: "2026-11-22T13:56:00Z"
    name: podinfo
    urls:
    - charts/podinfo-1.0.0.tgz
    version: 1.0.0
  withdep: []
generated: "2026-11-22T13:57:00Z"
serverInfo:
  contextPath: /v1
`
	variants := []struct {
		name    string
		data    string
		scanned bool // the scanner handles it (else: falls back)
	}{
		{"helm style", helmStyle, true},
		{"crlf", strings.ReplaceAll(helmStyle, "\n", "\r\n"), true},
		{"document marker and comments", "---\n# an index\n" + strings.Replace(helmStyle, "    version: 1.0.0\n", "    version: 1.0.0 # first\n\n", 1), true},
		{"yaml.v3 indentation", `apiVersion: v1
entries:
    podinfo:
        - name: podinfo
          version: "1.0.0"
          appVersion: '6.0.0'
          urls:
            - charts/podinfo-1.0.0.tgz
          created: 2026-11-22T13:56:00Z
`, true},
		{"flow urls and quoted keys", `apiVersion: "v1"
entries:
  "my chart":
  - {name: x}
`, false},
		{"flow urls", `apiVersion: v1
entries:
  'podinfo':
  - name: podinfo
    urls: [charts/a.tgz, "charts/b.tgz"]
    version: 2.0.0
    appVersion: null
`, true},
		{"anchor and alias", `apiVersion: v1
entries:
  podinfo:
  - version: &v 1.0.0
    appVersion: *v
`, false},
		{"block scalar version", `apiVersion: v1
entries:
  podinfo:
  - version: |
      1.0.0
`, false},
		{"multi-line version", `apiVersion: v1
entries:
  podinfo:
  - version: 1.0.0
      -rc.1
`, false},
		{"escaped double quotes", `apiVersion: v1
entries:
  podinfo:
  - version: "1.0.\u0030"
`, false},
		{"duplicate chart", `apiVersion: v1
entries:
  podinfo:
  - version: 1.0.0
  podinfo:
  - version: 2.0.0
`, false},
		{"tab indentation", "apiVersion: v1\nentries:\n\tpodinfo: []\n", false},
		{"empty entries", "apiVersion: v1\nentries: {}\ngenerated: x\n", true},
		{"byte order mark", "\ufeff" + helmStyle, true},
		{"duplicate top-level key", "apiVersion: v1\nentries: {}\napiVersion: v2\n", false},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			want, werr := yamlIndex(t, []byte(v.data))
			got, ok := Scan([]byte(v.data))
			if ok != v.scanned {
				t.Fatalf("scanned = %v, want %v", ok, v.scanned)
			}
			if !ok {
				return
			}
			if werr != nil {
				t.Fatalf("the scanner accepted what YAML rejects: %v", werr)
			}
			if g, w := normalise(got), normalise(want); !reflect.DeepEqual(g, w) {
				t.Fatalf("scanner:\n%+v\nYAML:\n%+v", g, w)
			}
		})
	}
}

func TestScan_agreesWithYAMLOnLargeIndex(t *testing.T) {
	data := bigIndexData(t)
	got, ok := Scan(data)
	if !ok {
		t.Fatal("the scanner declined Helm's own output")
	}
	want, err := yamlIndex(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalise(got), normalise(want)) {
		t.Fatal("scanner and YAML differ on the generated index")
	}
}

// FuzzScan_agreesWithYAML: whenever both the scanner and a YAML decoder accept
// an input, they read the same index.
func FuzzScan_agreesWithYAML(f *testing.F) {
	f.Add("apiVersion: v1\nentries:\n  a:\n  - name: a\n    version: 1.0.0\n    urls:\n    - a.tgz\n")
	f.Add("apiVersion: v1\nentries:\n    a:\n        - version: '1.0'\n          urls:\n            - x\n          created: \"2026-01-01T00:00:00Z\"\n")
	f.Add("apiVersion: v1\nentries:\n  a:\n  - description: x\n      y\n    version: 2.0.0 # c\n    digest: \"ab\"\n  b: []\n")
	f.Fuzz(func(t *testing.T, data string) {
		got, ok := Scan([]byte(data))
		if !ok {
			return
		}
		var want Index
		if err := yaml.Unmarshal([]byte(data), &want); err != nil {
			return
		}
		if want.Entries == nil {
			want.Entries = map[string][]Entry{}
		}
		if g, w := normalise(got), normalise(&want); !reflect.DeepEqual(g, w) {
			t.Fatalf("input %q:\nscanner %+v\nYAML    %+v", data, g, w)
		}
	})
}
