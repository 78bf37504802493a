package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestValidateDependencies_errorsNameTheField(t *testing.T) {
	err := ValidateDependencies([]Dependency{
		{APIVersion: "v1", Kind: "Secret", Name: "a", Ready: true, ReadyExpr: "data.?ready.orValue('') == base64.encode(b'yes')"},
		{APIVersion: "v1", Kind: "Secret", Name: "b", Ready: true, ReadyExpr: "data.ready =="},
		{APIVersion: "v1", Kind: "Secret", Name: "c", Ready: true, ReadyExpr: "'yes'"},
		{APIVersion: "v1", Kind: "Secret", Name: "d", ReadyExpr: "true"},
		{Kind: "Secret", Name: "e"},
		{APIVersion: "apps/v1/Deployment", Kind: "Deployment", Name: "f"},
		{APIVersion: "apps/", Kind: "Deployment", Name: "g"},
		{APIVersion: "v1", Kind: "Secret", Name: "h", Ready: true, ReadyExpr: "type == 'kubernetes.io/tls' && 1 + 'a' == 2"},
		{APIVersion: "v1", Kind: "Secret", Name: "i", Ready: true, ReadyExpr: "type == 'kubernetes.io/tls'"},
		{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding", Name: "j", Ready: true,
			ReadyExpr: "subjects.exists(s, s.kind == 'ServiceAccount') && roleRef.name.startsWith('view')"},
	})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	for _, want := range []string{
		"dependencies[1].ready_expr: invalid CEL expression",
		"dependencies[2].ready_expr: CEL expression \"'yes'\" returns string, want bool",
		"dependencies[3].ready_expr: is only used with ready = true",
		"dependencies[4].api_version: must be set",
		`dependencies[5].api_version: "apps/v1/Deployment" is not <group>/<version>`,
		`dependencies[6].api_version: "apps/" is not <group>/<version>`,
		"dependencies[7].ready_expr: invalid CEL expression", // a type error, found without the object
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	for _, valid := range []string{"dependencies[0]", "dependencies[8]", "dependencies[9]"} {
		if strings.Contains(msg, valid) {
			t.Errorf("a valid expression was rejected (%s):\n%s", valid, msg)
		}
	}
	if !IsDependencyError(err) {
		t.Errorf("want a dependency error, got %T", err)
	}
}

// The variables of an expression are the identifiers it reads: not those a
// comprehension binds, not a function's namespace, not CEL's type names.
func TestReadyExpr_fields(t *testing.T) {
	base, err := celBaseEnv()
	if err != nil {
		t.Fatal(err)
	}
	for expr, want := range map[string]string{
		"type == 'kubernetes.io/tls'":                                             "type",
		"subjects.exists(s, s.name == metadata.name)":                             "metadata,subjects",
		"base64.decode(data.x) == b'y'":                                           "data",
		"spec.items.map(i, i.v).all(v, v > 0) && type(status) == map":             "spec,status",
		"[roleRef].exists_one(r, r.kind == 'Role') && {'a': webhooks}.size() > 0": "roleRef,webhooks",
	} {
		x, err := compileReadyExpr(base, expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got := strings.Join(x.fields, ","); got != want {
			t.Errorf("%s: fields %q, want %q", expr, got, want)
		}
	}
}

// dependencyNamespace makes a namespace of its own for a test.
func dependencyNamespace(t *testing.T, ctx context.Context, c client.Client) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "deps-" + hex.EncodeToString(b)}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	return ns.Name
}

