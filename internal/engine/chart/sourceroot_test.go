package chart

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/yaml"
)

// fluxLayout is a source laid out as Flux users lay out a GitRepository:
// the chart in charts/app, environment values in env/prod, and a file next to
// the root that no path may reach.
func fluxLayout(t *testing.T) (root string) {
	t.Helper()
	parent := t.TempDir()
	root = filepath.Join(parent, "repo")
	testenv.CopyDir(t, podinfoDir(), filepath.Join(root, "charts", "app"))
	mustWrite(t, filepath.Join(root, "env", "prod", "values.yaml"), "replicaCount: 3\nconfig:\n  greeting: prod\n")
	mustWrite(t, filepath.Join(parent, "secret.yaml"), "replicaCount: 99\n")
	return root
}

func packagedValues(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ch.Raw {
		if f.Name == "values.yaml" {
			v := map[string]any{}
			if err := yaml.Unmarshal(f.Data, &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatal("no values.yaml in the package")
	return nil
}

// TestBuild_localSourceRootValuesFiles: with a source root, the chart path and
// the values files are relative to the root, as source-controller resolves
// them for a chart in a GitRepository: `./charts/app/values.yaml` is the
// chart's own values and `./env/prod/values.yaml` a file outside the chart
// directory, merged in order, the last one winning.
func TestBuild_localSourceRootValuesFiles(t *testing.T) {
	ctx := context.Background()
	root := fluxLayout(t)
	spec := Spec{
		SourceRoot:  root,
		SourcePath:  "./charts/app",
		ValuesFiles: []string{"./charts/app/values.yaml", "./env/prod/values.yaml"},
	}
	e, _ := newEngine(t, time.Minute)
	r, err := e.Resolve(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.ChartName != "podinfo" || r.Version != "1.0.0" || !strings.HasPrefix(r.Revision, "1.0.0+") {
		t.Fatalf("resolved %+v", r)
	}
	a, err := e.Build(ctx, spec, r.Version)
	if err != nil {
		t.Fatal(err)
	}
	if a.Revision != r.Revision {
		t.Fatalf("built revision %s, resolved %s", a.Revision, r.Revision)
	}
	if strings.Join(a.ObservedValuesFiles, ",") != "./charts/app/values.yaml,./env/prod/values.yaml" {
		t.Fatalf("observed values files %v", a.ObservedValuesFiles)
	}
	v := packagedValues(t, a.Path)
	if v["replicaCount"] != float64(3) {
		t.Fatalf("replicaCount %v, want 3 from env/prod/values.yaml", v["replicaCount"])
	}
	if img, _ := v["image"].(map[string]any); img["tag"] != "6.0.0" {
		t.Fatalf("image %v, want the chart's own values underneath", v["image"])
	}
	if cfg, _ := v["config"].(map[string]any); cfg["greeting"] != "prod" {
		t.Fatalf("config %v", v["config"])
	}

	// A change to the environment's file, outside the chart directory,
	// changes the revision a plan sees.
	mustWrite(t, filepath.Join(root, "env", "prod", "values.yaml"), "replicaCount: 4\n")
	r2, err := e.Resolve(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Revision == r.Revision {
		t.Fatalf("revision %s unchanged after env/prod/values.yaml changed", r2.Revision)
	}

	// From the root, "values.yaml" is the root's file, not the chart's own
	// values: missing, it is an error (Flux's rule), unless ignored.
	spec.ValuesFiles = []string{"./env/prod/values.yaml", "values.yaml"}
	_, err = e.Resolve(ctx, spec)
	if err == nil || !strings.Contains(err.Error(), "no values file found at path 'values.yaml' in source_root") {
		t.Fatalf("values.yaml at the root: %v", err)
	}
	if got := fielderr.PathOf(err); got != "values_files[1]" {
		t.Fatalf("error about %s, want values_files[1]", got)
	}
	spec.IgnoreMissingValuesFiles = true
	a, err = e.Build(ctx, spec, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(a.ObservedValuesFiles, ",") != "./env/prod/values.yaml" {
		t.Fatalf("observed values files %v", a.ObservedValuesFiles)
	}
}

// TestBuild_localWithoutSourceRootUnchanged: without a source root the values
// files stay relative to the chart directory, "values.yaml" being the chart's
// own values, and nothing outside the directory is reachable.
func TestBuild_localWithoutSourceRootUnchanged(t *testing.T) {
	ctx := context.Background()
	root := fluxLayout(t)
	dir := filepath.Join(root, "charts", "app")
	e, _ := newEngine(t, time.Minute)
	a, err := e.Build(ctx, Spec{SourcePath: dir, ValuesFiles: []string{"values.yaml", "values-prod.yaml"}}, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if v := packagedValues(t, a.Path); v["replicaCount"] != float64(2) {
		t.Fatalf("replicaCount %v, want 2 from the chart's values-prod.yaml", v["replicaCount"])
	}
	_, err = e.Resolve(ctx, Spec{SourcePath: dir, ValuesFiles: []string{"values.yaml", "../../env/prod/values.yaml"}})
	if err == nil || !strings.Contains(err.Error(), "outside the chart source") {
		t.Fatalf("values file outside the chart directory: %v", err)
	}
	if got := fielderr.PathOf(err); got != "values_files[1]" {
		t.Fatalf("error about %s, want values_files[1]", got)
	}
}

// TestResolve_sourceRootRefusesEscapes: paths relative to the source root stay
// in it, as source-controller's SecureJoin keeps them there: `..` past the
// root, absolute paths and symbolic links that lead out are errors on the
// attribute (and list element) that names them.
func TestResolve_sourceRootRefusesEscapes(t *testing.T) {
	ctx := context.Background()
	root := fluxLayout(t)
	outside := filepath.Join(filepath.Dir(root), "secret.yaml")
	if err := os.Symlink(outside, filepath.Join(root, "env", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	testenv.CopyDir(t, podinfoDir(), filepath.Join(filepath.Dir(root), "elsewhere"))
	if err := os.Symlink(filepath.Join(filepath.Dir(root), "elsewhere"), filepath.Join(root, "charts", "out")); err != nil {
		t.Fatal(err)
	}
	e, _ := newEngine(t, time.Minute)
	for name, tc := range map[string]struct {
		spec  Spec
		field string
		index int // -1: none
		want  string
	}{
		"dot-dot values file": {Spec{SourceRoot: root, SourcePath: "charts/app", ValuesFiles: []string{"env/prod/values.yaml", "../secret.yaml"}},
			"values_files", 1, `values_files[1]: "../secret.yaml" is outside source_root`},
		"dot-dot inside the path": {Spec{SourceRoot: root, SourcePath: "charts/app", ValuesFiles: []string{"charts/../../secret.yaml"}},
			"values_files", 0, "is outside source_root"},
		"absolute values file": {Spec{SourceRoot: root, SourcePath: "charts/app", ValuesFiles: []string{outside}},
			"values_files", 0, "must be relative to source_root"},
		"symlink out": {Spec{SourceRoot: root, SourcePath: "charts/app", ValuesFiles: []string{"env/link.yaml"}},
			"values_files", 0, "'env/link.yaml' resolves outside source_root"},
		"dot-dot chart path": {Spec{SourceRoot: root, SourcePath: "../elsewhere"},
			"source_path", -1, `"../elsewhere" is outside source_root`},
		"absolute chart path": {Spec{SourceRoot: root, SourcePath: filepath.Join(root, "charts", "app")},
			"source_path", -1, "must be relative to source_root"},
		"chart through a symlink out": {Spec{SourceRoot: root, SourcePath: "charts/out"},
			"source_path", -1, "'charts/out' resolves outside source_root"},
		"no such root": {Spec{SourceRoot: filepath.Join(root, "nope"), SourcePath: "charts/app"},
			"source_root", -1, "source root: stat"},
		"root without source_path": {Spec{SourceRoot: root, Repository: "https://charts.example", Chart: "podinfo"},
			"source_root", -1, "applies to source_path only"},
	} {
		_, err := e.Resolve(ctx, tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
			continue
		}
		want := tc.field
		if tc.index >= 0 {
			want = fielderr.Index(tc.field, tc.index)
		}
		if got := fielderr.PathOf(err); got != want {
			t.Errorf("%s: error about %q, want %q", name, got, want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(e.cacheDir, "artifacts")); len(entries) != 0 {
		t.Fatal("a refused build stored an artifact")
	}
}

// TestKeylessIdentities_noIdentityAccepted: keyless verification without
// match_oidc_identity is accepted, as Flux accepts it: cosign then checks no
// identity (any certificate Fulcio issued passes); identities given are
// still checked as regular expressions.
func TestKeylessIdentities_noIdentityAccepted(t *testing.T) {
	ids, err := keylessIdentities(nil)
	if err != nil || len(ids) != 0 {
		t.Fatalf("no identities: %v %v, want none and no error", ids, err)
	}
	if err := (&Spec{Repository: "oci://r.example/charts", Chart: "podinfo", Verify: &Verify{Provider: "cosign"}}).Validate(); err != nil {
		t.Fatalf("keyless without identity: %v", err)
	}
	ids, err = keylessIdentities([]Identity{{Issuer: "^https://a$", Subject: ".*"}, {Issuer: ".*", Subject: "^b$"}})
	if err != nil || len(ids) != 2 || ids[1].SubjectRegExp != "^b$" {
		t.Fatalf("identities: %+v %v", ids, err)
	}
	if _, err := keylessIdentities([]Identity{{Issuer: "(", Subject: ".*"}}); err == nil || fielderr.PathOf(err) != "verify" {
		t.Fatalf("bad issuer: %v", err)
	}
}
