package chart

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart/charttest"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// notationFixture is a registry (with credentials) holding podinfo 1.0.0
// signed by CA a, 1.1.0 unsigned and 1.2.0 signed by CA b, all under
// <host>/charts.
type notationFixture struct {
	reg     *testenv.OCIRegistry
	a, b    *charttest.NotationCA
	digests map[string]string
	scope   string // host/charts/podinfo, the trust policy's registry scope
}

func newNotationFixture(t *testing.T) *notationFixture {
	t.Helper()
	reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	f := &notationFixture{reg: reg, digests: map[string]string{}, scope: reg.Host() + "/charts/podinfo"}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		_, d, err := reg.PushChart(mustPackage(t, v), "charts")
		if err != nil {
			t.Fatal(err)
		}
		f.digests[v] = d
	}
	if f.a, err = charttest.NewNotationCA("a"); err != nil {
		t.Fatal(err)
	}
	if f.b, err = charttest.NewNotationCA("b"); err != nil {
		t.Fatal(err)
	}
	if err := f.a.Sign(f.ref("1.0.0"), "u", "p"); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Sign(f.ref("1.2.0"), "u", "p"); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *notationFixture) ref(version string) string { return f.scope + "@" + f.digests[version] }

// spec verifies with Notation: policy as trustpolicy.json, certs as the CA
// certificates ca.crt, ca-2.pem, ...
func (f *notationFixture) spec(policy []byte, certs ...*charttest.NotationCA) Spec {
	v := &Verify{Provider: VerifyProviderNotation, TrustPolicy: policy, CACerts: map[string][]byte{}}
	for i, c := range certs {
		key := "ca.crt"
		if i > 0 {
			key = "ca-" + string(rune('1'+i)) + ".pem"
		}
		v.CACerts[key] = c.RootPEM
	}
	return Spec{Repository: f.reg.URL() + "/charts", Chart: "podinfo", Auth: Auth{Username: "u", Password: "p"}, Verify: v}
}

// noArtifacts fails t when e stored an archive.
func noArtifacts(t *testing.T, e *Engine) {
	t.Helper()
	if entries, _ := os.ReadDir(filepath.Join(e.cacheDir, "artifacts")); len(entries) != 0 {
		t.Fatal("a chart that failed verification was stored")
	}
}

// TestNotation_verifiesAsTheTrustPolicySays: a chart signed by the trusted CA
// verifies; an unsigned one, one signed by another CA, and one no trust
// policy statement applies to fail with an error that names the reference
// and the trust policy's verdict, storing nothing; the skip and audit levels
// use the chart unverified and say why, as source-controller's "ignored".
func TestNotation_verifiesAsTheTrustPolicySays(t *testing.T) {
	f := newNotationFixture(t)
	ctx := context.Background()
	strict := charttest.TrustPolicy("charts", f.scope, "a")

	e, _ := newEngine(t, time.Minute)
	a, err := e.Build(ctx, f.spec(strict, f.a), "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Verified || a.Unverified != "" {
		t.Fatalf("signed by the trusted CA: verified=%t unverified=%q", a.Verified, a.Unverified)
	}

	for name, tc := range map[string]struct {
		spec    Spec
		version string
		want    []string
	}{
		"unsigned": {f.spec(strict, f.a), "1.1.0", []string{
			"no valid notation signature for '" + f.ref("1.1.0") + "'", "trust policy statement 'charts' (level strict)", "no signature is associated"}},
		"signed by another CA": {f.spec(strict, f.a), "1.2.0", []string{
			"no valid notation signature for '" + f.ref("1.2.0") + "'", "trust policy statement 'charts' (level strict)", "the signature's certificate chain does not contain any trusted certificate"}},
		"scoped to another registry": {f.spec(charttest.TrustPolicy("elsewhere", "registry.example.com/charts/podinfo", "a"), f.a), "1.0.0", []string{
			"no trust policy statement applies to '" + f.ref("1.0.0") + "'", "has no applicable trust policy statement"}},
	} {
		e, _ := newEngine(t, time.Minute)
		_, err := e.Build(ctx, tc.spec, tc.version)
		if !errors.Is(err, ErrVerification) || fielderr.PathOf(err) != "verify" {
			t.Errorf("%s: %v on %q, want a verification error on verify", name, err, fielderr.PathOf(err))
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant it to say %q", name, err, w)
			}
		}
		if !strings.HasPrefix(err.Error(), "chart 'podinfo' version '"+tc.version+"': ") {
			t.Errorf("%s: %v does not name the chart and version", name, err)
		}
		noArtifacts(t, e)
	}

	// Either CA trusted: the chart signed by b verifies.
	e2, _ := newEngine(t, time.Minute)
	if a, err := e2.Build(ctx, f.spec(charttest.TrustPolicy("any", "*", "a"), f.a, f.b), "1.2.0"); err != nil || !a.Verified {
		t.Fatalf("wildcard scope, both CAs: %+v, %v", a, err)
	}

	// skip: the unsigned chart is used, unverified, and the reason says so.
	if a, err := e2.Build(ctx, f.spec(charttest.TrustPolicyAt("lax", f.scope, "a", "skip"), f.a), "1.1.0"); err != nil || a.Verified ||
		!strings.Contains(a.Unverified, "trust policy statement 'lax' (level skip) skips signature verification of '"+f.ref("1.1.0")+"'") {
		t.Fatalf("skip: %+v, %v", a, err)
	}
	// audit: a signature by an untrusted CA is logged, not enforced.
	if a, err := e2.Build(ctx, f.spec(charttest.TrustPolicyAt("watch", f.scope, "a", "audit"), f.a), "1.2.0"); err != nil || a.Verified ||
		!strings.Contains(a.Unverified, "trust policy statement 'watch' (level audit) only logs the failed authenticity check of '"+f.ref("1.2.0")+"'") {
		t.Fatalf("audit: %+v, %v", a, err)
	}
	// audit still refuses a chart with no signature at all, as notation-go
	// does: there is nothing to audit.
	if _, err := e2.Build(ctx, f.spec(charttest.TrustPolicyAt("watch", f.scope, "a", "audit"), f.a), "1.1.0"); !errors.Is(err, ErrVerification) {
		t.Fatalf("audit, unsigned: %v", err)
	}
}

