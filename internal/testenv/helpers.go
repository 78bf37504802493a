package testenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
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
