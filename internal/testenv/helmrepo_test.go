package testenv

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/getter"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

func TestHelmRepo_publishAndFetch(t *testing.T) {
	r := startHelmRepo(t, HelmRepoOptions{})
	if !strings.HasPrefix(r.URL(), "http://127.0.0.1:") || r.CAPEM() != nil {
		t.Fatalf("URL %q CA %q, want plain HTTP on 127.0.0.1 and no CA", r.URL(), r.CAPEM())
	}
	podinfo := filepath.Join(ChartsDir(), "podinfo")
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc.1"} {
		if err := r.PublishDir(podinfo, v); err != nil {
			t.Fatal(err)
		}
	}

	// Helm's own repository client reads the index.
	index := downloadIndex(t, &repo.Entry{Name: "test", URL: r.URL()})
	cv, err := index.Get("podinfo", "")
	if err != nil {
		t.Fatal(err)
	}
	if cv.Version != "1.1.0" {
		t.Errorf("latest stable = %s, want 1.1.0", cv.Version)
	}
	if len(cv.URLs) != 1 || cv.URLs[0] != "charts/podinfo-1.1.0.tgz" {
		t.Errorf("URLs = %v, want the relative charts/podinfo-1.1.0.tgz", cv.URLs)
	}
	if got := createdOrder(index.Entries["podinfo"]); got != "1.0.0 1.1.0 2.0.0-rc.1" {
		t.Errorf("versions by created time = %s, want publication order", got)
	}

	chartURL, err := repo.ResolveReferenceURL(r.URL(), cv.URLs[0])
	if err != nil {
		t.Fatal(err)
	}
	if chartURL != r.ChartURL("podinfo", "1.1.0") {
		t.Errorf("resolved chart URL %q, ChartURL %q", chartURL, r.ChartURL("podinfo", "1.1.0"))
	}
	resp := httpGet(t, http.DefaultClient, chartURL, nil)
	body := readAllBody(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", chartURL, resp.Status)
	}
	if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != cv.Digest {
		t.Errorf("archive sha256 %x, index digest %s", sum, cv.Digest)
	}
	ch, err := loader.LoadArchive(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Name() != "podinfo" || ch.Metadata.Version != "1.1.0" {
		t.Errorf("fetched %s-%s, want podinfo-1.1.0", ch.Name(), ch.Metadata.Version)
	}

	if got := r.RequestsFor("/index.yaml"); got != 1 {
		t.Errorf("index requests = %d, want 1", got)
	}
	if got := r.RequestsFor("charts/podinfo-1.1.0.tgz"); got != 1 {
		t.Errorf("chart requests = %d, want 1", got)
	}
	if got := r.Requests(); got != 2 {
		t.Errorf("requests = %d, want 2", got)
	}
	r.ResetCounters()
	if r.Requests() != 0 || r.RequestsFor("/index.yaml") != 0 {
		t.Errorf("after reset: %d requests, %d for the index", r.Requests(), r.RequestsFor("/index.yaml"))
	}

	if resp := httpGet(t, http.DefaultClient, r.ChartURL("podinfo", "9.9.9"), nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown chart: %s, want 404", resp.Status)
	}
}

func TestHelmRepo_publishReplacesVersion(t *testing.T) {
	r := startHelmRepo(t, HelmRepoOptions{})
	podinfo := filepath.Join(ChartsDir(), "podinfo")
	if err := r.PublishDir(podinfo, "1.0.0"); err != nil {
		t.Fatal(err)
	}
	first := fetchIndex(t, r).Entries["podinfo"]
	if err := r.PublishDir(podinfo, "1.0.0"); err != nil {
		t.Fatal(err)
	}
	second := fetchIndex(t, r).Entries["podinfo"]
	if len(first) != 1 || len(second) != 1 {
		t.Fatalf("entries: %d then %d, want one podinfo 1.0.0", len(first), len(second))
	}
	if !second[0].Created.After(first[0].Created) {
		t.Errorf("created %s then %s, want it to increase on republish", first[0].Created, second[0].Created)
	}
}

