package chart

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
)

const userAgent = "stevedore (Helm chart source)"

// ErrUnauthorized marks a 401 or 403 from a repository or registry.
var ErrUnauthorized = errors.New("unauthorized")

// ErrUnreachable marks a repository or registry that could not be reached
// (a network error or a server error), with nothing cached to answer from:
// what it would say is unknown, not wrong.
var ErrUnreachable = errors.New("unreachable")

func unreachable(err error) error { return marked(err, ErrUnreachable) }

// tlsConfig builds the client TLS configuration of auth, or nil when the
// defaults do.
func tlsConfig(auth Auth) (*tls.Config, error) {
	if len(auth.CAPEM) == 0 && len(auth.CertPEM) == 0 && len(auth.KeyPEM) == 0 && !auth.InsecureSkipTLSVerify {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: auth.InsecureSkipTLSVerify} //nolint:gosec // asked for
	if len(auth.CAPEM) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(auth.CAPEM) {
			return nil, fieldErr("ca_pem", errors.New("holds no PEM certificate"))
		}
		cfg.RootCAs = pool
	}
	if len(auth.CertPEM) > 0 || len(auth.KeyPEM) > 0 {
		if len(auth.CertPEM) == 0 || len(auth.KeyPEM) == 0 {
			return nil, fieldErr("cert_pem", errors.New("cert_pem and key_pem go together"))
		}
		cert, err := tls.X509KeyPair(auth.CertPEM, auth.KeyPEM)
		if err != nil {
			return nil, fieldErr("cert_pem", fmt.Errorf("client certificate: %w", err))
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func httpClient(auth Auth) (*http.Client, error) {
	tc, err := tlsConfig(auth)
	if err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = tc
	t.DisableKeepAlives = true
	return &http.Client{Transport: t, Timeout: 5 * time.Minute}, nil
}

func httpStatusError(u string, resp *http.Response) error {
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return marked(fmt.Errorf("failed to fetch %s: %s: check username and password", redactURL(u), resp.Status), ErrUnauthorized)
	case http.StatusNotFound:
		return notFound(fmt.Errorf("failed to fetch %s: %s", redactURL(u), resp.Status))
	}
	return fmt.Errorf("failed to fetch %s: %s", redactURL(u), resp.Status)
}

// RedactURL drops user info from a URL, for messages and identifiers.
func RedactURL(s string) string { return redactURL(s) }

// redactURL drops user info from a URL before it goes into an error.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}

// chartURL resolves an index entry's URL against the repository URL, as
// Helm's repo.ResolveReferenceURL does (the repository path as a directory).
func chartURL(repoURL, ref string) (string, error) {
	base, err := url.Parse(strings.TrimSuffix(repoURL, "/") + "/")
	if err != nil {
		return "", err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	return base.ResolveReference(r).String(), nil
}

// downloadHTTP fetches a chart archive, sending credentials only to the
// repository's host unless PassCredentials, and checks it against the
// index digest and Helm's archive rules.
func downloadHTTP(ctx context.Context, client *http.Client, repoURL string, entry *Entry, auth Auth, name string) ([]byte, error) {
	if len(entry.URLs) == 0 {
		return nil, fmt.Errorf("chart '%s' version '%s' has no downloadable URLs", name, entry.Version)
	}
	u, err := chartURL(repoURL, entry.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("chart '%s': invalid chart URL '%s': %w", name, entry.URLs[0], err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
	if auth.Username != "" || auth.Password != "" {
		ru, _ := url.Parse(repoURL)
		if auth.PassCredentials || (ru != nil && ru.Host == req.URL.Host) {
			req.SetBasicAuth(auth.Username, auth.Password)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fieldErr("repository", fmt.Errorf("failed to download chart '%s' from %s: %w", name, redactURL(u), err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fieldErr("repository", fmt.Errorf("chart '%s': %w", name, httpStatusError(u, resp)))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, archive.MaxDecompressedChartSize+1))
	if err != nil {
		return nil, fmt.Errorf("failed to download chart '%s' from %s: %w", name, redactURL(u), err)
	}
	if int64(len(data)) > archive.MaxDecompressedChartSize {
		return nil, fmt.Errorf("chart '%s' from %s is larger than Helm's limit of %d bytes", name, redactURL(u), archive.MaxDecompressedChartSize)
	}
	if entry.Digest != "" {
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, entry.Digest) {
			return nil, fieldErr("repository", marked(fmt.Errorf("repository %s, chart '%s' version '%s': the index gives digest sha256:%s, "+
				"but the archive downloaded from %s has digest sha256:%s: refusing it",
				redactURL(repoURL), name, entry.Version, strings.ToLower(entry.Digest), redactURL(u), got), ErrDigestMismatch))
		}
	}
	return data, nil
}

// ErrDigestMismatch marks an archive whose sha256 is not the digest its
// repository index gives for it.
var ErrDigestMismatch = errors.New("digest mismatch")
