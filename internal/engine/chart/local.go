package chart

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

const fileRepositoryPrefix = "file://"

// localChart is a chart directory loaded with its file:// dependencies
// built into charts/, as `helm dependency build` would.
type localChart struct {
	dir   string
	chart *chart.Chart
	files []file
}

// loadLocal loads the chart in dir, honouring .helmignore, and adds each
// dependency that charts/ does not hold yet as charts/<name>-<version>.tgz,
// as `helm dependency build` does: a file:// dependency packaged from its
// directory, a https:// or oci:// one resolved and fetched like a chart of
// its own (Chart.lock, when present, pins the versions). seen guards against
// dependency cycles.
func (e *Engine) loadLocal(ctx context.Context, dir string, depAuth func(string) Auth, seen map[string]bool) (*localChart, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if seen[abs] {
		return nil, fmt.Errorf("dependency cycle through %s", abs)
	}
	seen[abs] = true
	defer delete(seen, abs)

	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fieldErr("source_path", fmt.Errorf("chart directory: %w", err))
	}
	if !fi.IsDir() {
		return nil, fieldErr("source_path", fmt.Errorf("'%s' is not a directory", dir))
	}
	ch, err := loader.LoadDir(abs)
	if err != nil {
		return nil, fieldErr("source_path", fmt.Errorf("'%s' is not a valid chart directory: %w", dir, err))
	}
	if err := ch.Validate(); err != nil {
		return nil, fieldErr("source_path", fmt.Errorf("'%s' is not a valid chart: %w", dir, err))
	}
	if err := supportedAPI(ch); err != nil {
		return nil, fieldErr("source_path", fmt.Errorf("'%s': %w", dir, err))
	}
	lc := &localChart{dir: abs, chart: ch, files: chartFiles(ch)}

	present := map[string]bool{}
	for _, sub := range ch.Dependencies() {
		present[sub.Name()] = true
	}
	reqs := ch.Metadata.Dependencies
	if ch.Lock != nil {
		// The lock file takes precedence, as it does for Helm and Flux.
		reqs = ch.Lock.Dependencies
	}
	for _, dep := range reqs {
		if present[dep.Name] {
			continue
		}
		if !strings.HasPrefix(dep.Repository, fileRepositoryPrefix) {
			f, err := e.remoteDependency(ctx, ch.Name(), dep, depAuth)
			if err != nil {
				// About the chart directory, whatever field of the
				// dependency's own spec the cause names.
				return nil, &fielderr.Error{Path: "source_path", Err: err}
			}
			lc.files = append(lc.files, f)
			present[dep.Name] = true
			continue
		}
		depDir := strings.TrimPrefix(dep.Repository, fileRepositoryPrefix)
		if !filepath.IsAbs(depDir) {
			depDir = filepath.Join(abs, depDir)
		}
		sub, err := e.loadLocal(ctx, depDir, depAuth, seen)
		if err != nil {
			return nil, fieldErr("source_path", fmt.Errorf("chart '%s': dependency '%s': %w", ch.Name(), dep.Name, err))
		}
		if sub.chart.Name() != dep.Name {
			return nil, fieldErr("source_path", fmt.Errorf("chart '%s': dependency '%s': %s holds chart '%s'", ch.Name(), dep.Name, depDir, sub.chart.Name()))
		}
		if dep.Version != "" {
			c, err := semver.NewConstraint(dep.Version)
			if err != nil {
				return nil, fieldErr("source_path", fmt.Errorf("chart '%s': dependency '%s': version constraint '%s': %w", ch.Name(), dep.Name, dep.Version, err))
			}
			v, err := semver.NewVersion(sub.chart.Metadata.Version)
			if err != nil || !c.Check(v) {
				return nil, fieldErr("source_path", fmt.Errorf("chart '%s': dependency '%s': version '%s' in %s does not match '%s'",
					ch.Name(), dep.Name, sub.chart.Metadata.Version, depDir, dep.Version))
			}
		}
		data, err := writeArchive(sub.chart.Name(), sub.files)
		if err != nil {
			return nil, err
		}
		lc.files = append(lc.files, file{
			name: "charts/" + sub.chart.Name() + "-" + sub.chart.Metadata.Version + ".tgz",
			data: data,
		})
		present[dep.Name] = true
	}
	sortFiles(lc.files)
	return lc, nil
}

