package chart

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEncodeIndex_roundTripsThroughDecodeIndex(t *testing.T) {
	data, err := os.ReadFile(bigIndexPath(t))
	if err != nil {
		t.Fatal(err)
	}
	big, err := ParseIndex(data)
	if err != nil {
		t.Fatal(err)
	}
	odd := &Index{Entries: map[string][]Entry{
		"tabbed": {{Version: "1.0.0", AppVersion: "a\tb", URLs: []string{"x.tgz"}}},
	}}
	empty := &Index{Entries: map[string][]Entry{"none": {}, "podinfo": {{Version: "1.0.0", Created: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}}}}
	for name, idx := range map[string]*Index{"generated": big, "tab in a value": odd, "empty and minimal": empty} {
		enc, err := encodeIndex(idx)
		if err != nil {
			t.Fatal(err)
		}
		if wantJSON := name == "tab in a value"; wantJSON != !strings.HasPrefix(string(enc), compactHeader) {
			t.Fatalf("%s: JSON fallback = %v", name, !wantJSON)
		}
		dec, err := decodeIndex(enc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for chart, list := range idx.Entries {
			got := dec.Entries[chart]
			if len(got) != len(list) {
				t.Fatalf("%s: %s has %d entries, want %d", name, chart, len(got), len(list))
			}
			for i := range list {
				w, g := list[i], got[i]
				if len(w.URLs) == 0 && len(g.URLs) == 0 {
					w.URLs, g.URLs = nil, nil
				}
				if !w.Created.Equal(g.Created) {
					t.Fatalf("%s: %s %s created %v, want %v", name, chart, w.Version, g.Created, w.Created)
				}
				w.Created, g.Created = time.Time{}, time.Time{}
				if !reflect.DeepEqual(w, g) {
					t.Fatalf("%s: %s: %+v, want %+v", name, chart, g, w)
				}
			}
		}
	}
	for _, bad := range []string{compactHeader + "e\t1.0.0\t\t\t\n", compactHeader + "c\tx\ne\t1.0.0\n", compactHeader + "c\tx"} {
		if _, err := decodeIndex([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

// BenchmarkDecodeIndex reads the generated 20 MB index back from the cache's
// compact form and from JSON, the form it would have without compact.go.
func BenchmarkDecodeIndex(b *testing.B) {
	data, err := os.ReadFile(bigIndexPath(b))
	if err != nil {
		b.Fatal(err)
	}
	idx, err := ParseIndex(data)
	if err != nil {
		b.Fatal(err)
	}
	compact, err := encodeIndex(idx)
	if err != nil {
		b.Fatal(err)
	}
	asJSON, err := json.Marshal(idx)
	if err != nil {
		b.Fatal(err)
	}
	for name, enc := range map[string][]byte{"compact": compact, "json": asJSON} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeIndex(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
