package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart/charttest"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// caCerts is a ca_certificates value for validateArtifact.
func caCerts(kv ...string) map[string]tftypes.Value {
	out := map[string]tftypes.Value{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = tftypes.NewValue(tftypes.String, kv[i+1])
	}
	return out
}

// TestHelmChartArtifact_validateNotation: the verify block's attributes
// belong to one provider each, notation needs its trust policy and CA
// certificates, a non-OCI chart has nothing to verify, and a skip statement
// that names trust stores warns; every diagnostic on its attribute, at
// validate.
func TestHelmChartArtifact_validateNotation(t *testing.T) {
	ca, err := charttest.NewNotationCA("v")
	if err != nil {
		t.Fatal(err)
	}
	key, err := charttest.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	policy := string(charttest.TrustPolicy("p", "ghcr.io/org/charts/podinfo", "v"))
	skipWithStores := `{"version": "1.0", "trustPolicies": [{"name": "lax", "registryScopes": ["*"],
		"signatureVerification": {"level": "skip"}, "trustStores": ["ca:v"], "trustedIdentities": ["*"]}]}`
	certs := caCerts("ca.crt", string(ca.RootPEM))
	oci := map[string]any{"repository": "oci://ghcr.io/org/charts", "chart": "podinfo"}
	for _, tc := range []struct {
		name   string
		source map[string]any
		verify map[string]any
		want   []string
	}{
		{"notation", oci, map[string]any{"provider": "notation", "trust_policy_json": policy, "ca_certificates": certs}, nil},
		{"no trust policy", oci, map[string]any{"provider": "notation", "ca_certificates": certs},
			[]string{"Error verify.trust_policy_json: Missing trust policy"}},
		{"no CA certificates", oci, map[string]any{"provider": "notation", "trust_policy_json": policy},
			[]string{"Error verify.ca_certificates: Missing CA certificates"}},
		{"cosign's key with notation", oci, map[string]any{"provider": "notation", "trust_policy_json": policy, "ca_certificates": certs,
			"public_keys": []any{string(key.PublicPEM)}},
			[]string{"Error verify.public_keys: cosign attribute with notation"}},
		{"cosign's identity with notation", oci, map[string]any{"provider": "notation", "trust_policy_json": policy, "ca_certificates": certs,
			"match_oidc_identity": []any{map[string]any{"issuer": ".*", "subject": ".*"}}},
			[]string{"Error verify.match_oidc_identity: cosign attribute with notation"}},
		{"notation's attributes without the provider", oci, map[string]any{"public_keys": []any{string(key.PublicPEM)},
			"trust_policy_json": policy, "ca_certificates": certs},
			[]string{"Error verify.trust_policy_json: Notation attribute with cosign", "Error verify.ca_certificates: Notation attribute with cosign"}},
		{"notation on a Helm repository", map[string]any{"repository": "https://charts.example.com", "chart": "podinfo"},
			map[string]any{"provider": "notation", "trust_policy_json": policy, "ca_certificates": certs},
			[]string{"Error verify: Nothing to verify"}},
		{"notation on a directory", map[string]any{"source_path": "./charts/podinfo"},
			map[string]any{"provider": "notation", "trust_policy_json": policy, "ca_certificates": certs},
			[]string{"Error verify: Nothing to verify"}},
		{"skip statement with trust stores", oci, map[string]any{"provider": "notation", "trust_policy_json": skipWithStores, "ca_certificates": certs},
			[]string{"Warning verify.trust_policy_json: Trust stores of a skip statement ignored"}},
		{"unknown trust policy", oci, map[string]any{"provider": "notation", "trust_policy_json": tftypes.UnknownValue, "ca_certificates": certs}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attrs := map[string]any{"verify": tc.verify}
			for k, v := range tc.source {
				attrs[k] = v
			}
			diags, got := validateArtifact(t, attrs)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if tc.name == "notation on a Helm repository" && len(diags) == 1 && !strings.Contains(diags[0].Detail(), "notation verification needs an oci:// repository") {
				t.Errorf("detail %q does not name the provider", diags[0].Detail())
			}
		})
	}
}

