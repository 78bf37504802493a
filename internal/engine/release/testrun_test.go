package release

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// The end of a failed hook's log that a failure carries.
func TestTruncateLog(t *testing.T) {
	lines := func(n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			b.WriteString(strings.Repeat("x", 9) + string(rune('a'+i%26)) + "\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name               string
		log                string
		maxLines, maxBytes int
		want               string
		cut                bool
	}{
		{"empty", "", 3, 100, "", false},
		{"short, kept whole", "one\ntwo\n", 3, 100, "one\ntwo", false},
		{"no final newline", "one\ntwo", 3, 100, "one\ntwo", false},
		{"exactly the line limit", "a\nb\nc\n", 3, 100, "a\nb\nc", false},
		{"the last lines", "a\nb\nc\nd\n", 2, 100, "c\nd", true},
		{"exactly the byte limit", "aa\nbb\n", 10, 5, "aa\nbb", false},
		{"whole lines within the bytes", "aa\nbb\ncc\n", 10, 5, "bb\ncc", true},
		{"both limits", lines(60), 50, 32, strings.TrimSuffix(lines(60)[len(lines(60))-33:], "\n"), true},
		{"one line longer than the bytes", "first\n" + strings.Repeat("y", 20), 10, 8, strings.Repeat("y", 8), true},
		{"cut on a character boundary", "ééééé", 10, 4, "éé", true},
		{"cut inside a character", "ééééé", 10, 5, "éé", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := truncateLog(tc.log, tc.maxLines, tc.maxBytes)
			if got != tc.want || cut != tc.cut {
				t.Errorf("truncateLog(%q, %d, %d) = %q, %v; want %q, %v", tc.log, tc.maxLines, tc.maxBytes, got, cut, tc.want, tc.cut)
			}
			if len(got) > tc.maxBytes {
				t.Errorf("%d bytes, over %d", len(got), tc.maxBytes)
			}
		})
	}
}

// hookProgress reports each phase a test hook of this run enters once, and
// nothing of hooks that did not run in it.
func TestHookProgress(t *testing.T) {
	since := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	hook := func(name string, events []helmrelease.HookEvent, started time.Time, phase helmrelease.HookPhase) *helmrelease.Hook {
		return &helmrelease.Hook{Name: name, Kind: "Pod", Events: events, LastRun: helmrelease.HookExecution{StartedAt: started, Phase: phase}}
	}
	test := []helmrelease.HookEvent{helmrelease.HookTest}
	rls := func(hooks ...*helmrelease.Hook) *helmrelease.Release { return &helmrelease.Release{Hooks: hooks} }
	before, during := since.Add(-time.Hour), since.Add(time.Second)
	writes := []*helmrelease.Release{
		// Helm starts the first hook; the second still has last apply's run.
		rls(hook("a", test, during, helmrelease.HookPhaseRunning), hook("b", test, before, helmrelease.HookPhaseSucceeded),
			hook("install", []helmrelease.HookEvent{helmrelease.HookPostInstall}, during, helmrelease.HookPhaseRunning)),
		// The same write again: nothing new.
		rls(hook("a", test, during, helmrelease.HookPhaseRunning), hook("b", test, before, helmrelease.HookPhaseSucceeded)),
		rls(hook("a", test, during, helmrelease.HookPhaseSucceeded), hook("b", test, during, helmrelease.HookPhaseRunning)),
		rls(hook("a", test, during, helmrelease.HookPhaseSucceeded), hook("b", test, during, helmrelease.HookPhaseFailed),
			hook("c", test, time.Time{}, helmrelease.HookPhaseUnknown)),
	}
	var got []string
	notify := hookProgress(since, func(h TestHook) { got = append(got, h.Name+"="+h.Phase) })
	for _, w := range writes {
		notify(w)
	}
	want := "a=Running a=Succeeded b=Running b=Failed"
	if strings.Join(got, " ") != want {
		t.Errorf("progress %q, want %q", strings.Join(got, " "), want)
	}
}

// Only a deployed release is tested; the error names the attribute that
// names the release.
func TestTestable(t *testing.T) {
	rel := func(status helmcommon.Status) *helmrelease.Release {
		return &helmrelease.Release{Name: "podinfo", Version: 3, Info: &helmrelease.Info{Status: status}}
	}
	for _, tc := range []struct {
		name string
		spec Spec
		rls  *helmrelease.Release
		path string // "" for no error
		text string
	}{
		{"deployed", Spec{Name: "podinfo"}, rel(helmcommon.StatusDeployed), "", ""},
		{"missing, named by name", Spec{Name: "podinfo"}, nil, "name", "no Helm release podinfo in storage namespace apps"},
		{"missing, named by release_name", Spec{Name: "x", ReleaseName: "podinfo"}, nil, "release_name", "no Helm release podinfo"},
		{"failed", Spec{Name: "podinfo"}, rel(helmcommon.StatusFailed), "name", "v3 in storage namespace apps is failed, not deployed"},
		{"pending", Spec{Name: "podinfo"}, rel(helmcommon.StatusPendingUpgrade), "name", "is pending-upgrade, not deployed"},
		{"uninstalled, kept", Spec{Name: "podinfo", ReleaseName: "podinfo"}, rel(helmcommon.StatusUninstalled), "release_name", "is uninstalled"},
		{"superseded", Spec{Name: "podinfo"}, rel(helmcommon.StatusSuperseded), "name", "is superseded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := testable(&tc.spec, "podinfo", "apps", tc.rls)
			if tc.path == "" {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one on %s", tc.path)
			}
			if p, _, _ := fielderr.Describe(err); p != tc.path || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q on %q, want one on %q with %q", err, p, tc.path, tc.text)
			}
		})
	}
}

// The runner streams its hooks' phases to onTestHook; a failure's error
// has no logs on Helm's fake clients (no Pods), and the condition never has.
func TestTestRunner_progress(t *testing.T) {
	installed := []*helmrelease.Release{fxRelease(1, helmcommon.StatusDeployed, nil, withTestHookNotRun)}
	status := func(stored []*helmrelease.Release) *Status {
		return &Status{History: fxHistory(stored...), LastAttemptedReleaseAction: actionInstall}
	}
	for _, tc := range []struct {
		name string
		kube *kubefake.FailingKubeClient
		want string
	}{
		{"passes", &kubefake.FailingKubeClient{}, "podinfo-test=Running podinfo-test=Succeeded"},
		{"fails", &kubefake.FailingKubeClient{WatchUntilReadyError: errors.New("pod podinfo-test failed")}, "podinfo-test=Running podinfo-test=Failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := actionFixture(t, runnerCase{stored: installed, status: status, kube: failing(tc.kube),
				spec: func(s *Spec) { s.Test.Enable = true }})
			var got []string
			req.onTestHook = func(h TestHook) { got = append(got, h.Name+"="+h.Phase) }
			if err := (testRunner{}).run(context.Background(), req, releaseState{kind: stateUntested, rls: installed[0]}); err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("progress %q, want %q", strings.Join(got, " "), tc.want)
			}
			if req.lastErr != nil && strings.Contains(req.lastErr.Error(), "logs of test pod") {
				t.Errorf("logs on fake clients: %v", req.lastErr)
			}
		})
	}
}
