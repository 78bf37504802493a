package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// This package's own tests start clusters only where they say so, so its main
// only has to let the reaper run.
func TestMain(m *testing.M) {
	RunReaperIfAsked()
	os.Exit(m.Run())
}

const crashEnv = "STEVEDORE_TESTENV_CRASH_REPORT"

// TestCluster_helperPanicsWithClusterRunning is run in a child process by
// TestCluster_reapedAfterPanic: it starts a cluster, reports where, and panics
// without stopping it.
func TestCluster_helperPanicsWithClusterRunning(t *testing.T) {
	report := os.Getenv(crashEnv)
	if report == "" {
		return // only meaningful in the child process
	}
	cl, err := StartCluster(context.Background(), ClusterOptions{Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(report, []byte(cl.Name+"\n"+cl.Workdir()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	panic("a test panics with the cluster running")
}

// A test binary that panics with a cluster running leaves no process and no
// directory behind: the reaper deletes both.
func TestCluster_reapedAfterPanic(t *testing.T) {
	requireClusterBinaries(t)
	report := filepath.Join(t.TempDir(), "report")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCluster_helperPanicsWithClusterRunning$", "-test.count=1")
	cmd.Env = append(LongLivedEnv(nil), crashEnv+"="+report)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "a test panics with the cluster running") {
		t.Fatalf("child test should have panicked: err=%v\n%s", err, out)
	}
	b, rerr := os.ReadFile(report)
	if rerr != nil {
		t.Fatalf("child did not start its cluster: %v\n%s", rerr, out)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	name, workdir := lines[0], lines[1]

	// The reaper runs after the child exits; give it the time kwokctl needs.
	deadline := time.Now().Add(time.Minute)
	for {
		_, statErr := os.Stat(workdir)
		procs := processesMentioning(t, name)
		if os.IsNotExist(statErr) && len(procs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster %s not reaped: workdir stat=%v, processes=%v", name, statErr, procs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func requireClusterBinaries(t *testing.T) {
	t.Helper()
	for _, b := range clusterBinaries {
		if _, err := os.Stat(filepath.Join(BinDir(), b)); err != nil {
			t.Fatalf("%s missing from %s: run `make tools`", b, BinDir())
		}
	}
}

// processesMentioning lists the command lines that contain s.
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(cmdline), s) {
			found = append(found, e.Name())
		}
	}
	return found
}