func TestHelmRepo_publishErrorsAddNothing(t *testing.T) {
	r := startHelmRepo(t, HelmRepoOptions{})
	missing := filepath.Join(t.TempDir(), "podinfo-1.0.0.tgz")
	err := r.Publish(missing)
	if err == nil || !strings.Contains(err.Error(), "helm repository: publish podinfo-1.0.0.tgz") {
		t.Errorf("publish missing archive: %v", err)
	}
	notAChart := filepath.Join(t.TempDir(), "junk.tgz")
	writeTestFile(t, notAChart, "not gzip")
	if err := r.Publish(notAChart); err == nil {
		t.Error("publishing a non-archive succeeded")
	}
	if err := r.PublishDir(filepath.Join(ChartsDir(), "podinfo"), "bad version"); err == nil {
		t.Error("publishing an invalid version succeeded")
	}
	if n := len(fetchIndex(t, r).Entries); n != 0 {
		t.Errorf("index has %d charts after failed publishes, want 0", n)
	}
}

func TestHelmRepo_conditionalIndexRequests(t *testing.T) {
	r := startHelmRepo(t, HelmRepoOptions{})
	if err := r.PublishDir(filepath.Join(ChartsDir(), "podinfo"), "1.0.0"); err != nil {
		t.Fatal(err)
	}
	indexURL := r.URL() + "/index.yaml"
	resp := httpGet(t, http.DefaultClient, indexURL, nil)
	readAllBody(t, resp)
	etag, lastModified := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if resp.StatusCode != http.StatusOK || etag == "" || lastModified == "" {
		t.Fatalf("GET index: %s, ETag %q, Last-Modified %q", resp.Status, etag, lastModified)
	}

	for name, header := range map[string]http.Header{
		"If-None-Match":     {"If-None-Match": {etag}},
		"If-Modified-Since": {"If-Modified-Since": {lastModified}},
	} {
		resp := httpGet(t, http.DefaultClient, indexURL, header)
		if body := readAllBody(t, resp); resp.StatusCode != http.StatusNotModified || len(body) != 0 {
			t.Errorf("%s unchanged: %s with %d bytes, want 304 and no body", name, resp.Status, len(body))
		}
	}

	// Publishing changes both validators, even within the same second.
	if err := r.PublishDir(filepath.Join(ChartsDir(), "podinfo"), "1.1.0"); err != nil {
		t.Fatal(err)
	}
	for name, header := range map[string]http.Header{
		"If-None-Match":     {"If-None-Match": {etag}},
		"If-Modified-Since": {"If-Modified-Since": {lastModified}},
	} {
		resp := httpGet(t, http.DefaultClient, indexURL, header)
		body := readAllBody(t, resp)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "1.1.0") {
			t.Errorf("%s after publish: %s, want 200 with the new index", name, resp.Status)
		}
		if resp.Header.Get("ETag") == etag {
			t.Errorf("%s after publish: ETag unchanged", name)
		}
	}
	if got := r.RequestsFor("/index.yaml"); got != 5 {
		t.Errorf("index requests = %d, want 5 (304s count too)", got)
	}
}

func TestHelmRepo_basicAuth(t *testing.T) {
	r := startHelmRepo(t, HelmRepoOptions{Username: "user", Password: "s3cret"})
	if err := r.PublishDir(filepath.Join(ChartsDir(), "podinfo"), ""); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		user, pass string
		want       int
	}{
		{"no credentials", "", "", http.StatusUnauthorized},
		{"wrong password", "user", "wrong", http.StatusUnauthorized},
		{"wrong user", "admin", "s3cret", http.StatusUnauthorized},
		{"right credentials", "user", "s3cret", http.StatusOK},
	} {
		for _, path := range []string{"/index.yaml", "/charts/podinfo-1.0.0.tgz"} {
			req, err := http.NewRequest(http.MethodGet, r.URL()+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.user != "" {
				req.SetBasicAuth(tc.user, tc.pass)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			readAllBody(t, resp)
			if resp.StatusCode != tc.want {
				t.Errorf("%s %s: %s, want %d", tc.name, path, resp.Status, tc.want)
			}
			if tc.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("%s %s: WWW-Authenticate %q", tc.name, path, resp.Header.Get("WWW-Authenticate"))
			}
		}
	}

	index := downloadIndex(t, &repo.Entry{Name: "auth", URL: r.URL(), Username: "user", Password: "s3cret"})
	if !index.Has("podinfo", "1.0.0") {
		t.Error("helm client with credentials: podinfo 1.0.0 not in index")
	}
}

