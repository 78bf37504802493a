package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/registry"

	// Registered by name with distribution's factories, like its own
	// cmd/registry does.
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

const ociRegistryRealm = "stevedore-test"

// OCIRegistryOptions configures StartOCIRegistry. The zero value is an
// anonymous plain-HTTP registry.
type OCIRegistryOptions struct {
	// Username and Password, when either is set, require them through
	// distribution's htpasswd access controller.
	Username string
	Password string
}

// OCIRegistry is an in-process OCI registry (CNCF distribution, in-memory
// storage) serving plain HTTP on 127.0.0.1.
type OCIRegistry struct {
	opts   OCIRegistryOptions
	app    *handlers.App
	server *httptest.Server
	// tmpDir holds the htpasswd file and the (never written) credentials
	// file of the Helm registry client, so nothing touches ~/.config/helm.
	tmpDir string

	closeOnce sync.Once
}

// silenceRegistryLogs points logrus's standard logger, which distribution
// logs every request to, at io.Discard. It is process-wide, hence once.
var silenceRegistryLogs = sync.OnceFunc(func() {
	logrus.SetOutput(io.Discard)
	logrus.SetLevel(logrus.ErrorLevel)
})

// StartOCIRegistry starts a registry on a random 127.0.0.1 port. Close stops
// it and removes its temporary files. Like httptest, on which it is built, it
// panics if no local port can be bound.
//
// It serves distribution's handlers.App with an httptest server, as
// distribution's own handler tests do, rather than through
// registry.NewRegistry: that one listens on a configured address (so a free
// port has to be guessed first), installs a process-wide OpenTelemetry tracer
// provider whose default OTLP exporter dials localhost:4318 from a goroutine
// that is never stopped, and writes an access log to stdout.
func StartOCIRegistry(opts OCIRegistryOptions) (*OCIRegistry, error) {
	silenceRegistryLogs()
	tmpDir, err := os.MkdirTemp("", "stevedore-oci-")
	if err != nil {
		return nil, fmt.Errorf("oci registry: %w", err)
	}
	r := &OCIRegistry{opts: opts, tmpDir: tmpDir}
	if err := r.start(); err != nil {
		os.RemoveAll(tmpDir)
		return nil, fmt.Errorf("oci registry: %w", err)
	}
	return r, nil
}

func (r *OCIRegistry) start() error {
	// The listener is bound before the configuration is built, so the
	// configured address is the real one (distribution uses it in the
	// events it emits).
	server := httptest.NewUnstartedServer(nil)
	config, err := r.configuration(server.Listener.Addr().String())
	if err != nil {
		server.Listener.Close()
		return err
	}
	app, err := newRegistryApp(config)
	if err != nil {
		server.Listener.Close()
		return err
	}
	server.Config.Handler = app
	server.Start()
	r.app, r.server = app, server
	return nil
}

// newRegistryApp builds distribution's application, turning the panics it
// reports configuration errors with into an error.
func newRegistryApp(config *configuration.Configuration) (app *handlers.App, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("configure distribution: %v", p)
		}
	}()
	return handlers.NewApp(context.Background(), config), nil
}

func (r *OCIRegistry) configuration(addr string) (*configuration.Configuration, error) {
	config := &configuration.Configuration{}
	config.Log.Level = "error"
	config.Log.AccessLog.Disabled = true
	config.HTTP.Addr = addr
	// Signs upload state; without it distribution generates one and warns.
	config.HTTP.Secret = rand.Text()
	config.Storage = configuration.Storage{
		"inmemory": configuration.Parameters{},
		// The upload purger is a goroutine that sleeps for up to an hour and
		// has no way to be stopped; uploads die with the registry anyway.
		"maintenance": configuration.Parameters{
			"uploadpurging": map[interface{}]interface{}{"enabled": false},
		},
	}
	if r.opts.Username == "" && r.opts.Password == "" {
		return config, nil
	}
	htpasswd, err := r.writeHtpasswd()
	if err != nil {
		return nil, err
	}
	config.Auth = configuration.Auth{
		"htpasswd": configuration.Parameters{"realm": ociRegistryRealm, "path": htpasswd},
	}
	return config, nil
}

