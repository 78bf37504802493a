// Package inputs computes the exported inputs of flux-operator's
// ResourceSetInputProvider without a controller: Fetch lists an upstream
// (a Git host's change requests, branches or tags, an OCI repository's tags)
// and returns one input per item, with flux-operator's keys and ids, so that
// templates written for flux-operator render the same names. The result is
// sorted and stable: an unchanged upstream gives the same inputs.
package inputs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// The supported types, with flux-operator's names.
const (
	TypeStatic             = "Static"
	TypeOCIArtifactTag     = "OCIArtifactTag"
	TypeGitHubPullRequest  = "GitHubPullRequest"
	TypeGitHubBranch       = "GitHubBranch"
	TypeGitHubTag          = "GitHubTag"
	TypeGitLabMergeRequest = "GitLabMergeRequest"
	TypeGitLabBranch       = "GitLabBranch"
	TypeGitLabTag          = "GitLabTag"
)

// Supported lists the types Fetch implements.
var Supported = []string{
	TypeStatic, TypeOCIArtifactTag,
	TypeGitHubPullRequest, TypeGitHubBranch, TypeGitHubTag,
	TypeGitLabMergeRequest, TypeGitLabBranch, TypeGitLabTag,
}

// NotYetSupported lists flux-operator's other types.
var NotYetSupported = []string{
	"GitLabEnvironment",
	"AzureDevOpsPullRequest", "AzureDevOpsBranch", "AzureDevOpsTag",
	"GiteaPullRequest", "GiteaBranch", "GiteaTag",
	"AWSCodeCommitPullRequest", "AWSCodeCommitBranch", "AWSCodeCommitTag",
	"ACRArtifactTag", "ECRArtifactTag", "GARArtifactTag",
	"ExternalService", "ExternalArtifact",
}

const (
	// DefaultLimit and MaxLimit bound filter.limit, as in flux-operator.
	DefaultLimit = 100
	MaxLimit     = 10_000
)

// Spec is a ResourceSetInputProvider spec in plain Go.
type Spec struct {
	Type string
	URL  string
	// UID stands for the provider's metadata.uid, of which the Static input's
	// id is the checksum.
	UID    string
	Filter Filter
	// SkipLabels is skip.labels: change requests carrying one of them (or,
	// for `!label`, not carrying it) are left out.
	SkipLabels []string
	// DefaultValues are merged into every input under the keys it lacks.
	DefaultValues map[string]any
	Auth          Auth
	// Insecure allows plain HTTP to the OCI registry.
	Insecure bool
}

// Filter is spec.filter. A zero Limit means DefaultLimit.
type Filter struct {
	Limit         int
	Labels        []string
	IncludeBranch string
	ExcludeBranch string
	IncludeTag    string
	ExcludeTag    string
	Semver        string
}

// Auth holds the credentials. Git hosts take Token (or Password, which
// flux-operator reads the token from); OCI registries take Username and
// Password, or Token as a registry bearer token. CACert is PEM, trusted on top
// of the system roots.
type Auth struct {
	Username string
	Password string
	Token    string
	CACert   string
}

type kind int

const (
	kindStatic kind = iota
	kindOCITag
	kindRequest
	kindBranch
	kindTag
)

func kindOf(t string) kind {
	switch {
	case t == TypeStatic:
		return kindStatic
	case t == TypeOCIArtifactTag:
		return kindOCITag
	case strings.HasSuffix(t, "Request"):
		return kindRequest
	case strings.HasSuffix(t, "Branch"):
		return kindBranch
	default:
		return kindTag
	}
}

func isGitHub(t string) bool { return strings.HasPrefix(t, "GitHub") }

