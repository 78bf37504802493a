package testenv

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

func TestOCIRegistry_pushThenPullByTagAndDigest(t *testing.T) {
	r := startOCIRegistry(t, OCIRegistryOptions{})
	if want := "oci://" + r.Host(); r.URL() != want || !strings.HasPrefix(r.Host(), "127.0.0.1:") {
		t.Fatalf("Host %q URL %q", r.Host(), r.URL())
	}
	tgz, err := PackageChart(filepath.Join(ChartsDir(), "podinfo"), "1.0.0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ref, digest, err := r.PushChart(tgz, "charts")
	if err != nil {
		t.Fatal(err)
	}
	if want := r.Host() + "/charts/podinfo:1.0.0"; ref != want {
		t.Errorf("ref = %q, want %q", ref, want)
	}
	if !strings.HasPrefix(digest, "sha256:") {
		t.Errorf("digest = %q, want sha256:...", digest)
	}

	client := newTestRegistryClient(t, r, true)
	data, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	// By tag, and by the digest PushChart returned.
	for _, pullRef := range []string{ref, r.Host() + "/charts/podinfo@" + digest} {
		result, err := client.Pull(pullRef)
		if err != nil {
			t.Fatalf("pull %s: %v", pullRef, err)
		}
		meta := result.Chart.Meta
		if meta.Name != "podinfo" || meta.Version != "1.0.0" || meta.AppVersion != "6.0.0" {
			t.Errorf("pull %s: chart %s-%s (app %s), want podinfo-1.0.0 (app 6.0.0)", pullRef, meta.Name, meta.Version, meta.AppVersion)
		}
		if result.Manifest.Digest != digest {
			t.Errorf("pull %s: manifest digest %s, pushed %s", pullRef, result.Manifest.Digest, digest)
		}
		if want := fmt.Sprintf("sha256:%x", sha256.Sum256(data)); result.Chart.Digest != want {
			t.Errorf("pull %s: chart layer digest %s, want the archive's %s", pullRef, result.Chart.Digest, want)
		}
		if !bytes.Equal(result.Chart.Data, data) {
			t.Errorf("pull %s: chart layer differs from the pushed archive", pullRef)
		}
	}
}

func TestOCIRegistry_tagsFollowHelm(t *testing.T) {
	r := startOCIRegistry(t, OCIRegistryOptions{})
	dest := t.TempDir()
	var refs []string
	for _, v := range []string{"1.0.0", "1.2.0+build.7", "2.0.0-rc.1"} {
		tgz, err := PackageChart(filepath.Join(ChartsDir(), "podinfo"), v, dest)
		if err != nil {
			t.Fatal(err)
		}
		ref, _, err := r.PushChart(tgz, "")
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	if want := r.Host() + "/podinfo:1.2.0_build.7"; refs[1] != want {
		t.Errorf("ref with build metadata = %q, want %q", refs[1], want)
	}
	// Helm lists the tags with `_` turned back into `+`.
	tags, err := newTestRegistryClient(t, r, true).Tags(r.Host() + "/podinfo")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(tags)
	if want := []string{"1.0.0", "1.2.0+build.7", "2.0.0-rc.1"}; !slices.Equal(tags, want) {
		t.Errorf("tags = %v, want %v", tags, want)
	}
}

func TestOCIRegistry_basicAuth(t *testing.T) {
	r := startOCIRegistry(t, OCIRegistryOptions{Username: "user", Password: "s3cret"})
	tgz, err := PackageChart(filepath.Join(ChartsDir(), "crds"), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ref, digest, err := r.PushChart(tgz, "team/charts")
	if err != nil {
		t.Fatal(err)
	}
	if want := r.Host() + "/team/charts/crds:0.1.0"; ref != want {
		t.Errorf("ref = %q, want %q", ref, want)
	}

	for _, tc := range []struct {
		name       string
		user, pass string
		want       int
	}{
		{"no credentials", "", "", http.StatusUnauthorized},
		{"wrong password", "user", "wrong", http.StatusUnauthorized},
		{"right credentials", "user", "s3cret", http.StatusOK},
	} {
		req, err := http.NewRequest(http.MethodGet, "http://"+r.Host()+"/v2/", nil)
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
			t.Errorf("GET /v2/ with %s: %s, want %d", tc.name, resp.Status, tc.want)
		}
	}

	if _, err := newTestRegistryClient(t, r, false).Pull(ref); err == nil {
		t.Error("anonymous pull succeeded")
	}
	result, err := newTestRegistryClient(t, r, true).Pull(ref)
	if err != nil {
		t.Fatal(err)
	}
	if result.Manifest.Digest != digest || result.Chart.Meta.Name != "crds" {
		t.Errorf("pulled %s at %s, want crds at %s", result.Chart.Meta.Name, result.Manifest.Digest, digest)
	}
}

func TestOCIRegistry_pushRejectsBadInput(t *testing.T) {
	r := startOCIRegistry(t, OCIRegistryOptions{})
	if _, _, err := r.PushChart(filepath.Join(t.TempDir(), "podinfo-1.0.0.tgz"), "charts"); err == nil ||
		!strings.HasPrefix(err.Error(), "oci registry: push podinfo-1.0.0.tgz: ") {
		t.Errorf("push of a missing archive: %v", err)
	}
	tgz, err := PackageChart(filepath.Join(ChartsDir(), "podinfo"), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.PushChart(tgz, "Not/Valid"); err == nil {
		t.Error("push to an invalid repository name succeeded")
	}
}

func TestOCIRegistry_instancesAreIndependent(t *testing.T) {
	a := startOCIRegistry(t, OCIRegistryOptions{})
	b := startOCIRegistry(t, OCIRegistryOptions{})
	tgz, err := PackageChart(filepath.Join(ChartsDir(), "podinfo"), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.PushChart(tgz, "charts"); err != nil {
		t.Fatal(err)
	}
	if _, err := newTestRegistryClient(t, b, true).Pull(b.Host() + "/charts/podinfo:1.0.0"); err == nil {
		t.Error("a chart pushed to one registry is visible in another")
	}
}

// TestClose_everyServerLeavesNoGoroutinesOrFiles starts every kind of server,
// uses it and closes it, then checks that their goroutines and temporary files
// are gone. It must not run in parallel with other tests, which would start
// goroutines of their own.
func TestClose_everyServerLeavesNoGoroutinesOrFiles(t *testing.T) {
	before := runtime.NumGoroutine()

	helmRepo, err := StartHelmRepo(HelmRepoOptions{ClientCA: true, Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := helmRepo.ClientCertPEM("client")
	if err != nil {
		t.Fatal(err)
	}
	if err := helmRepo.PublishDir(filepath.Join(ChartsDir(), "podinfo"), ""); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "ca.pem"), string(helmRepo.CAPEM()))
	writeTestFile(t, filepath.Join(dir, "cert.pem"), string(certPEM))
	writeTestFile(t, filepath.Join(dir, "key.pem"), string(keyPEM))
	downloadIndex(t, &repo.Entry{
		Name: "mtls", URL: helmRepo.URL(), Username: "u", Password: "p",
		CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"),
	})

	reg, err := StartOCIRegistry(OCIRegistryOptions{Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := PackageChart(filepath.Join(ChartsDir(), "podinfo"), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ref, _, err := reg.PushChart(tgz, "charts")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newTestRegistryClient(t, reg, true).Pull(ref); err != nil {
		t.Fatal(err)
	}

	helmRepo.Close()
	reg.Close()
	reg.Close() // idempotent
	if _, err := os.Stat(reg.tmpDir); !os.IsNotExist(err) {
		t.Errorf("registry temp dir %s still there (stat: %v)", reg.tmpDir, err)
	}

	// distribution's event broadcaster cannot be stopped: one per registry.
	const unstoppable = 1
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+unstoppable {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func startOCIRegistry(t *testing.T, opts OCIRegistryOptions) *OCIRegistry {
	t.Helper()
	r, err := StartOCIRegistry(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// newTestRegistryClient is a Helm registry client for r, authenticated when
// withAuth and the registry has credentials.
func newTestRegistryClient(t *testing.T, r *OCIRegistry, withAuth bool) *registry.Client {
	t.Helper()
	client, err := r.newClient(withAuth)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