// TestHelmChartArtifact_notationValueValidators: a trust policy that does
// not parse, or breaks the Notary Project's rules, and a CA certificate that
// is not one are refused by their attribute's validator, at validate.
func TestHelmChartArtifact_notationValueValidators(t *testing.T) {
	ca, err := charttest.NewNotationCA("v")
	if err != nil {
		t.Fatal(err)
	}
	run := func(v validator.String, s string) []string {
		var resp validator.StringResponse
		v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("verify").AtName("x"), ConfigValue: types.StringValue(s)}, &resp)
		var out []string
		for _, d := range resp.Diagnostics {
			out = append(out, d.Summary()+": "+d.Detail())
		}
		return out
	}
	for name, tc := range map[string]struct {
		v    validator.String
		in   string
		want string
	}{
		"trust policy":                {trustPolicyValidator, string(charttest.TrustPolicy("p", "*", "v")), ""},
		"trust policy not JSON":       {trustPolicyValidator, "{version: 1.0", "Invalid trust policy: verify.x: must be a Notation trust policy document (trustpolicy.json): not a trust policy document (JSON)"},
		"trust policy without stores": {trustPolicyValidator, `{"version": "1.0", "trustPolicies": [{"name": "p", "registryScopes": ["*"], "signatureVerification": {"level": "strict"}}]}`, "is either missing trust stores or trusted identities"},
		"trust policy bad scope":      {trustPolicyValidator, string(charttest.TrustPolicy("p", "oci://x/y", "v")), `registry scope "oci://x/y" is not valid`},
		"certificate":                 {caCertificateValidator, string(ca.RootPEM), ""},
		"certificate DER":             {caCertificateValidator, string(ca.Root.Raw), ""},
		"not a certificate":           {caCertificateValidator, "hello", "Invalid CA certificate: verify.x: must be a PEM or DER X.509 certificate: not a PEM or DER certificate"},
	} {
		got := run(tc.v, tc.in)
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%s: %q, want none", name, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: %q, want one saying %q", name, got, tc.want)
		}
	}
}

// notationVerifyBlock is a verify block with provider notation: policy as
// trust_policy_json, and each CA's root certificate under ca_certificates as
// ca-<i>.crt.
func notationVerifyBlock(policy []byte, cas ...*charttest.NotationCA) string {
	var certs []string
	for i, ca := range cas {
		certs = append(certs, fmt.Sprintf("    %q = %s", fmt.Sprintf("ca-%d.crt", i), hcl(string(ca.RootPEM))))
	}
	return fmt.Sprintf(`
  verify {
    provider          = "notation"
    trust_policy_json = %s
    ca_certificates = {
%s
    }
  }`, hcl(string(policy)), strings.Join(certs, "\n"))
}

// errorSaying is a regexp of the texts, in order, as the CLIs print a
// diagnostic that holds them (wrapped lines, anything between them).
func errorSaying(texts ...string) *regexp.Regexp {
	parts := make([]string, len(texts))
	for i, s := range texts {
		parts[i] = wrappedText(s)
	}
	return regexp.MustCompile("(?s)" + strings.Join(parts, ".*"))
}

