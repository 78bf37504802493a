package chart

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/registry"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// ociRepo is a parsed oci:// repository: host and path, without scheme.
type ociRepo struct {
	host string
	path string // without leading or trailing slash; may be empty
	// plainHTTP: loopback registries are spoken to over HTTP, as Docker and
	// go-containerregistry do; any other only with Insecure.
	plainHTTP bool
}

func parseOCIRepo(repository string, insecure bool) (ociRepo, error) {
	u, err := url.Parse(repository)
	if err != nil || u.Scheme != "oci" || u.Host == "" {
		return ociRepo{}, fieldErr("repository", fmt.Errorf("'%s' is not an oci:// repository URL", repository))
	}
	r := ociRepo{host: u.Host, path: strings.Trim(u.Path, "/"), plainHTTP: insecure || isLoopback(u.Hostname())}
	return r, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// chartRef is host/path/name, the reference of a chart without tag.
func (r ociRepo) chartRef(name string) string {
	if r.path == "" {
		return r.host + "/" + name
	}
	return r.host + "/" + r.path + "/" + name
}

func (e *Engine) registryClient(auth Auth, plainHTTP bool) (*registry.Client, error) {
	hc, err := httpClient(auth)
	if err != nil {
		return nil, err
	}
	opts := []registry.ClientOption{
		registry.ClientOptHTTPClient(hc),
		registry.ClientOptWriter(io.Discard),
		// Never the user's Helm or Docker credential store: credentials come
		// from the configuration only. The file is never written.
		registry.ClientOptCredentialsFile(filepath.Join(e.cacheDir, "registry-credentials.json")),
	}
	if plainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	if auth.Username != "" || auth.Password != "" {
		opts = append(opts, registry.ClientOptBasicAuth(auth.Username, auth.Password))
	}
	c, err := registry.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("create registry client: %w", err)
	}
	return c, nil
}

type tagsCache struct {
	Ref       string    `json:"ref"`
	FetchedAt time.Time `json:"fetchedAt"`
	Tags      []string  `json:"tags"`
}

// ociTags lists the strict-semver tags of a chart (Helm's client turns `_`
// back into `+`), through the same TTL cache as repository indexes. When the
// registry cannot be reached (a network or server error, not a denial or a
// missing repository), the cached list is used however old, as for an index:
// stale then says why.
func (e *Engine) ociTags(ctx context.Context, repo ociRepo, name string, auth Auth) (tags []string, stale string, err error) {
	ref := repo.chartRef(name)
	path := filepath.Join(e.cacheDir, "oci-tags", hashKey(ref+"\x00"+auth.Username+"\x00"+auth.Password)+".json")
	unlock := lockFor(path)
	defer unlock()
	var cached *tagsCache
	if data, err := os.ReadFile(path); err == nil {
		var c tagsCache
		if json.Unmarshal(data, &c) == nil && c.Ref == ref {
			if fresh(e.now().Sub(c.FetchedAt), e.ttl) {
				return c.Tags, "", nil
			}
			cached = &c
		}
	}
	client, err := e.registryClient(auth, repo.plainHTTP)
	if err != nil {
		return nil, "", err
	}
	tags, err = withContext(ctx, func() ([]string, error) { return client.Tags(ref) })
	if err != nil {
		err = ociError(err)
		down := ctx.Err() == nil && !errors.Is(err, ErrUnauthorized) && !errors.Is(err, ErrNotFound)
		if cached != nil && down {
			return cached.Tags, fmt.Sprintf("registry %s cannot be reached (%v): using its tags of %s cached at %s",
				repo.host, err, name, cached.FetchedAt.UTC().Format(time.RFC3339)), nil
		}
		err = fmt.Errorf("could not get tags for '%s': %w", name, err)
		if down {
			err = unreachable(err)
		}
		return nil, "", fieldErr("repository", err)
	}
	_ = writeJSONAtomic(path, tagsCache{Ref: ref, FetchedAt: e.now(), Tags: tags})
	return tags, "", nil
}

// resolveOCI returns the version ver selects: a semver version as is (it is
// pulled directly), otherwise the best match among the tags.
func (e *Engine) resolveOCI(ctx context.Context, spec *Spec) (version, stale string, err error) {
	if isExactVersion(spec.Version) {
		return spec.Version, "", nil
	}
	repo, err := parseOCIRepo(spec.Repository, spec.Insecure)
	if err != nil {
		return "", "", err
	}
	tags, stale, err := e.ociTags(ctx, repo, spec.Chart, spec.Auth)
	if err != nil {
		return "", "", err
	}
	v, err := selectTag(spec.Chart, tags, spec.Version)
	if err != nil {
		return "", "", fieldErr("version", err)
	}
	return v, stale, nil
}

// pullOCI pulls name:version and returns the archive and the manifest
// digest it was pulled by.
func (e *Engine) pullOCI(ctx context.Context, spec *Spec, version string) (data []byte, ref, manifestDigest string, err error) {
	repo, err := parseOCIRepo(spec.Repository, spec.Insecure)
	if err != nil {
		return nil, "", "", err
	}
	client, err := e.registryClient(spec.Auth, repo.plainHTTP)
	if err != nil {
		return nil, "", "", err
	}
	ref = repo.chartRef(spec.Chart) + ":" + version
	res, err := withContext(ctx, func() (*registry.PullResult, error) {
		return client.Pull(ref, registry.PullOptWithChart(true))
	})
	if err != nil {
		err = ociError(err)
		field := "repository"
		if errors.Is(err, ErrNotFound) {
			field = "version"
		}
		return nil, "", "", fieldErr(field, fmt.Errorf("failed to pull chart '%s' version '%s' from %s: %w", spec.Chart, version, spec.Repository, err))
	}
	if res.Chart == nil || len(res.Chart.Data) == 0 {
		return nil, "", "", fmt.Errorf("'%s' is not a Helm chart: no chart layer", ref)
	}
	return res.Chart.Data, ref, res.Manifest.Digest, nil
}

// ociError classifies the registry client's errors: by the registry's HTTP
// status (oras' errcode.ErrorResponse) or oras' not-found error where the
// client kept them, else by the message with its URLs left out, so that a
// host or port such as 127.0.0.1:40441 is not read as a 404.
func ociError(err error) error {
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) {
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return marked(err, ErrUnauthorized)
		case http.StatusNotFound:
			return notFound(err)
		}
		return err
	}
	if errors.Is(err, errdef.ErrNotFound) {
		return notFound(err)
	}
	msg := strings.ToLower(urlInMessage.ReplaceAllString(err.Error(), ""))
	switch {
	case statusInMessage(msg, "401", "403") || strings.Contains(msg, "unauthorized") || strings.Contains(msg, "denied"):
		return marked(err, ErrUnauthorized)
	case strings.Contains(msg, "not found") || statusInMessage(msg, "404"):
		return notFound(err)
	}
	return err
}

// urlInMessage is a URL in an error's text, quoted or not.
var urlInMessage = regexp.MustCompile(`"?[a-z][a-z0-9+.-]*://[^\s"]*"?`)

// statusInMessage reports whether one of the HTTP status codes stands in msg
// as a number of its own.
func statusInMessage(msg string, codes ...string) bool {
	for _, f := range strings.FieldsFunc(msg, func(r rune) bool { return r < '0' || r > '9' }) {
		if slices.Contains(codes, f) {
			return true
		}
	}
	return false
}

// withContext runs f, which takes no context (Helm's registry client does
// not), and returns early when ctx ends.
func withContext[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
