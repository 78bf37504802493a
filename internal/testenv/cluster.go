// Package testenv is the test environment of stevedore: a real Kubernetes
// control plane started by kwokctl from locally built binaries, an in-process
// Helm repository and OCI registry, and the test charts. It is imported by tests
// only.
package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	_ "embed"
)

//go:embed testdata/kwok/kwokctl.yaml
var kwokctlConfig []byte

// Cluster is a local control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) with kwok faking the nodes and the
// kubelet, all run as processes by kwokctl's binary runtime.
type Cluster struct {
	// Name is the kwokctl cluster name, unique per start.
	Name string
	// Kubeconfig is the path of a kubeconfig whose current context is this
	// cluster.
	Kubeconfig string

	bin     string
	workdir string
	reaper  *reaper
}

// ClusterOptions configure StartCluster.
type ClusterOptions struct {
	// BinDir holds the binaries `make tools` builds. Default: BinDir().
	BinDir string
	// Nodes is the number of fake nodes. Default 2.
	Nodes int
	// Timeout bounds the start. Default 2 minutes.
	Timeout time.Duration
	// Workdir is where the cluster's files go; it must not exist yet. Default: a
	// new temporary directory.
	Workdir string
	// Persistent keeps the cluster running after this process ends (make demo);
	// without it a reaper process deletes the cluster when this process dies.
	Persistent bool
}

// RepoRoot is the root of the repository this package is in.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BinDir is where `make tools` puts the binaries: $STEVEDORE_BIN_DIR, else the
// repository's bin/.
func BinDir() string {
	if d := os.Getenv("STEVEDORE_BIN_DIR"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "bin")
}

var clusterBinaries = []string{"kwokctl", "kwok", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// StartCluster creates a cluster with a unique name in a fresh working
// directory. A reaper process deletes the cluster and the directory if this
// process dies before Stop is called (a panic, a test timeout, a signal).
func StartCluster(ctx context.Context, opts ClusterOptions) (*Cluster, error) {
	if opts.BinDir == "" {
		opts.BinDir = BinDir()
	}
	if opts.Nodes == 0 {
		opts.Nodes = 2
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	for _, b := range clusterBinaries {
		if _, err := os.Stat(filepath.Join(opts.BinDir, b)); err != nil {
			return nil, fmt.Errorf("test cluster: %s not found in %s: run `make tools` first", b, opts.BinDir)
		}
	}
	workdir := opts.Workdir
	if workdir == "" {
		var err error
		if workdir, err = os.MkdirTemp("", "stevedore-cluster-"); err != nil {
			return nil, fmt.Errorf("test cluster: %w", err)
		}
	} else if err := os.Mkdir(workdir, 0o700); err != nil {
		return nil, fmt.Errorf("test cluster: %w", err)
	}
	c := OpenCluster(opts.BinDir, "stevedore-"+randomSuffix(), workdir)
	if !opts.Persistent {
		// Start the reaper before the first process exists, so that nothing can
		// be left behind between the two.
		var err error
		if c.reaper, err = startReaper(c.bin, c.Name, workdir); err != nil {
			_ = os.RemoveAll(workdir)
			return nil, fmt.Errorf("test cluster: start reaper: %w", err)
		}
	}

	cfgPath := filepath.Join(workdir, "kwokctl.yaml")
	if err := os.WriteFile(cfgPath, kwokctlConfig, 0o600); err != nil {
		c.Stop()
		return nil, fmt.Errorf("test cluster: %w", err)
	}

	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	// Two kwokctl processes starting clusters at the same moment (go test runs
	// packages in parallel) can hang in "Cluster is starting": one start at a
	// time, machine-wide.
	unlock, err := lockFile(filepath.Join(os.TempDir(), "stevedore-testenv-start.lock"))
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("test cluster: %w", err)
	}
	defer unlock()
	b := func(name string) string { return filepath.Join(c.bin, name) }
	_, err = c.kwokctl(ctx, "-c", cfgPath, "create", "cluster",
		"--runtime", "binary",
		"--etcd-binary", b("etcd"),
		"--kube-apiserver-binary", b("kube-apiserver"),
		"--kube-controller-manager-binary", b("kube-controller-manager"),
		"--kube-scheduler-binary", b("kube-scheduler"),
		"--kwok-controller-binary", b("kwok"),
		"--kubeconfig", c.Kubeconfig,
		"--disable-qps-limits",
		// RBAC as on a real cluster, so that impersonation can be denied.
		"--kube-authorization",
		"--wait", "90s",
	)
	if err != nil {
		c.Stop()
		return nil, err
	}
	if _, err := c.kwokctl(ctx, "scale", "node", "--replicas", fmt.Sprint(opts.Nodes)); err != nil {
		c.Stop()
		return nil, err
	}
	// Ready means what a test expects of a cluster: nodes that take pods, and
	// the default ServiceAccount that pods of the default namespace need.
	if err := c.waitReady(ctx, opts.Nodes); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) waitReady(ctx context.Context, nodes int) error {
	for {
		out, err := c.Kubectl(ctx, "get", "nodes", "-o",
			`jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		ready := 0
		if err == nil {
			ready = strings.Count(out, "True")
		}
		_, saErr := c.Kubectl(ctx, "get", "serviceaccount", "default", "-n", "default")
		if ready >= nodes && saErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("test cluster %s: %d of %d nodes ready, default service account: %v: %w", c.Name, ready, nodes, saErr, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Kubectl runs the built kubectl against the cluster and returns its stdout.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// OpenCluster returns the cluster that StartCluster started with this name and
// working directory, for a later process to stop it (make demo-down).
func OpenCluster(bin, name, workdir string) *Cluster {
	return &Cluster{Name: name, Kubeconfig: filepath.Join(workdir, "kubeconfig"), bin: bin, workdir: workdir}
}

// Workdir is the directory that holds the cluster's files.
func (c *Cluster) Workdir() string { return c.workdir }

// Stop deletes the cluster and its working directory. It is safe to call more
// than once.
func (c *Cluster) Stop() {
	if c.reaper != nil {
		// The reaper does the deletion: one code path for a clean stop and a crash.
		c.reaper.release()
		c.reaper = nil
		return
	}
	if c.workdir == "" {
		return
	}
	if err := deleteCluster(c.bin, c.Name, c.workdir); err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
	}
	c.workdir = ""
}

// deleteCluster stops the cluster's processes and removes its directory.
func deleteCluster(bin, name, workdir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := runKwokctl(ctx, bin, workdir, "--name", name, "delete", "cluster")
	if rmErr := os.RemoveAll(workdir); rmErr != nil && err == nil {
		err = rmErr
	}
	return err
}

func (c *Cluster) kwokctl(ctx context.Context, args ...string) (string, error) {
	return runKwokctl(ctx, c.bin, c.workdir, append([]string{"--name", c.Name}, args...)...)
}

func runKwokctl(ctx context.Context, bin, workdir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "kwokctl"), args...)
	// kwokctl looks binaries up on PATH before it would try to download them;
	// there is no download here, so ours must come first.
	// The cluster's processes live as long as the package's tests.
	cmd.Env = append(LongLivedEnv(nil),
		"KWOK_WORKDIR="+filepath.Join(workdir, "kwok"),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = errors.Join(err, ctxErr)
		}
		return out.String(), fmt.Errorf("kwokctl %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// lockFile takes an exclusive flock on path, waiting for it.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