// TestAccHelmChartArtifact_notation verifies an OCI chart's Notation
// signature at plan, with the registry's credentials from the provider's
// registries, and installs it: a new version in range that is unsigned, or
// signed by a CA the trust store lacks, fails the plan with the reference and
// the trust policy statement's verdict, leaving the artifact and the release
// as they were; trusting the second CA too takes the new version; a trust
// policy scoped to another registry fails the plan; a skip statement uses the
// chart unverified, with a warning. Every apply is followed by an empty plan.
func TestAccHelmChartArtifact_notation(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "art-notation")
		reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{Username: "oci-user", Password: "oci-pass"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(reg.Close)
		caA, err := charttest.NewNotationCA("a")
		if err != nil {
			t.Fatal(err)
		}
		caB, err := charttest.NewNotationCA("b")
		if err != nil {
			t.Fatal(err)
		}
		scope := reg.Host() + "/charts/podinfo"
		// push pushes podinfo at version, signed by the CAs given.
		push := func(version string, signers ...*charttest.NotationCA) {
			tgz, err := testenv.PackageChart(podinfoSrc(), version, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			_, d, err := reg.PushChart(tgz, "charts")
			if err != nil {
				t.Fatal(err)
			}
			for _, ca := range signers {
				if err := ca.Sign(scope+"@"+d, "oci-user", "oci-pass"); err != nil {
					t.Fatal(err)
				}
			}
		}
		push("1.0.0", caA)
		cacheDir := t.TempDir()
		config := func(verify string) string {
			return providerBlock(fmt.Sprintf(`
  cache_dir            = %s
  repository_cache_ttl = "0s"
  registries = [{
    url      = %s
    username = "oci-user"
    password = "oci-pass"
  }]`, hcl(cacheDir), hcl(reg.URL()))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = %s
  chart      = "podinfo"
  version    = "1.x"
%s
}

resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = %q
  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
}
`, hcl(reg.URL()+"/charts"), verify, ns)
		}
		strictA := config(notationVerifyBlock(charttest.TrustPolicy("charts", scope, "trusted"), caA))
		strictAB := config(notationVerifyBlock(charttest.TrustPolicy("charts", scope, "trusted"), caA, caB))
		elsewhere := config(notationVerifyBlock(charttest.TrustPolicy("elsewhere", "registry.example.com/charts/podinfo", "trusted"), caA, caB))
		skipVerify := notationVerifyBlock(charttest.TrustPolicyAt("lax", scope, "trusted", "skip"), caA, caB)
		// With skip, a release's inline chart with the same verify block
		// too: it warns as the artifact does.
		skip := config(skipVerify) + inlineRelease("inline", ns,
			fmt.Sprintf("repository = %s\nchart = \"podinfo\"\nversion = \"1.x\"\n%s", hcl(reg.URL()+"/charts"), skipVerify))
		verdict := "under trust policy statement 'charts' (level strict)"
		at := func(version string, verified bool) []plancheck.PlanCheck {
			return []plancheck.PlanCheck{
				plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), knownvalue.StringExact(version)),
				plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("verified"), knownvalue.Bool(verified)),
			}
		}
		installed := func(version string) resource.TestCheckFunc {
			return resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(artifactAddr, "chart_version", version),
				resource.TestCheckResourceAttrPair("stevedore_helmrelease.podinfo", "chart_digest", artifactAddr, "digest"),
				resource.TestCheckResourceAttr("stevedore_helmrelease.podinfo", "chart_version", version),
				artifactFileMatches(artifactAddr),
			)
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config:           strictA,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: at("1.0.0", true)},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("verified"), knownvalue.Bool(true)),
					},
					Check: installed("1.0.0"),
				},
				{
					// 1.1.0, unsigned, comes into range: a plan error.
					PreConfig: func() { push("1.1.0") },
					Config:    strictA,
					PlanOnly:  true,
					ExpectError: errorSaying("chart 'podinfo' version '1.1.0'", "no valid notation signature for '"+scope+"@sha256:",
						"' "+verdict, "no signature is associated"),
				},
				{
					// 1.2.0, signed by a CA the trust store lacks.
					PreConfig: func() { push("1.2.0", caB) },
					Config:    strictA,
					PlanOnly:  true,
					ExpectError: errorSaying("chart 'podinfo' version '1.2.0'", "no valid notation signature for '"+scope+"@sha256:",
						"' "+verdict, "does not contain any trusted certificate"),
				},
				{
					// Trusting b too takes 1.2.0, and the release upgrades
					// from 1.0.0, which the failed plans left as it was.
					Config: strictAB,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: append(at("1.2.0", true),
						plancheck.ExpectResourceAction(artifactAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectResourceAction("stevedore_helmrelease.podinfo", plancheck.ResourceActionUpdate))},
					Check: installed("1.2.0"),
				},
				{
					Config:   elsewhere,
					PlanOnly: true,
					ExpectError: errorSaying("chart 'podinfo' version '1.2.0'", "no trust policy statement applies to '"+scope+"@sha256:",
						"has no applicable trust policy statement"),
				},
				{
					// skip: used unverified, and the plan says so; the
					// archive is the same, so the release plans nothing.
					PreConfig: rec.resetWarnings,
					Config:    skip,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: append(at("1.2.0", false),
						plancheck.ExpectResourceAction("stevedore_helmrelease.podinfo", plancheck.ResourceActionNoop),
						expectWarning(rec, "Chart used unverified", regexp.MustCompile(`^helmchart_artifact .*`+
							regexp.QuoteMeta("trust policy statement 'lax' (level skip) skips signature verification of '"+scope+"@sha256:")+
							`[0-9a-f]{64}'`)),
						expectWarning(rec, "Chart used unverified", regexp.MustCompile(`^helmrelease .*/inline: `+
							regexp.QuoteMeta("trust policy statement 'lax' (level skip) skips signature verification of '"+scope+"@sha256:")+
							`[0-9a-f]{64}'`)))},
					Check: installed("1.2.0"),
				},
			},
		}
	})
}

