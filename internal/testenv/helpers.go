package testenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestTimeout bounds what one test waits for on the cluster.
const TestTimeout = 4 * time.Minute

// Context is a context for one test: cancelled when the test ends, and at
// TestTimeout at the latest, so that a test that waits on the cluster fails
// rather than hangs.
func Context(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), TestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// CopyDir copies the tree from into to (os.CopyFS: to may exist, its files
// may not).
func CopyDir(t testing.TB, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

// WriteFiles writes files (path relative to dir -> content) into dir,
// making the directories they need.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ScaleDeployment sets the replicas of the Deployment at key as `kubectl
// scale` does: a write by another field manager.
func ScaleDeployment(t testing.TB, c client.Client, key client.ObjectKey, replicas int32) {
	t.Helper()
	updateDeployment(t, c, key, func(d *appsv1.Deployment) error {
		d.Spec.Replicas = &replicas
		return c.Update(context.Background(), d, client.FieldOwner("kubectl"))
	})
}

// WriteDeploymentStatus writes only the status of the Deployment at key (a
// condition of its own), as a controller does: a new resourceVersion, and
// nothing that server-side apply of the spec would change.
func WriteDeploymentStatus(t testing.TB, c client.Client, key client.ObjectKey) {
	t.Helper()
	updateDeployment(t, c, key, func(d *appsv1.Deployment) error {
		d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: "Example", Status: corev1.ConditionTrue, Reason: "Test"})
		return c.Status().Update(context.Background(), d)
	})
}

// updateDeployment reads the Deployment at key and writes it with update,
// again while another writer (the deployment controller, kwok) wrote it in
// between.
func updateDeployment(t testing.TB, c client.Client, key client.ObjectKey, update func(*appsv1.Deployment) error) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := c.Get(context.Background(), key, d); err != nil {
			return err
		}
		return update(d)
	})
	if err != nil {
		t.Fatal(err)
	}
}
