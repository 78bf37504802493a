package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ForbiddenRetryWindow is how long a request of an impersonated client that
// the API server answers 403 Forbidden is tried again before the answer
// stands. RBAC objects applied a moment earlier (in the same apply, by
// another resource) are not yet in the API server's authorizer cache: the
// first requests after them are denied although they are allowed.
const ForbiddenRetryWindow = 10 * time.Second

// forbiddenRetry sends a request again, with a growing pause, while the API
// server answers 403 and the window has not passed. A request whose body
// cannot be sent again is not retried.
type forbiddenRetry struct {
	next   http.RoundTripper
	window time.Duration
}

func (t forbiddenRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	deadline := time.Now().Add(t.window)
	pause := 200 * time.Millisecond
	for {
		resp, err := t.next.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusForbidden || time.Now().Add(pause).After(deadline) {
			return resp, err
		}
		if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(pause):
		}
		if pause < 2*time.Second {
			pause *= 2
		}
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}

// MissingServiceAccountError says that the service account a resource
// impersonates does not exist: every request made as it is denied.
type MissingServiceAccountError struct {
	Namespace, Name string
}

func (e *MissingServiceAccountError) Error() string {
	return fmt.Sprintf("service account %s/%s does not exist: every request that impersonates it (system:serviceaccount:%s:%s) is denied",
		e.Namespace, e.Name, e.Namespace, e.Name)
}

// CheckServiceAccount reads the service account namespace/name with this
// factory's own credentials, with one request and no retry: a
// *MissingServiceAccountError when it does not exist. When that cannot be
// told (the read is not allowed, the server does not answer) it returns nil:
// the impersonated requests say what is wrong then.
func (f *Factory) CheckServiceAccount(ctx context.Context, namespace, name string) error {
	c, err := f.Client()
	if err != nil {
		return nil
	}
	sa := &metav1.PartialObjectMetadata{}
	sa.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccount"))
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, sa); apierrors.IsNotFound(err) {
		return &MissingServiceAccountError{Namespace: namespace, Name: name}
	}
	return nil
}