func TestHelmRepo_tlsTrustedWithItsCA(t *testing.T) {
	r := startHelmRepo(t, HelmRepoOptions{TLS: true})
	if err := r.PublishDir(filepath.Join(ChartsDir(), "podinfo"), ""); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.URL(), "https://127.0.0.1:") {
		t.Fatalf("URL = %q, want https://127.0.0.1:<port>", r.URL())
	}

	trusting := tlsClient(t, r.CAPEM(), nil)
	resp := httpGet(t, trusting, r.URL()+"/index.yaml", nil)
	if readAllBody(t, resp); resp.StatusCode != http.StatusOK {
		t.Errorf("with the CA: %s", resp.Status)
	}
	// The certificate is also valid for localhost.
	localhost := strings.Replace(r.URL(), "127.0.0.1", "localhost", 1)
	resp = httpGet(t, trusting, localhost+"/index.yaml", nil)
	if readAllBody(t, resp); resp.StatusCode != http.StatusOK {
		t.Errorf("via localhost: %s", resp.Status)
	}

	_, err := tlsClient(t, nil, nil).Get(r.URL() + "/index.yaml")
	var unknownAuthority x509.UnknownAuthorityError
	if err == nil || !errors.As(err, &unknownAuthority) {
		t.Errorf("without the CA: err = %v, want an unknown authority error", err)
	}

	caFile := filepath.Join(t.TempDir(), "ca.pem")
	writeTestFile(t, caFile, string(r.CAPEM()))
	index := downloadIndex(t, &repo.Entry{Name: "tls", URL: r.URL(), CAFile: caFile})
	if !index.Has("podinfo", "1.0.0") {
		t.Error("helm client with CA file: podinfo 1.0.0 not in index")
	}
}

func TestHelmRepo_mutualTLSNeedsItsClientCertificate(t *testing.T) {
	r := startHelmRepo(t, HelmRepoOptions{ClientCA: true})
	if !strings.HasPrefix(r.URL(), "https://") {
		t.Fatalf("ClientCA without TLS: URL %q", r.URL())
	}
	certPEM, keyPEM, err := r.ClientCertPEM("stevedore-test-client")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	resp := httpGet(t, tlsClient(t, r.CAPEM(), &cert), r.URL()+"/index.yaml", nil)
	if readAllBody(t, resp); resp.StatusCode != http.StatusOK {
		t.Errorf("with a client certificate: %s", resp.Status)
	}

	if _, err := tlsClient(t, r.CAPEM(), nil).Get(r.URL() + "/index.yaml"); err == nil {
		t.Error("without a client certificate: request succeeded")
	}

	// A certificate from another CA is refused.
	other := startHelmRepo(t, HelmRepoOptions{ClientCA: true})
	otherCert, otherKey, err := other.ClientCertPEM("stranger")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := tls.X509KeyPair(otherCert, otherKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tlsClient(t, r.CAPEM(), &stranger).Get(r.URL() + "/index.yaml"); err == nil {
		t.Error("with a certificate from another CA: request succeeded")
	}

	// Helm's client takes the pair as files.
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "ca.pem"), string(r.CAPEM()))
	writeTestFile(t, filepath.Join(dir, "client.pem"), string(certPEM))
	writeTestFile(t, filepath.Join(dir, "client-key.pem"), string(keyPEM))
	index := downloadIndex(t, &repo.Entry{
		Name: "mtls", URL: r.URL(),
		CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "client.pem"), KeyFile: filepath.Join(dir, "client-key.pem"),
	})
	if len(index.Entries) != 0 {
		t.Errorf("index has %d charts, want an empty index", len(index.Entries))
	}
}

func TestHelmRepo_clientCertNeedsTLS(t *testing.T) {
	r := startHelmRepo(t, HelmRepoOptions{})
	if _, _, err := r.ClientCertPEM("x"); err == nil {
		t.Error("ClientCertPEM on a plain HTTP repository succeeded")
	}
}