// lookup finds a values file relative to the chart directory, refusing
// paths that leave it (symbolic links included).
func (lc *localChart) lookup(p string) ([]byte, bool, error) {
	return lookupUnder(lc.dir, p, false)
}

// lookupUnder finds the file p relative to root, refusing paths that leave
// root (symbolic links included). sourceRoot says what root is, for errors:
// the source root, or the chart directory.
func lookupUnder(root, p string, sourceRoot bool) ([]byte, bool, error) {
	if err := CheckRelPath(p, sourceRoot); err != nil {
		return nil, false, err
	}
	full := filepath.Join(root, filepath.FromSlash(p))
	real, err := filepath.EvalSymlinks(full)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if err := within(root, real); err != nil {
		what := "the chart directory"
		if sourceRoot {
			what = "source_root"
		}
		return nil, false, fmt.Errorf("'%s' resolves outside %s", p, what)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("'%s' is not a regular file", p)
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// within fails unless real (a path with its symbolic links resolved) is root
// or inside it, with root's own symbolic links resolved.
func within(root, real string) error {
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(r, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("'%s' is outside '%s'", real, root)
	}
	return nil
}

// filesDigest is the sha256 of a file list: names and contents, in order.
func filesDigest(files []file) string {
	h := sha256.New()
	for _, f := range files {
		sum := sha256.Sum256(f.data)
		fmt.Fprintf(h, "%s\x00%x\n", f.name, sum)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// sourceRevision is the revision of a local source: git HEAD when dir is in
// a git work tree (`<branch>@sha1:<hex>`, `sha1:<hex>` when detached),
// otherwise the digest of the chart's files (dependencies included). The
// second value is the hex part Flux takes the first 12 characters of.
func sourceRevision(lc *localChart) (rev, hash string) {
	if rev, hash, ok := gitHead(lc.dir); ok {
		return rev, hash
	}
	d := filesDigest(lc.files)
	return d, strings.TrimPrefix(d, "sha256:")
}

// gitHead reads HEAD of the git work tree that holds dir, without a git
// binary: .git directories and .git files (worktrees, submodules), loose and
// packed refs.
func gitHead(dir string) (rev, hash string, ok bool) {
	gitDir := ""
	for d := dir; ; {
		p := filepath.Join(d, ".git")
		if fi, err := os.Stat(p); err == nil {
			if fi.IsDir() {
				gitDir = p
			} else if data, err := os.ReadFile(p); err == nil {
				line := strings.TrimSpace(string(data))
				if g, found := strings.CutPrefix(line, "gitdir:"); found {
					g = strings.TrimSpace(g)
					if !filepath.IsAbs(g) {
						g = filepath.Join(d, g)
					}
					gitDir = g
				}
			}
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", "", false
		}
		d = parent
	}
	if gitDir == "" {
		return "", "", false
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", "", false
	}
	h := strings.TrimSpace(string(head))
	ref, isRef := strings.CutPrefix(h, "ref:")
	if !isRef {
		if !isHex(h) {
			return "", "", false
		}
		return "sha1:" + h, h, true
	}
	ref = strings.TrimSpace(ref)
	commonDir := gitDir
	if data, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(data))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		commonDir = c
	}
	sha := ""
	for _, d := range []string{gitDir, commonDir} {
		if data, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(ref))); err == nil {
			sha = strings.TrimSpace(string(data))
			break
		}
	}
	if sha == "" {
		sha = packedRef(commonDir, ref)
	}
	if !isHex(sha) {
		// A branch without commits.
		return "", "", false
	}
	branch := strings.TrimPrefix(ref, "refs/heads/")
	algo := "sha1"
	if len(sha) == 64 {
		algo = "sha256"
	}
	return branch + "@" + algo + ":" + sha, sha, true
}