// TestAccHelmChartArtifact_notationBadInput: a trust policy that does not
// parse, a CA certificate under a key Flux would not read, an unknown
// provider, notation on a Helm repository, and notation without its trust
// policy are errors at validate that name the attribute; nothing is stored.
func TestAccHelmChartArtifact_notationBadInput(t *testing.T) {
	t.Parallel()
	ca, err := charttest.NewNotationCA("bad")
	if err != nil {
		t.Fatal(err)
	}
	cacheDir := t.TempDir()
	policy := hcl(string(charttest.TrustPolicy("p", "*", "x")))
	cert := hcl(string(ca.RootPEM))
	config := func(repository, verify string) string {
		return artifactProviderBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = %q
  chart      = "podinfo"
  verify {
%s
  }
}
`, repository, verify)
	}
	const oci = "oci://127.0.0.1:1/charts"
	step := func(cfg string, want *regexp.Regexp) resource.TestStep {
		return resource.TestStep{Config: cfg, PlanOnly: true, ExpectError: want}
	}
	artifactAccTest(t, resource.TestCase{
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(filepath.Join(cacheDir, "artifacts")); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("bad input stored something in the cache: %v", err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			step(config(oci, fmt.Sprintf(`provider = "notation"
trust_policy_json = "{\"version\": \"1.0\""
ca_certificates = { "ca.crt" = %s }`, cert)),
				errorSaying("Invalid trust policy", "verify.trust_policy_json", "not a trust policy document (JSON)")),
			step(config(oci, fmt.Sprintf(`provider = "notation"
trust_policy_json = %s
ca_certificates = { "ca.txt" = %s }`, policy, cert)),
				errorSaying("verify.ca_certificates", "must end in .crt or .pem")),
			step(config(oci, fmt.Sprintf(`provider = "notation"
trust_policy_json = %s
ca_certificates = { "ca.crt" = "not a certificate" }`, policy)),
				errorSaying("Invalid CA certificate", "verify.ca_certificates")),
			step(config(oci, `provider = "sigstore"`),
				errorSaying("verify.provider", `value must be one of: ["cosign" "notation"]`)),
			step(config("https://charts.example.com", fmt.Sprintf(`provider = "notation"
trust_policy_json = %s
ca_certificates = { "ca.crt" = %s }`, policy, cert)),
				errorSaying("Nothing to verify", "notation verification needs an oci:// repository")),
			step(config(oci, fmt.Sprintf(`provider = "notation"
ca_certificates = { "ca.crt" = %s }`, cert)),
				errorSaying("Missing trust policy", "verify.trust_policy_json")),
		},
	})
}
