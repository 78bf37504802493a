package testenv

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"
)

const (
	helmRepoIndexPath  = "/index.yaml"
	helmRepoChartsPath = "/charts/"
	helmRepoRealm      = "stevedore-test"
)

// HelmRepoOptions configures StartHelmRepo. The zero value is an anonymous
// plain-HTTP repository.
type HelmRepoOptions struct {
	// Username and Password, when either is set, require HTTP basic auth on
	// every request; anything else gets 401.
	Username string
	Password string
	// TLS serves HTTPS with a certificate for 127.0.0.1 and localhost, signed
	// by a CA generated for this repository (see CAPEM).
	TLS bool
	// ClientCA requires client certificates signed by the repository's CA
	// (mutual TLS; see ClientCertPEM). It implies TLS.
	ClientCA bool
}

// HelmRepo is an in-process HTTP Helm chart repository on 127.0.0.1. It
// serves /index.yaml and /charts/<name>-<version>.tgz from memory.
type HelmRepo struct {
	opts   HelmRepoOptions
	server *httptest.Server
	ca     *certAuthority // nil without TLS

	// failure, when non-zero, is the status every request answers.
	failure atomic.Int32

	counterMu sync.Mutex
	total     int64
	perPath   map[string]int64

	mu           sync.Mutex
	index        *repo.IndexFile
	charts       map[string][]byte // archive bytes by file name
	indexYAML    []byte
	indexETag    string
	lastModified time.Time
	lastCreated  time.Time

	closeOnce sync.Once
}

// StartHelmRepo starts a repository on a random 127.0.0.1 port, serving an
// empty index until charts are published. Close stops it. Like httptest, on
// which it is built, it panics if no local port can be bound.
func StartHelmRepo(opts HelmRepoOptions) (*HelmRepo, error) {
	if opts.ClientCA {
		opts.TLS = true
	}
	r := &HelmRepo{
		opts:    opts,
		index:   repo.NewIndexFile(),
		charts:  map[string][]byte{},
		perPath: map[string]int64{},
	}
	if err := r.renderIndexLocked(time.Now()); err != nil {
		return nil, fmt.Errorf("helm repository: %w", err)
	}
	var tlsConfig *tls.Config
	if opts.TLS {
		ca, err := newCertAuthority("stevedore test helm repository CA")
		if err != nil {
			return nil, fmt.Errorf("helm repository: %w", err)
		}
		if tlsConfig, err = serverTLSConfig(ca, opts.ClientCA); err != nil {
			return nil, fmt.Errorf("helm repository: %w", err)
		}
		r.ca = ca
	}

	r.server = httptest.NewUnstartedServer(http.HandlerFunc(r.handle))
	// Clients that do not trust the CA are an expected case in tests; the
	// handshake errors they cause would only clutter the test output.
	r.server.Config.ErrorLog = log.New(dropTLSHandshakeErrors{os.Stderr}, "", log.LstdFlags)
	if tlsConfig == nil {
		r.server.Start()
		return r, nil
	}
	r.server.TLS = tlsConfig
	r.server.StartTLS()
	return r, nil
}

// serverTLSConfig serves a certificate from ca and, for mutual TLS, requires
// client certificates from it too.
func serverTLSConfig(ca *certAuthority, requireClientCert bool) (*tls.Config, error) {
	cert, err := ca.issueServer()
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
	}
	if requireClientCert {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = ca.pool()
	}
	return cfg, nil
}

// URL is the repository's base URL, http:// or https://127.0.0.1:<port>,
// without a trailing slash.
func (r *HelmRepo) URL() string { return r.server.URL }

// ChartURL is the absolute URL at which a published chart version is served.
func (r *HelmRepo) ChartURL(name, version string) string {
	return r.URL() + helmRepoChartsPath + chartFileName(name, version)
}

// CAPEM is the PEM certificate of the CA that signed the server (and client)
// certificates, or nil without TLS.
func (r *HelmRepo) CAPEM() []byte {
	if r.ca == nil {
		return nil
	}
	return bytes.Clone(r.ca.certPEM)
}

// ClientCertPEM mints a client certificate and its private key, both PEM,
// signed by the repository's CA, for mutual TLS. It fails without TLS.
func (r *HelmRepo) ClientCertPEM(commonName string) (certPEM, keyPEM []byte, err error) {
	if r.ca == nil {
		return nil, nil, errors.New("helm repository: client certificate: the repository does not serve TLS")
	}
	certPEM, keyPEM, err = r.ca.issueClient(commonName)
	if err != nil {
		return nil, nil, fmt.Errorf("helm repository: client certificate: %w", err)
	}
	return certPEM, keyPEM, nil
}

// Publish adds the chart archive at tgzPath, replacing a chart with the same
// name and version, and regenerates index.yaml. The archive is served as
// charts/<name>-<version>.tgz whatever its file name.
func (r *HelmRepo) Publish(tgzPath string) error {
	if err := r.publish(tgzPath); err != nil {
		return fmt.Errorf("helm repository: publish %s: %w", filepath.Base(tgzPath), err)
	}
	return nil
}

