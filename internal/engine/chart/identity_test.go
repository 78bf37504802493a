package chart

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart/charttest"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// sharedChart writes a chart `shared` 0.1.0 whose one template is a
// ConfigMap named after marker, and returns its directory.
func sharedChart(t testing.TB, marker string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shared")
	for name, data := range map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: shared\nversion: 0.1.0\n",
		"values.yaml":        "greeting: hello\n",
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-from-" + marker + "\ndata:\n  from: " + marker + "\n",
		"files/greeting.txt": marker + "\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// markerOf is the marker of the shared chart in the archive at path.
func markerOf(t testing.TB, path string) string {
	t.Helper()
	ch, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ch.Templates {
		if f.Name == "templates/cm.yaml" {
			_, m, _ := strings.Cut(string(f.Data), "data:\n  from: ")
			return strings.TrimSpace(m)
		}
	}
	t.Fatalf("%s has no templates/cm.yaml", path)
	return ""
}

func sha(data []byte) string {
	s := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(s[:])
}

func mustRead(t testing.TB, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// sharedRepo starts a Helm repository serving the shared chart with marker,
// and returns it with the archive's bytes.
func sharedRepo(t *testing.T, marker string) (*testenv.HelmRepo, []byte) {
	t.Helper()
	r := startRepo(t, testenv.HelmRepoOptions{})
	tgzPath, err := testenv.PackageChart(sharedChart(t, marker), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Publish(tgzPath); err != nil {
		t.Fatal(err)
	}
	return r, mustRead(t, tgzPath)
}

// Two directories with one chart name and version are two sources: each
// gets its own archive, whichever was built first, and a directory's
// ChartVersion artifact stays its own (a changed template without a new
// version is no new artifact, as in Flux) while the Revision strategy sees
// the change.
func TestFetch_localDirectoriesAreTwoSources(t *testing.T) {
	ctx := context.Background()
	e, _ := newEngine(t, time.Minute)
	dir1, dir2 := sharedChart(t, "chart1"), sharedChart(t, "chart2")
	a1, err := e.Fetch(ctx, Spec{SourcePath: dir1}, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := e.Fetch(ctx, Spec{SourcePath: dir2}, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if a1.Digest == a2.Digest {
		t.Fatalf("both directories got %s", a1.Digest)
	}
	if m := markerOf(t, a1.Path); m != "chart1" {
		t.Fatalf("directory 1 got the archive of %s", m)
	}
	if m := markerOf(t, a2.Path); m != "chart2" {
		t.Fatalf("directory 2 got the archive of %s", m)
	}
	// Through a symbolic link, directory 2 is the same source.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir2, link); err != nil {
		t.Fatal(err)
	}
	if a, err := e.Fetch(ctx, Spec{SourcePath: link}, "0.1.0"); err != nil || a.Digest != a2.Digest {
		t.Fatalf("through a link: %v, %v; want %s", a, err, a2.Digest)
	}
	// ChartVersion: a template changed without a new version keeps the
	// directory's artifact.
	mustWrite(t, filepath.Join(dir1, "templates", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  from: chart1-edited\n")
	again, err := e.Fetch(ctx, Spec{SourcePath: dir1}, "0.1.0")
	if err != nil || again.Digest != a1.Digest {
		t.Fatalf("ChartVersion after an edit: %v, %v; want %s", again, err, a1.Digest)
	}
	rev, err := e.Fetch(ctx, Spec{SourcePath: dir1, ReconcileStrategy: StrategyRevision}, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if m := markerOf(t, rev.Path); m != "chart1-edited" {
		t.Fatalf("Revision strategy got %s", m)
	}
	// Nothing else in the cache answers for directory 2 either.
	if a, err := e.Fetch(ctx, Spec{SourcePath: dir2}, "0.1.0"); err != nil || a.Digest != a2.Digest {
		t.Fatalf("directory 2 again: %v, %v", a, err)
	}
}

// Two Helm repositories serving different archives under one name and
// version: each gets its own, and the repository's URL is one identity
// however it is spelled.
func TestFetch_httpRepositoriesAreTwoSources(t *testing.T) {
	ctx := context.Background()
	e, _ := newEngine(t, time.Minute)
	r1, data1 := sharedRepo(t, "repo1")
	r2, data2 := sharedRepo(t, "repo2")
	a1, err := e.Fetch(ctx, Spec{Repository: r1.URL(), Chart: "shared"}, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := e.Fetch(ctx, Spec{Repository: r2.URL(), Chart: "shared"}, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if a1.Digest != sha(data1) || a2.Digest != sha(data2) || a1.Digest == a2.Digest {
		t.Fatalf("digests %s, %s; repositories serve %s, %s", a1.Digest, a2.Digest, sha(data1), sha(data2))
	}
	if m := markerOf(t, a2.Path); m != "repo2" {
		t.Fatalf("repository 2 got the archive of %s", m)
	}
	// The same repository, spelled otherwise: from the cache, no download.
	r2.ResetCounters()
	spelled := strings.Replace(r2.URL(), "http://", "HTTP://", 1) + "/"
	a, err := e.Fetch(ctx, Spec{Repository: spelled, Chart: "shared"}, "0.1.0")
	if err != nil || a.Digest != a2.Digest {
		t.Fatalf("%s: %v, %v", spelled, a, err)
	}
	if n := r2.RequestsFor("/charts/shared-0.1.0.tgz"); n != 0 {
		t.Fatalf("downloaded %d times, want 0 (cached)", n)
	}
	// Other credentials are another identity: no archive fetched with one
	// user's credentials is served to another's configuration.
	if _, err := e.Fetch(ctx, Spec{Repository: r2.URL(), Chart: "shared", Auth: Auth{Username: "other", Password: "x"}}, "0.1.0"); err != nil {
		t.Fatal(err)
	}
	if n := r2.RequestsFor("/charts/shared-0.1.0.tgz"); n != 1 {
		t.Fatalf("downloaded %d times with other credentials, want 1", n)
	}
}

// Two OCI registries serving different archives under one name and version.
func TestFetch_ociRegistriesAreTwoSources(t *testing.T) {
	ctx := context.Background()
	e, _ := newEngine(t, time.Minute)
	var urls []string
	var want []string
	for _, marker := range []string{"oci1", "oci2"} {
		reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(reg.Close)
		p, err := testenv.PackageChart(sharedChart(t, marker), "", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := reg.PushChart(p, "charts"); err != nil {
			t.Fatal(err)
		}
		urls = append(urls, reg.URL()+"/charts")
		want = append(want, marker)
	}
	for i, u := range urls {
		a, err := e.Fetch(ctx, Spec{Repository: u, Chart: "shared"}, "0.1.0")
		if err != nil {
			t.Fatal(err)
		}
		if m := markerOf(t, a.Path); m != want[i] {
			t.Fatalf("%s got the archive of %s", u, m)
		}
	}
}

// An archive whose sha256 is not the digest the index gives is refused,
// fetched or cached, naming the repository, chart, version and both digests.
func TestFetch_indexDigestMismatchRefused(t *testing.T) {
	ctx := context.Background()
	r, good := sharedRepo(t, "good")
	other, err := testenv.PackageChart(sharedChart(t, "evil"), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	evil := mustRead(t, other)
	spec := Spec{Repository: r.URL(), Chart: "shared"}
	wantParts := func(err error, index, got []byte) {
		t.Helper()
		if !errors.Is(err, ErrDigestMismatch) {
			t.Fatalf("error %v, want a digest mismatch", err)
		}
		for _, s := range []string{r.URL(), "chart 'shared'", "version '0.1.0'", sha(index), sha(got)} {
			if !strings.Contains(err.Error(), s) {
				t.Fatalf("error %q does not name %s", err, s)
			}
		}
	}

	// Fetched: the repository serves other bytes than its index promises.
	r.ServeArchive("shared", "0.1.0", evil)
	e, _ := newEngine(t, time.Minute)
	_, err = e.Fetch(ctx, spec, "0.1.0")
	wantParts(err, good, evil)
	if entries, _ := os.ReadDir(filepath.Join(e.cacheDir, "artifacts")); len(entries) != 0 {
		t.Fatal("a refused archive was stored")
	}

	// Cached: the good archive is in the cache; then the index gives
	// another digest (the version republished) while the server still
	// serves the old bytes. The cached archive is not the one the index
	// promises now, and neither is the download.
	r.ServeArchive("shared", "0.1.0", good)
	e, _ = newEngine(t, 0)
	a, err := e.Fetch(ctx, spec, "0.1.0")
	if err != nil || a.Digest != sha(good) {
		t.Fatalf("good archive: %v, %v", a, err)
	}
	if err := r.Publish(other); err != nil {
		t.Fatal(err)
	}
	r.ServeArchive("shared", "0.1.0", good)
	_, err = e.Fetch(ctx, spec, "0.1.0")
	wantParts(err, evil, good)

	// Republished for real (index and archive agree): the new archive, and
	// a warning that the cached one was not used.
	r.ServeArchive("shared", "0.1.0", evil)
	a, err = e.Fetch(ctx, spec, "0.1.0")
	if err != nil || a.Digest != sha(evil) {
		t.Fatalf("republished: %v, %v", a, err)
	}
	if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "the index now gives "+sha(evil)) {
		t.Fatalf("warnings %q", a.Warnings)
	}
}

// verify is never skipped because an archive was cached: an archive cached
// by a configuration without verify is verified, and refused while it has
// no signature; a verification counts only for the key material it used.
func TestFetch_verifyNotSkippedByCache(t *testing.T) {
	ctx := context.Background()
	reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	_, digest, err := reg.PushChart(mustPackage(t, "1.0.0"), "charts")
	if err != nil {
		t.Fatal(err)
	}
	keyA, err := charttest.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	keyB, err := charttest.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newEngine(t, time.Minute)
	spec := Spec{Repository: reg.URL() + "/charts", Chart: "podinfo"}
	plain, err := e.Fetch(ctx, spec, "1.0.0")
	if err != nil || plain.Verified {
		t.Fatalf("unverified fetch: %+v, %v", plain, err)
	}
	withA := spec
	withA.Verify = &Verify{Provider: "cosign", PublicKeys: [][]byte{keyA.PublicPEM}}
	if _, err := e.Fetch(ctx, withA, "1.0.0"); !errors.Is(err, ErrVerification) {
		t.Fatalf("the cached, unsigned archive passed verify: %v", err)
	}
	if err := keyA.SignWithAuth(reg.Host()+"/charts/podinfo@"+digest, "", ""); err != nil {
		t.Fatal(err)
	}
	a, err := e.Fetch(ctx, withA, "1.0.0")
	if err != nil || !a.Verified || a.Digest != plain.Digest {
		t.Fatalf("signed: %+v, %v", a, err)
	}
	// Verified with A, from the cache now.
	if a, err := e.Fetch(ctx, withA, "1.0.0"); err != nil || !a.Verified {
		t.Fatalf("again: %+v, %v", a, err)
	}
	// Another key: verified again, and refused.
	withB := spec
	withB.Verify = &Verify{Provider: "cosign", PublicKeys: [][]byte{keyB.PublicPEM}}
	if _, err := e.Fetch(ctx, withB, "1.0.0"); !errors.Is(err, ErrVerification) {
		t.Fatalf("verified with A, accepted for B: %v", err)
	}
}

// A cached archive that is truncated, or whose bytes are no longer those of
// its digest folder, is fetched again with a warning; when the source is
// down that is an error naming the file.
func TestFetch_damagedArchiveRefetchedOrRefused(t *testing.T) {
	ctx := context.Background()
	r, good := sharedRepo(t, "good")
	e, _ := newEngine(t, time.Minute)
	spec := Spec{Repository: r.URL(), Chart: "shared"}
	a, err := e.Fetch(ctx, spec, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	for name, damage := range map[string][]byte{"truncated": good[:len(good)/2], "changed": append([]byte("x"), good[1:]...)} {
		if err := os.WriteFile(a.Path, damage, 0o600); err != nil {
			t.Fatal(err)
		}
		again, err := e.Fetch(ctx, spec, "0.1.0")
		if err != nil || again.Digest != a.Digest || !bytesEqualFile(t, again.Path, good) {
			t.Fatalf("%s: %+v, %v", name, again, err)
		}
		if len(again.Warnings) != 1 || !strings.Contains(again.Warnings[0], a.Path) || !strings.Contains(again.Warnings[0], "fetched again") {
			t.Fatalf("%s: warnings %q", name, again.Warnings)
		}
	}
	if err := os.WriteFile(a.Path, good[:10], 0o600); err != nil {
		t.Fatal(err)
	}
	r.SetFailure(503)
	_, err = e.Fetch(ctx, spec, "0.1.0")
	if err == nil || !strings.Contains(err.Error(), a.Path) || !strings.Contains(err.Error(), "cannot be fetched again") {
		t.Fatalf("source down: %v", err)
	}
}

func bytesEqualFile(t *testing.T, p string, want []byte) bool {
	t.Helper()
	return sha(mustRead(t, p)) == sha(want)
}

// A cache directory that cannot be written: the archive is fetched into a
// directory of this process's, with a warning; with the source down, the
// error says what could not be fetched.
func TestFetch_unwritableCache(t *testing.T) {
	ctx := context.Background()
	r, good := sharedRepo(t, "good")
	// A cache directory under a regular file cannot be created, even by root.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(blocker, "cache")
	e := New(Options{CacheDir: cacheDir, IndexTTL: time.Minute})
	spec := Spec{Repository: r.URL(), Chart: "shared"}
	a, err := e.Fetch(ctx, spec, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest != sha(good) || !bytesEqualFile(t, a.Path, good) || strings.HasPrefix(a.Path, cacheDir) {
		t.Fatalf("artifact %+v", a)
	}
	if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], cacheDir+" cannot be written") {
		t.Fatalf("warnings %q", a.Warnings)
	}
	r.SetFailure(503)
	if _, err := e.Fetch(ctx, spec, "0.1.0"); err == nil || !strings.Contains(err.Error(), r.URL()) {
		t.Fatalf("source down: %v", err)
	}
}

// Engines of several configurations sharing one cache directory, at the
// same time, each get their own source's archive.
func TestFetch_sharedCacheInParallel(t *testing.T) {
	ctx := context.Background()
	cacheDir := t.TempDir()
	type source struct {
		spec   Spec
		marker string
	}
	var sources []source
	for i := range 2 {
		m := fmt.Sprintf("dir%d", i+1)
		sources = append(sources, source{Spec{SourcePath: sharedChart(t, m)}, m})
		rm := fmt.Sprintf("repo%d", i+1)
		r, _ := sharedRepo(t, rm)
		sources = append(sources, source{Spec{Repository: r.URL(), Chart: "shared"}, rm})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for round := range 4 {
		for _, s := range sources {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e := New(Options{CacheDir: cacheDir, IndexTTL: time.Duration(round) * time.Minute})
				a, err := e.Fetch(ctx, s.spec, "0.1.0")
				if err != nil {
					errs <- err
					return
				}
				ch, err := loader.Load(a.Path)
				if err != nil {
					errs <- err
					return
				}
				for _, f := range ch.Templates {
					if !strings.Contains(string(f.Data), "from: "+s.marker+"\n") {
						errs <- fmt.Errorf("%s got %s", s.marker, f.Data)
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestNormaliseRepoURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://Charts.Example.com:443/x/": "https://charts.example.com/x",
		"https://u:p@charts.example.com/x":  "https://charts.example.com/x",
		"http://127.0.0.1:80":               "http://127.0.0.1",
		"http://127.0.0.1:8080/a//":         "http://127.0.0.1:8080/a",
		"https://[::1]:8443/r":              "https://[::1]:8443/r",
	} {
		got, err := normaliseRepoURL(in)
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", in, got, err, want)
		}
	}
}

// Candidates are only archives whose bytes match their digest folder.
func TestCandidates_onlyIntactArchives(t *testing.T) {
	ctx := context.Background()
	e, _ := newEngine(t, time.Minute)
	a1, err := e.Fetch(ctx, Spec{SourcePath: sharedChart(t, "c1")}, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := e.Fetch(ctx, Spec{SourcePath: sharedChart(t, "c2")}, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Candidates("shared", "0.1.0"); len(got) != 2 {
		t.Fatalf("candidates %v", got)
	}
	if err := os.WriteFile(a1.Path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := e.Candidates("shared", "0.1.0")
	if len(got) != 1 || got[0].Digest != a2.Digest {
		t.Fatalf("candidates %v, want only %s", got, a2.Digest)
	}
	if got := e.Candidates("*", "0.1.0"); got != nil {
		t.Fatalf("a pattern as a name: %v", got)
	}
}

// SourcesOf reads the remote sources of an archive from the records: a Helm
// repository and an OCI repository as a configuration writes them, not a
// local directory, a build with values files, or another archive's record.
func TestSourcesOf_remoteRecordsOfTheDigest(t *testing.T) {
	e, _ := newEngine(t, time.Minute)
	d, other := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	for id, rec := range map[string]sourceRecord{
		"h": {Source: "helm https://charts.example.com/x web 1.2.3", Digest: d},
		"o": {Source: "oci registry.example.com/charts web 1.2.3", Digest: d},
		"d": {Source: "dir /src/web 1.2.3", Digest: d},
		"v": {Source: "helm https://charts.example.com/x web 1.2.3 values:a.yaml ignoreMissing:false", Digest: d},
		"x": {Source: "helm https://other.example.com web 1.2.3", Digest: other},
	} {
		rec.ChartName, rec.Revision = "web", "1.2.3"
		if err := writeJSONAtomic(e.recordPath(id), &rec); err != nil {
			t.Fatal(err)
		}
	}
	got := e.SourcesOf(d)
	slices.SortFunc(got, func(a, b RecordedSource) int { return strings.Compare(a.Repository, b.Repository) })
	want := []RecordedSource{
		{Repository: "https://charts.example.com/x", Chart: "web", Version: "1.2.3"},
		{Repository: "oci://registry.example.com/charts", Chart: "web", Version: "1.2.3"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("SourcesOf: %v, want %v", got, want)
	}
}
