// Command terraform-provider-stevedore is a Terraform and OpenTofu provider that
// gives plan and apply the delivery semantics of Flux's HelmChart, HelmRelease
// and ResourceSet, without a controller in the cluster.
package main

import (
	"flag"
	"log"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/provider"
)

// version is set by the release build (goreleaser's ldflags).
var version = "dev"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()
	quietSDKLogs()
	stopProfile := startCPUProfile()
	stopHeapProfile := startPeakHeapProfile(os.Getenv(heapProfileDirEnv), 100*time.Millisecond)

	var opts []tf6server.ServeOpt
	if debug {
		opts = append(opts, tf6server.WithManagedDebug())
	} else {
		exitWithParent(os.Getppid(), time.Second)
	}
	err := tf6server.Serve(provider.Address, provider.NewServer(version), opts...)
	stopProfile()
	stopHeapProfile()
	if err != nil {
		log.Fatal(err)
	}
}

// parentGoneGrace is how long the provider lets the requests in flight
// finish, after the CLI that started it is gone: their contexts are
// cancelled with the CLI's connection, and Helm records a cancelled action
// as failed rather than leaving it pending.
const parentGoneGrace = 5 * time.Second

// exitWithParent ends the provider when the CLI that started it (the process
// ppid) is gone, killed without the chance to stop its plugins: nothing is
// left to answer, and a provider that stays holds its connections and memory
// for nothing. The process is then a child of another (init), so its parent
// process ID changes; it is looked at every interval.
func exitWithParent(ppid int, interval time.Duration) {
	if ppid <= 1 || os.Getenv(pluginCookieEnv) == "" {
		return // not started by a CLI
	}
	go func() {
		for range time.Tick(interval) {
			if os.Getppid() != ppid {
				log.Printf("the CLI (process %d) is gone: the provider exits", ppid)
				time.Sleep(parentGoneGrace)
				os.Exit(1)
			}
		}
	}()
}

// pluginCookieEnv is set by the CLI for the plugins it starts (go-plugin's
// handshake), and not in debug mode, where the provider runs on its own.
const pluginCookieEnv = "TF_PLUGIN_MAGIC_COOKIE"

// cpuProfileDirEnv names a directory that receives a CPU profile of every
// provider process, for `make pgo` (which turns the profiles of a plan of many
// releases into default.pgo) and for looking into a slow plan. The CLI passes
// its environment to the provider, so it is set on tofu or terraform.
const cpuProfileDirEnv = "STEVEDORE_CPU_PROFILE_DIR"

// startCPUProfile starts a CPU profile when cpuProfileDirEnv is set and
// returns what stops it; the CLI ends the provider by a gRPC shutdown, which
// returns from Serve, so the profile is complete.
func startCPUProfile() func() {
	dir := os.Getenv(cpuProfileDirEnv)
	if dir == "" {
		return func() {}
	}
	f, err := os.CreateTemp(dir, "cpu-*.pprof")
	if err != nil {
		log.Printf("%s: %v", cpuProfileDirEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Printf("%s: %v", cpuProfileDirEnv, err)
		_ = f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// heapProfileDirEnv names a directory that receives, for every provider
// process, a heap profile taken when the process's heap was at its largest:
// what its peak resident memory is made of.
const heapProfileDirEnv = "STEVEDORE_HEAP_PROFILE_DIR"

// startPeakHeapProfile, when dir is set, looks every interval at the live
// heap as of the last GC and takes a heap profile when it is larger than ever
// before (by more than 1%), and again once the next GC has completed: a heap
// profile's figures may be one GC older than the live heap's. Of the profiles
// taken, the one that shows the most in use is written to dir by what it
// returns.
func startPeakHeapProfile(dir string, interval time.Duration) func() {
	if dir == "" {
		return func() {}
	}
	t := time.NewTicker(interval)
	stop := peakHeapProfile(dir, t.C)
	return func() {
		t.Stop()
		stop()
	}
}

// peakHeapProfile is startPeakHeapProfile looking at each of ticks.
func peakHeapProfile(dir string, ticks <-chan time.Time) func() {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	var peak, peakCycle uint64
	pending := false
	var profile []byte
	best := int64(-1)
	write := func() {
		pending = false
		// A profile taken later, on a busy machine, may already be past the
		// peak: the one kept is the one that shows the most in use.
		if n := heapProfileInUse(); n >= best {
			var b strings.Builder
			if err := pprof.Lookup("heap").WriteTo(&b, 0); err == nil {
				profile, best = []byte(b.String()), n
			}
		}
	}
	take := func() {
		metrics.Read(sample)
		live, cycle := sample[0].Value.Uint64(), sample[1].Value.Uint64()
		switch {
		case live > peak+peak/100:
			// A new peak (by more than 1%): a profile now, whose figures
			// may be a GC older, and another once a GC has completed.
			peak, peakCycle = live, cycle
			write()
			pending = true
		case pending && cycle > peakCycle:
			write()
		}
	}
	runtime.MemProfileRate = 64 * 1024
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-ticks:
				take()
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		if profile == nil {
			return
		}
		f, err := os.CreateTemp(dir, "heap-*.pprof")
		if err != nil {
			log.Printf("%s: %v", heapProfileDirEnv, err)
			return
		}
		_, _ = f.Write(profile)
		_ = f.Close()
	}
}

// heapProfileInUse is the bytes in use that a heap profile taken now would
// show (before its scaling for sampling).
func heapProfileInUse() int64 {
	n, _ := runtime.MemProfile(nil, true)
	records := make([]runtime.MemProfileRecord, n+64)
	n, _ = runtime.MemProfile(records, true)
	var total int64
	for _, r := range records[:min(n, len(records))] {
		total += r.InUseBytes()
	}
	return total
}

// sdkLogLevels are terraform-plugin-go's and terraform-plugin-framework's log
// levels. Unset, both log every request at trace level, as JSON on stderr,
// whether or not the CLI shows them.
var sdkLogLevels = []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK"}

// quietSDKLogs turns the SDK's trace logs off when no TF_LOG* variable asks
// for logs. The CLI shows provider logs only when TF_LOG or TF_LOG_PROVIDER is
// set, and passes its environment to the provider, so nothing visible is lost:
// without it, encoding and then discarding those lines was a tenth of the
// provider's CPU in a plan of many releases (BenchmarkTofuPlanHelmReleases).
func quietSDKLogs() {
	for _, kv := range os.Environ() {
		if name, value, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "TF_LOG") && value != "" {
			return
		}
	}
	for _, name := range sdkLogLevels {
		_ = os.Setenv(name, "off")
	}
}
