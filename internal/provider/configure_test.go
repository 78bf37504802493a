package provider

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// Terraform and OpenTofu do not start a provider that no resource uses, so a
// resource-less configuration never reaches Configure through the CLIs. These
// tests send ConfigureProvider to the provider server exactly as the CLIs do,
// and check each diagnostic's attribute path.

// configure sends a ConfigureProvider request with the given attributes (nested
// maps for blocks, tftypes.UnknownValue for unknown values); everything else is
// null.
func configure(t *testing.T, attrs map[string]any) []*tfprotov6.Diagnostic {
	t.Helper()
	ctx := context.Background()
	server, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	typ := providerSchema().Type().TerraformType(ctx)
	cfg, err := tfprotov6.NewDynamicValue(typ, valueOf(t, typ, attrs))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := server.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{
		TerraformVersion: "1.5.7",
		Config:           &cfg,
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Diagnostics
}

func valueOf(t testing.TB, typ tftypes.Type, v any) tftypes.Value {
	t.Helper()
	if v == nil {
		return tftypes.NewValue(typ, nil)
	}
	if v == tftypes.UnknownValue {
		return tftypes.NewValue(typ, tftypes.UnknownValue)
	}
	switch tt := typ.(type) {
	case tftypes.Object:
		m := v.(map[string]any)
		vals := make(map[string]tftypes.Value, len(tt.AttributeTypes))
		for name, at := range tt.AttributeTypes {
			vals[name] = valueOf(t, at, m[name])
		}
		for name := range m {
			if _, ok := tt.AttributeTypes[name]; !ok {
				t.Fatalf("no attribute %q in the schema", name)
			}
		}
		return tftypes.NewValue(tt, vals)
	case tftypes.List:
		var items []tftypes.Value
		for _, it := range v.([]any) {
			items = append(items, valueOf(t, tt.ElementType, it))
		}
		return tftypes.NewValue(tt, items)
	default:
		return tftypes.NewValue(typ, v)
	}
}

func writeKubeconfig(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
`
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Serial (no t.Parallel), as every test that sets the process's environment.
func TestConfigure_diagnosticsNameTheAttribute(t *testing.T) {
	for _, env := range []string{"KUBE_CONFIG_PATH", "KUBE_CONFIG_PATHS", "KUBECONFIG", "KUBE_CTX", "KUBE_HOST", "KUBE_TOKEN", "KUBE_USER", "KUBE_PASSWORD"} {
		t.Setenv(env, "")
	}
	kubeconfig := writeKubeconfig(t)
	garbage := filepath.Join(t.TempDir(), "garbage")
	if err := os.WriteFile(garbage, []byte("{not: [yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		kube map[string]any
		path string // attribute path of the one error, "" for none
		text string
	}{
		{"valid kubeconfig and context", map[string]any{"config_path": kubeconfig, "config_context": "ctx"}, "", ""},
		{"no kubernetes attributes at all", map[string]any{}, "", ""},
		{"two authentication methods", map[string]any{"host": "https://127.0.0.1:6443", "token": "abc", "username": "admin", "password": "secret"},
			"kubernetes.username", "conflicting authentication methods token and username/password"},
		{"unreadable kubeconfig", map[string]any{"config_path": filepath.Join(t.TempDir(), "missing")},
			"kubernetes.config_path", "cannot read kubeconfig"},
		{"kubeconfig that is not one", map[string]any{"config_path": garbage},
			"kubernetes.config_path", "cannot read kubeconfig"},
		{"context that does not exist", map[string]any{"config_path": kubeconfig, "config_context": "nope"},
			"kubernetes.config_context", `context "nope" not found`},
		{"half a client certificate", map[string]any{"host": "https://127.0.0.1:6443", "client_certificate": "PEM"},
			"kubernetes.client_key", "client_certificate is set but client_key is not"},
		{"exec without a command", map[string]any{"exec": map[string]any{"api_version": "client.authentication.k8s.io/v1"}},
			"kubernetes.exec.command", "must be set"},
		// Unknown at plan time (a cluster created in the same apply): no
		// validation, no error; resources plan unknown values instead.
		{"unknown host", map[string]any{"host": tftypes.UnknownValue, "token": "abc", "username": "admin", "password": "x"}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			diags := configure(t, map[string]any{"kubernetes": tc.kube})
			var errs []*tfprotov6.Diagnostic
			for _, d := range diags {
				if d.Severity == tfprotov6.DiagnosticSeverityError {
					errs = append(errs, d)
				}
			}
			if tc.path == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected errors: %s", describe(errs))
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("want one error at %s, got %s", tc.path, describe(errs))
			}
			if got := pathString(errs[0].Attribute); got != tc.path {
				t.Fatalf("error at %q, want %q: %s", got, tc.path, describe(errs))
			}
			if !strings.Contains(errs[0].Detail, tc.text) || !strings.HasPrefix(errs[0].Detail, tc.path+": ") {
				t.Fatalf("detail %q should start with %q and say %q", errs[0].Detail, tc.path, tc.text)
			}
		})
	}
}

// Environment fallbacks count as configuration: KUBE_TOKEN and a configured
// username/password conflict. Serial: it sets the process's environment.
func TestConfigure_environmentFallbacks(t *testing.T) {
	t.Setenv("KUBE_TOKEN", "from-env")
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBE_CONFIG_PATH", "")
	t.Setenv("KUBE_CONFIG_PATHS", "")
	diags := configure(t, map[string]any{"kubernetes": map[string]any{"host": "https://127.0.0.1:6443", "username": "u", "password": "p"}})
	if len(diags) != 1 || pathString(diags[0].Attribute) != "kubernetes.username" {
		t.Fatalf("want the token/basic-auth conflict, got %s", describe(diags))
	}

	t.Setenv("KUBE_TOKEN", "")
	t.Setenv("KUBE_CONFIG_PATH", filepath.Join(t.TempDir(), "missing"))
	diags = configure(t, map[string]any{"kubernetes": nil})
	if len(diags) != 1 || pathString(diags[0].Attribute) != "kubernetes.config_path" || !strings.Contains(diags[0].Detail, "missing") {
		t.Fatalf("KUBE_CONFIG_PATH must be read and reported as config_path, got %s", describe(diags))
	}
}

func pathString(p *tftypes.AttributePath) string {
	if p == nil {
		return ""
	}
	var parts []string
	for _, s := range p.Steps() {
		if n, ok := s.(tftypes.AttributeName); ok {
			parts = append(parts, string(n))
		}
	}
	return strings.Join(parts, ".")
}

func describe(diags []*tfprotov6.Diagnostic) string {
	var b strings.Builder
	for _, d := range diags {
		b.WriteString("\n  " + pathString(d.Attribute) + ": " + d.Summary + ": " + d.Detail)
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}
