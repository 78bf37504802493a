// Package chart fetches, packages and verifies Helm charts with the semantics
// of Flux's HelmChart (source-controller): a version constraint resolved
// against a Helm repository index or an OCI registry's tags, or a chart
// directory on the local filesystem; values files merged into the chart and
// the chart repackaged deterministically; cosign verification of OCI charts;
// and a content-addressed artifact cache.
//
// The package knows nothing of Terraform. Resolve is what a plan calls: it
// answers from the on-disk index cache while that is fresh, and revalidates
// it with a conditional request otherwise. Build is what an apply calls: it
// fetches the exact version a plan resolved and stores the result.
package chart

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// Reconcile strategies of a local chart source, as Flux names them.
const (
	StrategyChartVersion = "ChartVersion"
	StrategyRevision     = "Revision"
)

// The verification providers, as Flux's HelmChart names them: cosign is the
// default of a Verify that names none.
const (
	VerifyProviderCosign   = "cosign"
	VerifyProviderNotation = "notation"
)

// VerifyProviders are the providers Validate accepts.
var VerifyProviders = []string{VerifyProviderCosign, VerifyProviderNotation}

// DefaultVersion is the version constraint of a spec that sets none: the
// highest stable version.
const DefaultVersion = "*"

// DefaultIndexTTL is how long a repository index or an OCI tag list is used
// from the cache without asking the server again.
const DefaultIndexTTL = 5 * time.Minute

// SourceKind tells where a chart comes from.
type SourceKind int

const (
	SourceHTTP SourceKind = iota + 1
	SourceOCI
	SourceLocal
)

func (k SourceKind) String() string {
	switch k {
	case SourceHTTP:
		return "HelmRepository"
	case SourceOCI:
		return "OCIRepository"
	case SourceLocal:
		return "directory"
	}
	return "unknown"
}

// Auth holds the credentials and TLS settings of a repository.
type Auth struct {
	Username string
	Password string
	// CAPEM, CertPEM and KeyPEM are PEM blocks: a CA bundle to trust on top of
	// the system roots, and a client certificate and key for mutual TLS.
	CAPEM                 []byte
	CertPEM               []byte
	KeyPEM                []byte
	InsecureSkipTLSVerify bool
	// PassCredentials sends the credentials to chart URLs on another host than
	// the repository's, as Flux's HelmRepository passCredentials does.
	PassCredentials bool
}

// Identity is a keyless signing identity: Go regular expressions for the
// OIDC issuer and the certificate subject.
type Identity struct {
	Issuer  string
	Subject string
}

// Verify asks for a signature verification of an OCI chart, with cosign or
// Notation.
type Verify struct {
	// Provider is VerifyProviderCosign (empty means it) or
	// VerifyProviderNotation.
	Provider string
	// PublicKeys are PEM public keys; any one that verifies passes. Without
	// keys, verification is keyless against Identities, any one of which may
	// match; none accepts any identity Fulcio certified, as Flux does.
	// Cosign only.
	PublicKeys [][]byte
	Identities []Identity
	// TrustPolicy is a Notation trust policy document (the `trustpolicy.json`
	// key of Flux's Secret), and CACerts the trust store's CA certificates,
	// PEM or DER, by their keys in that Secret (each ending in `.crt` or
	// `.pem`). Notation only.
	TrustPolicy []byte
	CACerts     map[string][]byte
}

// Spec describes one chart artifact.
type Spec struct {
	// Repository is an http(s):// Helm repository or an oci:// registry
	// repository; SourcePath a chart directory. Exactly one is set.
	Repository string
	SourcePath string
	// SourceRoot, with SourcePath, is the root of the source the chart is
	// in, as a GitRepository or Bucket artifact is the source of a Flux
	// HelmChart: SourcePath (Flux's spec.chart) and ValuesFiles are then
	// relative to it, and neither may leave it. Without it, SourcePath is the
	// chart directory and ValuesFiles are relative to that.
	SourceRoot string
	// Chart is the chart name in the repository. For a local source it is
	// optional and, when set, must match the name in Chart.yaml.
	Chart string
	// Version is a semver constraint; empty means DefaultVersion.
	Version                  string
	ValuesFiles              []string
	IgnoreMissingValuesFiles bool
	// ReconcileStrategy applies to local sources: StrategyChartVersion
	// (empty) or StrategyRevision.
	ReconcileStrategy string
	// Insecure speaks plain HTTP to an OCI registry (Flux's
	// HelmRepository `insecure`). Loopback registries always are.
	Insecure bool
	Auth     Auth
	// DependencyAuth returns the credentials for a dependency's repository
	// (https:// or oci://) of a local chart; nil means anonymous.
	DependencyAuth func(repository string) Auth
	Verify         *Verify
}

