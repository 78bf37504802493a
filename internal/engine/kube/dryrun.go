package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DryRun returns a factory whose every write is a server-side dry run: the
// API server validates and admits it and answers with the object it would
// store, and stores nothing. It shares this factory's identity (impersonation
// included), RESTMapper and discovery. Libraries that only know how to write
// (Helm's kube client) can then be asked what a write would do.
//
// The guarantee is in the transport, not in the callers: a request that
// changes anything and cannot be made a dry run is refused before it is sent.
func (f *Factory) DryRun() (*Factory, error) {
	if err := f.init(); err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(f.rest)
	// JSON bodies, so that the transport can set dryRun in DeleteOptions;
	// a body it cannot read is refused.
	rc.ContentType, rc.AcceptContentTypes = "application/json", "application/json"
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return dryRunTransport{next: rt} })
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes dry-run client: %w", err)
	}
	c, err := client.New(rc, client.Options{HTTPClient: hc, Mapper: f.mapper, DryRun: ptr.To(true)})
	if err != nil {
		return nil, fmt.Errorf("kubernetes dry-run client: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes dry-run client: %w", err)
	}
	g := &Factory{cfg: f.cfg, fieldManager: f.fieldManager, shared: f.shared}
	g.once.Do(func() {})
	g.rest, g.http, g.mapper, g.client, g.dynamic, g.discovery = rc, hc, f.mapper, c, dyn, f.discovery
	g.poller = newPoller(c, f.mapper)
	return g, nil
}

// ErrNotDryRun is the error of a request that a dry-run factory refused to send.
type ErrNotDryRun struct{ Method, URL string }

func (e *ErrNotDryRun) Error() string {
	return fmt.Sprintf("refused %s %s: a dry-run client sends no request that could change the cluster", e.Method, e.URL)
}

// dryRunTransport adds dryRun=All to every request that writes. Reads pass
// as they are; a method the API server cannot dry-run (or an unknown one) is
// refused.
type dryRunTransport struct{ next http.RoundTripper }

func (t dryRunTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return t.next.RoundTrip(req)
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return nil, &ErrNotDryRun{Method: req.Method, URL: req.URL.String()}
	}
	r := req.Clone(req.Context())
	q := r.URL.Query()
	q.Set("dryRun", metav1.DryRunAll)
	r.URL.RawQuery = q.Encode()
	if req.Method == http.MethodDelete && req.Body != nil && req.Body != http.NoBody {
		// The API server reads a DELETE's options from its body when it
		// has one, and then ignores the query: the body must say it too.
		if err := dryRunDeleteBody(r); err != nil {
			return nil, err
		}
	}
	return t.next.RoundTrip(r)
}

// dryRunDeleteBody sets dryRun in the DeleteOptions body of r. A body that is
// not JSON DeleteOptions is refused.
func dryRunDeleteBody(r *http.Request) error {
	b, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) > 0 {
		var opts map[string]any
		if err := json.Unmarshal(b, &opts); err != nil {
			return &ErrNotDryRun{Method: r.Method, URL: r.URL.String()}
		}
		opts["dryRun"] = []string{metav1.DryRunAll}
		if b, err = json.Marshal(opts); err != nil {
			return err
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	r.ContentLength = int64(len(b))
	r.Header.Set("Content-Length", strconv.Itoa(len(b)))
	return nil
}

// IsNoKindMatch says whether err is the cluster not serving a kind, as the
// RESTMapper says it or as Helm and the SSA manager wrap it in messages of
// their own.
func IsNoKindMatch(err error) bool {
	if err == nil {
		return false
	}
	var nk *meta.NoKindMatchError
	var nr *meta.NoResourceMatchError
	if errors.As(err, &nk) || errors.As(err, &nr) || meta.IsNoMatchError(err) {
		return true
	}
	// Helm's builder flattens these errors with %v, so their messages are
	// all that is left: meta.NoKindMatchError's "no matches for kind",
	// meta.NoResourceMatchError's "no matches for <group/version>,
	// Resource=" and discovery's ErrGroupDiscoveryFailed for a group whose
	// CRD is not established. Kustomize's "no matches for Id" (a patch whose
	// target is not in the manifest) is not about the cluster.
	msg := err.Error()
	for _, s := range noKindMatchMessages {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

var noKindMatchMessages = []string{
	"resource mapping not found",
	"no matches for kind ",
	", Resource=",
	"unable to retrieve the complete list of server APIs",
}