// TestNotation_cacheCountsOnlyTheMaterialItPassedWith: an archive verified
// with one trust policy and CA set is taken from the cache for that material
// only (the registry is gone by then, so a cache hit is the only way to
// succeed); other material, or cosign's, verifies again; white space in the
// trust policy and the certificates' key names are not material.
func TestNotation_cacheCountsOnlyTheMaterialItPassedWith(t *testing.T) {
	f := newNotationFixture(t)
	ctx := context.Background()
	e, _ := newEngine(t, time.Minute)
	strict := charttest.TrustPolicy("charts", f.scope, "a")
	withA := f.spec(strict, f.a)
	first, err := e.Fetch(ctx, withA, "1.0.0")
	if err != nil || !first.Verified {
		t.Fatalf("first fetch: %+v, %v", first, err)
	}
	// The same archive, fetched unverified before, is not verified by that.
	plainEngine, _ := newEngine(t, time.Minute)
	plain := withA
	plain.Verify = nil
	if _, err := plainEngine.Fetch(ctx, plain, "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if _, err := plainEngine.Fetch(ctx, f.spec(strict, f.b), "1.0.0"); !errors.Is(err, ErrVerification) {
		t.Fatalf("cached unverified, then verified with b's CA: %v", err)
	}

	f.reg.Close()
	// Same material, written differently: from the cache.
	reformatted := f.spec([]byte(strings.ReplaceAll(string(strict), "\n", "\n\t\t")), f.a)
	reformatted.Verify.CACerts = map[string][]byte{"root.pem": append([]byte("\n"), f.a.RootPEM...)}
	a, err := e.Fetch(ctx, reformatted, "1.0.0")
	if err != nil || !a.Verified || a.Digest != first.Digest {
		t.Fatalf("same material, from the cache: %+v, %v", a, err)
	}
	// Other material: not from the cache, so verified again, which needs the
	// registry that is gone.
	for name, spec := range map[string]Spec{
		"another CA":           f.spec(strict, f.b),
		"another CA as well":   f.spec(strict, f.a, f.b),
		"another trust policy": f.spec(charttest.TrustPolicyAt("charts", f.scope, "a", "permissive"), f.a),
	} {
		if _, err := e.Fetch(ctx, spec, "1.0.0"); err == nil {
			t.Errorf("%s: taken from the cache, verified with other material", name)
		}
	}
	if fp := verifyFingerprint(withA.Verify); fp == verifyFingerprint(&Verify{Provider: VerifyProviderCosign}) || fp == verifyFingerprint(f.spec(strict, f.b).Verify) {
		t.Fatalf("fingerprint %s does not tell the material apart", fp)
	}
}

