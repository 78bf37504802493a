package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// running says whether process pid is alive: it exists and is not a zombie
// that nobody reaped (an orphan's new parent may not reap it at once).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) == 0 || fields[0] != "Z"
}

// After the CLI is killed (kill -9: it cannot stop its plugins), the
// provider it started exits by itself within seconds instead of running on.
func TestProvider_exitsWhenTheCLIDies(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to tell a zombie from a running process")
	}
	bin := filepath.Join(t.TempDir(), "terraform-provider-stevedore")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The shell stands for the CLI: it starts the provider with go-plugin's
	// handshake variables, says its pid, and waits.
	cli := exec.Command("sh", "-c", `"$0" & echo "$!"; wait`, bin)
	cli.Env = append(os.Environ(),
		"TF_PLUGIN_MAGIC_COOKIE=d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2",
		"PLUGIN_PROTOCOL_VERSIONS=6")
	out, err := cli.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatal("no pid from the shell")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(lines.Text()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	// The provider's go-plugin handshake line: it is serving.
	if !lines.Scan() || !strings.Contains(lines.Text(), "|6|") {
		t.Fatalf("no handshake from the provider: %q", lines.Text())
	}
	if err := cli.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cli.Wait()
	deadline := time.Now().Add(parentGoneGrace + 10*time.Second)
	for running(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the provider (pid %d) still runs %v after its CLI was killed", pid, parentGoneGrace+10*time.Second)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// keep holds what TestPeakHeapProfile allocates, so that it is in use.
var keep [][]byte

// The heap profile STEVEDORE_HEAP_PROFILE_DIR asks for is taken at the
// largest heap: a large allocation kept for a while is in it, although it is
// gone when the process ends.
func TestPeakHeapProfile(t *testing.T) {
	dir := t.TempDir()
	stop := startPeakHeapProfile(dir, 10*time.Millisecond)
	for range 64 {
		keep = append(keep, make([]byte, 1<<20))
	}
	for range 5 { // the peak is seen, and a GC later the profile taken (250 ms: a busy machine's sampler may be late)
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
	}
	keep = nil
	for range 3 {
		runtime.GC()
	}
	time.Sleep(50 * time.Millisecond)
	stop()
	if got := inUseOfTheProfile(t, dir); got < 60<<20 {
		t.Fatalf("in use in the profile: %d bytes, want the 64 MiB held at the peak", got)
	}
}

// A sampler that runs late, as on a busy machine, takes its second profile
// after the peak is gone: the profile kept is still the peak's. Its ticks are
// given, so that it looks once at the peak and once after it, whatever the
// machine's load.
func TestPeakHeapProfile_lateSampler(t *testing.T) {
	dir := t.TempDir()
	ticks := make(chan time.Time)
	stop := peakHeapProfile(dir, ticks)
	for range 64 {
		keep = append(keep, make([]byte, 1<<20))
	}
	runtime.GC()
	ticks <- time.Now() // the peak: a profile, and another due after the next GC
	ticks <- time.Now() // (received once the one before was looked at)
	keep = nil
	for range 3 {
		runtime.GC()
	}
	ticks <- time.Now() // late: the next GC's profile shows the heap after the peak
	stop()
	if got := inUseOfTheProfile(t, dir); got < 60<<20 {
		t.Fatalf("in use in the profile: %d bytes, want the 64 MiB held at the peak, not the heap after it", got)
	}
}

// inUseOfTheProfile is the bytes in use in the one heap profile in dir.
func inUseOfTheProfile(t *testing.T, dir string) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "heap-*.pprof"))
	if err != nil || len(files) != 1 {
		t.Fatalf("heap profiles %v, %v: want one", files, err)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	inuse := -1
	for i, st := range p.SampleType {
		if st.Type == "inuse_space" {
			inuse = i
		}
	}
	if inuse < 0 {
		t.Fatalf("no inuse_space in the profile's sample types %v", p.SampleType)
	}
	var total int64
	for _, s := range p.Sample {
		total += s.Value[inuse]
	}
	return total
}