// Each way a dependency is met or not, against objects in the cluster.
func TestDependencies_check(t *testing.T) {
	ctx := testenv.Context(t)
	c, err := newFactory(t).Client()
	if err != nil {
		t.Fatal(err)
	}
	ns := dependencyNamespace(t, ctx, c)
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: ns}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "opaque", Namespace: ns}, StringData: map[string]string{"a": "b"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "viewers", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: ns}}},
		// A PersistentVolumeClaim that nothing binds: Pending, not Current.
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	secret := func(name string, ready bool, expr string) Dependency {
		return Dependency{APIVersion: "v1", Kind: "Secret", Name: name, Namespace: ns, Ready: ready, ReadyExpr: expr}
	}
	binding := func(expr string) Dependency {
		return Dependency{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding", Name: "viewers", Namespace: ns, Ready: true, ReadyExpr: expr}
	}
	cases := []struct {
		name string
		dep  Dependency
		// unmet is a part of the reason the dependency is not met; empty
		// when it is met.
		unmet string
	}{
		{"exists", secret("opaque", false, ""), ""},
		{"missing", secret("nope", false, ""), "not found"},
		{"missing with ready_expr", secret("nope", true, "type == 'Opaque'"), "not found"},
		{"kstatus current", secret("opaque", true, ""), ""},
		{"cluster-scoped", Dependency{APIVersion: "v1", Kind: "Namespace", Name: ns, Ready: true}, ""},
		{"kstatus in progress", Dependency{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: "claim", Namespace: ns, Ready: true}, "status InProgress"},
		{"type holds", secret("tls", true, "type == 'kubernetes.io/tls'"), ""},
		{"type does not hold", secret("opaque", true, "type == 'kubernetes.io/tls'"), "ready_expr is false"},
		{"subjects hold", binding("subjects.exists(s, s.kind == 'ServiceAccount' && s.name == 'reader') && roleRef.name == 'view'"), ""},
		{"subjects do not hold", binding("subjects.all(s, s.kind == 'User')"), "ready_expr is false"},
		{"status not written", secret("opaque", true, "status.phase == 'Ready'"), "reads status, which the object does not have"},
		{"unknown not needed", secret("tls", true, "type == 'kubernetes.io/tls' || status.phase == 'Ready'"), ""},
		{"key not written", secret("opaque", true, "data.missing == 'eA=='"), "no such key"},
		{"optional key", secret("opaque", true, "data.?missing.orValue('') == ''"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := CompileDependencies([]Dependency{tc.dep})
			if err != nil {
				t.Fatal(err)
			}
			unmet, err := ds.Check(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.unmet == "" && len(unmet) > 0:
				t.Fatalf("want met, got %v", unmet)
			case tc.unmet != "" && (len(unmet) != 1 || !strings.Contains(unmet[0].Reason, tc.unmet)):
				t.Fatalf("want unmet with %q, got %v", tc.unmet, unmet)
			}
		})
	}

	// An expression that does not evaluate on the object is terminal, tied
	// to its dependency, not polled until the timeout.
	ds, err := CompileDependencies([]Dependency{secret("opaque", false, ""), secret("opaque", true, "metadata.name + 1 == 2")})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = ds.Wait(ctx, c, time.Minute, 50*time.Millisecond)
	var de *fielderr.Error
	if !errors.As(err, &de) || de.Path != "dependencies[1].ready_expr" || !strings.Contains(err.Error(), "no such overload") {
		t.Fatalf("want a terminal error on dependencies[1].ready_expr, got %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("a terminal error was polled")
	}
	ds, err = CompileDependencies([]Dependency{secret("opaque", true, "metadata.name")})
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.Wait(ctx, c, time.Minute, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "want bool") {
		t.Fatalf("want a non-bool result refused, got %v", err)
	}
}

// Wait polls until the dependencies are met, and at the timeout names those
// that are not, with why.
func TestDependencies_wait(t *testing.T) {
	ctx := testenv.Context(t)
	c, err := newFactory(t).Client()
	if err != nil {
		t.Fatal(err)
	}
	ns := dependencyNamespace(t, ctx, c)
	ds, err := CompileDependencies([]Dependency{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "later", Namespace: ns},
		{APIVersion: "v1", Kind: "Secret", Name: "gate", Namespace: ns, Ready: true, ReadyExpr: "type == 'kubernetes.io/tls'"},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = ds.Wait(ctx, c, 300*time.Millisecond, 50*time.Millisecond)
	var nr *DependencyNotReadyError
	if !errors.As(err, &nr) || len(nr.Unmet) != 2 {
		t.Fatalf("want both dependencies unmet, got %v", err)
	}
	for _, want := range []string{"ConfigMap " + ns + "/later: not found", "Secret " + ns + "/gate: not found"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}

	go func() {
		time.Sleep(500 * time.Millisecond)
		for _, o := range []client.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: ns}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "gate", Namespace: ns}, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}},
		} {
			if err := c.Create(context.Background(), o); err != nil {
				t.Error(err)
			}
		}
	}()
	start := time.Now()
	if err := ds.Wait(ctx, c, time.Minute, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 500*time.Millisecond {
		t.Fatalf("met after %s, before the objects existed", waited)
	}
}
