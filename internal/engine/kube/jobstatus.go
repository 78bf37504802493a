package kube

import (
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/engine"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/statusreaders"
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// WithCompleteJobs returns a manager whose waits hold a Job Current only once
// it completed, as Flux's kustomize-controller does: kstatus alone calls a
// Job Current as soon as it started, and a migration Job that a later step
// needs done would not be waited for. Failed Jobs are Failed either way.
func (m *Manager) WithCompleteJobs() *Manager {
	jobs := jobStatusReader{statusreaders.NewGenericStatusReader(m.mapper, jobStatus)}
	poller := newPoller(m.client, m.mapper, jobs)
	rm := ssa.NewResourceManager(m.client, poller, ssa.Owner{Field: m.fieldManager, Group: OwnerGroup})
	rm.SetConcurrency(managerConcurrency)
	c := *m
	c.rm = rm
	return &c
}

var jobKind = schema.GroupKind{Group: "batch", Kind: "Job"}

// jobStatusReader reads the status of Jobs only, with jobStatus.
type jobStatusReader struct{ engine.StatusReader }

func (jobStatusReader) Supports(gk schema.GroupKind) bool { return gk == jobKind }

// jobStatus is kstatus's status of a Job, except that a Job that has not
// completed yet is InProgress.
func jobStatus(u *unstructured.Unstructured) (*status.Result, error) {
	res, err := status.Compute(u)
	if err != nil || res.Status != status.CurrentStatus {
		return res, err
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Complete" && m["status"] == "True" {
			return res, nil
		}
	}
	return &status.Result{Status: status.InProgressStatus, Message: "Job has not completed yet"}, nil
}

// Status is kstatus's status of obj; with completeJobs a Job is Current only
// once it completed, as WithCompleteJobs' waits hold it.
func Status(obj *unstructured.Unstructured, completeJobs bool) (*status.Result, error) {
	if completeJobs && obj.GroupVersionKind().GroupKind() == jobKind {
		return jobStatus(obj)
	}
	return status.Compute(obj)
}
