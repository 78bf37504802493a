package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// The tests in this file run the CLIs as a user does, one process per
// command, with the provider built from this source as a dev override: what
// terraform-plugin-testing cannot do, such as two applies at once against one
// cluster or a kill -9 of the CLI part way through an apply.

var (
	providerBuildOnce sync.Once
	providerBuildDir  string
	providerBuildErr  error
)

// builtProvider builds the provider from this source once per test process,
// into a directory a dev override can point at.
func builtProvider(t *testing.T) string {
	t.Helper()
	providerBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stevedore-provider-")
		if err != nil {
			providerBuildErr = err
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "terraform-provider-stevedore"), ".")
		cmd.Dir = root
		// As make build and the release build it.
		cmd.Env = append(testenv.LongLivedEnv(nil), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			providerBuildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		providerBuildDir = dir
	})
	if providerBuildErr != nil {
		t.Fatal(providerBuildErr)
	}
	return providerBuildDir
}

// workspace is one configuration directory run by one CLI.
type workspace struct {
	t   *testing.T
	cli cli
	dir string
	rc  string
	// env is added to the CLI's environment (and so the provider's), after
	// the test process's own.
	env []string
}

// newWorkspace writes config as main.tf into a new directory, with a CLI
// configuration that takes the provider from this source.
func newWorkspace(t *testing.T, c cli, config string) *workspace {
	t.Helper()
	w := &workspace{t: t, cli: c, dir: t.TempDir()}
	w.rc = filepath.Join(w.dir, ".clirc")
	rc := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"stevedore-dev/stevedore\" = %q\n  }\n  direct {}\n}\n", builtProvider(t))
	if err := os.WriteFile(w.rc, []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	w.write(config)
	return w
}

// write replaces the configuration.
func (w *workspace) write(config string) {
	w.t.Helper()
	full := "terraform {\n  required_providers {\n    stevedore = { source = \"stevedore-dev/stevedore\" }\n  }\n}\n" + config
	if err := os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(full), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// command is the CLI with args in the workspace, not started.
func (w *workspace) command(ctx context.Context, args ...string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, w.cli.path, args...)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+w.rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_INPUT=0")
	cmd.Env = append(cmd.Env, w.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}

// run runs the CLI with args and returns its output and exit code.
func (w *workspace) run(args ...string) (string, int) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd, out := w.command(ctx, append(args, "-no-color")...)
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	case err != nil:
		w.t.Fatalf("%s %v: %v\n%s", w.cli.name, args, err, out)
	}
	return out.String(), 0
}

// must runs the CLI with args and fails the test unless it exits 0.
func (w *workspace) must(args ...string) string {
	w.t.Helper()
	out, code := w.run(args...)
	if code != 0 {
		w.t.Fatalf("%s %s: exit %d\n%s", w.cli.name, strings.Join(args, " "), code, out)
	}
	return out
}

// apply is `apply -auto-approve`.
func (w *workspace) apply() (string, int) { return w.run("apply", "-auto-approve", "-input=false") }

// planEmpty fails the test unless a plan finds nothing to change.
func (w *workspace) planEmpty() {
	w.t.Helper()
	out, code := w.run("plan", "-detailed-exitcode", "-input=false")
	if code != 0 {
		w.t.Fatalf("%s plan after apply: exit %d, want an empty plan\n%s", w.cli.name, code, out)
	}
}

// destroy destroys the workspace's resources and fails the test unless it
// exits 0.
func (w *workspace) destroy() string {
	w.t.Helper()
	return w.must("destroy", "-auto-approve", "-input=false")
}

// killDuring starts `apply -auto-approve`, waits until ready reports true
// (polled), kills the CLI with SIGKILL, and waits until the provider it
// started has exited (it notices the dead CLI and exits after a grace
// period), so that the test goes on from a cluster nothing writes to.
func (w *workspace) killDuring(ready func() bool) string {
	w.t.Helper()
	return w.killDuring2("apply", ready)
}

// killDuring2 is killDuring for `verb -auto-approve` (apply or destroy).
func (w *workspace) killDuring2(verb string, ready func() bool) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd, out := w.command(ctx, verb, "-auto-approve", "-input=false", "-no-color")
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(3 * time.Minute)
	for !ready() {
		select {
		case err := <-done:
			w.t.Fatalf("%s %s ended (%v) before the moment to kill it\n%s", w.cli.name, verb, err, out)
		case <-deadline:
			_ = cmd.Process.Kill()
			w.t.Fatalf("%s %s never reached the moment to kill it\n%s", w.cli.name, verb, out)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		w.t.Fatal(err)
	}
	<-done
	w.waitProvidersGone()
	return out.String()
}

// waitProvidersGone waits until no provider process built for these tests
// runs with this workspace as its working directory.
func (w *workspace) waitProvidersGone() {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if !w.providerRunning() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	w.t.Fatal("the provider of the killed CLI is still running after 30s")
}

func (w *workspace) providerRunning() bool {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		exe, err := os.Readlink(filepath.Join(p, "exe"))
		if err != nil || !strings.HasPrefix(exe, providerBuildDir) {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join(p, "cwd")); err == nil && cwd == w.dir {
			return true
		}
	}
	return false
}

// importID runs `import ADDR ID` and fails the test unless it exits 0.
func (w *workspace) importID(addr, id string) string {
	w.t.Helper()
	return w.must("import", "-input=false", addr, id)
}