// writeHtpasswd writes the single user's entry; distribution's htpasswd
// controller accepts bcrypt hashes only.
func (r *OCIRegistry) writeHtpasswd() (string, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(r.opts.Password), bcrypt.MinCost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	path := filepath.Join(r.tmpDir, "htpasswd")
	if err := os.WriteFile(path, []byte(r.opts.Username+":"+string(hash)+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write htpasswd: %w", err)
	}
	return path, nil
}

// Host is the registry's address, 127.0.0.1:<port>, as it appears in
// references.
func (r *OCIRegistry) Host() string {
	return r.server.Listener.Addr().String()
}

// URL is the registry as Helm addresses it: oci://127.0.0.1:<port>.
func (r *OCIRegistry) URL() string {
	return registry.OCIScheme + "://" + r.Host()
}

// PushChart pushes the chart archive at tgzPath to <host>/<repo>/<name>:<version>
// with Helm's registry client, authenticating with the registry's
// credentials when it has any. repo may be empty or hold several path segments. Helm
// stores a version's `+` as `_` in the tag; ref is the reference as pushed
// (with the `_`), digest the manifest's digest (sha256:...), which pins the
// chart as ref@digest.
func (r *OCIRegistry) PushChart(tgzPath, repo string) (ref, digest string, err error) {
	ref, digest, err = r.pushChart(tgzPath, repo)
	if err != nil {
		return "", "", fmt.Errorf("oci registry: push %s: %w", filepath.Base(tgzPath), err)
	}
	return ref, digest, nil
}

func (r *OCIRegistry) pushChart(tgzPath, repo string) (ref, digest string, err error) {
	data, err := os.ReadFile(tgzPath)
	if err != nil {
		return "", "", err
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return "", "", fmt.Errorf("load chart archive: %w", err)
	}
	client, err := r.newClient(true)
	if err != nil {
		return "", "", err
	}
	// Helm's strict mode (the default) wants the ref to end in
	// /<name>:<version> with the version as in Chart.yaml; the client itself
	// turns `+` into `_`.
	result, err := client.Push(data, r.chartRef(repo, ch.Name(), ch.Metadata.Version))
	if err != nil {
		return "", "", err
	}
	return result.Ref, result.Manifest.Digest, nil
}

func (r *OCIRegistry) chartRef(repo, name, version string) string {
	path := strings.Trim(repo, "/")
	if path != "" {
		path += "/"
	}
	return r.Host() + "/" + path + name + ":" + version
}

// newClient returns a Helm registry client for this registry: plain HTTP,
// with the registry's credentials when withAuth and it has any, and without
// keep-alive so that no idle connection outlives the call.
func (r *OCIRegistry) newClient(withAuth bool) (*registry.Client, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DisableKeepAlives = true
	opts := []registry.ClientOption{
		registry.ClientOptHTTPClient(&http.Client{Transport: transport}),
		registry.ClientOptPlainHTTP(),
		registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(filepath.Join(r.tmpDir, "helm-registry-config.json")),
	}
	if withAuth && (r.opts.Username != "" || r.opts.Password != "") {
		// Credentials on the client rather than through Login: Login would
		// store them, possibly in a native credential helper of the host.
		opts = append(opts, registry.ClientOptBasicAuth(r.opts.Username, r.opts.Password))
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("create helm registry client: %w", err)
	}
	return client, nil
}

// Close stops the server, waiting for requests in flight, and removes the
// temporary files. It is safe to call more than once.
//
// One goroutine per registry remains: distribution's event broadcaster,
// idle, which handlers.App gives no way to stop.
func (r *OCIRegistry) Close() {
	r.closeOnce.Do(func() {
		r.server.Close()
		// Only a pull-through cache has anything to shut down, and this
		// registry is not one: the error is always nil.
		_ = r.app.Shutdown()
		os.RemoveAll(r.tmpDir)
	})
}