func TestHelmRepo_setFailureUntilReset(t *testing.T) {
	r := startHelmRepo(t, HelmRepoOptions{Username: "user", Password: "pass"})
	r.SetFailure(http.StatusServiceUnavailable)
	for _, path := range []string{"/index.yaml", "/charts/podinfo-1.0.0.tgz", "/"} {
		resp := httpGet(t, http.DefaultClient, r.URL()+path, nil)
		if readAllBody(t, resp); resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("GET %s while failing: %s, want 503", path, resp.Status)
		}
	}
	if got := r.Requests(); got != 3 {
		t.Errorf("requests while failing = %d, want 3", got)
	}
	r.SetFailure(0)
	req, err := http.NewRequest(http.MethodGet, r.URL()+"/index.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("user", "pass")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if readAllBody(t, resp); resp.StatusCode != http.StatusOK {
		t.Errorf("after reset: %s, want 200", resp.Status)
	}
}

func TestHelmRepo_setFailureRejectsNonStatus(t *testing.T) {
	r := startHelmRepo(t, HelmRepoOptions{})
	defer func() {
		if recover() == nil {
			t.Error("SetFailure(42) did not panic")
		}
	}()
	r.SetFailure(42)
}

func TestHelmRepo_rejectsWrites(t *testing.T) {
	r := startHelmRepo(t, HelmRepoOptions{})
	resp, err := http.Post(r.URL()+"/index.yaml", "application/x-yaml", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if readAllBody(t, resp); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %s, want 405", resp.Status)
	}
}

func TestHelmRepo_countsConcurrentRequests(t *testing.T) {
	r := startHelmRepo(t, HelmRepoOptions{})
	const n = 32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(r.URL() + "/index.yaml")
			if err != nil {
				errs <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if r.Requests() != n || r.RequestsFor("/index.yaml") != n {
		t.Errorf("requests = %d, for the index %d, want %d", r.Requests(), r.RequestsFor("/index.yaml"), n)
	}
}

func TestHelmRepo_closeIdempotentAndStopsServing(t *testing.T) {
	r, err := StartHelmRepo(HelmRepoOptions{TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	r.Close() // idempotent
	if _, err := tlsClient(t, r.CAPEM(), nil).Get(r.URL() + "/index.yaml"); err == nil {
		t.Error("request after Close succeeded")
	}
}

func startHelmRepo(t *testing.T, opts HelmRepoOptions) *HelmRepo {
	t.Helper()
	r, err := StartHelmRepo(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// downloadIndex fetches and parses the index with Helm's repository client.
func downloadIndex(t *testing.T, entry *repo.Entry) *repo.IndexFile {
	t.Helper()
	chartRepo, err := repo.NewChartRepository(entry, getter.All(cli.New()))
	if err != nil {
		t.Fatal(err)
	}
	chartRepo.CachePath = t.TempDir()
	path, err := chartRepo.DownloadIndexFile()
	if err != nil {
		t.Fatal(err)
	}
	index, err := repo.LoadIndexFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return index
}

// fetchIndex reads the index over plain HTTP without going through Helm.
func fetchIndex(t *testing.T, r *HelmRepo) *repo.IndexFile {
	t.Helper()
	resp := httpGet(t, http.DefaultClient, r.URL()+"/index.yaml", nil)
	body := readAllBody(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET index: %s", resp.Status)
	}
	path := filepath.Join(t.TempDir(), "index.yaml")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	index, err := repo.LoadIndexFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return index
}

func createdOrder(versions repo.ChartVersions) string {
	sorted := slices.Clone(versions)
	slices.SortFunc(sorted, func(a, b *repo.ChartVersion) int { return a.Created.Compare(b.Created) })
	names := make([]string, len(sorted))
	for i, v := range sorted {
		names[i] = v.Version
	}
	return strings.Join(names, " ")
}

func httpGet(t *testing.T, client *http.Client, url string, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp
}

func readAllBody(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// tlsClient trusts only caPEM (nothing when nil) and presents cert when set.
// Keep-alive is off so no connection outlives a test.
func tlsClient(t *testing.T, caPEM []byte, cert *tls.Certificate) *http.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}
	if caPEM != nil && !cfg.RootCAs.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA PEM holds no certificate")
	}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true},
	}
}
