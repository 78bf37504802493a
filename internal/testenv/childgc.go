package testenv

import (
	"flag"
	"os"
	"strings"
)

// The garbage collector of the processes the tests start.
//
// Most of a test run's CPU goes to short CLI runs (tofu and terraform: about
// 7,000 runs of 0.03-0.2 s in internal/provider, each allocating 50-130 MB),
// and a good part of theirs to collecting a heap that the process's exit
// frees anyway. So the processes the tests start collect only when their heap
// reaches shortLivedMemLimit (GOGC=off with GOMEMLIMIT): a CLI run that stays
// under it never collects, and one that grows past it collects as usual.
// Measured on eight acceptance tests under both CLIs, alternated (892 CLI
// runs each way): the CLIs' CPU 56.4 s with GOGC=200, 48.8 s like this; the
// largest CLI process 109 MB and 131 MB, the average 79 MB either way.
//
// The processes that live long or hold large heaps keep the GC settings the
// test process was started with (LongLivedEnv): the cluster (through kwokctl),
// the go command, the reaper. Benchmarks change nothing: they time the CLIs and
// providers as a user runs them.
const (
	shortLivedGOGC     = "off"
	shortLivedMemLimit = "512MiB"
)

// inheritedGC is the GOGC and GOMEMLIMIT of the test process ("NAME=" when
// unset: the runtime's defaults), once collectChildrenAtLimit has changed the
// process's environment; nil before.
var inheritedGC []string

// collectChildrenAtLimit sets the environment every child process inherits so
// that it collects only at shortLivedMemLimit, unless benchmarks were asked
// for. It must run before any child starts and after the flags are parsed.
func collectChildrenAtLimit() {
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		return
	}
	inheritedGC = []string{"GOGC=" + os.Getenv("GOGC"), "GOMEMLIMIT=" + os.Getenv("GOMEMLIMIT")}
	if os.Setenv("GOGC", shortLivedGOGC) != nil || os.Setenv("GOMEMLIMIT", shortLivedMemLimit) != nil {
		restoreGC()
	}
}

// restoreGC puts the inherited settings back into the process's environment.
func restoreGC() {
	for _, kv := range inheritedGC {
		name, value, _ := strings.Cut(kv, "=")
		if value == "" {
			_ = os.Unsetenv(name)
		} else {
			_ = os.Setenv(name, value)
		}
	}
	inheritedGC = nil
}

// LongLivedEnv returns env (os.Environ() when nil) with the GC settings the
// test process was started with, for a child that lives long or holds a large
// heap: a cluster, the go command.
func LongLivedEnv(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	// Later entries win (os/exec keeps the last of a duplicated name).
	return append(env, inheritedGC...)
}