// Validate reports every problem of the spec that needs no network.
func (s Spec) Validate() []*fielderr.Error {
	var errs []*fielderr.Error
	add := func(field, format string, a ...any) {
		errs = append(errs, fielderr.Errorf(field, format, a...))
	}
	if !slices.Contains(Supported, s.Type) {
		if slices.Contains(NotYetSupported, s.Type) {
			add("type", "%q is a flux-operator type stevedore does not support yet; supported: %s", s.Type, strings.Join(Supported, ", "))
		} else {
			add("type", "unknown type %q; supported: %s (not yet supported: %s)", s.Type, strings.Join(Supported, ", "), strings.Join(NotYetSupported, ", "))
		}
		return errs
	}
	k := kindOf(s.Type)

	// url
	switch k {
	case kindStatic:
		if s.URL != "" {
			add("url", "must not be set when type is Static")
		}
	case kindOCITag:
		if s.URL == "" {
			add("url", "required when type is %s", s.Type)
		} else if _, err := ociRepository(s.URL, false); err != nil {
			add("url", "%v", err)
		}
	default:
		if s.URL == "" {
			add("url", "required when type is %s", s.Type)
		} else if isGitHub(s.Type) {
			if _, _, _, err := parseGitHubURL(s.URL); err != nil {
				add("url", "%v", err)
			}
		} else if _, _, err := parseGitLabURL(s.URL); err != nil {
			add("url", "%v", err)
		}
	}

	if s.UID != "" && k != kindStatic {
		add("uid", "only applies to type Static")
	}
	if s.Insecure && k != kindOCITag {
		add("insecure", "only applies to type OCIArtifactTag")
	}

	// filter
	f := s.Filter
	if f.Limit != 0 && (f.Limit < 1 || f.Limit > MaxLimit) {
		add("filter.limit", "must be between 1 and %d, got %d", MaxLimit, f.Limit)
	}
	if k == kindStatic && (f.Limit != 0 || len(f.Labels) > 0 || f.IncludeBranch != "" || f.ExcludeBranch != "" ||
		f.IncludeTag != "" || f.ExcludeTag != "" || f.Semver != "") {
		add("filter", "does not apply to type Static")
	}
	only := func(field, value string, kinds ...kind) {
		if value != "" && k != kindStatic && !slices.Contains(kinds, k) {
			add("filter."+field, "does not apply to type %s", s.Type)
		}
	}
	only("include_branch", f.IncludeBranch, kindBranch, kindRequest)
	only("exclude_branch", f.ExcludeBranch, kindBranch, kindRequest)
	only("include_tag", f.IncludeTag, kindTag, kindOCITag)
	only("exclude_tag", f.ExcludeTag, kindTag, kindOCITag)
	only("semver", f.Semver, kindTag, kindOCITag)
	if len(f.Labels) > 0 && k != kindStatic && k != kindRequest {
		add("filter.labels", "only applies to change requests (GitHubPullRequest, GitLabMergeRequest)")
	}
	for field, expr := range map[string]string{
		"include_branch": f.IncludeBranch, "exclude_branch": f.ExcludeBranch,
		"include_tag": f.IncludeTag, "exclude_tag": f.ExcludeTag,
	} {
		if _, err := regexp.Compile(expr); err != nil {
			add("filter."+field, "invalid regular expression: %v", err)
		}
	}
	if f.Semver != "" {
		if _, err := semver.NewConstraint(f.Semver); err != nil {
			add("filter.semver", "invalid semver constraint %q: %v", f.Semver, err)
		}
	}
	for i, l := range f.Labels {
		if l == "" {
			add(fmt.Sprintf("filter.labels[%d]", i), "must not be empty")
		}
	}
	if len(s.SkipLabels) > 0 && k != kindRequest {
		add("skip", "only applies to change requests (GitHubPullRequest, GitLabMergeRequest)")
	}
	for i, l := range s.SkipLabels {
		if strings.TrimPrefix(l, "!") == "" {
			add(fmt.Sprintf("skip.labels[%d]", i), "must name a label")
		}
	}

	// credentials
	a := s.Auth
	if k == kindStatic {
		for field, v := range map[string]string{"username": a.Username, "password": a.Password, "token": a.Token, "ca_cert": a.CACert} {
			if v != "" {
				add(field, "does not apply to type Static")
			}
		}
	} else {
		if a.Token != "" && (a.Password != "" || a.Username != "") {
			add("token", "conflicts with username and password: set one or the other")
		}
		if k == kindOCITag && (a.Username == "") != (a.Password == "") {
			if a.Username == "" {
				add("username", "required with password")
			} else {
				add("password", "required with username")
			}
		}
		if a.CACert != "" {
			if _, err := a.tlsConfig(); err != nil {
				add("ca_cert", "%v", err)
			}
		}
	}
	slices.SortStableFunc(errs, func(a, b *fielderr.Error) int { return strings.Compare(a.Path, b.Path) })
	return errs
}

