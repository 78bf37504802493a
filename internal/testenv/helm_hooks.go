package testenv

import (
	"time"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// HookRun is the last run of a release's hook as Helm recorded it.
type HookRun struct {
	Phase   string
	Started time.Time
}

// ReleaseTestHookRuns returns the last run of each test hook of the latest
// revision of a release in storage, by hook name; a hook that never ran has
// a zero Started.
func ReleaseTestHookRuns(kubeconfig, namespace, name string) (map[string]HookRun, error) {
	rls, err := lastRelease(kubeconfig, namespace, name)
	if err != nil {
		return nil, err
	}
	out := map[string]HookRun{}
	for _, h := range rls.Hooks {
		for _, e := range h.Events {
			if e == helmrelease.HookTest {
				out[h.Name] = HookRun{Phase: h.LastRun.Phase.String(), Started: h.LastRun.StartedAt}
			}
		}
	}
	return out, nil
}
