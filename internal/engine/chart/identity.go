package chart

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// An archive in the cache is found again only by its digest, or by the
// identity of the source it was built from (sourceIdentity): never by chart
// name and version alone, since two sources may serve different archives
// under one name and version (a fork that keeps the version, a mirror that
// patches a chart, a name two teams chose). Each build records, under
// sources/<hash of the identity>.json, which archive that source gave; Fetch
// reads the record back and checks it before trusting it.

// sourceRecord is what the cache knows of the archive one source identity
// was built into.
type sourceRecord struct {
	// Source describes the identity for people (credentials left out); the
	// file name is the hash of the identity itself.
	Source     string `json:"source"`
	Digest     string `json:"digest"`
	ChartName  string `json:"chartName"`
	Version    string `json:"version"`
	AppVersion string `json:"appVersion,omitempty"`
	Revision   string `json:"revision"`
	// Upstream is the sha256 (hex) of the archive as the source served it,
	// before values files were merged in: what a repository index's digest
	// is compared with.
	Upstream            string   `json:"upstream,omitempty"`
	ObservedValuesFiles []string `json:"observedValuesFiles,omitempty"`
	SourceRevision      string   `json:"sourceRevision,omitempty"`
	// VerifiedBy are the fingerprints (verifyFingerprint) of the key
	// material whose verification this archive passed.
	VerifiedBy []string `json:"verifiedBy,omitempty"`
}

// sourceIdentity is the identity of what spec builds at version: for a Helm
// repository its normalised URL, for an OCI chart its normalised reference,
// with the chart name, the version and the credentials' hash (what one user
// may fetch another may not); for a local chart the real path of its
// directory and the artifact revision (the version, with the values' digest
// and, for the Revision strategy, the source revision). Values files are part
// of it: as a list of paths in the chart for a remote chart (whose merged
// values are a function of the archive and the list), as the merged values'
// digest in the revision for a local one. desc is the identity without
// credentials, for messages and the record.
func sourceIdentity(spec *Spec, version, revision, sourceRevision string) (id, desc string, err error) {
	var parts []string
	switch spec.Kind() {
	case SourceHTTP:
		u, err := normaliseRepoURL(spec.Repository)
		if err != nil {
			return "", "", fieldErr("repository", err)
		}
		parts = []string{"helm", u, spec.Chart, version}
	case SourceOCI:
		repo, err := parseOCIRepo(spec.Repository, spec.Insecure)
		if err != nil {
			return "", "", err
		}
		parts = []string{"oci", strings.ToLower(repo.host) + "/" + repo.path, spec.Chart, version}
	default:
		abs, err := filepath.Abs(spec.chartDir())
		if err != nil {
			return "", "", fieldErr("source_path", err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return "", "", fieldErr("source_path", fmt.Errorf("chart directory: %w", err))
		}
		parts = []string{"dir", real, revision}
		if spec.ReconcileStrategy == StrategyRevision {
			parts = append(parts, sourceRevision)
		}
		desc = strings.Join(parts, " ")
		return strings.Join(parts, "\x00"), desc, nil
	}
	if len(spec.ValuesFiles) > 0 {
		parts = append(parts, "values:"+strings.Join(spec.ValuesFiles, "\x01"), fmt.Sprintf("ignoreMissing:%t", spec.IgnoreMissingValuesFiles))
	}
	desc = strings.Join(parts, " ")
	creds := sha256.Sum256([]byte(spec.Auth.Username + "\x00" + spec.Auth.Password))
	parts = append(parts, hex.EncodeToString(creds[:]))
	return strings.Join(parts, "\x00"), desc, nil
}

// normaliseRepoURL is the URL of a Helm repository as one identity: scheme
// and host lower-cased, the default port and user info dropped, the path
// without trailing slashes, so that `https://Charts.example.com:443/x/` and
// `https://charts.example.com/x` are one repository.
func normaliseRepoURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	if port != "" {
		host += ":" + port
	}
	if strings.Contains(u.Hostname(), ":") {
		// IPv6 literal.
		host = "[" + strings.ToLower(u.Hostname()) + "]"
		if port != "" {
			host += ":" + port
		}
	}
	u.Host = host
	u.User = nil
	u.Fragment = ""
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u.String(), nil
}

