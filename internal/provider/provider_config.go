package provider

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

type providerModel struct {
	Kubernetes   *kubernetesModel `tfsdk:"kubernetes"`
	Registries   []registryModel  `tfsdk:"registries"`
	CacheDir     types.String     `tfsdk:"cache_dir"`
	CacheTTL     types.String     `tfsdk:"repository_cache_ttl"`
	FieldManager types.String     `tfsdk:"field_manager"`
	Helm3        types.Bool       `tfsdk:"helm3_defaults"`
}

type kubernetesModel struct {
	ConfigPath           types.String  `tfsdk:"config_path"`
	ConfigPaths          types.List    `tfsdk:"config_paths"`
	ConfigContext        types.String  `tfsdk:"config_context"`
	ConfigContextCluster types.String  `tfsdk:"config_context_cluster"`
	ConfigContextAuth    types.String  `tfsdk:"config_context_auth_info"`
	Host                 types.String  `tfsdk:"host"`
	Username             types.String  `tfsdk:"username"`
	Password             types.String  `tfsdk:"password"`
	Token                types.String  `tfsdk:"token"`
	Insecure             types.Bool    `tfsdk:"insecure"`
	TLSServerName        types.String  `tfsdk:"tls_server_name"`
	ClientCertificate    types.String  `tfsdk:"client_certificate"`
	ClientKey            types.String  `tfsdk:"client_key"`
	ClusterCACertificate types.String  `tfsdk:"cluster_ca_certificate"`
	ProxyURL             types.String  `tfsdk:"proxy_url"`
	QPS                  types.Float64 `tfsdk:"qps"`
	Burst                types.Int64   `tfsdk:"burst"`
	RequestTimeout       types.String  `tfsdk:"request_timeout"`
	Exec                 *execModel    `tfsdk:"exec"`
}

type execModel struct {
	APIVersion types.String `tfsdk:"api_version"`
	Command    types.String `tfsdk:"command"`
	Args       types.List   `tfsdk:"args"`
	Env        types.Map    `tfsdk:"env"`
}

type registryModel struct {
	URL      types.String `tfsdk:"url"`
	Username types.String `tfsdk:"username"`
	Password types.String `tfsdk:"password"`
}

// hasUnknown reports whether any value of the configuration is unknown, as it is
// when the provider is configured from a resource created in the same apply.
func (m providerModel) hasUnknown() bool {
	vals := []attr.Value{m.CacheDir, m.CacheTTL, m.FieldManager}
	for _, r := range m.Registries {
		vals = append(vals, r.URL, r.Username, r.Password)
	}
	if k := m.Kubernetes; k != nil {
		vals = append(vals, k.ConfigPath, k.ConfigPaths, k.ConfigContext, k.ConfigContextCluster, k.ConfigContextAuth,
			k.Host, k.Username, k.Password, k.Token, k.Insecure, k.TLSServerName, k.ClientCertificate, k.ClientKey,
			k.ClusterCACertificate, k.ProxyURL, k.QPS, k.Burst, k.RequestTimeout)
		if e := k.Exec; e != nil {
			vals = append(vals, e.APIVersion, e.Command, e.Args, e.Env)
		}
	}
	for _, v := range vals {
		if v.IsUnknown() {
			return true
		}
	}
	return false
}

// kubeConfigFrom applies the environment fallbacks to the kubernetes block and
// returns the engine's configuration. The block may be absent (nil).
func kubeConfigFrom(k *kubernetesModel) kube.Config {
	if k == nil {
		k = &kubernetesModel{}
	}
	c := kube.Config{
		Context:              strOrEnv(k.ConfigContext, "KUBE_CTX"),
		ContextCluster:       strOrEnv(k.ConfigContextCluster, "KUBE_CTX_CLUSTER"),
		ContextAuthInfo:      strOrEnv(k.ConfigContextAuth, "KUBE_CTX_AUTH_INFO"),
		Host:                 strOrEnv(k.Host, "KUBE_HOST"),
		Username:             strOrEnv(k.Username, "KUBE_USER"),
		Password:             strOrEnv(k.Password, "KUBE_PASSWORD"),
		Token:                strOrEnv(k.Token, "KUBE_TOKEN"),
		TLSServerName:        strOrEnv(k.TLSServerName, "KUBE_TLS_SERVER_NAME"),
		ClientCertificate:    strOrEnv(k.ClientCertificate, "KUBE_CLIENT_CERT_DATA"),
		ClientKey:            strOrEnv(k.ClientKey, "KUBE_CLIENT_KEY_DATA"),
		ClusterCACertificate: strOrEnv(k.ClusterCACertificate, "KUBE_CLUSTER_CA_CERT_DATA"),
		ProxyURL:             strOrEnv(k.ProxyURL, "KUBE_PROXY_URL"),
		QPS:                  float32(k.QPS.ValueFloat64()),
		Burst:                int(k.Burst.ValueInt64()),
	}
	// Validated as a duration by the schema.
	c.RequestTimeout, _ = time.ParseDuration(k.RequestTimeout.ValueString())
	if !k.Insecure.IsNull() {
		c.Insecure = k.Insecure.ValueBool()
	} else if v, err := strconv.ParseBool(os.Getenv("KUBE_INSECURE")); err == nil {
		c.Insecure = v
	}

	switch {
	case !k.ConfigPath.IsNull():
		c.ConfigPaths = []string{k.ConfigPath.ValueString()}
	case !k.ConfigPaths.IsNull():
		c.ConfigPaths = stringList(k.ConfigPaths)
	case !k.Host.IsNull():
		// An explicit host with no explicit kubeconfig means "this cluster and
		// these credentials": a KUBECONFIG that happens to be set in the
		// environment must not mix its own user into it.
	case os.Getenv("KUBE_CONFIG_PATH") != "":
		c.ConfigPaths = []string{os.Getenv("KUBE_CONFIG_PATH")}
	case os.Getenv("KUBE_CONFIG_PATHS") != "":
		c.ConfigPaths = filepath.SplitList(os.Getenv("KUBE_CONFIG_PATHS"))
	case os.Getenv("KUBECONFIG") != "":
		c.ConfigPaths = filepath.SplitList(os.Getenv("KUBECONFIG"))
	}

	if e := k.Exec; e != nil && !(e.Command.IsNull() && e.APIVersion.IsNull()) {
		c.Exec = &kube.ExecConfig{
			APIVersion: e.APIVersion.ValueString(),
			Command:    e.Command.ValueString(),
			Args:       stringList(e.Args),
			Env:        stringMap(e.Env),
		}
	}
	return c
}

func strOrEnv(v types.String, env string) string {
	if !v.IsNull() {
		return v.ValueString()
	}
	return os.Getenv(env)
}

func stringList(l types.List) []string {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var out []string
	// ElementsAs fails only on an unknown or null element (a configuration
	// known only at apply); out is then left nil, as for an unknown list.
	_ = l.ElementsAs(context.Background(), &out, false)
	return out
}

func stringMap(m types.Map) map[string]string {
	if m.IsNull() || m.IsUnknown() {
		return nil
	}
	out := map[string]string{}
	// ElementsAs fails only on an unknown or null element (a configuration
	// known only at apply); out is then left empty, as for an unknown map.
	_ = m.ElementsAs(context.Background(), &out, false)
	return out
}