// withDefaults is s with its defaults filled in: the one place they are
// decided. Resolve and Build apply it once; the provider passes what the user
// wrote.
func (s Spec) withDefaults() Spec {
	if s.Version == "" {
		s.Version = DefaultVersion
	}
	if s.ReconcileStrategy == "" {
		s.ReconcileStrategy = StrategyChartVersion
	}
	if s.Verify != nil && s.Verify.Provider == "" {
		v := *s.Verify
		v.Provider = VerifyProviderCosign
		s.Verify = &v
	}
	return s
}

// Kind returns the source kind of the spec.
func (s *Spec) Kind() SourceKind {
	switch {
	case s.SourcePath != "":
		return SourceLocal
	case strings.HasPrefix(s.Repository, "oci://"):
		return SourceOCI
	default:
		return SourceHTTP
	}
}

// Validate checks what can be checked without I/O. The errors name the field.
func (s *Spec) Validate() error {
	var errs []error
	switch {
	case s.Repository == "" && s.SourcePath == "":
		errs = append(errs, errors.New("one of repository or source_path is required"))
	case s.Repository != "" && s.SourcePath != "":
		errs = append(errs, errors.New("repository and source_path are mutually exclusive"))
	}
	if s.Repository != "" {
		u, err := url.Parse(s.Repository)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("repository: %w", err))
		case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "oci":
			errs = append(errs, fmt.Errorf("repository: scheme %q is not supported: use https://, http:// or oci://", u.Scheme))
		case u.Host == "":
			errs = append(errs, fmt.Errorf("repository: %q has no host", s.Repository))
		case u.Scheme == "oci" && (strings.Contains(u.Path, "@") || strings.Contains(strings.TrimPrefix(u.Path, "/"), ":")):
			errs = append(errs, fmt.Errorf("repository: %q must not carry a tag or digest: set the chart name in chart and the version in version", s.Repository))
		}
		if s.Chart == "" {
			errs = append(errs, errors.New("chart: the chart name is required with a repository"))
		}
		if s.ReconcileStrategy == StrategyRevision {
			errs = append(errs, errors.New("reconcile_strategy: Revision applies to source_path only"))
		}
	}
	if s.SourceRoot != "" {
		if s.SourcePath == "" {
			errs = append(errs, fieldErr("source_root", errors.New("applies to source_path only")))
		} else if err := CheckRelPath(s.SourcePath, true); err != nil {
			errs = append(errs, fieldErr("source_path", err))
		}
	}
	if strings.ContainsAny(s.Chart, "/\\") {
		errs = append(errs, fmt.Errorf("chart: %q must be a chart name, not a path", s.Chart))
	}
	if s.Version != "" && s.Version != "*" {
		if err := ValidateConstraint(s.Version); err != nil {
			errs = append(errs, fmt.Errorf("version: %w", err))
		}
	}
	switch s.ReconcileStrategy {
	case "", StrategyChartVersion, StrategyRevision:
	default:
		errs = append(errs, fmt.Errorf("reconcile_strategy: %q is not one of ChartVersion, Revision", s.ReconcileStrategy))
	}
	for i, f := range s.ValuesFiles {
		if err := CheckRelPath(f, s.fromSourceRoot()); err != nil {
			errs = append(errs, elemErr("values_files", i, err))
		}
	}
	if v := s.Verify; v != nil {
		errs = append(errs, s.validateVerify(v)...)
	}
	return errors.Join(errs...)
}

// validateVerify checks the verify block: a known provider, an OCI chart,
// and the provider's own material, which must parse.
func (s *Spec) validateVerify(v *Verify) []error {
	var errs []error
	if s.Kind() != SourceOCI {
		errs = append(errs, fieldErr("verify", fmt.Errorf("only OCI charts carry signatures; a Helm repository or directory has none to verify with %s", v.Provider)))
	}
	switch v.Provider {
	case VerifyProviderCosign:
		if len(v.TrustPolicy) > 0 || len(v.CACerts) > 0 {
			errs = append(errs, fieldErr("verify", errors.New("trust_policy_json and ca_certificates are notation's: set provider = \"notation\", or verify with public_keys or match_oidc_identity")))
		}
		if len(v.PublicKeys) > 0 && len(v.Identities) > 0 {
			errs = append(errs, errors.New("verify: public_keys and match_oidc_identity are mutually exclusive"))
		}
		for i, key := range v.PublicKeys {
			if err := CheckPublicKey(key); err != nil {
				errs = append(errs, elemErr("verify.public_keys", i, err))
			}
		}
	case VerifyProviderNotation:
		errs = append(errs, validateNotation(v)...)
	default:
		errs = append(errs, fieldErr("verify.provider", fmt.Errorf("%q is not supported: use %s", v.Provider, strings.Join(VerifyProviders, " or "))))
	}
	return errs
}

