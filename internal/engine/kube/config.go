// Package kube is the shared Kubernetes layer of the engines: one client factory
// per provider process, server-side apply, diff, delete and wait on
// fluxcd/pkg/ssa and kstatus, and object IDs in Flux's inventory format.
package kube

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// DefaultFieldManager is the server-side apply field manager used unless the
// provider configuration names another one.
const DefaultFieldManager = "stevedore"

// Client-side rate limits used unless the configuration sets its own.
const (
	DefaultQPS   = 500
	DefaultBurst = 1000
)

// Config says how to reach a cluster. It mirrors the provider's kubernetes block
// after environment fallbacks have been applied; PEM fields hold PEM text.
type Config struct {
	ConfigPaths     []string
	Context         string
	ContextCluster  string
	ContextAuthInfo string

	Host                 string
	Username             string
	Password             string
	Token                string
	Insecure             bool
	TLSServerName        string
	ClientCertificate    string
	ClientKey            string
	ClusterCACertificate string
	ProxyURL             string
	Exec                 *ExecConfig

	QPS   float32
	Burst int
	// RequestTimeout bounds each request (watches excepted); zero means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
}

// ExecConfig is a client-go exec credential plugin.
type ExecConfig struct {
	APIVersion string
	Command    string
	Args       []string
	Env        map[string]string
}

// fieldErr is an error about field of Config, named as the provider's
// attribute in the kubernetes block is.
func fieldErr(field, format string, args ...any) *fielderr.Error {
	return fielderr.Errorf(field, format, args...)
}

// Validate checks the configuration without contacting the cluster: one
// authentication method at most, pairs that only work together, and a kubeconfig
// that can be read and holds the contexts it is asked for. Reading local files is
// allowed here; network access is not.
func (c Config) Validate() []*fielderr.Error {
	var errs []*fielderr.Error

	methods := []string{}
	if c.Token != "" {
		methods = append(methods, "token")
	}
	if c.Username != "" || c.Password != "" {
		methods = append(methods, "username/password")
		if c.Username == "" {
			errs = append(errs, fieldErr("username", "password is set but username is not"))
		}
		if c.Password == "" {
			errs = append(errs, fieldErr("password", "username is set but password is not"))
		}
	}
	if c.ClientCertificate != "" || c.ClientKey != "" {
		methods = append(methods, "client_certificate/client_key")
		if c.ClientCertificate == "" {
			errs = append(errs, fieldErr("client_certificate", "client_key is set but client_certificate is not"))
		}
		if c.ClientKey == "" {
			errs = append(errs, fieldErr("client_key", "client_certificate is set but client_key is not"))
		}
	}
	if c.Exec != nil {
		methods = append(methods, "exec")
		if c.Exec.Command == "" {
			errs = append(errs, fieldErr("exec.command", "must be set"))
		}
		if c.Exec.APIVersion == "" {
			errs = append(errs, fieldErr("exec.api_version", "must be set (for example client.authentication.k8s.io/v1)"))
		}
	}
	if len(methods) > 1 {
		errs = append(errs, fieldErr(authField(methods[1]),
			"conflicting authentication methods %s: set only one", strings.Join(methods, " and ")))
	}
	if c.Insecure && c.ClusterCACertificate != "" {
		errs = append(errs, fieldErr("insecure", "cannot be true while cluster_ca_certificate is set"))
	}
	if c.QPS < 0 {
		errs = append(errs, fieldErr("qps", "must not be negative"))
	}
	if c.Burst < 0 {
		errs = append(errs, fieldErr("burst", "must not be negative"))
	}

	if len(c.ConfigPaths) > 0 {
		errs = append(errs, c.validateKubeconfig()...)
	}
	return errs
}

// authField names the attribute a conflict diagnostic points at.
func authField(method string) string {
	switch method {
	case "username/password":
		return "username"
	case "client_certificate/client_key":
		return "client_certificate"
	default:
		return method
	}
}