func (r *HelmRepo) publish(tgzPath string) error {
	data, err := os.ReadFile(tgzPath)
	if err != nil {
		return err
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("load chart archive: %w", err)
	}
	md := ch.Metadata
	fileName := chartFileName(md.Name, md.Version)
	entry, err := newIndexEntry(md, fileName, data)
	if err != nil {
		return err
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	entry.Created = r.nextCreatedLocked(now)
	removeIndexEntry(r.index, md.Name, md.Version)
	r.index.Entries[md.Name] = append(r.index.Entries[md.Name], entry)
	r.index.SortEntries()
	r.charts[fileName] = data
	return r.renderIndexLocked(now)
}

// newIndexEntry builds the index entry of an archive the way Helm's own
// indexing does (metadata validation, sha256 digest), with the relative URL
// charts/<file> that most repositories publish and clients resolve against
// the repository URL.
func newIndexEntry(md *chart.Metadata, fileName string, data []byte) (*repo.ChartVersion, error) {
	sum := sha256.Sum256(data)
	scratch := repo.NewIndexFile()
	url := strings.TrimPrefix(helmRepoChartsPath, "/") + fileName
	if err := scratch.MustAdd(md, url, "", hex.EncodeToString(sum[:])); err != nil {
		return nil, fmt.Errorf("index entry: %w", err)
	}
	return scratch.Entries[md.Name][0], nil
}

// PublishDir packages the chart source in srcDir (overriding its version when
// version is non-empty, see PackageChart) and publishes it.
func (r *HelmRepo) PublishDir(srcDir, version string) error {
	tmp, err := os.MkdirTemp("", "stevedore-helmrepo-")
	if err != nil {
		return fmt.Errorf("helm repository: publish %s: %w", srcDir, err)
	}
	defer os.RemoveAll(tmp)
	tgz, err := PackageChart(srcDir, version, tmp)
	if err != nil {
		return fmt.Errorf("helm repository: %w", err)
	}
	return r.Publish(tgz)
}

// nextCreatedLocked returns the `created` time of a new index entry: now, but
// at least a millisecond after the previous one, so that entries published in
// quick succession are still ordered by publication (clients break ties
// between equal versions on it), even by a client that keeps milliseconds.
func (r *HelmRepo) nextCreatedLocked(now time.Time) time.Time {
	created := now.UTC().Round(0)
	if earliest := r.lastCreated.Add(time.Millisecond); created.Before(earliest) {
		created = earliest
	}
	r.lastCreated = created
	return created
}

// renderIndexLocked serialises the index as Helm writes index.yaml and
// derives the validators conditional requests are answered from.
func (r *HelmRepo) renderIndexLocked(now time.Time) error {
	r.index.Generated = now.UTC().Round(0)
	data, err := yaml.Marshal(r.index)
	if err != nil {
		return fmt.Errorf("render index.yaml: %w", err)
	}
	sum := sha256.Sum256(data)
	r.indexYAML = data
	r.indexETag = `"` + hex.EncodeToString(sum[:]) + `"`
	// HTTP dates have one-second resolution. Moving Last-Modified forward by
	// at least a second per change keeps If-Modified-Since from answering
	// 304 for an index that changed within the same second.
	modified := now.UTC().Truncate(time.Second)
	if earliest := r.lastModified.Add(time.Second); !r.lastModified.IsZero() && modified.Before(earliest) {
		modified = earliest
	}
	r.lastModified = modified
	return nil
}

// removeIndexEntry drops name at version from the index, so that publishing
// an archive again replaces its entry rather than adding a duplicate.
func removeIndexEntry(index *repo.IndexFile, name, version string) {
	versions := index.Entries[name]
	kept := versions[:0]
	for _, v := range versions {
		if v.Version != version {
			kept = append(kept, v)
		}
	}
	index.Entries[name] = kept
}

func chartFileName(name, version string) string {
	return fmt.Sprintf("%s-%s.tgz", name, version)
}

// Requests is the number of requests received, of any kind and outcome,
// since start or the last ResetCounters.
func (r *HelmRepo) Requests() int64 {
	r.counterMu.Lock()
	defer r.counterMu.Unlock()
	return r.total
}

// RequestsFor is the number of requests received for one URL path, such as
// "/index.yaml" or "/charts/podinfo-1.0.0.tgz" (the leading slash is
// optional).
func (r *HelmRepo) RequestsFor(path string) int64 {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	r.counterMu.Lock()
	defer r.counterMu.Unlock()
	return r.perPath[path]
}

// ResetCounters sets Requests and every RequestsFor to zero.
func (r *HelmRepo) ResetCounters() {
	r.counterMu.Lock()
	defer r.counterMu.Unlock()
	r.total = 0
	r.perPath = map[string]int64{}
}

// SetFailure makes every request answer status (a 5xx, say, to stand in for
// an unavailable repository) until it is called again with 0. Requests are
// still counted. Use Close for a repository that does not answer at all.
func (r *HelmRepo) SetFailure(status int) {
	if status != 0 && (status < 100 || status > 599) {
		// net/http would panic in the handler instead, far from the cause.
		panic(fmt.Sprintf("testenv: HelmRepo.SetFailure(%d): not an HTTP status", status))
	}
	r.failure.Store(int32(status))
}

// Close stops the server, waiting for requests in flight. It is safe to call
// more than once.
func (r *HelmRepo) Close() {
	r.closeOnce.Do(r.server.Close)
}

func (r *HelmRepo) handle(w http.ResponseWriter, req *http.Request) {
	r.count(req.URL.Path)
	if status := int(r.failure.Load()); status != 0 {
		http.Error(w, http.StatusText(status), status)
		return
	}
	if !r.authorized(req) {
		w.Header().Set("WWW-Authenticate", `Basic realm="`+helmRepoRealm+`"`)
		http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
		return
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	switch {
	case req.URL.Path == helmRepoIndexPath:
		r.serveIndex(w, req)
	case strings.HasPrefix(req.URL.Path, helmRepoChartsPath):
		r.serveChart(w, req, strings.TrimPrefix(req.URL.Path, helmRepoChartsPath))
	default:
		http.NotFound(w, req)
	}
}

func (r *HelmRepo) count(path string) {
	r.counterMu.Lock()
	defer r.counterMu.Unlock()
	r.total++
	r.perPath[path]++
}

func (r *HelmRepo) authorized(req *http.Request) bool {
	if r.opts.Username == "" && r.opts.Password == "" {
		return true
	}
	user, pass, ok := req.BasicAuth()
	if !ok {
		return false
	}
	userOK := subtle.ConstantTimeCompare([]byte(user), []byte(r.opts.Username)) == 1
	passOK := subtle.ConstantTimeCompare([]byte(pass), []byte(r.opts.Password)) == 1
	return userOK && passOK
}

// serveIndex answers with index.yaml; http.ServeContent handles HEAD and the
// conditional requests (If-None-Match against the ETag, If-Modified-Since
// against Last-Modified) with 304.
func (r *HelmRepo) serveIndex(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	data, etag, modified := r.indexYAML, r.indexETag, r.lastModified
	r.mu.Unlock()

	w.Header().Set("Content-Type", "application/x-yaml")
	w.Header().Set("ETag", etag)
	http.ServeContent(w, req, "index.yaml", modified, bytes.NewReader(data))
}

func (r *HelmRepo) serveChart(w http.ResponseWriter, req *http.Request, fileName string) {
	r.mu.Lock()
	data, ok := r.charts[fileName]
	r.mu.Unlock()
	if !ok {
		http.NotFound(w, req)
		return
	}
	sum := sha256.Sum256(data)
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
	http.ServeContent(w, req, fileName, time.Time{}, bytes.NewReader(data))
}

// dropTLSHandshakeErrors is the server's error log writer: it forwards
// everything but TLS handshake failures.
type dropTLSHandshakeErrors struct{ w io.Writer }

func (d dropTLSHandshakeErrors) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("TLS handshake error")) {
		return len(p), nil
	}
	return d.w.Write(p)
}

