package kube

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// Fault modes of faultProxy.
const (
	pass int32 = iota
	stall
	reset
)

// faultProxy is a TCP proxy in front of the test API server that passes
// connections through, stalls them (accepts, never answers) or resets them.
type faultProxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32
	mu     sync.Mutex
	conns  []net.Conn
}

func startFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target}
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			go p.serve(c)
		}
	}()
	return p
}

func (p *faultProxy) serve(c net.Conn) {
	switch p.mode.Load() {
	case stall:
		return // held open, never answered
	case reset:
		_ = c.(*net.TCPConn).SetLinger(0)
		_ = c.Close()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}

// dropConnections closes the connections made so far, so that the next
// request dials again (and meets the proxy's new mode).
func (p *faultProxy) dropConnections() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// proxiedFactory is a factory for the test cluster through a fault proxy.
func proxiedFactory(t *testing.T, timeout time.Duration) (*Factory, *faultProxy) {
	t.Helper()
	kc := testenv.Need(t).Cluster.Kubeconfig
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	var p *faultProxy
	for _, cl := range cfg.Clusters {
		u, err := url.Parse(cl.Server)
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			p = startFaultProxy(t, u.Host)
		}
		u.Host = p.ln.Addr().String()
		cl.Server = u.String()
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return NewFactory(Config{ConfigPaths: []string{path}, RequestTimeout: timeout}, ""), p
}

// sequentialGets reads n objects one after the other, as a plan reads the
// objects of a set, and returns the errors.
func sequentialGets(ctx context.Context, c client.Client, n int) []error {
	var errs []error
	for i := 0; i < n; i++ {
		cm := &corev1.ConfigMap{}
		errs = append(errs, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "any"}, cm))
	}
	return errs
}

// A stalled API server: each request gives up after request_timeout, and
// after a few the server counts as unreachable, so that twenty reads fail in
// about three timeouts rather than twenty; when it answers again, so do the
// requests.
func TestRequestTimeout_stalledServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f, p := proxiedFactory(t, time.Second)
	c, err := f.Client()
	if err != nil {
		t.Fatal(err)
	}
	if errs := sequentialGets(ctx, c, 1); errs[0] != nil && !strings.Contains(errs[0].Error(), "not found") {
		t.Fatalf("through the proxy: %v", errs[0])
	}
	p.mode.Store(stall)
	p.dropConnections()
	start := time.Now()
	errs := sequentialGets(ctx, c, 20)
	took := time.Since(start)
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "kubernetes.request_timeout") {
		t.Errorf("first error = %v, want the request timeout named", errs[0])
	}
	var un *UnreachableError
	if !errors.As(errs[19], &un) {
		t.Errorf("last error = %v, want UnreachableError", errs[19])
	}
	// Twenty timeouts would be 20s; three, and the rest at once, about 3s.
	if took > 12*time.Second {
		t.Errorf("twenty reads of a stalled server took %v", took)
	}

	p.mode.Store(pass)
	time.Sleep(1500 * time.Millisecond) // one request timeout: the server is tried again
	if errs := sequentialGets(ctx, c, 1); errs[0] != nil && !strings.Contains(errs[0].Error(), "not found") {
		t.Errorf("after the server recovered: %v", errs[0])
	}
}

// Reset connections: client-go retries a reset GET for about ten seconds;
// once the server counts as unreachable the retries stop, and the other
// reads fail at once, naming the first failure.
func TestRequestTimeout_resetConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f, p := proxiedFactory(t, 5*time.Second)
	c, err := f.Client()
	if err != nil {
		t.Fatal(err)
	}
	if errs := sequentialGets(ctx, c, 1); errs[0] != nil && !strings.Contains(errs[0].Error(), "not found") {
		t.Fatalf("through the proxy: %v", errs[0])
	}
	p.mode.Store(reset)
	p.dropConnections()
	start := time.Now()
	errs := sequentialGets(ctx, c, 20)
	took := time.Since(start)
	var un *UnreachableError
	for i, err := range errs {
		if !errors.As(err, &un) {
			t.Errorf("read %d: %v, want UnreachableError", i, err)
		}
	}
	// Twenty reads with client-go's retries would take over three minutes.
	if took > 30*time.Second {
		t.Errorf("twenty reads of a resetting server took %v", took)
	}
}
