package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart"
)

func helmChartArtifactSchema() schema.Schema {
	optStr := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Description: desc, Validators: []validator.String{stringvalidator.LengthAtLeast(1)}}
	}
	computedStr := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, Description: desc}
	}
	return schema.Schema{
		Description: "A Helm chart fetched from a Helm repository, an OCI registry or a local directory, with values files " +
			"merged in and its signature verified, stored in the provider's content-addressed `cache_dir`. The semantics are " +
			"those of Flux's HelmChart: the version constraint is resolved at plan time, so a new chart version in range shows " +
			"in the plan as a change of `chart_version`.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:      true,
				Description:   "The chart source and name.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"repository": schema.StringAttribute{
				Optional: true,
				Description: "Helm repository (`https://...`) or OCI registry repository (`oci://host/path`, without the chart " +
					"name, tag or digest). Exactly one of `repository` and `source_path`.",
				Validators: []validator.String{
					stringvalidator.RegexMatches(regexp.MustCompile(`^(https?|oci)://[^\s]+$`), "must be an http://, https:// or oci:// URL"),
					stringvalidator.ExactlyOneOf(path.MatchRoot("source_path")),
				},
			},
			"source_path": schema.StringAttribute{
				Optional: true,
				Description: "Local chart directory; `.helmignore` is honoured. Dependencies missing from `charts/` are built " +
					"into it as `helm dependency build` does: `file://` ones from their directory, `https://` and `oci://` ones " +
					"fetched with the provider's `registries` credentials (`Chart.lock` pins their versions).",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"source_root": schema.StringAttribute{
				Optional: true,
				Description: "Root of the source that holds the chart, as a GitRepository or Bucket is the source of a Flux " +
					"HelmChart. With it, `source_path` (Flux's `spec.chart`, e.g. `./charts/app`) and `values_files` " +
					"(`spec.valuesFiles`) are relative to this directory, as source-controller resolves them: values files may " +
					"be anywhere in the source (`./charts/app/values.yaml`, `./env/prod/values.yaml`), `values.yaml` is the " +
					"root's file rather than the chart's own values, and no path may leave the root (`..` past it, absolute " +
					"paths and symbolic links out of it are errors). Without it, `source_path` is the chart directory and " +
					"`values_files` are relative to that directory. Only with `source_path`.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"chart": schema.StringAttribute{
				Optional: true,
				Description: "Chart name in the repository; required with `repository`. With `source_path` it is optional and " +
					"must match the name in Chart.yaml.",
				Validators: []validator.String{
					stringvalidator.RegexMatches(regexp.MustCompile(`^[^/\\\s]+$`), "must be a chart name, not a path"),
				},
			},
			"version": schema.StringAttribute{
				Optional: true,
				Computed: true,
				Default:  stringdefault.StaticString(chart.DefaultVersion),
				Description: "Semver version constraint (`1.x`, `~6.5.0`, `>=1.0.0 <2.0.0`). An exact match wins; otherwise the " +
					"highest version in range, and `*` (the default) is the highest stable version (no prereleases).",
				Validators: []validator.String{constraintValidator{}},
			},
			"values_files": schema.ListAttribute{
				Optional:    true,
				ElementType: types.StringType,
				Description: "Values files merged in order, the last one winning, and packaged as the chart's values.yaml. For a " +
					"repository chart they are files of the chart (`values.yaml` is its own values); for `source_path` they are " +
					"relative to the chart directory, unless `source_root` is set (stevedore_helmchart_artifact only): then " +
					"to the source root, as in Flux.",
				Validators: []validator.List{listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
			},
			"ignore_missing_values_files": schema.BoolAttribute{
				Optional:    true,
				Computed:    true,
				Default:     booldefault.StaticBool(false),
				Description: "Skip values files that do not exist instead of failing.",
			},
			"reconcile_strategy": schema.StringAttribute{
				Optional: true,
				Computed: true,
				Default:  stringdefault.StaticString(chart.StrategyChartVersion),
				Description: "For `source_path`: `ChartVersion` (default) builds a new artifact when the chart version changes; " +
					"`Revision` also when the source changes, and appends the first 12 characters of the source revision to " +
					"the version (`1.0.0+<rev>`).",
				Validators: []validator.String{stringvalidator.OneOf(chart.StrategyChartVersion, chart.StrategyRevision)},
			},
			"username": optStr("Repository user name. Without `username` and `password`, the provider's `registries` entry for the repository applies."),
			"password": schema.StringAttribute{Optional: true, Sensitive: true, Description: "Repository password or token."},
			"ca_pem":   optStr("PEM CA bundle trusted on top of the system roots."),
			"cert_pem": optStr("PEM client certificate for mutual TLS."),
			"key_pem":  schema.StringAttribute{Optional: true, Sensitive: true, Description: "PEM private key of `cert_pem`."},
			"insecure_skip_tls_verify": schema.BoolAttribute{
				Optional:    true,
				Description: "Do not verify the repository's TLS certificate.",
			},
			"insecure": schema.BoolAttribute{
				Optional:    true,
				Description: "Speak plain HTTP to an OCI registry (Flux's `insecure`). Loopback registries (`localhost`, `127.0.0.1`) always are.",
			},
			"pass_credentials": schema.BoolAttribute{
				Optional:    true,
				Description: "Send the credentials to chart URLs on another host than the repository's.",
			},

			"suspend": schema.BoolAttribute{
				Optional: true,
				Description: "Flux's `spec.suspend`: the artifact keeps its chart version, digest and archive, and a new version in " +
					"range (or, for `source_path`, a new revision) is not taken; the plan warns which one was skipped. Unset it to " +
					"take the newest again. An artifact is built before it can be suspended, and its source and `verify` cannot " +
					"change while it is. Destroy removes the archive as without it.",
			},

			"chart_name":    computedStr("Name of the chart, from Chart.yaml."),
			"chart_version": computedStr("Version the constraint resolved to. Known at plan time: a new version in range shows as a change."),
			"app_version":   computedStr("appVersion of the chart."),
			"revision": computedStr("Artifact revision: the chart version; with values files, `+` and the first 12 hex characters of " +
				"the sha256 of the merged values; with `reconcile_strategy = \"Revision\"`, `+` and the first 12 characters of the source revision."),
			"digest": computedStr("`sha256:<hex>` of the chart archive."),
			"size":   schema.Int64Attribute{Computed: true, Description: "Size of the chart archive in bytes."},
			"path": computedStr("Path of the chart archive, `<chart>-<revision>.tgz`, in the cache of the machine that last built it. " +
				"Another machine finds the archive by `digest` in its own cache (a release does so); known after apply when the archive changes."),
			"url": computedStr("`file://` URL of `path`."),
			"observed_values_files": schema.ListAttribute{
				Computed:    true,
				ElementType: types.StringType,
				Description: "Values files that were merged, in order.",
			},
			"verified": schema.BoolAttribute{Computed: true, Description: "True when a signature was checked and matched."},
			"source_revision": computedStr("Revision of a `source_path`: `<branch>@sha1:<hex>` of git HEAD when the directory is in a " +
				"git work tree, otherwise `sha256:<hex>` of the chart's files. Null for repositories."),
		},
		Blocks: map[string]schema.Block{
			"verify": schema.SingleNestedBlock{
				Description: "Verify the chart's signature before it is used (OCI charts only: Helm repositories have no signatures " +
					"to verify), at plan, as Flux's HelmChart `spec.verify` does. A failed verification is a plan error that names the " +
					"chart's reference, and stores nothing; an archive in the cache counts as verified only for the key material it " +
					"passed with. With `provider = \"cosign\"` (the default): with `public_keys`, offline and any key that verifies " +
					"passes; without, keyless against `match_oidc_identity` through Fulcio and Rekor; without `match_oidc_identity` " +
					"too, a signature by any identity Fulcio certified passes, as in Flux. With `provider = \"notation\"`: the " +
					"Notation signatures of the chart's manifest are checked against `trust_policy_json` and `ca_certificates`, the " +
					"keys of the Secret a Flux HelmChart's `spec.verify.secretRef` names (read it with a data source, or hold them in " +
					"the configuration).",
				Attributes: map[string]schema.Attribute{
					"provider": schema.StringAttribute{
						Optional:    true,
						Description: "Verification provider: `cosign` (when omitted) or `notation`.",
						Validators:  []validator.String{stringvalidator.OneOf(chart.VerifyProviders...)},
					},
					"public_keys": schema.ListAttribute{
						Optional:    true,
						ElementType: types.StringType,
						Description: "cosign: PEM public keys, tried in turn.",
						Validators: []validator.List{
							listvalidator.SizeAtLeast(1),
							listvalidator.ConflictsWith(path.MatchRelative().AtParent().AtName("match_oidc_identity")),
						},
					},
					"trust_policy_json": schema.StringAttribute{
						Optional: true,
						Description: "notation: the trust policy document, JSON (the `trustpolicy.json` key of Flux's Secret): inline " +
							"(`jsonencode({...})`) or from a file (`file(\"trustpolicy.json\")`). The statement whose `registryScopes` " +
							"names the chart's repository (`<host>/<path>/<chart>`), else the `*` statement, applies: at level `strict` " +
							"or `permissive` a chart without a signature from a trusted CA is a plan error; at `audit` a signature that " +
							"fails authenticity, and at `skip` any chart, is used with `verified = false` and a warning, as " +
							"source-controller does. A statement at `skip` that names trust stores or identities has them dropped, as " +
							"source-controller drops them. Checked at validate against the Notary Project's rules.",
						Validators: []validator.String{trustPolicyValidator},
					},
					"ca_certificates": schema.MapAttribute{
						Optional:    true,
						ElementType: types.StringType,
						Description: "notation: the trust store's CA certificates (PEM or DER), keyed by their names in Flux's Secret, each " +
							"ending in `.crt` or `.pem` (`{ \"ca.crt\" = file(\"ca.crt\") }`). Every certificate is in every trust " +
							"store the trust policy names (`ca:<name>`, `signingAuthority:<name>`), as in source-controller.",
						Validators: []validator.Map{
							mapvalidator.SizeAtLeast(1),
							mapvalidator.KeysAre(stringvalidator.RegexMatches(regexp.MustCompile(`\.(crt|pem)$`),
								"must end in .crt or .pem, as a CA certificate's key in Flux's Secret")),
							mapvalidator.ValueStringsAre(caCertificateValidator),
						},
					},
					"match_oidc_identity": schema.ListNestedAttribute{
						Optional:    true,
						Description: "cosign: keyless identities; any one that matches passes. Without it (and without `public_keys`), any identity passes.",
						Validators:  []validator.List{listvalidator.SizeAtLeast(1)},
						NestedObject: schema.NestedAttributeObject{
							Attributes: map[string]schema.Attribute{
								"issuer": schema.StringAttribute{
									Required:    true,
									Description: "Go regular expression the OIDC issuer must match.",
									Validators:  []validator.String{regexpValidator},
								},
								"subject": schema.StringAttribute{
									Required:    true,
									Description: "Go regular expression the certificate subject must match.",
									Validators:  []validator.String{regexpValidator},
								},
							},
						},
					},
				},
			},
		},
	}
}