func (c Config) validateKubeconfig() []*fielderr.Error {
	var errs []*fielderr.Error
	merged := clientcmdapi.NewConfig()
	for _, p := range c.ConfigPaths {
		f, err := clientcmd.LoadFromFile(expandHome(p))
		if err != nil {
			errs = append(errs, fieldErr(c.pathField(), "cannot read kubeconfig %q: %v", p, unwrapPathErr(err)))
			continue
		}
		for k, v := range f.Contexts {
			if _, ok := merged.Contexts[k]; !ok {
				merged.Contexts[k] = v
			}
		}
		for k, v := range f.Clusters {
			if _, ok := merged.Clusters[k]; !ok {
				merged.Clusters[k] = v
			}
		}
		for k, v := range f.AuthInfos {
			if _, ok := merged.AuthInfos[k]; !ok {
				merged.AuthInfos[k] = v
			}
		}
		if merged.CurrentContext == "" {
			merged.CurrentContext = f.CurrentContext
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if c.Context != "" {
		if _, ok := merged.Contexts[c.Context]; !ok {
			errs = append(errs, fieldErr("config_context", "context %q not found in %s (it has: %s)",
				c.Context, strings.Join(c.ConfigPaths, ", "), strings.Join(slices.Sorted(maps.Keys(merged.Contexts)), ", ")))
		}
	}
	if c.ContextCluster != "" {
		if _, ok := merged.Clusters[c.ContextCluster]; !ok {
			errs = append(errs, fieldErr("config_context_cluster", "cluster %q not found in %s", c.ContextCluster, strings.Join(c.ConfigPaths, ", ")))
		}
	}
	if c.ContextAuthInfo != "" {
		if _, ok := merged.AuthInfos[c.ContextAuthInfo]; !ok {
			errs = append(errs, fieldErr("config_context_auth_info", "user %q not found in %s", c.ContextAuthInfo, strings.Join(c.ConfigPaths, ", ")))
		}
	}
	return errs
}

func (c Config) pathField() string {
	if len(c.ConfigPaths) == 1 {
		return "config_path"
	}
	return "config_paths"
}

// RESTConfig builds the client configuration: the kubeconfig files (merged in
// order, first wins, as kubectl does) with the explicit fields laid over them,
// or the explicit fields alone, or the in-cluster service account. It reads files
// but does not contact the cluster.
func (c Config) RESTConfig() (*rest.Config, error) {
	rc, err := c.baseRESTConfig()
	if err != nil {
		return nil, err
	}
	if c.QPS > 0 {
		rc.QPS = c.QPS
	}
	if c.Burst > 0 {
		rc.Burst = c.Burst
	}
	// Helm, the SSA manager and kstatus all go through this one config. A plan
	// dry-runs every object it manages, so client-go's defaults (5 QPS, burst
	// 10), or even Flux controllers' (50, 300), would make a plan of hundreds of
	// objects take tens of seconds. The API server's priority and fairness
	// protects it; these limits only cap a runaway client.
	if rc.QPS == 0 {
		rc.QPS = DefaultQPS
	}
	if rc.Burst == 0 {
		rc.Burst = DefaultBurst
	}
	rc.UserAgent = "terraform-provider-stevedore"
	// One health for every client of this configuration: when the API
	// server cannot be reached, the first failure stands for all requests
	// for a while, rather than each object of a plan finding it out.
	timeout := c.RequestTimeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	h := &health{timeout: timeout}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return healthTransport{next: rt, health: h, timeout: timeout}
	})
	return rc, nil
}

func (c Config) baseRESTConfig() (*rest.Config, error) {
	if len(c.ConfigPaths) == 0 && c.Host == "" {
		if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
			return rest.InClusterConfig()
		}
		return nil, errors.New("no cluster configured: set kubernetes.config_path, config_paths or host " +
			"(or KUBE_CONFIG_PATH, KUBE_CONFIG_PATHS, KUBECONFIG or KUBE_HOST)")
	}

	rules := &clientcmd.ClientConfigLoadingRules{}
	for _, p := range c.ConfigPaths {
		rules.Precedence = append(rules.Precedence, expandHome(p))
	}
	ov := &clientcmd.ConfigOverrides{}
	ov.CurrentContext = c.Context
	ov.Context.Cluster = c.ContextCluster
	ov.Context.AuthInfo = c.ContextAuthInfo
	if c.Host != "" {
		ov.ClusterInfo.Server = c.Host
	}
	if c.Insecure {
		ov.ClusterInfo.InsecureSkipTLSVerify = true
	}
	ov.ClusterInfo.TLSServerName = c.TLSServerName
	if c.ClusterCACertificate != "" {
		ov.ClusterInfo.CertificateAuthorityData = []byte(c.ClusterCACertificate)
	}
	ov.ClusterInfo.ProxyURL = c.ProxyURL
	if c.ClientCertificate != "" {
		ov.AuthInfo.ClientCertificateData = []byte(c.ClientCertificate)
		ov.AuthInfo.ClientKeyData = []byte(c.ClientKey)
	}
	ov.AuthInfo.Token = c.Token
	ov.AuthInfo.Username = c.Username
	ov.AuthInfo.Password = c.Password
	if c.Exec != nil {
		ex := &clientcmdapi.ExecConfig{
			APIVersion:      c.Exec.APIVersion,
			Command:         c.Exec.Command,
			Args:            c.Exec.Args,
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}
		for _, k := range slices.Sorted(maps.Keys(c.Exec.Env)) {
			ex.Env = append(ex.Env, clientcmdapi.ExecEnvVar{Name: k, Value: c.Exec.Env[k]})
		}
		ov.AuthInfo.Exec = ex
	}

	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, ov)
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes client configuration: %w", err)
	}
	return rc, nil
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return home + p[1:]
		}
	}
	return p
}

// unwrapPathErr drops clientcmd's repetition of the path from an os error.
func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
