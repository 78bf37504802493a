package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart/charttest"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

func podinfoDir() string { return filepath.Join(testenv.ChartsDir(), "podinfo") }

func startRepo(t *testing.T, opts testenv.HelmRepoOptions, versions ...string) *testenv.HelmRepo {
	t.Helper()
	r, err := testenv.StartHelmRepo(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	for _, v := range versions {
		if err := r.PublishDir(podinfoDir(), v); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// clock is a settable clock for TTL tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newEngine(t *testing.T, ttl time.Duration) (*Engine, *clock) {
	t.Helper()
	c := &clock{t: time.Now()}
	return New(Options{CacheDir: t.TempDir(), IndexTTL: ttl, Now: c.now}), c
}

func TestResolve_httpIndexCachedWithinTTL(t *testing.T) {
	repo := startRepo(t, testenv.HelmRepoOptions{}, "1.0.0", "1.1.0", "2.0.0-rc.1")
	e, clk := newEngine(t, 5*time.Minute)
	ctx := context.Background()
	spec := Spec{Repository: repo.URL(), Chart: "podinfo", Version: "1.x"}

	r, err := e.Resolve(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != "1.1.0" || r.AppVersion != "6.0.0" || r.Revision != "1.1.0" {
		t.Fatalf("resolved %+v, want 1.1.0 (app 6.0.0)", r)
	}
	if n := repo.RequestsFor("/index.yaml"); n != 1 {
		t.Fatalf("%d index requests, want 1", n)
	}

	// Within the TTL: no request at all, even from a new engine (a new
	// provider process) on the same cache directory, with the memo cleared.
	repo.ResetCounters()
	if err := repo.PublishDir(podinfoDir(), "1.2.0"); err != nil {
		t.Fatal(err)
	}
	memoReset()
	e2 := New(Options{CacheDir: e.cacheDir, IndexTTL: 5 * time.Minute, Now: clk.now})
	for _, eng := range []*Engine{e, e2} {
		r, err = eng.Resolve(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		if r.Version != "1.1.0" {
			t.Fatalf("within the TTL resolved %s, want the cached 1.1.0", r.Version)
		}
	}
	if n := repo.Requests(); n != 0 {
		t.Fatalf("%d requests within the TTL, want 0", n)
	}

	// After the TTL: a conditional request that sees the new version.
	clk.add(6 * time.Minute)
	r, err = e.Resolve(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != "1.2.0" {
		t.Fatalf("after the TTL resolved %s, want 1.2.0", r.Version)
	}
	if n := repo.RequestsFor("/index.yaml"); n != 1 {
		t.Fatalf("%d index requests after the TTL, want 1", n)
	}

	// After the TTL again, nothing changed: the server answers 304 and the
	// cached index is used.
	clk.add(6 * time.Minute)
	memoReset()
	if r, err = e.Resolve(ctx, spec); err != nil || r.Version != "1.2.0" {
		t.Fatalf("revalidated resolve: %+v, %v", r, err)
	}
	if n := repo.RequestsFor("/index.yaml"); n != 2 {
		t.Fatalf("%d index requests, want 2", n)
	}

	// A clock set back makes the cache stale rather than fresh forever.
	clk.add(-time.Hour)
	if _, err = e.Resolve(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if n := repo.RequestsFor("/index.yaml"); n != 3 {
		t.Fatalf("%d index requests after the clock went back, want 3", n)
	}

	// "*" is the highest stable version: the release candidate is skipped.
	spec.Version = "*"
	if r, err = e.Resolve(ctx, spec); err != nil || r.Version != "1.2.0" {
		t.Fatalf("resolve *: %+v, %v", r, err)
	}
	spec.Version = "9.*"
	_, err = e.Resolve(ctx, spec)
	if err == nil || !strings.Contains(err.Error(), "no 'podinfo' chart with version matching '9.*' found") || fielderr.PathOf(err) != "version" {
		t.Fatalf("resolve 9.*: %v (field %q)", err, fielderr.PathOf(err))
	}
}

func memoReset() {
	memo.Lock()
	defer memo.Unlock()
	memo.m = map[string]*Index{}
}

func TestBuild_httpWithBasicAuthAndTLS(t *testing.T) {
	repo := startRepo(t, testenv.HelmRepoOptions{Username: "u", Password: "p", TLS: true}, "1.0.0")
	e, _ := newEngine(t, time.Minute)
	ctx := context.Background()
	spec := Spec{Repository: repo.URL(), Chart: "podinfo", Auth: Auth{Username: "u", Password: "p", CAPEM: repo.CAPEM()}}

	a, err := e.Build(ctx, spec, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if a.Digest != "sha256:"+hex.EncodeToString(sum[:]) || a.Size != int64(len(data)) {
		t.Fatalf("artifact digest %s size %d do not describe %s", a.Digest, a.Size, a.Path)
	}
	if filepath.Base(a.Path) != "podinfo-1.0.0.tgz" || a.URL != "file://"+a.Path || a.Revision != "1.0.0" || a.AppVersion != "6.0.0" {
		t.Fatalf("artifact %+v", a)
	}
	// Without values files the archive is the repository's, byte for byte.
	resp, err := httpGet(repo, "/charts/podinfo-1.0.0.tgz", "u", "p")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(resp, data) {
		t.Fatal("stored archive differs from the repository's")
	}
	if !e.Present(a.Path, a.Digest) {
		t.Fatal("Present = false for the stored artifact")
	}

	// Wrong password: 401, named as such.
	bad := spec
	bad.Auth.Password = "wrong"
	e2, _ := newEngine(t, time.Minute)
	_, err = e2.Resolve(ctx, bad)
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "401") || fielderr.PathOf(err) != "repository" {
		t.Fatalf("wrong password: %v", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Fatalf("the error leaks the password: %v", err)
	}
	// No CA: the certificate is not trusted.
	noCA := spec
	noCA.Auth.CAPEM = nil
	if _, err = e2.Resolve(ctx, noCA); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted certificate: %v", err)
	}
	// Unreachable.
	down := startRepo(t, testenv.HelmRepoOptions{})
	url := down.URL()
	down.Close()
	_, err = e2.Resolve(ctx, Spec{Repository: url, Chart: "podinfo"})
	if err == nil || !strings.Contains(err.Error(), "failed to fetch "+url+"/index.yaml") || fielderr.PathOf(err) != "repository" ||
		!errors.Is(err, ErrUnreachable) {
		t.Fatalf("unreachable: %v", err)
	}
	// A server error: unreachable too (what the repository holds is
	// unknown); a denial is not.
	failing := startRepo(t, testenv.HelmRepoOptions{}, "1.0.0")
	failing.SetFailure(http.StatusServiceUnavailable)
	if _, err = e2.Resolve(ctx, Spec{Repository: failing.URL(), Chart: "podinfo"}); err == nil || !strings.Contains(err.Error(), "503") ||
		!errors.Is(err, ErrUnreachable) {
		t.Fatalf("503: %v", err)
	}
	if _, err = e2.Resolve(ctx, bad); errors.Is(err, ErrUnreachable) {
		t.Fatalf("a wrong password counts as unreachable: %v", err)
	}
}

func httpGet(repo *testenv.HelmRepo, path, user, pass string) ([]byte, error) {
	client, err := httpClient(Auth{CAPEM: repo.CAPEM()})
	if err != nil {
		return nil, err
	}
	req, _ := http.NewRequest(http.MethodGet, repo.URL()+path, nil)
	req.SetBasicAuth(user, pass)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func TestBuild_valuesFilesDeterministic(t *testing.T) {
	repo := startRepo(t, testenv.HelmRepoOptions{}, "1.0.0")
	ctx := context.Background()
	spec := Spec{Repository: repo.URL(), Chart: "podinfo", ValuesFiles: []string{"values.yaml", "values-prod.yaml"}}

	var digests []string
	for i := 0; i < 2; i++ {
		e, _ := newEngine(t, time.Minute) // a new cache directory each time
		a, err := e.Build(ctx, spec, "1.0.0")
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, a.Digest)

		data, err := os.ReadFile(a.Path)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := loader.LoadArchive(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if got := ch.Values["replicaCount"]; fmt.Sprint(got) != "2" {
			t.Fatalf("merged replicaCount = %v, want 2 (values-prod.yaml wins)", got)
		}
		valuesYAML, err := yaml.Marshal(ch.Values)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(valuesYAML)
		want := "1.0.0+" + hex.EncodeToString(sum[:])[:12]
		if a.Revision != want || ch.Metadata.Version != want {
			t.Fatalf("revision %s, packaged version %s, want %s", a.Revision, ch.Metadata.Version, want)
		}
		if a.Version != "1.0.0" || filepath.Base(a.Path) != "podinfo-"+want+".tgz" {
			t.Fatalf("artifact %+v", a)
		}
		if strings.Join(a.ObservedValuesFiles, ",") != "values.yaml,values-prod.yaml" {
			t.Fatalf("observed values files %v", a.ObservedValuesFiles)
		}
		assertFixedHeaders(t, data)
	}
	if digests[0] != digests[1] {
		t.Fatalf("two builds in two cache directories gave %s and %s", digests[0], digests[1])
	}

	// A missing values file is an error, unless ignored.
	e, _ := newEngine(t, time.Minute)
	spec.ValuesFiles = []string{"values-prod.yaml", "values-missing.yaml"}
	_, err := e.Build(ctx, spec, "1.0.0")
	if err == nil || !strings.Contains(err.Error(), "no values file found at path 'values-missing.yaml'") || fielderr.PathOf(err) != "values_files[1]" {
		t.Fatalf("missing values file: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(e.cacheDir, "artifacts")); len(entries) != 0 {
		t.Fatalf("a failed build stored %d artifacts", len(entries))
	}
	spec.IgnoreMissingValuesFiles = true
	a, err := e.Build(ctx, spec, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(a.ObservedValuesFiles, ",") != "values-prod.yaml" {
		t.Fatalf("observed values files %v, want only values-prod.yaml", a.ObservedValuesFiles)
	}
}

// assertFixedHeaders checks that every tar header of a packaged chart has
// the fixed time, mode and owner, and that names are sorted.
func assertFixedHeaders(t *testing.T, data []byte) {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !gz.ModTime.IsZero() || gz.Name != "" {
		t.Errorf("gzip header carries time %v and name %q", gz.ModTime, gz.Name)
	}
	tr := tar.NewReader(gz)
	prev := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(packageTime) || h.Mode != 0o644 || h.Uid != 0 || h.Gid != 0 || h.Uname != "" {
			t.Errorf("%s: header %+v not fixed", h.Name, h)
		}
		if h.Name <= prev {
			t.Errorf("%s after %s: not sorted", h.Name, prev)
		}
		prev = h.Name
	}
}

func TestBuild_localWithDependency(t *testing.T) {
	ctx := context.Background()
	// A copy outside any git work tree, so the revision is a digest of the
	// files.
	src := t.TempDir()
	testenv.CopyDir(t, testenv.ChartsDir(), src)
	dir := filepath.Join(src, "withdep")
	spec := Spec{SourcePath: dir}

	e, _ := newEngine(t, time.Minute)
	r, err := e.Resolve(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.ChartName != "withdep" || r.Version != "0.1.0" || r.Revision != "0.1.0" || !strings.HasPrefix(r.SourceRevision, "sha256:") {
		t.Fatalf("resolved %+v", r)
	}
	a, err := e.Build(ctx, spec, r.Version)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if deps := ch.Dependencies(); len(deps) != 1 || deps[0].Name() != "podinfo" || deps[0].Metadata.Version != "1.0.0" {
		t.Fatalf("packaged dependencies %v, want podinfo 1.0.0", deps)
	}
	assertFixedHeaders(t, data)

	// Same source, another cache: same digest.
	e2, _ := newEngine(t, time.Minute)
	a2, err := e2.Build(ctx, spec, r.Version)
	if err != nil {
		t.Fatal(err)
	}
	if a2.Digest != a.Digest {
		t.Fatalf("local builds differ: %s vs %s", a.Digest, a2.Digest)
	}

	// Revision strategy: the digest of the files, first 12 characters.
	spec.ReconcileStrategy = StrategyRevision
	r, err = e.Resolve(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := "0.1.0+" + strings.TrimPrefix(r.SourceRevision, "sha256:")[:12]; r.Revision != want {
		t.Fatalf("revision %s, want %s", r.Revision, want)
	}
	// A change to a dependency's files changes the source revision.
	if err := os.WriteFile(filepath.Join(src, "podinfo", "templates", "extra.yaml"), []byte("# extra\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r2, err := e.Resolve(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if r2.SourceRevision == r.SourceRevision {
		t.Fatal("source revision unchanged after a dependency changed")
	}

	// In a git work tree: HEAD.
	sha := strings.Repeat("ab12", 10)
	gitDir := filepath.Join(src, ".git")
	mustWrite(t, filepath.Join(gitDir, "HEAD"), "ref: refs/heads/main\n")
	mustWrite(t, filepath.Join(gitDir, "refs", "heads", "main"), sha+"\n")
	r, err = e.Resolve(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.SourceRevision != "main@sha1:"+sha || r.Revision != "0.1.0+"+sha[:12] {
		t.Fatalf("git revision %s, revision %s", r.SourceRevision, r.Revision)
	}
	a, err = e.Build(ctx, spec, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if a.Revision != "0.1.0+"+sha[:12] || filepath.Base(a.Path) != "withdep-0.1.0+"+sha[:12]+".tgz" {
		t.Fatalf("artifact %+v", a)
	}
	// Packed refs.
	os.Remove(filepath.Join(gitDir, "refs", "heads", "main"))
	sha2 := strings.Repeat("cd34", 10)
	mustWrite(t, filepath.Join(gitDir, "packed-refs"), "# pack-refs with: peeled fully-peeled sorted\n"+sha2+" refs/heads/main\n")
	if r, err = e.Resolve(ctx, spec); err != nil || r.SourceRevision != "main@sha1:"+sha2 {
		t.Fatalf("packed ref: %+v %v", r, err)
	}

	// Values files of a local source are relative to the directory; with
	// Revision both parts are in the metadata.
	spec.ValuesFiles = []string{"values.yaml", "../podinfo/values-prod.yaml"}
	if _, err := e.Resolve(ctx, spec); err == nil || !strings.Contains(err.Error(), "outside the chart source") {
		t.Fatalf("values file outside: %v", err)
	}
	mustWrite(t, filepath.Join(dir, "values-prod.yaml"), "podinfo:\n  replicaCount: 3\n")
	spec.ValuesFiles = []string{"values.yaml", "values-prod.yaml"}
	r, err = e.Resolve(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Revision, "0.1.0+"+sha2[:12]+".") || len(r.Revision) != len("0.1.0+")+12+1+12 {
		t.Fatalf("revision with values files %s", r.Revision)
	}

	// A chart name that is not the directory's.
	_, err = e.Resolve(ctx, Spec{SourcePath: dir, Chart: "other"})
	if err == nil || !strings.Contains(err.Error(), "holds chart 'withdep'") {
		t.Fatalf("chart mismatch: %v", err)
	}
	// Not a chart.
	_, err = e.Resolve(ctx, Spec{SourcePath: t.TempDir()})
	if err == nil || fielderr.PathOf(err) != "source_path" || !strings.Contains(err.Error(), "not a valid chart") {
		t.Fatalf("not a chart: %v", err)
	}
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// badRepo serves an index with one chart whose archive is data.
func badRepo(t *testing.T, name string, data []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/index.yaml":
			fmt.Fprintf(w, "apiVersion: v1\nentries:\n  %s:\n  - name: %s\n    version: 1.0.0\n    urls: [charts/%s-1.0.0.tgz]\n", name, name, name)
		case "/charts/" + name + "-1.0.0.tgz":
			w.Write(data)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func tgz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(content))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func TestBuild_rejectsBadArchives(t *testing.T) {
	ctx := context.Background()
	chartYAML := "apiVersion: v2\nname: evil\nversion: 1.0.0\n"
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"not a chart":      {[]byte("<html>hello</html>"), "is not a valid chart archive"},
		"parent directory": {tgz(t, map[string]string{"evil/Chart.yaml": chartYAML, "evil/../../etc/passwd": "x"}), "illegally references parent directory"},
		// Helm 4 limits the decompressed size of the whole chart (it no
		// longer limits each file).
		"too large chart": {tgz(t, map[string]string{"evil/Chart.yaml": chartYAML,
			"evil/templates/big.yaml": strings.Repeat("x", int(archive.MaxDecompressedChartSize)+1)}), "decompressed chart is larger than the maximum size"},
		"no Chart.yaml": {tgz(t, map[string]string{"evil/values.yaml": "a: 1\n"}), "Chart.yaml file is missing"},
	} {
		t.Run(name, func(t *testing.T) {
			e, _ := newEngine(t, time.Minute)
			_, err := e.Build(ctx, Spec{Repository: badRepo(t, "evil", tc.data), Chart: "evil"}, "1.0.0")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "chart 'evil'") {
				t.Fatalf("error %v, want one naming chart 'evil' and containing %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(filepath.Join(e.cacheDir, "artifacts")); len(entries) != 0 {
				t.Fatal("a rejected archive was stored")
			}
		})
	}
	// The index's digest must match the archive.
	good, err := os.ReadFile(mustPackage(t, "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/index.yaml" {
			fmt.Fprintf(w, "apiVersion: v1\nentries:\n  podinfo:\n  - version: 1.0.0\n    digest: %064x\n    urls: [podinfo.tgz]\n", 1)
			return
		}
		w.Write(good)
	}))
	defer srv.Close()
	e, _ := newEngine(t, time.Minute)
	if _, err := e.Build(ctx, Spec{Repository: srv.URL, Chart: "podinfo"}, "1.0.0"); !errors.Is(err, ErrDigestMismatch) || !strings.Contains(err.Error(), "refusing it") {
		t.Fatalf("digest mismatch: %v", err)
	}
}

func mustPackage(t *testing.T, version string) string {
	t.Helper()
	p, err := testenv.PackageChart(podinfoDir(), version, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEngine_ociResolveBuildAndVerify(t *testing.T) {
	reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	digests := map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0+build.7", "2.0.0-rc.1"} {
		_, d, err := reg.PushChart(mustPackage(t, v), "charts")
		if err != nil {
			t.Fatal(err)
		}
		digests[v] = d
	}
	ctx := context.Background()
	auth := Auth{Username: "u", Password: "p"}
	spec := Spec{Repository: reg.URL() + "/charts", Chart: "podinfo", Auth: auth}
	e, _ := newEngine(t, time.Minute)

	for ver, want := range map[string]string{"*": "1.2.0+build.7", "1.1.x": "1.1.0", "1.0.0": "1.0.0", ">=2.0.0-0": "2.0.0-rc.1"} {
		spec.Version = ver
		r, err := e.Resolve(ctx, spec)
		if err != nil {
			t.Fatalf("%s: %v", ver, err)
		}
		if r.Version != want {
			t.Fatalf("%s resolved %s, want %s", ver, r.Version, want)
		}
	}
	spec.Version = "9.*"
	if _, err := e.Resolve(ctx, spec); err == nil || !strings.Contains(err.Error(), "no 'podinfo' chart with version matching '9.*' found") {
		t.Fatalf("9.*: %v", err)
	}
	a, err := e.Build(ctx, spec, "1.2.0+build.7")
	if err != nil {
		t.Fatal(err)
	}
	if a.Version != "1.2.0+build.7" || a.AppVersion != "6.0.0" || a.Verified {
		t.Fatalf("artifact %+v", a)
	}
	// Not there.
	if _, err := e.Build(ctx, spec, "3.0.0"); err == nil || !strings.Contains(err.Error(), "failed to pull chart 'podinfo' version '3.0.0'") {
		t.Fatalf("missing version: %v", err)
	}
	// Bad credentials.
	bad := spec
	bad.Auth.Password = "nope"
	bad.Version = "*"
	e2, _ := newEngine(t, time.Minute)
	if _, err := e2.Resolve(ctx, bad); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("bad credentials: %v", err)
	}

	// cosign: signed with A, verified with [B, A], refused with [B].
	keyA, err := charttest.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	keyB, err := charttest.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	if err := keyA.SignWithAuth(reg.Host()+"/charts/podinfo@"+digests["1.1.0"], "u", "p"); err != nil {
		t.Fatal(err)
	}
	spec.Verify = &Verify{Provider: "cosign", PublicKeys: [][]byte{keyB.PublicPEM, keyA.PublicPEM}}
	a, err = e.Build(ctx, spec, "1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Verified {
		t.Fatal("verified = false")
	}
	e3, _ := newEngine(t, time.Minute)
	spec.Verify.PublicKeys = [][]byte{keyB.PublicPEM}
	_, err = e3.Build(ctx, spec, "1.1.0")
	if !errors.Is(err, ErrVerification) || !strings.Contains(err.Error(), "no matching signatures were found") || fielderr.PathOf(err) != "verify" {
		t.Fatalf("unknown key: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(e3.cacheDir, "artifacts")); len(entries) != 0 {
		t.Fatal("an unverified chart was stored")
	}
	// Unsigned version.
	spec.Verify.PublicKeys = [][]byte{keyA.PublicPEM}
	if _, err = e3.Build(ctx, spec, "1.0.0"); !errors.Is(err, ErrVerification) {
		t.Fatalf("unsigned: %v", err)
	}
}

func TestRemove_staysInCache(t *testing.T) {
	e, _ := newEngine(t, time.Minute)
	outside := filepath.Join(t.TempDir(), "keep.tgz")
	mustWrite(t, outside, "x")
	if err := e.Remove(outside); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatal("Remove deleted a file outside the cache")
	}
}

func TestBuild_httpWithClientCertificate(t *testing.T) {
	repo := startRepo(t, testenv.HelmRepoOptions{ClientCA: true}, "1.0.0")
	certPEM, keyPEM, err := repo.ClientCertPEM("stevedore")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, _ := newEngine(t, time.Minute)
	spec := Spec{Repository: repo.URL(), Chart: "podinfo", Auth: Auth{CAPEM: repo.CAPEM(), CertPEM: certPEM, KeyPEM: keyPEM}}
	if _, err := e.Build(ctx, spec, "1.0.0"); err != nil {
		t.Fatal(err)
	}
	spec.Auth.CertPEM, spec.Auth.KeyPEM = nil, nil
	e2, _ := newEngine(t, time.Minute)
	if _, err := e2.Resolve(ctx, spec); err == nil {
		t.Fatal("a repository that wants a client certificate answered without one")
	}
	spec.Auth.CertPEM = certPEM
	if _, err := e2.Resolve(ctx, spec); err == nil || fielderr.PathOf(err) != "cert_pem" {
		t.Fatalf("cert without key: %v", err)
	}
}

// TestBuild_credentialsOnlyToTheRepositoryHost: credentials go to chart URLs on
// the repository's host only, unless PassCredentials.
func TestBuild_credentialsOnlyToTheRepositoryHost(t *testing.T) {
	data, err := os.ReadFile(mustPackage(t, "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	var sawAuth atomicString
	charts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawAuth.set(r.Header.Get("Authorization"))
		w.Write(data)
	}))
	defer charts.Close()
	index := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "u" || p != "p" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "apiVersion: v1\nentries:\n  podinfo:\n  - version: 1.0.0\n    urls: [%s/podinfo-1.0.0.tgz]\n", charts.URL)
	}))
	defer index.Close()
	ctx := context.Background()
	spec := Spec{Repository: index.URL, Chart: "podinfo", Auth: Auth{Username: "u", Password: "p"}}
	e, _ := newEngine(t, time.Minute)
	if _, err := e.Build(ctx, spec, "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if got := sawAuth.get(); got != "" {
		t.Fatalf("credentials sent to another host: %q", got)
	}
	spec.Auth.PassCredentials = true
	e2, _ := newEngine(t, time.Minute)
	if _, err := e2.Build(ctx, spec, "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if got := sawAuth.get(); !strings.HasPrefix(got, "Basic ") {
		t.Fatalf("pass_credentials: Authorization %q", got)
	}
}

type atomicString struct {
	mu sync.Mutex
	s  string
}

func (a *atomicString) set(s string) { a.mu.Lock(); a.s = s; a.mu.Unlock() }
func (a *atomicString) get() string  { a.mu.Lock(); defer a.mu.Unlock(); return a.s }

// TestResolve_ociTagsCachedWithinTTL: the tag list is cached like an index; a
// version pushed later is seen after the TTL.
func TestResolve_ociTagsCachedWithinTTL(t *testing.T) {
	reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	push := func(v string) {
		t.Helper()
		if _, _, err := reg.PushChart(mustPackage(t, v), ""); err != nil {
			t.Fatal(err)
		}
	}
	push("1.0.0")
	e, clk := newEngine(t, 5*time.Minute)
	ctx := context.Background()
	spec := Spec{Repository: reg.URL(), Chart: "podinfo", Version: "1.x"}
	if r, err := e.Resolve(ctx, spec); err != nil || r.Version != "1.0.0" || r.Revision != "1.0.0" || r.AppVersion != "" {
		t.Fatalf("resolve: %+v %v", r, err)
	}
	push("1.1.0")
	if r, err := e.Resolve(ctx, spec); err != nil || r.Version != "1.0.0" {
		t.Fatalf("within the TTL: %+v %v", r, err)
	}
	clk.add(6 * time.Minute)
	if r, err := e.Resolve(ctx, spec); err != nil || r.Version != "1.1.0" {
		t.Fatalf("after the TTL: %+v %v", r, err)
	}
	// An exact version is not looked up at plan time at all: it is pulled
	// at apply, where a missing one fails.
	spec.Version = "3.0.0"
	if r, err := e.Resolve(ctx, spec); err != nil || r.Version != "3.0.0" {
		t.Fatalf("exact version: %+v %v", r, err)
	}
	// A repository that does not exist.
	spec.Version = "*"
	spec.Chart = "nothing-here"
	if _, err := e.Resolve(ctx, spec); err == nil || fielderr.PathOf(err) != "repository" || !strings.Contains(err.Error(), "could not get tags for 'nothing-here'") {
		t.Fatalf("missing repository: %v", err)
	}
}

func TestVerifyCosign_rejectsBadInputBeforeAnyRequest(t *testing.T) {
	ctx := context.Background()
	ref := "127.0.0.1:1/charts/podinfo@sha256:" + strings.Repeat("0", 64)
	for name, tc := range map[string]struct {
		v    Verify
		want string
		path string
	}{
		"bad issuer regexp":  {Verify{Provider: "cosign", Identities: []Identity{{Issuer: "(", Subject: ".*"}}}, "match_oidc_identity[0].issuer", "verify"},
		"bad subject regexp": {Verify{Provider: "cosign", Identities: []Identity{{Issuer: ".*", Subject: "["}}}, "match_oidc_identity[0].subject", "verify"},
		"not a key":          {Verify{Provider: "cosign", PublicKeys: [][]byte{[]byte("not a key")}}, "public_keys[0]: not a PEM public key", "verify.public_keys[0]"},
	} {
		err := verifyCosign(ctx, &tc.v, ref, true, Auth{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || fielderr.PathOf(err) != tc.path {
			t.Errorf("%s: %v on %q", name, err, fielderr.PathOf(err))
		}
	}
}

// An invalid public key is the configuration's error: Resolve and Build
// report it on its list element before any request, here to a registry
// that refuses every connection (which would say "connection refused").
func TestSpecValidate_invalidPublicKeyBeforeAnyRequest(t *testing.T) {
	ctx := context.Background()
	e := New(Options{CacheDir: t.TempDir()})
	key, err := charttest.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Repository: "oci://127.0.0.1:1/charts", Chart: "podinfo", Version: "1.x", Insecure: true,
		Verify: &Verify{Provider: "cosign", PublicKeys: [][]byte{key.PublicPEM, []byte("-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n")}}}
	check := func(what string, err error) {
		t.Helper()
		if err == nil || fielderr.PathOf(err) != "verify.public_keys[1]" || !strings.Contains(err.Error(), "verify.public_keys[1]: not a PEM public key") ||
			strings.Contains(err.Error(), "connection refused") {
			t.Errorf("%s: %v on %q, want verify.public_keys[1] refused before any request", what, err, fielderr.PathOf(err))
		}
	}
	_, err = e.Resolve(ctx, spec)
	check("resolve", err)
	spec.Version = "1.0.0"
	_, err = e.Build(ctx, spec, "1.0.0")
	check("build", err)
	if err := spec.Validate(); fielderr.PathOf(err) != "verify.public_keys[1]" {
		t.Errorf("validate: %v", err)
	}
}

// TestBuild_localWithRemoteDependencies: dependencies from a Helm repository
// (with credentials) and an OCI registry are resolved, fetched and packaged
// into charts/, the lock file pinning versions; a second build uses the
// cached archives.
func TestBuild_localWithRemoteDependencies(t *testing.T) {
	repo := startRepo(t, testenv.HelmRepoOptions{Username: "u", Password: "p"}, "1.0.0", "1.1.0", "2.0.0")
	reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	crdsTgz, err := testenv.PackageChart(filepath.Join(testenv.ChartsDir(), "crds"), "0.3.0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := reg.PushChart(crdsTgz, "charts"); err != nil {
		t.Fatal(err)
	}
	crdsName := func() string {
		data, _ := os.ReadFile(crdsTgz)
		ch, _ := loader.LoadArchive(bytes.NewReader(data))
		return ch.Name()
	}()

	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "Chart.yaml"), fmt.Sprintf(`apiVersion: v2
name: umbrella
version: 0.1.0
dependencies:
- name: podinfo
  version: ^1.0.0
  repository: %s
- name: %s
  version: ">=0.1.0"
  repository: %s
`, repo.URL(), crdsName, reg.URL()+"/charts"))
	mustWrite(t, filepath.Join(dir, "templates", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: umbrella\n")
	auth := func(r string) Auth {
		if strings.HasPrefix(r, repo.URL()) {
			return Auth{Username: "u", Password: "p"}
		}
		return Auth{}
	}
	ctx := context.Background()
	e, _ := newEngine(t, time.Minute)
	spec := Spec{SourcePath: dir, DependencyAuth: auth}
	a, err := e.Build(ctx, spec, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	deps := packagedDependencies(t, a.Path)
	if deps["podinfo"] != "1.1.0" || deps[crdsName] != "0.3.0" || len(deps) != 2 {
		t.Fatalf("packaged dependencies %v, want podinfo 1.1.0 and %s 0.3.0", deps, crdsName)
	}

	// Cached: the repository is not asked for the archive again.
	repo.ResetCounters()
	a2, err := e.Build(ctx, spec, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if a2.Digest != a.Digest {
		t.Fatalf("second build %s, first %s", a2.Digest, a.Digest)
	}
	if n := repo.RequestsFor("/charts/podinfo-1.1.0.tgz"); n != 0 {
		t.Fatalf("%d downloads of a cached dependency", n)
	}

	// Chart.lock pins the version.
	mustWrite(t, filepath.Join(dir, "Chart.lock"), fmt.Sprintf(`dependencies:
- name: podinfo
  version: 1.0.0
  repository: %s
- name: %s
  version: 0.3.0
  repository: %s
digest: sha256:0000000000000000000000000000000000000000000000000000000000000000
generated: "2026-01-01T00:00:00Z"
`, repo.URL(), crdsName, reg.URL()+"/charts"))
	a3, err := e.Build(ctx, spec, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if deps := packagedDependencies(t, a3.Path); deps["podinfo"] != "1.0.0" {
		t.Fatalf("with Chart.lock: %v, want podinfo 1.0.0", deps)
	}

	// Without credentials the repository refuses.
	e2, _ := newEngine(t, time.Minute)
	if _, err := e2.Build(ctx, Spec{SourcePath: dir}, "0.1.0"); !errors.Is(err, ErrUnauthorized) ||
		!strings.Contains(err.Error(), "chart 'umbrella': dependency 'podinfo'") || fielderr.PathOf(err) != "source_path" {
		t.Fatalf("no credentials: %v", err)
	}

	// A repository alias needs Helm's repository configuration.
	os.Remove(filepath.Join(dir, "Chart.lock"))
	mustWrite(t, filepath.Join(dir, "Chart.yaml"), "apiVersion: v2\nname: umbrella\nversion: 0.1.0\ndependencies:\n- name: podinfo\n  version: 1.0.0\n  repository: '@stable'\n")
	if _, err := e.Build(ctx, spec, "0.1.0"); err == nil || !strings.Contains(err.Error(), "by a Helm repository alias") {
		t.Fatalf("alias: %v", err)
	}
}

// packagedDependencies returns name -> version of the subcharts of an archive.
func packagedDependencies(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range ch.Dependencies() {
		out[d.Name()] = d.Metadata.Version
	}
	return out
}

// TestResolve_registryDownUsesCachedTags: once the tag list is cached, a
// registry that cannot be reached (a server error, then closed) resolves
// from the cached list however old, marked stale with why; with nothing
// cached it is an error on repository.
func TestResolve_registryDownUsesCachedTags(t *testing.T) {
	reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	if _, _, err := reg.PushChart(mustPackage(t, "1.1.0"), ""); err != nil {
		t.Fatal(err)
	}
	var failing atomic.Bool
	target, err := url.Parse("http://" + reg.Host())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	e, clk := newEngine(t, time.Minute)
	ctx := context.Background()
	spec := Spec{Repository: "oci://" + srv.Listener.Addr().String(), Chart: "podinfo", Version: "1.x"}
	if r, err := e.Resolve(ctx, spec); err != nil || r.Version != "1.1.0" || r.Stale != "" {
		t.Fatalf("registry up: %+v, %v", r, err)
	}
	clk.add(2 * time.Minute)
	failing.Store(true)
	if r, err := e.Resolve(ctx, spec); err != nil || r.Version != "1.1.0" || !strings.Contains(r.Stale, "cannot be reached") {
		t.Fatalf("registry answering 503: %+v, %v", r, err)
	}
	srv.Close()
	if r, err := e.Resolve(ctx, spec); err != nil || r.Version != "1.1.0" || !strings.Contains(r.Stale, "connection refused") {
		t.Fatalf("registry down: %+v, %v", r, err)
	}
	fresh, _ := newEngine(t, time.Minute)
	if _, err := fresh.Resolve(ctx, spec); err == nil || fielderr.PathOf(err) != "repository" {
		t.Fatalf("registry down, nothing cached: %v, want an error on repository", err)
	}
}

// A chart of Helm 4's experimental chart API v3 is refused wherever a chart
// is read: from a repository, from a directory, and by its metadata (the
// release's plan), with a message that says why and what to do.
func TestChartAPIv3_refused(t *testing.T) {
	ctx := context.Background()
	v3 := "apiVersion: v3\nname: next\nversion: 1.0.0\n"
	want := "apiVersion v3, which is not supported: Helm 4's chart API v3 is experimental"

	e, _ := newEngine(t, time.Minute)
	_, err := e.Build(ctx, Spec{Repository: badRepo(t, "next", tgz(t, map[string]string{"next/Chart.yaml": v3})), Chart: "next"}, "1.0.0")
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("repository: %v", err)
	}

	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "Chart.yaml"), v3)
	mustWrite(t, filepath.Join(dir, "templates", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
	_, err = e.Resolve(ctx, Spec{SourcePath: dir})
	var fe *fielderr.Error
	if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &fe) || fe.Path != "source_path" {
		t.Fatalf("directory: %v", err)
	}

	if _, err := ReadMetadata(dir); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("metadata: %v", err)
	}
	mustWrite(t, filepath.Join(dir, "Chart.yaml"), strings.Replace(v3, "v3", "v2", 1))
	if md, err := ReadMetadata(dir); err != nil || md.Name != "next" {
		t.Fatalf("v2: %+v %v", md, err)
	}
}
