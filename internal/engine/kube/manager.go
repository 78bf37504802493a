package kube

import (
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Manager applies, diffs, deletes and waits for objects with server-side apply.
// It is a thin layer over fluxcd/pkg/ssa that adds the drift report the engines
// put into Terraform state. One verb a file, as fluxcd/pkg/ssa: manager_apply.go
// (ApplyStaged), manager_wait.go (Wait), manager_delete.go (Delete, Disown),
// manager_lookup.go (Lookup) and manager_drift.go (Drift, CheckDrift).
type Manager struct {
	rm           *ssa.ResourceManager
	client       client.Client
	mapper       meta.RESTMapper
	fieldManager string
	shared       *sharedLists
	poller       *polling.StatusPoller
	// obs records what an apply read and wrote (see observing); nil
	// outside ApplyStaged.
	obs *observed
}

// ResourceManager is the underlying fluxcd/pkg/ssa manager, for the engines that
// need its options directly.
func (m *Manager) ResourceManager() *ssa.ResourceManager { return m.rm }

// Client is the controller-runtime client the manager writes with.
func (m *Manager) Client() client.Client { return m.client }
