package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

func newEngine(t testing.TB) (*Engine, client.Client) {
	t.Helper()
	f := kube.NewFactory(kube.Config{ConfigPaths: []string{testenv.Need(t).Cluster.Kubeconfig}}, "")
	c, err := f.Client()
	if err != nil {
		t.Fatal(err)
	}
	return New(f), c
}

// makeNamespace creates a namespace of the test's own, unique to the run,
// so that tests and runs of a test (-count=2) share no releases.
func makeNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	return testenv.Namespace(t, c, "")
}

// chartArchive packages a test chart and returns its path and digest.
func chartArchive(t *testing.T, src, version string) (string, string) {
	t.Helper()
	path, err := testenv.PackageChart(src, version, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return path, "sha256:" + hex.EncodeToString(sum[:])
}

func podinfo(t *testing.T, version string) (string, string) {
	return chartArchive(t, filepath.Join(testenv.ChartsDir(), "podinfo"), version)
}

// writeChart writes a chart source of files (path -> content) and packages it.
func writeChart(t *testing.T, version string, files map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	testenv.WriteFiles(t, dir, files)
	return chartArchive(t, dir, version)
}

// breakable is a chart with a ConfigMap the API server rejects (an invalid
// name) when the values say broken: the release is written, then fails, as a
// real failed install or upgrade does. The good ConfigMap stays in every
// revision, so that Helm can roll back over a failed one.
func breakable(t *testing.T, version string) (string, string) {
	return writeChart(t, version, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: breakable\nversion: 0.1.0\n",
		"values.yaml": "broken: false\nv: one\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  v: {{ .Values.v | quote }}
`,
		"templates/broken.yaml": `{{ if .Values.broken }}apiVersion: v1
kind: ConfigMap
metadata:
  name: INVALID_name
{{ end }}`,
	})
}

func get(t *testing.T, c client.Client, apiVersion, kind, ns, name string) (*unstructured.Unstructured, bool) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return u, true
}

func condition(st *Status, typ string) Condition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return Condition{}
}

func wantCondition(t *testing.T, st *Status, typ, status, reason string) {
	t.Helper()
	c := condition(st, typ)
	if c.Status != status || c.Reason != reason {
		t.Errorf("condition %s = %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
}

func historyOf(st *Status) string {
	var parts []string
	for _, s := range st.History {
		parts = append(parts, s.Name+".v"+strconv.Itoa(s.Version)+":"+s.Status)
	}
	return strings.Join(parts, " ")
}
