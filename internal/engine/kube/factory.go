package kube

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Factory hands out the clients of one cluster. The provider makes one per
// process and every resource shares it, so that discovery runs once and the
// RESTMapper is warm for all of them. Nothing is built, and the cluster is not
// contacted, until a client is first asked for: provider Configure must stay
// offline.
type Factory struct {
	cfg          Config
	fieldManager string

	once      sync.Once
	err       error
	rest      *rest.Config
	http      *http.Client
	mapper    meta.RESTMapper
	client    client.Client
	dynamic   dynamic.Interface
	discovery discovery.CachedDiscoveryInterface
	poller    *polling.StatusPoller
	// offline is set by NewOfflineFactory: mapper is served, nothing else.
	offline bool
	// shared are the metadata LISTs the drift checks of refreshes share
	// (DriftOptions.SharedLabel); nil when offline.
	shared *sharedLists
}

// NewFactory returns a factory for the cluster cfg describes. fieldManager is the
// server-side apply field manager of every write; empty means DefaultFieldManager.
func NewFactory(cfg Config, fieldManager string) *Factory {
	if fieldManager == "" {
		fieldManager = DefaultFieldManager
	}
	return &Factory{cfg: cfg, fieldManager: fieldManager, shared: newSharedLists()}
}

// FieldManager is the server-side apply field manager of this factory's writes.
func (f *Factory) FieldManager() string { return f.fieldManager }

func (f *Factory) init() error {
	f.once.Do(func() {
		f.err = f.build()
	})
	return f.err
}

func (f *Factory) build() error {
	rc, err := f.cfg.RESTConfig()
	if err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	// controller-runtime's dynamic RESTMapper discovers lazily, group by group, and
	// discovers a group again when a kind is not found in it, so a CRD applied a
	// moment earlier in the same apply is mapped without restarting the provider.
	mapper, err := apiutil.NewDynamicRESTMapper(rc, hc)
	if err != nil {
		return fmt.Errorf("kubernetes REST mapper: %w", err)
	}
	c, err := client.New(rc, client.Options{HTTPClient: hc, Mapper: mapper})
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(rc, hc)
	if err != nil {
		return fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(rc, hc)
	if err != nil {
		return fmt.Errorf("kubernetes discovery client: %w", err)
	}
	f.rest, f.http, f.mapper, f.client, f.dynamic = rc, hc, mapper, c, dyn
	f.discovery = memory.NewMemCacheClient(dc)
	f.poller = newPoller(c, mapper)
	return nil
}

// RESTConfig returns a copy of the client configuration, for libraries (Helm)
// that build clients of their own.
func (f *Factory) RESTConfig() (*rest.Config, error) {
	if err := f.init(); err != nil {
		return nil, err
	}
	return rest.CopyConfig(f.rest), nil
}

// Client is the shared controller-runtime client.
func (f *Factory) Client() (client.Client, error) {
	if err := f.init(); err != nil {
		return nil, err
	}
	return f.client, nil
}

// Dynamic is the shared dynamic client.
func (f *Factory) Dynamic() (dynamic.Interface, error) {
	if err := f.init(); err != nil {
		return nil, err
	}
	return f.dynamic, nil
}

// RESTMapper is the shared, self-refreshing RESTMapper.
func (f *Factory) RESTMapper() (meta.RESTMapper, error) {
	if f.offline {
		return f.mapper, nil
	}
	if err := f.init(); err != nil {
		return nil, err
	}
	return f.mapper, nil
}

// Discovery is the shared in-memory cached discovery client.
func (f *Factory) Discovery() (discovery.CachedDiscoveryInterface, error) {
	if err := f.init(); err != nil {
		return nil, err
	}
	return f.discovery, nil
}

// Manager returns a resource manager that applies, diffs, deletes and waits
// with this factory's clients and field manager.
func (f *Factory) Manager() (*Manager, error) {
	if err := f.init(); err != nil {
		return nil, err
	}
	rm := ssa.NewResourceManager(f.client, f.poller, ssa.Owner{Field: f.fieldManager, Group: OwnerGroup})
	rm.SetConcurrency(managerConcurrency)
	return &Manager{rm: rm, client: f.client, mapper: f.mapper, fieldManager: f.fieldManager, shared: f.shared, poller: f.poller}, nil
}

// Impersonate returns a factory whose requests impersonate the service account
// namespace/name, sharing this factory's RESTMapper and discovery (what the
// cluster serves does not depend on who asks). RBAC denials then name the
// service account, as they do for Flux's serviceAccountName, and stand only
// after ForbiddenRetryWindow: a grant applied just before is honoured.
func (f *Factory) Impersonate(namespace, name string) (*Factory, error) {
	if err := f.init(); err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(f.rest)
	rc.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + name}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return forbiddenRetry{next: rt, window: ForbiddenRetryWindow}
	})
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client impersonating %s/%s: %w", namespace, name, err)
	}
	c, err := client.New(rc, client.Options{HTTPClient: hc, Mapper: f.mapper})
	if err != nil {
		return nil, fmt.Errorf("kubernetes client impersonating %s/%s: %w", namespace, name, err)
	}
	dyn, err := dynamic.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, err
	}
	// Its own shared LISTs: another identity may be allowed to read other
	// objects.
	g := &Factory{cfg: f.cfg, fieldManager: f.fieldManager, shared: newSharedLists()}
	g.once.Do(func() {})
	g.rest, g.http, g.mapper, g.client, g.dynamic, g.discovery = rc, hc, f.mapper, c, dyn, f.discovery
	g.poller = newPoller(c, f.mapper)
	return g, nil
}