// verifyFingerprint identifies the key material of a verification: the
// provider, and for cosign the public keys and the identities, as configured
// (any one key or identity of the set passes, so the set is what was
// checked); for Notation the trust policy (its JSON without insignificant
// white space) and the CA certificates (their contents, whatever their keys).
func verifyFingerprint(v *Verify) string {
	if v == nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "provider\x00%s\n", v.Provider)
	if v.Provider == VerifyProviderNotation {
		var policy bytes.Buffer
		if json.Compact(&policy, v.TrustPolicy) != nil {
			policy.Reset()
			policy.Write(bytes.TrimSpace(v.TrustPolicy))
		}
		fmt.Fprintf(h, "trustpolicy\x00%d\x00%s\n", policy.Len(), policy.Bytes())
		certs := make([]string, 0, len(v.CACerts))
		for _, c := range v.CACerts {
			certs = append(certs, strings.TrimSpace(string(c)))
		}
		slices.Sort(certs)
		for _, c := range certs {
			fmt.Fprintf(h, "ca\x00%d\x00%s\n", len(c), c)
		}
		return "sha256:" + hex.EncodeToString(h.Sum(nil))
	}
	keys := make([]string, 0, len(v.PublicKeys))
	for _, k := range v.PublicKeys {
		keys = append(keys, strings.TrimSpace(string(k)))
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "key\x00%s\n", k)
	}
	for _, id := range v.Identities {
		fmt.Fprintf(h, "identity\x00%s\x00%s\n", id.Issuer, id.Subject)
	}
	if len(v.PublicKeys) == 0 && len(v.Identities) == 0 {
		fmt.Fprint(h, "keyless-any\n")
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func (e *Engine) recordPath(id string) string {
	return filepath.Join(e.cacheDir, "sources", hashKey(id)+".json")
}

// readRecord returns the record of identity id, nil when there is none or
// it cannot be read (the archive is then fetched again).
func (e *Engine) readRecord(id string) *sourceRecord {
	data, err := os.ReadFile(e.recordPath(id))
	if err != nil {
		return nil
	}
	var rec sourceRecord
	if json.Unmarshal(data, &rec) != nil || !rec.valid() {
		return nil
	}
	return &rec
}

// valid refuses a record whose fields could not have come from a build:
// they form a path in the cache.
func (r *sourceRecord) valid() bool {
	h, ok := strings.CutPrefix(r.Digest, "sha256:")
	if !ok || len(h) != sha256.Size*2 {
		return false
	}
	if _, err := hex.DecodeString(h); err != nil {
		return false
	}
	for _, s := range []string{r.ChartName, r.Revision} {
		if s == "" || strings.ContainsAny(s, `/\`) || s == ".." {
			return false
		}
	}
	return true
}

// recordLocks serialise, within the process, the read-modify-write of one
// record (the verifications it lists).
var recordLocks sync.Map

// writeRecord records that identity id built artifact a. A verification
// already recorded for the same archive is kept. A record that cannot be
// written costs a fetch next time, nothing else.
func (e *Engine) writeRecord(id, desc string, a *Artifact, upstream, verifiedBy string) {
	v, _ := recordLocks.LoadOrStore(id, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	mu.Lock()
	defer mu.Unlock()
	rec := &sourceRecord{
		Source: desc, Digest: a.Digest, ChartName: a.ChartName, Version: a.Version, AppVersion: a.AppVersion,
		Revision: a.Revision, Upstream: upstream, ObservedValuesFiles: a.ObservedValuesFiles, SourceRevision: a.SourceRevision,
	}
	if old := e.readRecord(id); old != nil && old.Digest == a.Digest {
		rec.VerifiedBy = old.VerifiedBy
	}
	if verifiedBy != "" && !slices.Contains(rec.VerifiedBy, verifiedBy) {
		rec.VerifiedBy = append(rec.VerifiedBy, verifiedBy)
	}
	_ = writeJSONAtomic(e.recordPath(id), rec)
}

// Fetch returns the artifact of spec at version, as Build does, but from the
// cache when the cache holds the archive this very source was built into
// (sourceIdentity) and that archive still holds: its bytes match its digest;
// a Helm repository's index still gives the digest the archive was fetched
// with; and, with verify, it passed verification with this key material.
// Anything else is built again (and so fetched and verified again). An
// archive that is there but damaged (truncated, its bytes no longer those of
// its digest) is fetched again with a warning in Artifact.Warnings, or, when
// that fails, is an error that names the file.
func (e *Engine) Fetch(ctx context.Context, spec Spec, version string) (*Artifact, error) {
	spec, err := spec.forBuild(version)
	if err != nil {
		return nil, err
	}
	var revision, sourceRev string
	if spec.Kind() == SourceLocal {
		lc, err := e.loadLocalSpec(ctx, &spec)
		if err != nil {
			return nil, err
		}
		b, err := e.localBuild(&spec, lc)
		if err != nil {
			return nil, err
		}
		revision, sourceRev = b.revision, b.sourceRevision
	}
	id, desc, err := sourceIdentity(&spec, version, revision, sourceRev)
	if err != nil {
		return nil, err
	}
	var warnings []string
	damaged := ""
	if rec := e.readRecord(id); rec != nil {
		a, why, err := e.fromRecord(ctx, &spec, version, rec)
		if err != nil {
			return nil, err
		}
		if a != nil {
			return a, nil
		}
		if why != "" {
			warnings = append(warnings, why)
			damaged = e.artifactPath(strings.TrimPrefix(rec.Digest, "sha256:"), rec.ChartName, rec.Revision)
		}
	}
	a, err := e.Build(ctx, spec, version)
	if err != nil {
		if damaged != "" {
			return nil, fmt.Errorf("the cached archive %s of %s cannot be used (%s) and cannot be fetched again: %w", damaged, desc, warnings[0], err)
		}
		if werr := os.MkdirAll(filepath.Join(e.cacheDir, "artifacts"), 0o700); werr != nil {
			return nil, fmt.Errorf("the cache directory %s cannot be written (%v), and %s cannot be fetched: %w", e.cacheDir, werr, desc, err)
		}
		return nil, err
	}
	a.Warnings = append(warnings, a.Warnings...)
	return a, nil
}

// fromRecord returns the recorded artifact when it may be used. When it may
// not, a is nil and why, when not empty, says what was wrong with the cache
// (a warning); a missing file or a verification not yet done for this key
// material is no warning.
func (e *Engine) fromRecord(ctx context.Context, spec *Spec, version string, rec *sourceRecord) (a *Artifact, why string, err error) {
	h := strings.TrimPrefix(rec.Digest, "sha256:")
	p := e.artifactPath(h, rec.ChartName, rec.Revision)
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Sprintf("the cached archive %s cannot be read: fetched again", p), nil
	}
	if !e.hasDigest(p, h) {
		return nil, fmt.Sprintf("the cached archive %s is truncated or was changed: its bytes are not those of its digest %s; fetched again", p, rec.Digest), nil
	}
	if spec.Verify != nil && !slices.Contains(rec.VerifiedBy, verifyFingerprint(spec.Verify)) {
		// Cached, but not verified with this key material: verify again.
		return nil, "", nil
	}
	if spec.Kind() == SourceHTTP {
		entry, err := e.httpEntry(ctx, spec, version)
		if err != nil {
			return nil, "", err
		}
		if entry.Digest != "" && !strings.EqualFold(entry.Digest, rec.Upstream) {
			return nil, fmt.Sprintf("chart '%s' version '%s' in repository %s: the cached archive %s was fetched as sha256:%s, and the index now gives sha256:%s; "+
				"the cached archive is not used, and the chart is fetched again", spec.Chart, version, redactURL(spec.Repository), p, rec.Upstream, entry.Digest), nil
		}
	}
	return &Artifact{
		ChartName: rec.ChartName, Version: rec.Version, AppVersion: rec.AppVersion, Revision: rec.Revision,
		Digest: rec.Digest, Size: fi.Size(), Path: p, URL: FileURL(p),
		ObservedValuesFiles: slices.Clone(rec.ObservedValuesFiles), Verified: spec.Verify != nil,
		SourceRevision: rec.SourceRevision,
	}, "", nil
}

// CachedArchive is an archive in the cache whose bytes match its digest.
type CachedArchive struct {
	Path   string
	Digest string
}

// Candidates lists the archives in the cache whose file name is
// `<name>-<revision>.tgz` and whose bytes match the digest folder they are
// in. They are candidates only: a name and a version do not identify an
// archive (two sources may serve different archives under them), so a
// caller proves which one it means by content (importing a release compares
// each with the chart Helm stored in the release).
func (e *Engine) Candidates(name, revision string) []CachedArchive {
	if name == "" || revision == "" || strings.ContainsAny(name+revision, `/\*?[`) {
		return nil
	}
	matches, err := filepath.Glob(filepath.Join(e.cacheDir, "artifacts", "*", "*", name+"-"+revision+".tgz"))
	if err != nil {
		return nil
	}
	var out []CachedArchive
	for _, p := range matches {
		h := filepath.Base(filepath.Dir(p))
		if e.hasDigest(p, h) {
			out = append(out, CachedArchive{Path: p, Digest: "sha256:" + h})
		}
	}
	return out
}

// RecordedSource is a remote source the cache recorded an archive as built
// from: what a configuration writes as an inline chart's repository, chart
// and version.
type RecordedSource struct {
	Repository, Chart, Version string
}

// SourcesOf lists the distinct remote sources (a Helm repository or an OCI
// repository, without values files) whose recorded build is the archive of
// digest, read from the records' descriptions. A local chart directory is
// not a source another machine has, and is not listed.
func (e *Engine) SourcesOf(digest string) []RecordedSource {
	files, err := filepath.Glob(filepath.Join(e.cacheDir, "sources", "*.json"))
	if err != nil {
		return nil
	}
	var out []RecordedSource
	for _, f := range files {
		data, err := os.ReadFile(f)
		var rec sourceRecord
		if err != nil || json.Unmarshal(data, &rec) != nil || !rec.valid() || rec.Digest != digest {
			continue
		}
		parts := strings.Fields(rec.Source)
		if len(parts) != 4 {
			continue // a local chart, or values files merged in
		}
		src := RecordedSource{Repository: parts[1], Chart: parts[2], Version: parts[3]}
		switch parts[0] {
		case "helm":
		case "oci":
			src.Repository = "oci://" + src.Repository
		default:
			continue
		}
		if !slices.Contains(out, src) {
			out = append(out, src)
		}
	}
	return out
}
