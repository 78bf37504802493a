package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

const kubeconfigFixture = `apiVersion: v1
kind: Config
clusters:
- name: one
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: admin
  user: {token: abc}
contexts:
- name: one
  context: {cluster: one, user: admin}
current-context: one
`

func fieldsOf(errs []*fielderr.Error) string {
	var f []string
	for _, e := range errs {
		f = append(f, e.Path)
	}
	return strings.Join(f, ",")
}

func TestConfigValidate_errorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(good, []byte(kubeconfigFixture), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("{nope: ["), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		cfg    Config
		fields string
		text   string
	}{
		{"empty is valid offline", Config{}, "", ""},
		{"kubeconfig and context", Config{ConfigPaths: []string{good}, Context: "one"}, "", ""},
		{"token and basic auth", Config{Host: "https://x", Token: "t", Username: "u", Password: "p"}, "username", "conflicting authentication methods token and username/password"},
		{"token and exec", Config{Token: "t", Exec: &ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "x"}}, "exec", "token and exec"},
		{"half a client cert", Config{ClientCertificate: "pem"}, "client_key", "client_certificate is set but client_key is not"},
		{"user without password", Config{Username: "u"}, "password", "username is set but password is not"},
		{"insecure with CA", Config{Insecure: true, ClusterCACertificate: "pem"}, "insecure", "cannot be true"},
		{"missing kubeconfig", Config{ConfigPaths: []string{filepath.Join(dir, "missing")}}, "config_path", "no such file or directory"},
		{"unparsable kubeconfig", Config{ConfigPaths: []string{bad}}, "config_path", "cannot read kubeconfig"},
		{"one of two paths missing", Config{ConfigPaths: []string{good, filepath.Join(dir, "missing")}}, "config_paths", "missing"},
		{"unknown context", Config{ConfigPaths: []string{good}, Context: "two"}, "config_context", `context "two" not found`},
		{"unknown cluster", Config{ConfigPaths: []string{good}, ContextCluster: "two"}, "config_context_cluster", `cluster "two" not found`},
		{"unknown user", Config{ConfigPaths: []string{good}, ContextAuthInfo: "bob"}, "config_context_auth_info", `user "bob" not found`},
		{"exec without command", Config{Exec: &ExecConfig{APIVersion: "v1"}}, "exec.command", "must be set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.cfg.Validate()
			if got := fieldsOf(errs); got != tc.fields {
				t.Fatalf("fields = %q, want %q (%v)", got, tc.fields, errs)
			}
			if tc.text != "" && !strings.Contains(errs[0].Error(), tc.text) {
				t.Fatalf("error %q does not contain %q", errs[0].Error(), tc.text)
			}
		})
	}
}

func TestRESTConfig_explicitFieldsOverrideKubeconfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(good, []byte(kubeconfigFixture), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := Config{ConfigPaths: []string{good}, Host: "https://10.0.0.1:6443", QPS: 7}.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://10.0.0.1:6443" || rc.BearerToken != "abc" || rc.QPS != 7 || rc.Burst != DefaultBurst {
		t.Fatalf("host %q token %q qps %v burst %v: explicit fields must override the kubeconfig, defaults fill the rest",
			rc.Host, rc.BearerToken, rc.QPS, rc.Burst)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := (Config{}).RESTConfig(); err == nil || !strings.Contains(err.Error(), "no cluster configured") {
		t.Fatalf("want a 'no cluster configured' error, got %v", err)
	}
}