// fromSourceRoot reports whether SourcePath and ValuesFiles are relative to
// SourceRoot.
func (s *Spec) fromSourceRoot() bool { return s.SourceRoot != "" && s.SourcePath != "" }

// chartDir is the chart directory of a local source.
func (s *Spec) chartDir() string {
	if s.fromSourceRoot() {
		return filepath.Join(s.SourceRoot, filepath.FromSlash(s.SourcePath))
	}
	return s.SourcePath
}

// CheckRelPath refuses a path that leaves what it is relative to: the chart
// (the chart source), or with sourceRoot the source root. Like
// source-controller, which joins such paths to the root with SecureJoin, a
// path never reaches outside; where SecureJoin would quietly read another
// file (`../x` as `x`), this is an error.
func CheckRelPath(p string, sourceRoot bool) error {
	base := "the chart source"
	if sourceRoot {
		base = "source_root"
	}
	if p == "" {
		return errors.New("empty path")
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q must be relative to %s", p, base)
	}
	clean := filepath.ToSlash(filepath.Clean(p))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("%q is outside %s", p, base)
	}
	return nil
}

// Resolved is what a plan knows: the version a constraint resolves to.
type Resolved struct {
	ChartName string
	Version   string
	// AppVersion is known from a repository index; empty for OCI charts
	// until they are pulled.
	AppVersion string
	// SourceRevision is the revision of a local source: git HEAD
	// (`<branch>@sha1:<hex>`, or `sha1:<hex>` when detached) or the
	// `sha256:<hex>` digest of its files.
	SourceRevision string
	// Revision is the artifact revision when it is known without fetching
	// the chart (no values files, or a local source); empty otherwise.
	Revision string
	// Stale, when not empty, says that the repository could not be reached
	// and the version was resolved from its cached index.
	Stale string
}

// Artifact is a stored chart archive.
type Artifact struct {
	ChartName  string
	Version    string
	AppVersion string
	// Revision is the version, with `+<metadata>` for merged values files or
	// a local source with the Revision strategy.
	Revision string
	// Digest is `sha256:<hex>` of the archive; Size its length in bytes.
	Digest string
	Size   int64
	// Path is the archive in the cache; URL the same as a file:// URL.
	Path string
	URL  string
	// ObservedValuesFiles are the values files merged, in order.
	ObservedValuesFiles []string
	// Verified is true when a signature was checked and matched.
	Verified bool
	// Unverified, with a verification asked for and Verified false, says
	// why the chart is used unverified: a Notation trust policy statement
	// that skips verification, or only logs a failed authenticity check
	// (source-controller's "ignored" result).
	Unverified     string
	SourceRevision string
	// Warnings say what was wrong with the cache on the way (a damaged
	// archive fetched again, a cache directory that cannot be written).
	Warnings []string
	// upstream is the hex sha256 of the archive as the source served it.
	upstream string
}

// fieldErr is err about field of the Spec, in snake_case as the provider's
// attribute is; an error that names its field already keeps it.
func fieldErr(field string, err error) error { return fielderr.Wrap(field, err) }

// elemErr is an error about element i of the list field.
func elemErr(field string, i int, err error) error {
	return &fielderr.Error{Path: fielderr.Index(field, i), Err: err}
}

// ErrNotFound marks a version or chart the source does not have.
var ErrNotFound = errors.New("not found")

// markedError is an error that errors.Is matches against a sentinel
// without the sentinel's text in its message.
type markedError struct {
	err  error
	mark error
}

func (m *markedError) Error() string        { return m.err.Error() }
func (m *markedError) Unwrap() error        { return m.err }
func (m *markedError) Is(target error) bool { return target == m.mark }

func marked(err, mark error) error { return &markedError{err: err, mark: mark} }

func notFound(err error) error { return marked(err, ErrNotFound) }
