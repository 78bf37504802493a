package kube

import (
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Status holds a started Job InProgress until it completes when asked to
// (Helm's wait with jobs, WithCompleteJobs), Current at once otherwise (plain
// kstatus); other kinds are plain kstatus either way.
func TestStatus_completeJobs(t *testing.T) {
	job := func(conds ...any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "migrate", "namespace": "apps"},
			"status":   map[string]any{"startTime": "2026-01-01T00:00:00Z", "active": int64(1)},
		}}
		if len(conds) > 0 {
			_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
		}
		return u
	}
	complete := map[string]any{"type": "Complete", "status": "True"}
	deployment := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "apps", "generation": int64(1)},
		"spec":     map[string]any{"replicas": int64(2)},
		"status": map[string]any{"observedGeneration": int64(1), "replicas": int64(2), "updatedReplicas": int64(2),
			"readyReplicas": int64(0), "availableReplicas": int64(0)},
	}}
	for _, tc := range []struct {
		name         string
		obj          *unstructured.Unstructured
		completeJobs bool
		want         status.Status
		wantMessage  string
	}{
		{"running job, jobs waited for", job(), true, status.InProgressStatus, "Job has not completed yet"},
		{"running job", job(), false, status.CurrentStatus, "Job in progress. success:0, active: 1, failed: 0"},
		{"complete job, jobs waited for", job(complete), true, status.CurrentStatus, "Job Completed. succeeded: 0/1"},
		{"unavailable deployment", deployment, true, status.InProgressStatus, "Available: 0/2"},
	} {
		res, err := Status(tc.obj, tc.completeJobs)
		if err != nil || res.Status != tc.want || res.Message != tc.wantMessage {
			t.Errorf("%s: %+v, %v; want %s %q", tc.name, res, err, tc.want, tc.wantMessage)
		}
	}
}
