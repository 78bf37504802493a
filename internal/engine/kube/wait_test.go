package kube

import (
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// A wait whose objects never become Current ends at its timeout with the
// error naming them, whether the timeout falls within the fast first reads
// (waitRamp) or after them; a wait that ends in the ramp when its objects
// are Current returns no error.
func TestWait_rampKeepsTheTimeoutAndItsReport(t *testing.T) {
	ctx := testenv.Context(t)
	m, err := newFactory(t).Manager()
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.UniqueName(t, "kube-test-ramp")
	// No node has the label: the Pods stay Pending, the Deployment
	// InProgress.
	stuck := strings.ReplaceAll(deploymentManifests, "kube-test-deploy", ns)
	stuck = strings.Replace(stuck, "    spec:\n      containers:", "    spec:\n      nodeSelector: {stevedore.dev/no-such-node: \"true\"}\n      containers:", 1)
	if !strings.Contains(stuck, "no-such-node") {
		t.Fatal("the manifest's pod spec was not found")
	}
	objs := mustObjects(t, stuck)
	if _, err := m.ApplyStaged(ctx, objs, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	deployment := Inventory(objs[1:])
	for _, timeout := range []time.Duration{1500 * time.Millisecond, 5 * time.Second} {
		err := m.Wait(ctx, deployment, WaitOptions{Interval: PollInterval, Timeout: timeout, FailFast: true})
		if err == nil || !strings.HasPrefix(err.Error(), "timeout waiting for") || !strings.Contains(err.Error(), "Deployment/"+ns+"/web") {
			t.Fatalf("timeout %s: err = %v, want a timeout naming Deployment/%s/web", timeout, err, ns)
		}
	}

	ready := strings.ReplaceAll(deploymentManifests, "kube-test-deploy", ns+"-ready")
	objs = mustObjects(t, ready)
	if _, err := m.ApplyStaged(ctx, objs, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Wait(ctx, Inventory(objs), WaitOptions{Interval: PollInterval, Timeout: time.Minute, FailFast: true}); err != nil {
		t.Fatalf("deployment did not become Current: %v", err)
	}
}

// A wait reads a Deployment's status from the Deployment alone (newPoller):
// an identity that may read Deployments but may not list ReplicaSets or Pods
// waits for one as the provider's own identity does. With verbs [get] only,
// the wait of a few objects reads them one by one (clusterReaderFor): it
// lists nothing.
func TestWait_deploymentReadAlone(t *testing.T) {
	for _, verbs := range []string{"[get, list, watch]", "[get]"} {
		t.Run(verbs, func(t *testing.T) { waitAsServiceAccount(t, verbs) })
	}
}

// waitAsServiceAccount waits for a Deployment as a service account that may
// do verbs on Deployments, and nothing else.
func waitAsServiceAccount(t *testing.T, verbs string) {
	ctx := testenv.Context(t)
	f := newFactory(t)
	admin, err := f.Manager()
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.UniqueName(t, "kube-test-readalone")
	objs := mustObjects(t, strings.ReplaceAll(deploymentManifests, "kube-test-deploy", ns)+`
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: waiter, namespace: `+ns+`}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: waiter, namespace: `+ns+`}
rules:
- apiGroups: [apps]
  resources: [deployments]
  verbs: `+verbs+`
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: waiter, namespace: `+ns+`}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: waiter}
subjects:
- {kind: ServiceAccount, name: waiter, namespace: `+ns+`}
`)
	if _, err := admin.ApplyStaged(ctx, objs, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	sa, err := f.Impersonate(ns, "waiter")
	if err != nil {
		t.Fatal(err)
	}
	m, err := sa.Manager()
	if err != nil {
		t.Fatal(err)
	}
	deployment := Inventory(objs[1:2])
	if !strings.HasPrefix(deployment[0].ID, ns+"_web_apps_Deployment") {
		t.Fatalf("inventory %v: want the Deployment", deployment)
	}
	if err := m.Wait(ctx, deployment, WaitOptions{Interval: PollInterval, Timeout: time.Minute, FailFast: true}); err != nil {
		t.Fatalf("the service account's wait for the Deployment: %v", err)
	}
}
