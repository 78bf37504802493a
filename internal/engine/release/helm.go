package release

import (
	"fmt"
	"log/slog"
	"sync"

	"helm.sh/helm/v4/pkg/action"
	chartutil "helm.sh/helm/v4/pkg/chart/common"
	helmkube "helm.sh/helm/v4/pkg/kube"
	helmreleasei "helm.sh/helm/v4/pkg/release"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release/helmfm"
)

// session is what the Helm actions of one engine call share: the acting
// factory (impersonating the service account when one is set) and the storage
// driver in the storage namespace: Helm's Secrets driver on the cluster, its
// memory driver in the tests of the state classification.
type session struct {
	f           *kube.Factory
	getter      *restGetter
	driver      driver.Driver
	storageNS   string
	releaseNS   string
	maxHistory  int
	impersonate string // namespace/name of the service account, for errors

	// kubeClient, when set, is the kube client of the Helm actions instead
	// of Helm's on getter, and Helm's default capabilities stand in for
	// discovery: Helm's fake clients (kube/fake), with the memory driver, in
	// the action runners' tests.
	kubeClient helmkube.Interface

	// health are the spec's health_check_exprs, compiled (health_exprs.go).
	health *kube.HealthChecks
}

// newSession builds the clients for spec. It does no request.
func newSession(f *kube.Factory, spec *Spec) (*session, error) {
	acting := f
	s := &session{storageNS: StorageNamespace(spec), releaseNS: releaseNamespace(spec), maxHistory: *spec.MaxHistory}
	if spec.ServiceAccountName != "" {
		// The service account lives in the resource's namespace, as a
		// HelmRelease's serviceAccountName does.
		g, err := f.Impersonate(spec.Namespace, spec.ServiceAccountName)
		if err != nil {
			return nil, err
		}
		acting = g
		s.impersonate = spec.Namespace + "/" + spec.ServiceAccountName
	}
	rc, err := acting.RESTConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	s.f, s.getter, s.driver = acting, &restGetter{f: acting, namespace: s.releaseNS}, secretsDriver(cs, s.storageNS)
	if s.health, err = kube.CompileHealthChecks(spec.HealthCheckExprs); err != nil {
		return nil, &fielderr.Error{Path: "health_check_exprs", Err: err}
	}
	return s, nil
}

// dryRun is this session with every request a server-side dry run (kube's
// Factory.DryRun): Helm's actions and kube client act on it to say what they
// would do, and change nothing, storage included.
func (s *session) dryRun() (*session, error) {
	dry, err := s.f.DryRun()
	if err != nil {
		return nil, err
	}
	rc, err := dry.RESTConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	d := *s
	d.f, d.getter, d.driver = dry, &restGetter{f: dry, namespace: s.releaseNS}, secretsDriver(cs, s.storageNS)
	return &d, nil
}

// secretsDriver is Helm's storage in Secrets of namespace ns, quiet.
func secretsDriver(cs kubernetes.Interface, ns string) *driver.Secrets {
	d := driver.NewSecrets(cs.CoreV1().Secrets(ns))
	d.SetLogger(slog.DiscardHandler)
	return d
}

// storage returns Helm's storage, reporting every write to obs when set.
func (s *session) storage(obs *observer) releaseStore {
	d := s.driver
	if obs != nil {
		obs.Driver = s.driver
		d = obs
	}
	st := storage.Init(d)
	st.MaxHistory = s.maxHistory
	st.SetLogger(slog.DiscardHandler)
	return releaseStore{st}
}

// config is a Helm action configuration whose storage writes obs sees.
//
// Helm's kube client writes under the factory's field manager
// (helmfm.Client), never Helm's default (the binary's name), so that the
// objects Helm creates carry the manager drift detection dry-runs with, as
// helm-controller sets its own name there.
func (s *session) config(obs *observer) *action.Configuration {
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	cfg.Releases = s.storage(obs).Storage
	if s.kubeClient != nil {
		cfg.KubeClient, cfg.Capabilities = s.kubeClient, chartutil.DefaultCapabilities
		return cfg
	}
	kc := helmkube.New(s.getter)
	kc.Factory = fieldValidationFactory{Factory: kc.Factory, f: s.f}
	kc.Namespace = s.releaseNS
	kc.SetLogger(slog.DiscardHandler)
	cfg.RESTClientGetter = s.getter
	cfg.KubeClient = &waitClient{Client: helmfm.Client{Interface: kc, Manager: s.f.FieldManager()}, f: s.f, health: s.health}
	return cfg
}

