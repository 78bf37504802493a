package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The children the tests start collect at the limit; those given
// LongLivedEnv (the cluster, the go command) keep the test process's
// settings, and restoring leaves the process's environment as it was.
func TestCollectChildrenAtLimit(t *testing.T) {
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "")
	if err := os.Unsetenv("GOMEMLIMIT"); err != nil {
		t.Fatal(err)
	}
	child := func(env []string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", `echo "${GOGC-unset}|${GOMEMLIMIT-unset}"`)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	collectChildrenAtLimit()
	t.Cleanup(restoreGC)
	if got, want := child(nil), "off|512MiB"; got != want {
		t.Errorf("a short-lived child's GOGC and GOMEMLIMIT: %q, want %q", got, want)
	}
	// Unset in the test process: empty, which the Go runtime reads as unset.
	if got, want := child(LongLivedEnv(nil)), "150|"; got != want {
		t.Errorf("a long-lived child's GOGC and GOMEMLIMIT: %q, want %q", got, want)
	}
	if got := child(LongLivedEnv([]string{"PATH=" + os.Getenv("PATH"), "GOGC=off"})); got != "150|" {
		t.Errorf("LongLivedEnv of a given environment: %q, want the inherited settings last", got)
	}
	restoreGC()
	if v, ok := os.LookupEnv("GOMEMLIMIT"); os.Getenv("GOGC") != "150" || ok {
		t.Errorf("after restoreGC: GOGC=%q, GOMEMLIMIT=%q (set: %v), want 150 and unset", os.Getenv("GOGC"), v, ok)
	}
}