// constraintValidator rejects malformed semver constraints at validate time.
type constraintValidator struct{}

func (constraintValidator) Description(context.Context) string {
	return "must be a semver version or constraint"
}
func (v constraintValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (constraintValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := chart.ValidateConstraint(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid version constraint", err.Error())
	}
}

// trustPolicyValidator rejects, at validate, a Notation trust policy that
// does not parse or breaks the Notary Project's rules.
var trustPolicyValidator = namedCheck{stringCheck{desc: "must be a Notation trust policy document (trustpolicy.json)", summary: "Invalid trust policy",
	check: func(s string) error { _, _, err := chart.ParseTrustPolicy([]byte(s)); return err }}}

// caCertificateValidator rejects, at validate, a CA certificate that is not
// one.
var caCertificateValidator = namedCheck{stringCheck{desc: "must be a PEM or DER X.509 certificate", summary: "Invalid CA certificate",
	check: func(s string) error { _, err := chart.ParseCACertificate([]byte(s)); return err }}}

// namedCheck is a stringCheck whose message starts with the attribute's
// path (`verify.ca_certificates["ca.crt"]: ...`), since the CLIs print none,
// and the value, long and perhaps sensitive, is not worth repeating.
type namedCheck struct{ stringCheck }

func (v namedCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := v.check(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, v.summary, fmt.Sprintf("%s: %s: %v", req.Path, v.desc, err))
	}
}

// regexpValidator rejects a malformed Go regular expression at validate time.
var regexpValidator = stringCheck{desc: "must be a Go regular expression", summary: "Invalid regular expression",
	check: func(s string) error { _, err := regexp.Compile(s); return err }}

// durationText is d as a user writes it in a configuration: `5m`, not Go's
// `5m0s`; the schema shows an engine's default duration so.
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// durationValidator checks a Go duration of zero or more.
type durationValidator struct{}

func (durationValidator) Description(context.Context) string {
	return "must be a Go duration such as 30s, 5m or 1h"
}
func (v durationValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (v durationValidator) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	if err == nil && d < 0 {
		err = fmt.Errorf("%s is negative", d)
	}
	if err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration", v.Description(ctx)+": "+err.Error())
	}
}