// describeActor says who acts, for errors about permissions.
func (s *session) describeActor() string {
	if s.impersonate == "" {
		return ""
	}
	return " as service account " + s.impersonate
}

// restGetter is Helm's view of the shared factory: its REST config, its
// cached discovery and its self-refreshing RESTMapper, so that Helm discovers
// nothing on its own and sees CRDs created a moment earlier.
type restGetter struct {
	f         *kube.Factory
	namespace string
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return g.f.RESTConfig() }

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.f.Discovery()
}

func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.f.RESTMapper() }

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig { return &clientConfig{g: g} }

// clientConfig answers kubectl's factory, which Helm's client is built on,
// with the factory's config and the release namespace; there is no kubeconfig
// file behind it.
type clientConfig struct{ g *restGetter }

func (c *clientConfig) RawConfig() (clientcmdapi.Config, error) { return clientcmdapi.Config{}, nil }
func (c *clientConfig) ClientConfig() (*rest.Config, error)     { return c.g.f.RESTConfig() }
func (c *clientConfig) Namespace() (string, bool, error)        { return c.g.namespace, true, nil }
func (c *clientConfig) ConfigAccess() clientcmd.ConfigAccess {
	return clientcmd.NewDefaultClientConfigLoadingRules()
}

// observer is a storage driver that reports the releases Helm writes, as
// helm-controller's storage observer does: what was persisted is what
// happened, whatever the action returned.
type observer struct {
	driver.Driver
	mu      sync.Mutex
	written []*helmrelease.Release // in write order; later writes of a version replace earlier ones
	deleted []*helmrelease.Release
}

func (o *observer) Create(key string, rls helmreleasei.Releaser) error {
	if err := o.Driver.Create(key, rls); err != nil {
		return err
	}
	o.record(rls)
	return nil
}

func (o *observer) Update(key string, rls helmreleasei.Releaser) error {
	if err := o.Driver.Update(key, rls); err != nil {
		return err
	}
	o.record(rls)
	return nil
}

func (o *observer) Delete(key string) (helmreleasei.Releaser, error) {
	rls, err := o.Driver.Delete(key)
	if err != nil {
		return nil, err
	}
	if r, err := asRelease(rls); err == nil {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.deleted = append(o.deleted, r)
	}
	return rls, nil
}

// record keeps a snapshot-ready copy: Helm goes on mutating the object it
// wrote (a failed upgrade flips its status after the write).
func (o *observer) record(rlsi helmreleasei.Releaser) {
	rls, err := asRelease(rlsi)
	if err != nil {
		return
	}
	cp := copyRelease(rls)
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, w := range o.written {
		if w.Name == cp.Name && w.Version == cp.Version {
			o.written = append(o.written[:i], o.written[i+1:]...)
			break
		}
	}
	o.written = append(o.written, cp)
}

// copyRelease copies what Helm changes of a release after writing it: its
// info, its hooks' runs and its values.
func copyRelease(rls *helmrelease.Release) *helmrelease.Release {
	cp := *rls
	if rls.Info != nil {
		info := *rls.Info
		cp.Info = &info
	}
	cp.Hooks = make([]*helmrelease.Hook, len(rls.Hooks))
	for i, h := range rls.Hooks {
		hc := *h
		cp.Hooks[i] = &hc
	}
	cp.Config = deepCopyValues(rls.Config)
	return &cp
}

// releases returns the written releases, newest version first.
func (o *observer) releases() []*helmrelease.Release {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := append([]*helmrelease.Release(nil), o.written...)
	sortReleasesDesc(out)
	return out
}