func packedRef(gitDir, ref string) string {
	f, err := os.Open(filepath.Join(gitDir, "packed-refs"))
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "^") {
			continue
		}
		if sha, name, ok := strings.Cut(line, " "); ok && name == ref {
			return sha
		}
	}
	return ""
}

func isHex(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// remoteDependency resolves a dependency from a Helm repository or an OCI
// registry and returns its archive as charts/<name>-<version>.tgz. Archives
// are kept in the cache by repository, name and version (chart versions are
// immutable), so a plan of a local chart does not download them again.
func (e *Engine) remoteDependency(ctx context.Context, parent string, dep *chart.Dependency, depAuth func(string) Auth) (file, error) {
	repo := dep.Repository
	if strings.HasPrefix(repo, "@") || strings.HasPrefix(repo, "alias:") || !strings.Contains(repo, "://") {
		return file{}, fmt.Errorf("chart '%s': dependency '%s' names repository '%s' by a Helm repository alias: "+
			"use its URL, or vendor the dependency into charts/", parent, dep.Name, repo)
	}
	var auth Auth
	if depAuth != nil {
		auth = depAuth(repo)
	}
	spec := Spec{Repository: repo, Chart: dep.Name, Version: dep.Version, Auth: auth}
	if err := spec.Validate(); err != nil {
		return file{}, fmt.Errorf("chart '%s': dependency '%s': %w", parent, dep.Name, err)
	}
	var (
		version string
		entry   *Entry
	)
	switch spec.Kind() {
	case SourceOCI:
		v, _, err := e.resolveOCI(ctx, &spec)
		if err != nil {
			return file{}, fmt.Errorf("chart '%s': dependency '%s': %w", parent, dep.Name, err)
		}
		version = v
	default:
		var err error
		if entry, err = e.httpEntry(ctx, &spec, spec.Version); err != nil {
			return file{}, fmt.Errorf("chart '%s': dependency '%s': %w", parent, dep.Name, err)
		}
		version = entry.Version
	}
	name := "charts/" + dep.Name + "-" + version + ".tgz"
	cached := filepath.Join(e.cacheDir, "dependencies", hashKey(repo+"\x00"+dep.Name+"\x00"+version), dep.Name+"-"+version+".tgz")
	if data, err := os.ReadFile(cached); err == nil {
		sum := sha256.Sum256(data)
		// A cached archive that its index no longer vouches for is
		// fetched again (and checked against the index then).
		indexed := entry == nil || entry.Digest == "" || strings.EqualFold(entry.Digest, hex.EncodeToString(sum[:]))
		if _, err := loadArchive(dep.Name, data); err == nil && indexed {
			return file{name: name, data: data}, nil
		}
	}
	spec.Version = version
	var (
		data []byte
		err  error
	)
	if spec.Kind() == SourceOCI {
		data, _, _, err = e.pullOCI(ctx, &spec, version)
	} else {
		var client *http.Client
		if client, err = httpClient(auth); err == nil {
			if entry, err = e.httpEntry(ctx, &spec, version); err == nil {
				data, err = downloadHTTP(ctx, client, repo, entry, auth, dep.Name)
			}
		}
	}
	if err != nil {
		return file{}, fmt.Errorf("chart '%s': dependency '%s': %w", parent, dep.Name, err)
	}
	ch, err := loadArchive(dep.Name, data)
	if err != nil {
		return file{}, fmt.Errorf("chart '%s': dependency '%s': %w", parent, dep.Name, err)
	}
	if ch.Name() != dep.Name {
		return file{}, fmt.Errorf("chart '%s': dependency '%s': the archive holds chart '%s'", parent, dep.Name, ch.Name())
	}
	_ = writeFileAtomic(cached, data)
	return file{name: name, data: data}, nil
}