// certAuthority is a throw-away CA for one test server.
type certAuthority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newCertAuthority(commonName string) (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl, err := certTemplate(commonName)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	return &certAuthority{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
	}, nil
}

func (ca *certAuthority) pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// issueServer issues a certificate for the addresses the test servers listen
// on and are reached by.
func (ca *certAuthority) issueServer() (tls.Certificate, error) {
	tmpl, err := certTemplate("127.0.0.1")
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	tmpl.DNSNames = []string{"localhost"}
	certPEM, keyPEM, err := ca.issue(tmpl)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("server certificate: %w", err)
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

func (ca *certAuthority) issueClient(commonName string) (certPEM, keyPEM []byte, err error) {
	tmpl, err := certTemplate(commonName)
	if err != nil {
		return nil, nil, err
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.issue(tmpl)
}

// issue signs tmpl for a new key and returns both as PEM.
func (ca *certAuthority) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign certificate for %q: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode key: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

// certTemplate is the part every certificate shares: a random serial and a
// validity that starts an hour back, to tolerate clock skew, and outlives
// any test run.
func certTemplate(commonName string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate certificate serial: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName, Organization: []string{"stevedore tests"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
	}, nil
}

// ServeArchive serves data as the archive of chart name at version, leaving
// the index as it is: a mirror or a proxy that serves other bytes than its
// index promises, which a client must refuse.
func (r *HelmRepo) ServeArchive(name, version string, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.charts[chartFileName(name, version)] = data
}
