package provider

import (
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/inputs"
)

func resourceSetInputsSchema() schema.Schema {
	optString := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Description: desc}
	}
	return schema.Schema{
		Description: "The inputs of an upstream source, as flux-operator's ResourceSetInputProvider exports them, read at plan: " +
			"open pull or merge requests, branches or tags of a GitHub repository or GitLab project, tags of an OCI repository, or one static input. " +
			"Feed `inputs` to `stevedore_resourceset.inputs`; `concat()` of several gives flux-operator's union (the Flatten strategy).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:    true,
				Description: "`sha256:<hex>` digest of `inputs` (JSON): it changes exactly when the inputs do.",
			},
			"type": schema.StringAttribute{
				Required: true,
				Description: "The provider type, with flux-operator's names: " + strings.Join(inputs.Supported, ", ") + ". " +
					"Not yet supported: " + strings.Join(inputs.NotYetSupported, ", ") + ".",
			},
			"url": optString("GitHub repository (`https://github.com/<owner>/<repo>`, or a GitHub Enterprise host, whose API is `<host>/api/v3`), " +
				"GitLab project (`https://gitlab.com/<group>/<project>`), or OCI repository (`oci://<registry>/<repository>`). " +
				"Required for every type but Static, which takes none."),
			"uid": optString("Static only: the string whose Adler-32 checksum is the input's `id`. flux-operator checksums the " +
				"ResourceSetInputProvider's `metadata.uid`: set that UID here to render the names an existing provider renders. " +
				"Without it the id is `1`, the checksum of the empty string."),
			"default_values": schema.DynamicAttribute{
				Optional: true,
				Description: "An object of values merged into every input under the keys it does not have (flux-operator's `defaultValues`): " +
					"the exported keys win.",
			},
			"username": optString("OCI registry user name, with `password`. Git hosts ignore it, as flux-operator does."),
			"password": schema.StringAttribute{
				Optional: true, Sensitive: true,
				Description: "OCI registry password, with `username`; for Git hosts, the access token (flux-operator's secret key `password`).",
			},
			"token": schema.StringAttribute{
				Optional: true, Sensitive: true,
				Description: "Access token of the Git host, or bearer token of the OCI registry. Conflicts with `username` and `password`.",
			},
			"ca_cert": optString("PEM CA certificate trusted, on top of the system roots, for the host's TLS certificate (flux-operator's `ca.crt`)."),
			"insecure": schema.BoolAttribute{
				Optional:    true,
				Description: "OCIArtifactTag only: allow plain HTTP to the registry.",
			},
			"inputs": schema.DynamicAttribute{
				Computed: true,
				Description: "The exported inputs, a list of objects with flux-operator's keys. Change requests: `id` (the number), `sha`, " +
					"`branch`, `title`, `author`, `labels` (when it has some) and, on GitLab, `slug`; branches: `id` (checksum of the name), " +
					"`branch`, `sha` (and `slug` on GitLab); Git tags: `id` (checksum of the tag), `tag`, `sha` (and `slug` on GitLab); " +
					"OCI tags: `id` (checksum of the tag), `tag`, `digest`; Static: `id`. Plus `default_values`. " +
					"Sorted: tags highest semver (or, without `filter.semver`, reverse lexical order) first, branches by name, change requests by number, newest first.",
			},
		},
		Blocks: map[string]schema.Block{
			"filter": schema.SingleNestedBlock{
				Description: "Which items become inputs (flux-operator's `filter`). Every field is checked against the type: one that does not apply to it is an error.",
				Attributes: map[string]schema.Attribute{
					"limit": schema.Int64Attribute{
						Optional:    true,
						Description: "At most this many inputs, 1 to 10000; 100 when unset. Tags are limited after sorting, so `limit = 1` with `semver` is the latest version.",
					},
					"labels": schema.ListAttribute{
						Optional: true, ElementType: types.StringType,
						Description: "Change requests only: those carrying every one of these labels.",
					},
					"include_branch": optString("Change requests (by source branch) and branches: a Go regular expression the name must match."),
					"exclude_branch": optString("Change requests (by source branch) and branches: a Go regular expression the name must not match."),
					"include_tag":    optString("Tags: a Go regular expression the tag must match."),
					"exclude_tag":    optString("Tags: a Go regular expression the tag must not match."),
					"semver": optString("Tags: a semantic version constraint (Masterminds/semver, as Flux) the tag must satisfy, " +
						"highest first; a tag is read as Flux reads it (three dot-separated parts, an optional leading `v`, leading zeros allowed: `01.0.0` is 1.0.0)."),
				},
			},
			"skip": schema.SingleNestedBlock{
				Description: "Change requests only (flux-operator's `skip`).",
				Attributes: map[string]schema.Attribute{
					"labels": schema.ListAttribute{
						Optional: true, ElementType: types.StringType,
						Description: "Leave out a change request that carries one of these labels, or, for `!label`, that does not carry it. " +
							"flux-operator keeps the inputs it exported before for such a request; a data source has no before, so it leaves the request out.",
					},
				},
			},
		},
	}
}
