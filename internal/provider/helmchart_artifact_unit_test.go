package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart/charttest"
)

func TestRegistryFor_longestPrefixWins(t *testing.T) {
	list := []registryCredential{
		{URL: "oci://ghcr.io", Username: "org"},
		{URL: "oci://ghcr.io/team/", Username: "team"},
		{URL: "https://charts.example.com", Username: "http"},
	}
	for repo, want := range map[string]string{
		"oci://ghcr.io/other/charts":       "org",
		"oci://ghcr.io/team/charts":        "team",
		"oci://ghcr.io/team":               "team",
		"oci://ghcr.io/teammates/charts":   "org",
		"https://charts.example.com":       "http",
		"https://charts.example.com/sub":   "http",
		"https://charts.example.community": "",
		"oci://registry.example.com/x":     "",
	} {
		c, ok := registryFor(list, repo)
		if got := c.Username; got != want || ok != (want != "") {
			t.Errorf("%s: got %q (%v), want %q", repo, got, ok, want)
		}
	}
}

// validateArtifact runs the resource's ValidateConfig on a configuration
// given as attribute values (absent ones null) and returns its diagnostics
// as "severity path: summary".
func validateArtifact(t *testing.T, attrs map[string]any) (diag.Diagnostics, []string) {
	t.Helper()
	ctx := context.Background()
	s := helmChartArtifactSchema()
	typ := s.Type().TerraformType(ctx)
	req := resource.ValidateConfigRequest{Config: tfsdk.Config{Schema: s, Raw: valueOf(t, typ, attrs)}}
	var resp resource.ValidateConfigResponse
	(&helmChartArtifactResource{}).ValidateConfig(ctx, req, &resp)
	var got []string
	for _, d := range resp.Diagnostics {
		p := ""
		if wp, ok := d.(diag.DiagnosticWithPath); ok {
			p = wp.Path().String()
		}
		got = append(got, d.Severity().String()+" "+p+": "+d.Summary())
	}
	return resp.Diagnostics, got
}

// TestHelmChartArtifact_keylessWithoutIdentityWarns: keyless verification
// without match_oidc_identity is accepted, as Flux accepts it, with a
// warning on verify.match_oidc_identity that no identity is enforced; with an
// identity or with public keys there is no warning.
func TestHelmChartArtifact_keylessWithoutIdentityWarns(t *testing.T) {
	oci := map[string]any{"repository": "oci://ghcr.io/stefanprodan/charts", "chart": "podinfo"}
	with := func(verify map[string]any) map[string]any {
		m := map[string]any{"verify": verify}
		for k, v := range oci {
			m[k] = v
		}
		return m
	}
	diags, got := validateArtifact(t, with(map[string]any{"provider": "cosign"}))
	if diags.HasError() || len(got) != 1 || got[0] != "Warning verify.match_oidc_identity: No signing identity enforced" {
		t.Fatalf("keyless without identity: %q, want exactly the warning", got)
	}
	detail := diags[0].Detail()
	for _, want := range []string{
		"verify has neither public_keys nor match_oidc_identity",
		"accepts a signature by any identity Fulcio issued a certificate to",
		"set match_oidc_identity",
	} {
		if !strings.Contains(detail, want) {
			t.Errorf("warning detail %q lacks %q", detail, want)
		}
	}
	key, err := charttest.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	for name, verify := range map[string]map[string]any{
		"identity":    {"match_oidc_identity": []any{map[string]any{"issuer": "^https://token\\.actions\\.githubusercontent\\.com$", "subject": ".*"}}},
		"public keys": {"public_keys": []any{string(key.PublicPEM)}},
	} {
		if _, got := validateArtifact(t, with(verify)); len(got) != 0 {
			t.Errorf("%s: %q, want no diagnostics", name, got)
		}
	}
	// A key that is not one is an error on its element, before any request.
	_, got = validateArtifact(t, with(map[string]any{"public_keys": []any{string(key.PublicPEM), "-----BEGIN PUBLIC KEY-----"}}))
	if len(got) != 1 || got[0] != "Error verify.public_keys[1]: Invalid public key" {
		t.Errorf("an invalid key: %q, want one error on verify.public_keys[1]", got)
	}
}

// TestHelmChartArtifact_validatePaths: source_root and the paths relative to
// it, checked before any plan, each diagnostic on the attribute or list
// element that is wrong.
func TestHelmChartArtifact_validatePaths(t *testing.T) {
	files := func(f ...string) []any {
		out := make([]any, len(f))
		for i := range f {
			out[i] = f[i]
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		attrs map[string]any
		want  []string
	}{
		{"flux layout", map[string]any{"source_root": "/src", "source_path": "./charts/app",
			"values_files": files("./charts/app/values.yaml", "./env/prod/values.yaml")}, nil},
		{"dot-dot from the root", map[string]any{"source_root": "/src", "source_path": "./charts/app",
			"values_files": files("./env/prod/values.yaml", "../secrets/values.yaml")},
			[]string{"Error values_files[1]: Invalid values file"}},
		{"absolute with a root", map[string]any{"source_root": "/src", "source_path": "charts/app",
			"values_files": files("/etc/values.yaml")},
			[]string{"Error values_files[0]: Invalid values file"}},
		{"chart path out of the root", map[string]any{"source_root": "/src", "source_path": "../app"},
			[]string{"Error source_path: Invalid chart path"}},
		{"root with a repository", map[string]any{"source_root": "/src", "repository": "https://charts.example", "chart": "podinfo"},
			[]string{"Error source_root: Invalid source_root"}},
		{"no root: relative to the chart directory", map[string]any{"source_path": "./charts/app",
			"values_files": files("values.yaml", "../../env/prod/values.yaml")},
			[]string{"Error values_files[1]: Invalid values file"}},
		{"no root: absolute chart path", map[string]any{"source_path": "/src/charts/app", "values_files": files("values.yaml")}, nil},
		{"unknown values file", map[string]any{"source_root": "/src", "source_path": "charts/app",
			"values_files": []any{tftypes.UnknownValue, "../x.yaml"}},
			[]string{"Error values_files[1]: Invalid values file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := validateArtifact(t, tc.attrs)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestAddError_namesTheListElement: an engine error about one values file
// is a diagnostic on that element, values_files[1].
func TestAddError_namesTheListElement(t *testing.T) {
	err := (&chart.Spec{SourceRoot: "/src", SourcePath: "charts/app", ValuesFiles: []string{"values.yaml", "../x.yaml"}}).Validate()
	var diags diag.Diagnostics
	addError(&diags, "Cannot resolve the chart version", err)
	if len(diags) != 1 {
		t.Fatalf("%d diagnostics, want 1: %v", len(diags), diags)
	}
	d := diags[0]
	wp, ok := d.(diag.DiagnosticWithPath)
	if !ok || !wp.Path().Equal(path.Root("values_files").AtListIndex(1)) {
		t.Fatalf("diagnostic %v, want one on values_files[1]", d)
	}
	if !strings.Contains(d.Detail(), `values_files[1]: "../x.yaml" is outside source_root`) {
		t.Fatalf("detail %q", d.Detail())
	}
}