// Fetch lists the upstream and returns the exported inputs, sorted: tags the
// way flux-operator ranks them (highest semver, or reverse lexical order,
// first), branches by name, change requests by number, newest first.
func Fetch(ctx context.Context, s Spec) ([]map[string]any, error) {
	if errs := s.Validate(); len(errs) > 0 {
		return nil, errs[0]
	}
	var (
		inputs []map[string]any
		err    error
	)
	switch k := kindOf(s.Type); {
	case k == kindStatic:
		inputs = []map[string]any{{"id": ID(s.UID)}}
	case k == kindOCITag:
		inputs, err = fetchOCITags(ctx, s)
	default:
		var results []result
		if isGitHub(s.Type) {
			results, err = fetchGitHub(ctx, s, k)
		} else {
			results, err = fetchGitLab(ctx, s, k)
		}
		if k == kindRequest {
			results = skip(results, s.SkipLabels)
		}
		for _, r := range results {
			inputs = append(inputs, r.toMap())
		}
	}
	if err != nil {
		return nil, err
	}
	for _, in := range inputs {
		for k, v := range s.DefaultValues {
			if _, ok := in[k]; !ok {
				in[k] = v
			}
		}
	}
	if inputs == nil {
		inputs = []map[string]any{}
	}
	return inputs, nil
}

// result is one change request, branch or tag of a Git host.
type result struct {
	id, sha, branch, tag, author, title, slug string
	labels                                    []string
	// number orders change requests.
	number int64
}

// toMap has flux-operator's keys: id and sha always, the others when not
// empty (default values may then fill them).
func (r result) toMap() map[string]any {
	m := map[string]any{"id": r.id, "sha": r.sha}
	for k, v := range map[string]string{"branch": r.branch, "tag": r.tag, "author": r.author, "title": r.title, "slug": r.slug} {
		if v != "" {
			m[k] = v
		}
	}
	if len(r.labels) > 0 {
		l := make([]any, len(r.labels))
		for i, s := range r.labels {
			l[i] = s
		}
		m["labels"] = l
	}
	return m
}

// skip leaves out the change requests that skip.labels match: one carrying a
// listed label, or lacking a `!label`. flux-operator keeps the inputs it
// exported for them before; a data source has no before, see the docs.
func skip(results []result, labels []string) []result {
	if len(labels) == 0 {
		return results
	}
	return slices.DeleteFunc(results, func(r result) bool {
		for _, l := range labels {
			if name, neg := strings.CutPrefix(l, "!"); neg {
				if !slices.Contains(r.labels, name) {
					return true
				}
			} else if slices.Contains(r.labels, l) {
				return true
			}
		}
		return false
	})
}

func (f Filter) limit() int {
	if f.Limit == 0 {
		return DefaultLimit
	}
	return f.Limit
}

// tlsConfig trusts CACert on top of the system roots; nil without one.
func (a Auth) tlsConfig() (*tls.Config, error) {
	if a.CACert == "" {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM([]byte(a.CACert)) {
		return nil, fmt.Errorf("no PEM certificate found")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// httpClient is a client trusting CACert.
func (a Auth) httpClient() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	cfg, err := a.tlsConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		tr.TLSClientConfig = cfg
	}
	return &http.Client{Transport: tr}, nil
}

// gitToken is the token of a Git host: token, else password (flux-operator's
// secret key for it).
func (a Auth) gitToken() string {
	if a.Token != "" {
		return a.Token
	}
	return a.Password
}

// parseGitHubURL splits https://host/owner/repo.
func parseGitHubURL(raw string) (base, owner, repo string, err error) {
	u, err := parseHTTPURL(raw)
	if err != nil {
		return "", "", "", err
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", "", fmt.Errorf("invalid GitHub URL %q: want <scheme>://<host>/<owner>/<repository>", raw)
	}
	return u.Scheme + "://" + u.Host, parts[0], parts[1], nil
}

// parseGitLabURL splits https://host/group/.../project.
func parseGitLabURL(raw string) (base, project string, err error) {
	u, err := parseHTTPURL(raw)
	if err != nil {
		return "", "", err
	}
	project = strings.Trim(u.Path, "/")
	if project == "" {
		return "", "", fmt.Errorf("invalid GitLab URL %q: want <scheme>://<host>/<group>/<project>", raw)
	}
	return u.Scheme + "://" + u.Host, project, nil
}

func parseHTTPURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("invalid URL %q: must start with http:// or https:// and name a host", raw)
	}
	return u, nil
}
