package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var notDNSLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// UniqueName is prefix (the test's name when empty), made a DNS label, with
// a random suffix: a name no earlier run of the test (-count=2) used.
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	if prefix == "" {
		prefix = strings.TrimPrefix(t.Name(), "Test")
	}
	prefix = strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(prefix), "-"), "-")
	// Short enough that names built on it (a Helm release name of
	// "<namespace>-<name>", at most 53 bytes) stay readable.
	if len(prefix) > 32 {
		prefix = strings.TrimRight(prefix[:32], "-")
	}
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + "-" + hex.EncodeToString(b)
}

// Namespace creates a namespace of UniqueName(t, prefix) with c and returns
// its name, so that tests, and runs of a test, share no objects.
func Namespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: UniqueName(t, prefix)}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}
