package testenv

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// The reaper is this test binary run again in a mode where it only waits for
// its parent to go away and then deletes the cluster and its working directory.
// It learns that its parent is gone when its stdin pipe closes, which happens
// however the parent ends: a clean Stop (which closes the pipe on purpose), a
// panic, `go test -timeout`, or a signal. It runs in its own process group, so
// the Ctrl-C that interrupts `go test` does not kill it before it has cleaned up.

const reaperEnv = "STEVEDORE_TESTENV_REAPER"

type reaper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startReaper(bin, name, workdir string) (*reaper, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(LongLivedEnv(nil), reaperEnv+"="+bin+"\n"+name+"\n"+workdir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &reaper{cmd: cmd, stdin: stdin}, nil
}

// release tells the reaper to clean up now and waits until it has.
func (r *reaper) release() {
	_ = r.stdin.Close()
	_ = r.cmd.Wait()
}

// RunReaperIfAsked turns the process into a reaper when it was started as one,
// and never returns in that case. Test mains call it first (Main does).
func RunReaperIfAsked() {
	spec, ok := os.LookupEnv(reaperEnv)
	if !ok {
		return
	}
	parts := strings.SplitN(spec, "\n", 3)
	if len(parts) != 3 {
		fmt.Fprintf(os.Stderr, "testenv reaper: malformed %s\n", reaperEnv)
		os.Exit(2)
	}
	bin, name, workdir := parts[0], parts[1], parts[2]
	_, _ = io.Copy(io.Discard, os.Stdin) // returns when the parent closes or dies
	if err := deleteCluster(bin, name, workdir); err != nil {
		fmt.Fprintf(os.Stderr, "testenv reaper: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}