// TestNotation_badInputBeforeAnyRequest: a trust policy that does not parse
// or breaks the Notary Project's rules, missing or bad CA certificates,
// cosign's attributes with notation, a non-OCI chart and an unknown provider
// are the configuration's errors, on their attribute, before any request (the
// registry refuses every connection, which would say "connection refused").
func TestNotation_badInputBeforeAnyRequest(t *testing.T) {
	ctx := context.Background()
	ca, err := charttest.NewNotationCA("x")
	if err != nil {
		t.Fatal(err)
	}
	good := charttest.TrustPolicy("p", "127.0.0.1:1/charts/podinfo", "x")
	certs := map[string][]byte{"ca.crt": ca.RootPEM}
	notationVerify := func(policy []byte, certs map[string][]byte) *Verify {
		return &Verify{Provider: VerifyProviderNotation, TrustPolicy: policy, CACerts: certs}
	}
	for name, tc := range map[string]struct {
		repo string
		v    *Verify
		path string
		want string
	}{
		"not JSON":             {"", notationVerify([]byte("version: 1.0"), certs), "verify.trust_policy_json", "not a trust policy document (JSON)"},
		"two JSON values":      {"", notationVerify(append(append([]byte{}, good...), good...), certs), "verify.trust_policy_json", "more than one JSON value"},
		"no version":           {"", notationVerify([]byte(`{"trustPolicies": []}`), certs), "verify.trust_policy_json", "trust policy document has empty version"},
		"no statements":        {"", notationVerify([]byte(`{"version": "1.0", "trustPolicies": []}`), certs), "verify.trust_policy_json", "zero trust policy statements"},
		"bad level":            {"", notationVerify([]byte(strings.Replace(string(good), "strict", "sometimes", 1)), certs), "verify.trust_policy_json", "invalid signatureVerification"},
		"no trust policy":      {"", notationVerify(nil, certs), "verify.trust_policy_json", "needs the trust policy document"},
		"no certificates":      {"", notationVerify(good, nil), "verify.ca_certificates", "at least one CA certificate"},
		"not a cert key":       {"", notationVerify(good, map[string][]byte{"ca.txt": ca.RootPEM}), "verify.ca_certificates", `"ca.txt": a CA certificate's key ends in .crt or .pem`},
		"not a certificate":    {"", notationVerify(good, map[string][]byte{"ca.crt": []byte("-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n")}), "verify.ca_certificates", `"ca.crt": `},
		"a key, not a cert":    {"", notationVerify(good, map[string][]byte{"ca.pem": []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")}), "verify.ca_certificates", `holds a PEM "PUBLIC KEY" block`},
		"cosign's keys":        {"", &Verify{Provider: VerifyProviderNotation, TrustPolicy: good, CACerts: certs, PublicKeys: [][]byte{[]byte("k")}}, "verify", "public_keys and match_oidc_identity are cosign's"},
		"notation's to cosign": {"", &Verify{Provider: VerifyProviderCosign, TrustPolicy: good, CACerts: certs}, "verify", "trust_policy_json and ca_certificates are notation's"},
		"Helm repository":      {"https://127.0.0.1:1/charts", notationVerify(good, certs), "verify", "only OCI charts carry signatures"},
		"unknown provider":     {"", &Verify{Provider: "sigstore"}, "verify.provider", `"sigstore" is not supported: use cosign or notation`},
	} {
		repo := tc.repo
		if repo == "" {
			repo = "oci://127.0.0.1:1/charts"
		}
		spec := Spec{Repository: repo, Chart: "podinfo", Version: "1.x", Insecure: true, Verify: tc.v}
		check := func(what string, err error) {
			t.Helper()
			if err == nil {
				t.Errorf("%s, %s: accepted", name, what)
				return
			}
			var found bool
			for _, e := range joinedErrors(err) {
				if fielderr.PathOf(e) == tc.path && strings.Contains(e.Error(), tc.want) {
					found = true
				}
			}
			if !found || strings.Contains(err.Error(), "connection refused") {
				t.Errorf("%s, %s: %v\nwant %q on %s, before any request", name, what, err, tc.want, tc.path)
			}
		}
		e := New(Options{CacheDir: t.TempDir()})
		_, err := e.Resolve(ctx, spec)
		check("resolve", err)
		_, err = e.Build(ctx, spec, "1.0.0")
		check("build", err)
		check("validate", spec.Validate())
	}
}

// joinedErrors are the errors err joins, or err.
func joinedErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, joinedErrors(e)...)
		}
		return out
	}
	return []error{err}
}

// A skip statement that still names trust stores is cleaned, as
// source-controller cleans it, rather than refused.
func TestParseTrustPolicy_skipStatementCleaned(t *testing.T) {
	policy := []byte(`{"version": "1.0", "trustPolicies": [{"name": "lax", "registryScopes": ["*"],
		"signatureVerification": {"level": "skip"}, "trustStores": ["ca:x"], "trustedIdentities": ["*"]}]}`)
	doc, cleaned, err := ParseTrustPolicy(policy)
	if err != nil || len(cleaned) != 1 || cleaned[0] != "lax" || len(doc.TrustPolicies[0].TrustStores) != 0 {
		t.Fatalf("%+v %q %v", doc, cleaned, err)
	}
}
