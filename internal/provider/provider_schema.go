package provider

import (
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func providerSchema() schema.Schema {
	return schema.Schema{
		Description: "Flux's delivery semantics (HelmChart, HelmRelease, ResourceSet) in plan and apply, without a controller in the cluster.",
		Attributes: map[string]schema.Attribute{
			"registries": schema.ListNestedAttribute{
				Optional: true,
				Description: "Credentials for Helm repositories (`https://`) and OCI registries (`oci://`). A chart source " +
					"without credentials of its own uses the entry with the longest `url` that prefixes its repository.",
				NestedObject: schema.NestedAttributeObject{
					Attributes: map[string]schema.Attribute{
						"url": schema.StringAttribute{
							Required:    true,
							Description: "Repository or registry URL prefix, `https://...` or `oci://...`.",
							Validators: []validator.String{
								stringvalidator.RegexMatches(regexp.MustCompile(`^(https?|oci)://[^\s]+$`), "must be an http://, https:// or oci:// URL"),
							},
						},
						"username": schema.StringAttribute{Optional: true, Description: "User name."},
						"password": schema.StringAttribute{Optional: true, Sensitive: true, Description: "Password or token."},
					},
				},
			},
			"cache_dir": schema.StringAttribute{
				Optional:    true,
				Description: "Directory of the chart artifact and repository index cache. Default: the user cache directory + `/stevedore`.",
				Validators:  []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"repository_cache_ttl": schema.StringAttribute{
				Optional: true,
				Description: "How long a Helm repository index or an OCI tag list is used from `cache_dir` without asking the " +
					"server again, as a Go duration. `0s` revalidates on every plan (a conditional request). Default `5m`.",
				Validators: []validator.String{durationValidator{}},
			},
			"field_manager": schema.StringAttribute{
				Optional:    true,
				Description: "Server-side apply field manager of every write, and the manager whose fields drift detection compares. Default `stevedore`.",
				Validators:  []validator.String{stringvalidator.LengthBetween(1, 128)},
			},
			"helm3_defaults": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Helm 3's defaults for every `stevedore_helmrelease`, as helm-controller's `UseHelm3Defaults` feature gate " +
					"gives them: new releases are installed with client-side apply (`install.server_side_apply = false`), actions wait with " +
					"Helm 3's `legacy` wait (`wait_strategy`) and post-renderers get no hooks (`post_render_strategy = \"nohooks\"`). " +
					"A release's own setting wins. Upgrades and rollbacks keep `auto` either way: a release stays with the method its " +
					"last revision used. Default false: Helm 4's and helm-controller 1.5+'s defaults (server-side apply, `poller`, `combined`).",
			},
		},
		Blocks: map[string]schema.Block{
			"kubernetes": kubernetesBlock(),
		},
	}
}

func kubernetesBlock() schema.SingleNestedBlock {
	str := func(desc string, sensitive bool) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Sensitive: sensitive, Description: desc}
	}
	return schema.SingleNestedBlock{
		Description: "How to reach the cluster. Unset attributes fall back to the environment variables named in their descriptions. " +
			"Nothing here is contacted until a resource needs the cluster.",
		Attributes: map[string]schema.Attribute{
			"config_path": schema.StringAttribute{
				Optional:    true,
				Description: "Path to a kubeconfig file. Env: `KUBE_CONFIG_PATH`.",
				Validators: []validator.String{
					stringvalidator.ConflictsWith(path.MatchRelative().AtParent().AtName("config_paths")),
					stringvalidator.LengthAtLeast(1),
				},
			},
			"config_paths": schema.ListAttribute{
				Optional:    true,
				ElementType: types.StringType,
				Description: "Kubeconfig files merged in order, as kubectl merges `KUBECONFIG`. Env: `KUBE_CONFIG_PATHS`, then `KUBECONFIG`.",
				Validators:  []validator.List{listvalidator.SizeAtLeast(1)},
			},
			"config_context":           str("Kubeconfig context to use. Env: `KUBE_CTX`.", false),
			"config_context_cluster":   str("Kubeconfig cluster to use instead of the context's. Env: `KUBE_CTX_CLUSTER`.", false),
			"config_context_auth_info": str("Kubeconfig user to use instead of the context's. Env: `KUBE_CTX_AUTH_INFO`.", false),
			"host": schema.StringAttribute{
				Optional: true,
				Description: "API server URL. Env: `KUBE_HOST`. When set in the configuration, kubeconfig files come only from " +
					"`config_path` or `config_paths`, not from the environment.",
				Validators: []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^https?://`), "must be an http:// or https:// URL")},
			},
			"username":               str("Basic authentication user. Env: `KUBE_USER`.", false),
			"password":               str("Basic authentication password. Env: `KUBE_PASSWORD`.", true),
			"token":                  str("Bearer token. Env: `KUBE_TOKEN`.", true),
			"insecure":               schema.BoolAttribute{Optional: true, Description: "Skip verification of the server's certificate. Env: `KUBE_INSECURE`."},
			"tls_server_name":        str("Server name to verify the server's certificate against. Env: `KUBE_TLS_SERVER_NAME`.", false),
			"client_certificate":     str("PEM client certificate. Env: `KUBE_CLIENT_CERT_DATA`.", false),
			"client_key":             str("PEM client key. Env: `KUBE_CLIENT_KEY_DATA`.", true),
			"cluster_ca_certificate": str("PEM CA bundle of the API server. Env: `KUBE_CLUSTER_CA_CERT_DATA`.", false),
			"proxy_url":              str("Proxy for API server requests (`http`, `https` or `socks5`). Env: `KUBE_PROXY_URL`.", false),
			"qps": schema.Float64Attribute{
				Optional:    true,
				Description: "Client-side request rate limit, in requests per second. Default 500: plans dry-run every managed object, and the API server's priority and fairness protects it.",
				Validators:  []validator.Float64{float64validator.AtLeast(0)},
			},
			"burst": schema.Int64Attribute{
				Optional:    true,
				Description: "Client-side request burst. Default 1000.",
				Validators:  []validator.Int64{int64validator.AtLeast(0)},
			},
			"request_timeout": schema.StringAttribute{
				Optional: true,
				Description: "How long one request to the API server may take, as a Go duration (watches excepted). Default `30s`. " +
					"When three requests in a row fail to connect, are reset or time out, the API server counts as unreachable " +
					"for one such timeout: every request in that time fails at once with the first failure, so a plan of many " +
					"objects fails in seconds instead of waiting for each object.",
				Validators: []validator.String{durationValidator{}},
			},
		},
		Blocks: map[string]schema.Block{
			"exec": schema.SingleNestedBlock{
				Description: "Exec credential plugin (client-go's `exec`), such as `aws eks get-token`.",
				Attributes: map[string]schema.Attribute{
					"api_version": str("API version of the ExecCredential, for example `client.authentication.k8s.io/v1`.", false),
					"command":     str("Command to run.", false),
					"args":        schema.ListAttribute{Optional: true, ElementType: types.StringType, Description: "Arguments."},
					"env":         schema.MapAttribute{Optional: true, ElementType: types.StringType, Description: "Extra environment variables."},
				},
			},
		},
	}
}
