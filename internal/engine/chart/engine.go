package chart

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Options configures an Engine.
type Options struct {
	// CacheDir holds the index cache and the artifacts. Required.
	CacheDir string
	// IndexTTL is how long a cached index or tag list is used without asking
	// the server; zero or less revalidates on every resolve (a conditional
	// request that costs the server a 304 when nothing changed).
	IndexTTL time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Engine resolves, builds and stores chart artifacts. It is safe for
// concurrent use.
type Engine struct {
	cacheDir string
	ttl      time.Duration
	now      func() time.Time
}

// New returns an Engine. It does no I/O.
func New(opts Options) *Engine {
	e := &Engine{cacheDir: opts.CacheDir, ttl: opts.IndexTTL, now: opts.Now}
	if e.now == nil {
		e.now = time.Now
	}
	return e
}

// Resolve returns the version spec's constraint selects now, from the cache
// when it is fresh. For a local source it also returns the source revision
// and the full artifact revision.
func (e *Engine) Resolve(ctx context.Context, spec Spec) (*Resolved, error) {
	spec = spec.withDefaults()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	switch spec.Kind() {
	case SourceHTTP:
		idx, err := e.repoIndex(ctx, spec.Repository, spec.Auth)
		if err != nil {
			return nil, err
		}
		entry, err := selectEntry(spec.Chart, idx.Entries[spec.Chart], spec.Version)
		if err != nil {
			return nil, fieldErr("version", err)
		}
		r := &Resolved{ChartName: spec.Chart, Version: entry.Version, AppVersion: entry.AppVersion, Stale: idx.Stale}
		if len(spec.ValuesFiles) == 0 {
			r.Revision = entry.Version
		}
		return r, nil
	case SourceOCI:
		v, stale, err := e.resolveOCI(ctx, &spec)
		if err != nil {
			return nil, err
		}
		r := &Resolved{ChartName: spec.Chart, Version: v, Stale: stale}
		if len(spec.ValuesFiles) == 0 {
			r.Revision = v
		}
		return r, nil
	default:
		lc, err := e.loadLocalSpec(ctx, &spec)
		if err != nil {
			return nil, err
		}
		b, err := e.localBuild(&spec, lc)
		if err != nil {
			return nil, err
		}
		return &Resolved{
			ChartName:      lc.chart.Name(),
			Version:        lc.chart.Metadata.Version,
			AppVersion:     lc.chart.Metadata.AppVersion,
			SourceRevision: b.sourceRevision,
			Revision:       b.revision,
		}, nil
	}
}

// httpEntry resolves ver against the repository index.
func (e *Engine) httpEntry(ctx context.Context, spec *Spec, ver string) (*Entry, error) {
	idx, err := e.repoIndex(ctx, spec.Repository, spec.Auth)
	if err != nil {
		return nil, err
	}
	entry, err := selectEntry(spec.Chart, idx.Entries[spec.Chart], ver)
	if err != nil {
		return nil, fieldErr("version", err)
	}
	return entry, nil
}

// Build fetches the chart at exactly version (what a plan resolved; for a
// local source, the version in Chart.yaml), merges values files, verifies
// and stores it. Nothing is stored when any step fails.
func (e *Engine) Build(ctx context.Context, spec Spec, version string) (*Artifact, error) {
	spec, err := spec.forBuild(version)
	if err != nil {
		return nil, err
	}
	var (
		a      *Artifact
		data   []byte
		kind   = spec.Kind()
		pinned = spec
	)
	pinned.Version = version
	switch kind {
	case SourceHTTP:
		a, data, err = e.buildHTTP(ctx, &pinned)
	case SourceOCI:
		a, data, err = e.buildOCI(ctx, &pinned)
	default:
		a, data, err = e.buildLocal(ctx, &spec, version)
	}
	if err != nil {
		return nil, err
	}
	if err := e.store(a, data); err != nil {
		return nil, err
	}
	id, desc, err := sourceIdentity(&spec, version, a.Revision, a.SourceRevision)
	if err == nil {
		e.writeRecord(id, desc, a, a.upstream, verifiedBy(spec.Verify, a))
	}
	return a, nil
}

// verifiedBy is the fingerprint of the key material a verified artifact
// passed with, "" when it was not verified.
func verifiedBy(v *Verify, a *Artifact) string {
	if v == nil || !a.Verified {
		return ""
	}
	return verifyFingerprint(v)
}

func (e *Engine) buildHTTP(ctx context.Context, spec *Spec) (*Artifact, []byte, error) {
	entry, err := e.httpEntry(ctx, spec, spec.Version)
	if err != nil && errors.Is(err, ErrNotFound) && e.ttl > 0 {
		// The cached index predates the version (published after the cache
		// was filled, or resolved by another cache): revalidate once.
		fresh := New(Options{CacheDir: e.cacheDir, Now: e.now})
		entry, err = fresh.httpEntry(ctx, spec, spec.Version)
	}
	if err != nil {
		return nil, nil, err
	}
	if entry.Version != spec.Version {
		return nil, nil, fieldErr("version", notFound(fmt.Errorf("no '%s' chart with version '%s' found", spec.Chart, spec.Version)))
	}
	client, err := httpClient(spec.Auth)
	if err != nil {
		return nil, nil, err
	}
	data, err := downloadHTTP(ctx, client, spec.Repository, entry, spec.Auth, spec.Chart)
	if err != nil && errors.Is(err, ErrDigestMismatch) && e.ttl > 0 {
		// The cached index may predate a republished version: ask the
		// repository once more, and refuse the archive if it still
		// disagrees.
		fresh := New(Options{CacheDir: e.cacheDir, Now: e.now})
		if entry, err = fresh.httpEntry(ctx, spec, spec.Version); err == nil {
			data, err = downloadHTTP(ctx, client, spec.Repository, entry, spec.Auth, spec.Chart)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return e.fromArchive(spec, data)
}

func (e *Engine) buildOCI(ctx context.Context, spec *Spec) (*Artifact, []byte, error) {
	data, _, manifestDigest, err := e.pullOCI(ctx, spec, spec.Version)
	if err != nil {
		return nil, nil, err
	}
	a, out, err := e.fromArchive(spec, data)
	if err != nil {
		return nil, nil, err
	}
	if spec.Verify != nil {
		repo, err := parseOCIRepo(spec.Repository, spec.Insecure)
		if err != nil {
			return nil, nil, err
		}
		// Verify the manifest that was pulled, by digest, not the tag that
		// may have moved since.
		signed := repo.chartRef(spec.Chart) + "@" + manifestDigest
		if spec.Verify.Provider == VerifyProviderNotation {
			verdict, err := verifyNotation(ctx, spec.Verify, signed, repo.plainHTTP, spec.Auth)
			if err != nil {
				return nil, nil, fmt.Errorf("chart '%s' version '%s': %w", spec.Chart, spec.Version, err)
			}
			a.Verified, a.Unverified = verdict.Verified, verdict.Reason
			return a, out, nil
		}
		if err := verifyCosign(ctx, spec.Verify, signed, repo.plainHTTP, spec.Auth); err != nil {
			return nil, nil, fmt.Errorf("chart '%s' version '%s': %w", spec.Chart, spec.Version, err)
		}
		a.Verified = true
	}
	return a, out, nil
}

// fromArchive checks a downloaded archive and, with values files, merges
// them and repackages.
func (e *Engine) fromArchive(spec *Spec, data []byte) (*Artifact, []byte, error) {
	ch, err := loadArchive(spec.Chart, data)
	if err != nil {
		return nil, nil, fieldErr("chart", err)
	}
	if ch.Name() != spec.Chart {
		return nil, nil, fieldErr("chart", fmt.Errorf("the archive of chart '%s' holds chart '%s'", spec.Chart, ch.Name()))
	}
	upstream := sha256.Sum256(data)
	a := &Artifact{
		ChartName:  ch.Name(),
		Version:    ch.Metadata.Version,
		AppVersion: ch.Metadata.AppVersion,
		Revision:   ch.Metadata.Version,
		upstream:   hex.EncodeToString(upstream[:]),
	}
	if len(spec.ValuesFiles) == 0 {
		return a, data, nil
	}
	files := chartFiles(ch)
	lookup := func(p string) ([]byte, bool, error) {
		name := strings.TrimPrefix(filepath.ToSlash(filepath.Clean(p)), "./")
		for _, f := range files {
			if f.name == name {
				return f.data, true, nil
			}
		}
		if name == "values.yaml" {
			// The chart's own values, even when it has no file for them.
			return []byte("{}"), true, nil
		}
		return nil, false, nil
	}
	merged, used, err := mergeValues("chart '"+ch.Name()+"'", spec.ValuesFiles, spec.IgnoreMissingValuesFiles, lookup)
	if err != nil {
		return nil, nil, err
	}
	valuesYAML, sum, err := valuesDigest(merged)
	if err != nil {
		return nil, nil, err
	}
	a.ObservedValuesFiles = used
	if a.Revision, err = withMetadata(ch.Metadata.Version, sum[:12]); err != nil {
		return nil, nil, err
	}
	files = replaceFile(files, "values.yaml", valuesYAML)
	if files, err = setChartVersion(files, ch.Metadata, a.Revision); err != nil {
		return nil, nil, err
	}
	out, err := writeArchive(ch.Name(), files)
	if err != nil {
		return nil, nil, err
	}
	return a, out, nil
}

func (e *Engine) loadLocalSpec(ctx context.Context, spec *Spec) (*localChart, error) {
	if spec.fromSourceRoot() {
		if err := checkSourceRoot(spec); err != nil {
			return nil, err
		}
	}
	lc, err := e.loadLocal(ctx, spec.chartDir(), spec.DependencyAuth, map[string]bool{})
	if err != nil {
		return nil, err
	}
	if spec.Chart != "" && spec.Chart != lc.chart.Name() {
		return nil, fieldErr("chart", fmt.Errorf("'%s' holds chart '%s', not '%s'", spec.SourcePath, lc.chart.Name(), spec.Chart))
	}
	if spec.Version != DefaultVersion && spec.Version != lc.chart.Metadata.Version {
		c, err := constraintFor(spec.Version)
		if err != nil {
			return nil, fieldErr("version", err)
		}
		v, err := parseVersion(lc.chart.Metadata.Version)
		if err != nil || !c.Check(v) {
			return nil, fieldErr("version", notFound(fmt.Errorf("no '%s' chart with version matching '%s' found: %s has version '%s'",
				lc.chart.Name(), spec.Version, spec.SourcePath, lc.chart.Metadata.Version)))
		}
	}
	return lc, nil
}

// checkSourceRoot checks that the source root is a directory and that the
// chart directory in it does not lead out of it through a symbolic link.
func checkSourceRoot(spec *Spec) error {
	fi, err := os.Stat(spec.SourceRoot)
	if err != nil {
		return fieldErr("source_root", fmt.Errorf("source root: %w", err))
	}
	if !fi.IsDir() {
		return fieldErr("source_root", fmt.Errorf("'%s' is not a directory", spec.SourceRoot))
	}
	real, err := filepath.EvalSymlinks(spec.chartDir())
	if err != nil {
		// A missing chart directory: loadLocal says so.
		return nil
	}
	if err := within(spec.SourceRoot, real); err != nil {
		return fieldErr("source_path", fmt.Errorf("'%s' resolves outside source_root '%s'", spec.SourcePath, spec.SourceRoot))
	}
	return nil
}

type localResult struct {
	sourceRevision string
	revision       string
	observed       []string
	files          []file
}

// localBuild computes the revision of a local chart and the files of its
// package.
func (e *Engine) localBuild(spec *Spec, lc *localChart) (*localResult, error) {
	ch := lc.chart
	res := &localResult{files: append([]file(nil), lc.files...)}
	var hash string
	res.sourceRevision, hash = sourceRevision(lc)
	var meta []string
	if spec.ReconcileStrategy == StrategyRevision {
		meta = append(meta, hash[:12])
	}
	if len(spec.ValuesFiles) > 0 {
		where := "chart '" + ch.Name() + "'"
		lookup := func(p string) ([]byte, bool, error) {
			data, ok, err := lc.lookup(p)
			if err == nil && !ok && filepath.Clean(p) == "values.yaml" {
				return []byte("{}"), true, nil
			}
			return data, ok, err
		}
		if spec.fromSourceRoot() {
			// As source-controller resolves the values files of a chart in a
			// GitRepository or Bucket: from the source root, the chart's own
			// values being `<source_path>/values.yaml` like any other file.
			where = "source_root '" + spec.SourceRoot + "'"
			lookup = func(p string) ([]byte, bool, error) { return lookupUnder(spec.SourceRoot, p, true) }
		}
		merged, used, err := mergeValues(where, spec.ValuesFiles, spec.IgnoreMissingValuesFiles, lookup)
		if err != nil {
			return nil, err
		}
		valuesYAML, sum, err := valuesDigest(merged)
		if err != nil {
			return nil, err
		}
		res.observed = used
		res.files = replaceFile(res.files, "values.yaml", valuesYAML)
		meta = append(meta, sum[:12])
	}
	rev, err := withMetadata(ch.Metadata.Version, strings.Join(meta, "."))
	if err != nil {
		return nil, fieldErr("source_path", err)
	}
	res.revision = rev
	if rev != ch.Metadata.Version {
		if res.files, err = setChartVersion(res.files, ch.Metadata, rev); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (e *Engine) buildLocal(ctx context.Context, spec *Spec, version string) (*Artifact, []byte, error) {
	lc, err := e.loadLocalSpec(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	if lc.chart.Metadata.Version != version {
		return nil, nil, fieldErr("source_path", fmt.Errorf("chart '%s' in %s has version '%s' now, not '%s' as planned: plan again",
			lc.chart.Name(), spec.chartDir(), lc.chart.Metadata.Version, version))
	}
	b, err := e.localBuild(spec, lc)
	if err != nil {
		return nil, nil, err
	}
	data, err := writeArchive(lc.chart.Name(), b.files)
	if err != nil {
		return nil, nil, err
	}
	// The package must load as Helm would load it.
	if _, err := loadArchive(lc.chart.Name(), data); err != nil {
		return nil, nil, fieldErr("source_path", err)
	}
	return &Artifact{
		ChartName:           lc.chart.Name(),
		Version:             lc.chart.Metadata.Version,
		AppVersion:          lc.chart.Metadata.AppVersion,
		Revision:            b.revision,
		ObservedValuesFiles: b.observed,
		SourceRevision:      b.sourceRevision,
	}, data, nil
}

// artifactPath is where an archive of digest hex is stored.
func (e *Engine) artifactPath(hexDigest, chartName, revision string) string {
	return filepath.Join(e.cacheDir, "artifacts", hexDigest[:2], hexDigest, chartName+"-"+revision+".tgz")
}

// store writes data under its digest and fills in the artifact's digest,
// size, path and URL.
func (e *Engine) store(a *Artifact, data []byte) error {
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	p := e.artifactPath(h, a.ChartName, a.Revision)
	if !e.hasDigest(p, h) {
		if err := writeFileAtomic(p, data); err != nil {
			// The cache cannot be written: keep the archive where this
			// process can, for this run, and say so.
			fp, ferr := fallbackPath(h, a.ChartName, a.Revision)
			if ferr == nil {
				ferr = writeFileAtomic(fp, data)
			}
			if ferr != nil {
				return fmt.Errorf("store chart '%s' in the cache: %w", a.ChartName, errors.Join(err, ferr))
			}
			a.Warnings = append(a.Warnings, fmt.Sprintf("the cache directory %s cannot be written (%v): the archive of chart '%s' is kept in %s for this run only, "+
				"and is fetched again next time", e.cacheDir, err, a.ChartName, fp))
			p = fp
		}
	}
	a.Digest = "sha256:" + h
	a.Size = int64(len(data))
	a.Path = p
	a.URL = FileURL(p)
	return nil
}

// FileURL is the `file://` URL of an archive at path, the artifact's url.
func FileURL(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// Present reports whether the artifact at path is in the cache with digest
// (`sha256:<hex>`).
func (e *Engine) Present(path, digest string) bool {
	h, ok := strings.CutPrefix(digest, "sha256:")
	return ok && path != "" && e.hasDigest(path, h)
}

// Locate returns the archive of digest (`sha256:<hex>`) in this engine's
// cache, wherever the artifact's recorded path says it is: a plan saved on
// one machine and applied on another, or state written by a machine with
// another cache directory, names a path that this machine need not have,
// while the digest names the same bytes everywhere. The file found is
// checked against the digest; ok is false when the cache has no such archive.
func (e *Engine) Locate(digest string) (path string, ok bool) {
	h, found := strings.CutPrefix(digest, "sha256:")
	if !found || len(h) != sha256.Size*2 {
		return "", false
	}
	dir := filepath.Join(e.cacheDir, "artifacts", h[:2], h)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", false
	}
	for _, de := range entries {
		p := filepath.Join(dir, de.Name())
		if de.Type().IsRegular() && strings.HasSuffix(de.Name(), ".tgz") && e.hasDigest(p, h) {
			return p, true
		}
	}
	return "", false
}

// Has reports whether the artifact recorded at path with digest is usable on
// this machine: at path, or found by digest in the cache (Locate).
func (e *Engine) Has(path, digest string) bool {
	if e.Present(path, digest) {
		return true
	}
	_, ok := e.Locate(digest)
	return ok
}

func (e *Engine) hasDigest(path, hexDigest string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == hexDigest
}

// Remove deletes an artifact from the cache. A missing file is not an error.
func (e *Engine) Remove(path string) error {
	if path == "" {
		return nil
	}
	root := filepath.Join(e.cacheDir, "artifacts") + string(filepath.Separator)
	if !strings.HasPrefix(filepath.Clean(path), root) {
		// Never delete outside the cache: the state may come from another
		// machine with another cache directory.
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	_ = os.Remove(filepath.Dir(path))
	return nil
}

// fallback is the directory of this process's archives when the cache
// directory cannot be written: private, made once, never shared.
var fallback struct {
	once sync.Once
	dir  string
	err  error
}

func fallbackPath(hexDigest, chartName, revision string) (string, error) {
	fallback.once.Do(func() { fallback.dir, fallback.err = os.MkdirTemp("", "stevedore-artifacts-") })
	if fallback.err != nil {
		return "", fallback.err
	}
	return filepath.Join(fallback.dir, hexDigest, chartName+"-"+revision+".tgz"), nil
}

// forBuild is spec with its defaults, checked, for a build of version (what
// a plan resolved): the common entry of Build and Fetch.
func (spec Spec) forBuild(version string) (Spec, error) {
	spec = spec.withDefaults()
	if err := spec.Validate(); err != nil {
		return spec, err
	}
	if version == "" {
		return spec, fieldErr("version", errors.New("no version to build"))
	}
	return spec, nil
}
