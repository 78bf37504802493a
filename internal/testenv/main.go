package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// Env is what Main starts for a package's tests.
type Env struct {
	Cluster *Cluster
}

var current *Env

// Current returns the environment Main started, or nil outside Main.
func Current() *Env { return current }

// Main is the TestMain of packages whose tests need the cluster: it starts one
// cluster for the whole `go test` run of the package, runs the tests, and stops
// it, also on SIGINT and SIGTERM. With -short it runs the tests without a
// cluster (Current returns nil and cluster tests skip themselves).
func Main(m *testing.M) {
	RunReaperIfAsked()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// testing.Short needs flags parsed; m.Run would parse them too late.
	if !flag.Parsed() {
		flag.Parse()
	}
	collectChildrenAtLimit()
	if testing.Short() {
		return m.Run()
	}
	cl, err := StartCluster(context.Background(), ClusterOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	current = &Env{Cluster: cl}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		cl.Stop()
		fmt.Fprintf(os.Stderr, "testenv: %s: cluster %s deleted\n", s, cl.Name)
		os.Exit(130)
	}()

	code := m.Run()
	signal.Stop(sig)
	cl.Stop()
	return code
}

// Need returns the environment, or skips the test when -short left it out.
func Need(t testing.TB) *Env {
	t.Helper()
	if current == nil {
		t.Skip("needs the test cluster: run without -short, through testenv.Main")
	}
	return current
}
