package indexscan

import (
	"sync"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart/charttest"
)

// 500 charts x 20 versions: 10,000 entries, about 20 MB, as Helm writes it.
var bigIndex = sync.OnceValues(func() ([]byte, error) { return charttest.GenerateIndex(500, 20) })

func bigIndexData(tb testing.TB) []byte {
	tb.Helper()
	data, err := bigIndex()
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// BenchmarkScan reads the generated index with the scanner.
func BenchmarkScan(b *testing.B) {
	data := bigIndexData(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := Scan(data); !ok {
			b.Fatal("declined")
		}
	}
}

// BenchmarkYAMLDecode is the baseline: a YAML decoder into the same types.
func BenchmarkYAMLDecode(b *testing.B) {
	data := bigIndexData(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var idx Index
		if err := yaml.Unmarshal(data, &idx); err != nil {
			b.Fatal(err)
		}
	}
}
