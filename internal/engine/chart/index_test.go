package chart

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart/charttest"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// 500 charts x 20 versions: 10,000 entries, about 20 MB.
const benchCharts, benchVersions = 500, 20

var bigIndex = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "stevedore-bench-index-")
	if err != nil {
		return "", err
	}
	bigIndexDir = dir
	data, err := charttest.GenerateIndex(benchCharts, benchVersions)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "index.yaml")
	return p, os.WriteFile(p, data, 0o644)
})

var bigIndexDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if bigIndexDir != "" {
		os.RemoveAll(bigIndexDir)
	}
	os.Exit(code)
}

func bigIndexPath(tb testing.TB) string {
	tb.Helper()
	p, err := bigIndex()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestParseIndex_matchesHelm parses the same indexes with ParseIndex and
// Helm's repo.LoadIndexFile and compares what resolution uses.
func TestParseIndex_matchesHelm(t *testing.T) {
	small := startRepo(t, testenv.HelmRepoOptions{}, "1.0.0", "1.1.0", "2.0.0-rc.1")
	smallData, err := httpGet(small, "/index.yaml", "", "")
	if err != nil {
		t.Fatal(err)
	}
	smallPath := filepath.Join(t.TempDir(), "index.yaml")
	if err := os.WriteFile(smallPath, smallData, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{smallPath, bigIndexPath(t)} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if p != smallPath && len(data) < 18<<20 {
			t.Fatalf("generated index is %d bytes, want about 20 MB", len(data))
		}
		ours, err := ParseIndex(data)
		if err != nil {
			t.Fatal(err)
		}
		helms, err := repo.LoadIndexFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for name, hv := range helms.Entries {
			ov := ours.Entries[name]
			if len(ov) != len(hv) {
				t.Fatalf("%s: %d versions, Helm has %d", name, len(ov), len(hv))
			}
			byVersion := map[string]Entry{}
			for _, e := range ov {
				byVersion[e.Version] = e
			}
			for _, h := range hv {
				o, ok := byVersion[h.Version]
				if !ok {
					t.Fatalf("%s %s missing", name, h.Version)
				}
				if !o.Created.Equal(h.Created) || o.Digest != h.Digest || o.AppVersion != h.AppVersion || fmt.Sprint(o.URLs) != fmt.Sprint(h.URLs) {
					t.Fatalf("%s %s: %+v, Helm has created %v digest %s app %s urls %v", name, h.Version, o, h.Created, h.Digest, h.AppVersion, h.URLs)
				}
				n++
			}
		}
		if p != smallPath && n != benchCharts*benchVersions {
			t.Fatalf("%d entries, want %d", n, benchCharts*benchVersions)
		}
		// Resolution agrees with Helm's own for ranges both define alike.
		for _, c := range []string{"1.x", "~0.5.0", ">=1.0.0 <1.5.0"} {
			names := make([]string, 0, len(helms.Entries))
			for name := range helms.Entries {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names[:min(len(names), 25)] {
				hv, herr := helms.Get(name, c)
				ov, oerr := selectEntry(name, ours.Entries[name], c)
				if (herr == nil) != (oerr == nil) || (herr == nil && hv.Version != ov.Version) {
					t.Fatalf("%s %s: ours %v %v, Helm's %v %v", name, c, ov, oerr, hv, herr)
				}
			}
		}
	}
	// JSON indexes too.
	js, err := ParseIndex([]byte(`{"apiVersion":"v1","entries":{"a":[{"version":"1.0.0","urls":["a-1.0.0.tgz"],"created":"2026-01-02T03:04:05Z"}]}}`))
	if err != nil || len(js.Entries["a"]) != 1 || js.Entries["a"][0].Created.Year() != 2026 {
		t.Fatalf("json index: %+v %v", js, err)
	}
	if _, err := ParseIndex([]byte("entries: {}\n")); err == nil {
		t.Fatal("an index without apiVersion parsed")
	}
	if _, err := ParseIndex([]byte("<html>")); err == nil {
		t.Fatal("HTML parsed as an index")
	}
}

// bigRepo serves the generated index with an ETag and counts requests.
func bigRepo(tb testing.TB) (string, *atomic.Int64) {
	tb.Helper()
	data, err := os.ReadFile(bigIndexPath(tb))
	if err != nil {
		tb.Fatal(err)
	}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("ETag", `"big"`)
		if r.Header.Get("If-None-Match") == `"big"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write(data)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL, &n
}

// TestResolve_warmPlanOf30ChartsSendsNoRequest resolves 30 charts of the big
// index against a warm cache in a new process (empty memo): no request. The
// time is BenchmarkResolveWarmDisk's to measure; this logs it only.
func TestResolve_warmPlanOf30ChartsSendsNoRequest(t *testing.T) {
	url, requests := bigRepo(t)
	cache := t.TempDir()
	e := New(Options{CacheDir: cache, IndexTTL: 5 * time.Minute})
	ctx := context.Background()
	if _, err := e.Resolve(ctx, Spec{Repository: url, Chart: "podinfo"}); err != nil {
		t.Fatal(err)
	}
	requests.Store(0)
	memoReset()

	start := time.Now()
	e = New(Options{CacheDir: cache, IndexTTL: 5 * time.Minute})
	for i := 0; i < 30; i++ {
		name := fmt.Sprintf("chart-%04d", i*7)
		r, err := e.Resolve(ctx, Spec{Repository: url, Chart: name, Version: "1.x"})
		if err != nil {
			t.Fatal(err)
		}
		if r.Version == "" {
			t.Fatalf("%s: no version", name)
		}
	}
	elapsed := time.Since(start)
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests for a plan within the TTL, want 0", n)
	}
	t.Logf("30 resolves against a warm cache in a new process: %v", elapsed)
}

// BenchmarkIndexColdHelm is the baseline: Helm's LoadIndexFile of the 20 MB
// index, then a lookup.
func BenchmarkIndexColdHelm(b *testing.B) {
	p := bigIndexPath(b)
	b.ReportAllocs()
	for b.Loop() {
		idx, err := repo.LoadIndexFile(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := idx.Get("podinfo", "1.x"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIndexCold is ours on the same file: read, ParseIndex, resolve.
func BenchmarkIndexCold(b *testing.B) {
	p := bigIndexPath(b)
	b.ReportAllocs()
	for b.Loop() {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		idx, err := ParseIndex(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := selectEntry("podinfo", idx.Entries["podinfo"], "1.x"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolveWarmDisk is a resolve in a new provider process within the
// TTL: no request, the compact index read from the cache directory.
func BenchmarkResolveWarmDisk(b *testing.B) {
	url, requests := bigRepo(b)
	e := New(Options{CacheDir: b.TempDir(), IndexTTL: time.Hour})
	ctx := context.Background()
	spec := Spec{Repository: url, Chart: "podinfo", Version: "1.x"}
	if _, err := e.Resolve(ctx, spec); err != nil {
		b.Fatal(err)
	}
	requests.Store(0)
	b.ReportAllocs()
	for b.Loop() {
		memoReset()
		if _, err := e.Resolve(ctx, spec); err != nil {
			b.Fatal(err)
		}
	}
	if requests.Load() != 0 {
		b.Fatal("requests within the TTL")
	}
}

// BenchmarkResolveWarm is a resolve in the same process within the TTL: the
// parsed index comes from the memo, nothing is parsed.
func BenchmarkResolveWarm(b *testing.B) {
	url, requests := bigRepo(b)
	e := New(Options{CacheDir: b.TempDir(), IndexTTL: time.Hour})
	ctx := context.Background()
	spec := Spec{Repository: url, Chart: "podinfo", Version: "1.x"}
	if _, err := e.Resolve(ctx, spec); err != nil {
		b.Fatal(err)
	}
	requests.Store(0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Resolve(ctx, spec); err != nil {
			b.Fatal(err)
		}
	}
	if requests.Load() != 0 {
		b.Fatal("requests within the TTL")
	}
}

// BenchmarkResolveRevalidate is a resolve after the TTL when the index did
// not change: a conditional request answered 304, and the memo.
func BenchmarkResolveRevalidate(b *testing.B) {
	url, _ := bigRepo(b)
	e := New(Options{CacheDir: b.TempDir(), IndexTTL: 0})
	ctx := context.Background()
	spec := Spec{Repository: url, Chart: "podinfo", Version: "1.x"}
	if _, err := e.Resolve(ctx, spec); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Resolve(ctx, spec); err != nil {
			b.Fatal(err)
		}
	}
}

// A repository that cannot be reached (down, or answering 5xx) once its
// index cache has expired: the version resolves from the cached index, marked
// stale with the reason, as source-controller keeps serving its last
// artifact; without a cached index it is an error on repository.
func TestResolve_repositoryDownUsesCachedIndex(t *testing.T) {
	ctx := context.Background()
	var failing atomic.Bool
	repo := startRepo(t, testenv.HelmRepoOptions{}, "1.0.0", "1.1.0")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		http.Redirect(w, r, repo.URL()+r.URL.Path, http.StatusFound)
	}))
	defer srv.Close()
	cache := t.TempDir()
	e := New(Options{CacheDir: cache}) // TTL 0: every resolve asks the repository
	spec := Spec{Repository: srv.URL, Chart: "podinfo", Version: "*"}
	r, err := e.Resolve(ctx, spec)
	if err != nil || r.Version != "1.1.0" || r.Stale != "" {
		t.Fatalf("repository up: %+v, %v", r, err)
	}

	failing.Store(true)
	r, err = e.Resolve(ctx, spec)
	if err != nil || r.Version != "1.1.0" || !strings.Contains(r.Stale, "cannot be reached") || !strings.Contains(r.Stale, "503") {
		t.Fatalf("repository answering 503: %+v, %v", r, err)
	}
	srv.Close()
	r, err = e.Resolve(ctx, spec)
	if err != nil || r.Version != "1.1.0" || !strings.Contains(r.Stale, "connection refused") {
		t.Fatalf("repository down: %+v, %v", r, err)
	}

	_, err = New(Options{CacheDir: t.TempDir()}).Resolve(ctx, spec)
	if fielderr.PathOf(err) != "repository" {
		t.Fatalf("repository down, nothing cached: %v, want an error on repository", err)
	}
}
