package kube

import (
	"io"
	"net/http"
	"time"
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
