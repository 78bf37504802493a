package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultRequestTimeout bounds one request to the API server unless the
// configuration sets its own.
const DefaultRequestTimeout = 30 * time.Second

// UnreachableError is the error of every request made while the API server
// is known to be unreachable: the first failure is reported as it was, for a
// while, instead of each object of a plan waiting for its own timeout or
// going through client-go's retries of a reset connection. It does not wrap
// Cause: client-go would retry a reset connection it found in the chain.
type UnreachableError struct {
	Host  string
	Cause error
	Since time.Time
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("the Kubernetes API server %s is unreachable (since %s: %s); no request is sent to it for a while",
		e.Host, e.Since.Format(time.TimeOnly), notRetryable.Replace(e.Cause.Error()))
}

// RequestTimeoutError is a request that the API server did not answer
// within kubernetes.request_timeout.
type RequestTimeoutError struct {
	Timeout time.Duration
	Err     error
}

func (e *RequestTimeoutError) Error() string {
	return fmt.Sprintf("no answer from the Kubernetes API server within %v (kubernetes.request_timeout): %v", e.Timeout, e.Err)
}

func (e *RequestTimeoutError) Unwrap() error { return e.Err }

// ServerDown says that err is a request's failure because the API server did
// not answer: it is unreachable (UnreachableError), refused or reset the
// connection, or gave no answer within the request timeout. Such failures of
// many objects have one cause, which a message names once.
func ServerDown(err error) bool {
	var un *UnreachableError
	var rt *RequestTimeoutError
	return errors.As(err, &un) || errors.As(err, &rt) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// notRetryable rewords the phrases by which client-go recognizes, in an
// error's text, a reset connection that it retries (k8s.io/apimachinery's
// net.IsProbableEOF).
var notRetryable = strings.NewReplacer("connection reset by peer", "connection reset",
	"use of closed network connection", "closed network connection")

// health remembers that the API server could not be reached, for the
// requests of every client of one configuration.
type health struct {
	mu       sync.Mutex
	failures int // connection failures in a row
	down     *UnreachableError
	until    time.Time
	timeout  time.Duration
}

// failuresToOpen is how many connection failures in a row, with no answer
// in between, make the server unreachable: one reset connection (an API
// server restarting behind a load balancer) is left to client-go's retries.
const failuresToOpen = 3

// unreachable is the error to fail a request with at once, or nil.
func (h *health) unreachable() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down == nil || time.Now().After(h.until) {
		return nil
	}
	return h.down
}

// observe records the outcome of a request: failuresToOpen failures to
// connect, reset connections or timeouts in a row mark the server
// unreachable for one request timeout; any answer marks it reachable.
func (h *health) observe(host string, err error, reqCtx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.failures, h.down = 0, nil
		return
	}
	if reqCtx.Err() != nil && !errors.Is(reqCtx.Err(), context.DeadlineExceeded) {
		return // the caller gave up (Ctrl-C): nothing is known of the server
	}
	if !isConnectionFailure(err) {
		return
	}
	h.failures++
	if h.failures < failuresToOpen {
		return
	}
	if h.down == nil {
		h.down = &UnreachableError{Host: host, Cause: err, Since: time.Now()}
	}
	h.until = time.Now().Add(h.timeout)
}

func isConnectionFailure(err error) bool {
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return true
	case errors.As(err, &oe):
		return true
	case errors.As(err, &ne) && ne.Timeout():
		return true
	}
	return strings.Contains(err.Error(), "connection reset by peer")
}

// healthTransport gives each request a deadline of timeout (watches and
// streamed logs excepted: they are meant to stay open) and fails requests at
// once while the server is known to be unreachable.
type healthTransport struct {
	next    http.RoundTripper
	health  *health
	timeout time.Duration
}

func (t healthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.health.unreachable(); err != nil {
		return nil, err
	}
	q := req.URL.Query()
	if q.Get("watch") == "true" || q.Get("watch") == "1" || q.Get("follow") == "true" || t.timeout <= 0 {
		resp, err := t.next.RoundTrip(req)
		t.health.observe(req.URL.Host, err, req.Context())
		return resp, err
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil && ctx.Err() != nil && req.Context().Err() == nil {
		err = &RequestTimeoutError{Timeout: t.timeout, Err: err}
	}
	t.health.observe(req.URL.Host, err, ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	// The deadline covers the body too; reading it to the end, or closing
	// it, releases the timer.
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
