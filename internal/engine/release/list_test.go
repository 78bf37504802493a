package release

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// List, on a storage namespace of releases made by the helm CLIs 3 and 4
// (one upgraded: its latest revision counts), a Flux HelmRelease with a target
// namespace, the Helm SDK storing elsewhere than its objects, and stevedore:
// who made each, what it runs, and an import ID that Import takes as it is.
// Then each filter: owner, label selector (Helm's labels and `--labels`'),
// and a storage namespace that holds none.
func TestList(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	kc := testenv.Need(t).Cluster.Kubeconfig
	ns, target, empty := makeNamespace(t, c), makeNamespace(t, c), makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	helm := func(cli string, args ...string) {
		t.Helper()
		if _, err := testenv.HelmCLI(ctx, kc, cli, append(args, "--namespace", ns)...); err != nil {
			t.Fatal(err)
		}
	}
	helm("helm3", "install", "cli3", path, "--labels", "team=a")
	helm("helm4", "install", "cli4", path)
	helm("helm4", "upgrade", "cli4", path, "--set", "replicaCount=2")
	fluxName, err := testenv.FluxInstall(kc, ns, "fluxy", target, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.HelmInstallStored(kc, ns, target, "sdk", path, nil); err != nil {
		t.Fatal(err)
	}
	owner := kube.NewOwnerID()
	spec := &Spec{Name: "mine", Namespace: ns, Owner: owner, Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest}
	if _, err := e.Reconcile(ctx, spec, nil); err != nil {
		t.Fatal(err)
	}

	got, err := e.List(ctx, ListOptions{StorageNamespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("cli3 ns=%s rev=1 helm id=%s/cli3", ns, ns),
		fmt.Sprintf("cli4 ns=%s rev=2 helm id=%s/cli4", ns, ns),
		fmt.Sprintf("%s ns=%s rev=1 flux(%s/fluxy) id=%s/fluxy@%s", fluxName, target, ns, ns, target),
		fmt.Sprintf("mine ns=%s rev=1 stevedore(%s/mine) id=%s/mine", ns, ns, ns),
		fmt.Sprintf("sdk ns=%s rev=1 helm id=%s/sdk,storage_namespace=%s", target, target, ns),
	}
	var lines []string
	for _, l := range got {
		o := l.Owner
		if l.OwnerName != "" {
			o += "(" + l.OwnerName + ")"
		}
		lines = append(lines, fmt.Sprintf("%s ns=%s rev=%d %s id=%s", l.Name, l.Namespace, l.Revision, o, l.ImportID))
		if l.StorageNamespace != ns || l.ChartName != "podinfo" || l.ChartVersion != "1.0.0" || l.Status != "deployed" || l.AppVersion == "" {
			t.Errorf("%s: %+v", l.Name, l)
		}
		// The import ID imports it as it is.
		name, storageNS := l.ImportID.Release()
		imp, err := e.Import(ctx, storageNS, name)
		if err != nil || name != l.Name || imp.TargetNamespace != l.ImportID.ReleaseNamespace() {
			t.Errorf("%s: import by %s: %v (release %s in %s)", l.Name, l.ImportID, err, name, storageNS)
		}
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("listed:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if got[3].OwnerID != owner {
		t.Errorf("stevedore's release: owner ID %q, want %q", got[3].OwnerID, owner)
	}

	for _, tc := range []struct {
		opts ListOptions
		want string
	}{
		{ListOptions{StorageNamespace: ns, Owner: kube.TakeOverFlux}, fluxName},
		{ListOptions{StorageNamespace: ns, Owner: kube.ListedStevedore}, "mine"},
		{ListOptions{StorageNamespace: ns, Owner: kube.TakeOverHelm}, "cli3 cli4 sdk"},
		{ListOptions{StorageNamespace: ns, Selector: labels.SelectorFromSet(labels.Set{"team": "a"})}, "cli3"},
		{ListOptions{StorageNamespace: ns, Selector: labels.SelectorFromSet(labels.Set{"version": "2"})}, "cli4"},
		{ListOptions{StorageNamespace: empty}, ""},
	} {
		got, err := e.List(ctx, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, l := range got {
			names = append(names, l.Name)
		}
		if s := strings.Join(names, " "); s != tc.want {
			t.Errorf("%+v: %q, want %q", tc.opts, s, tc.want)
		}
	}

	// Every namespace: this test's releases among the others'.
	all, err := e.List(ctx, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range all {
		if l.StorageNamespace == ns {
			n++
		}
	}
	if n != len(want) {
		t.Errorf("every namespace: %d of this test's releases, want %d", n, len(want))
	}
}

// A release uninstalled between List's listing of Helm storage and its read
// of the latest record is left out, and the others are listed: on a cluster
// that other writers share, a listing of every namespace must not fail
// because some release went away meanwhile.
func TestList_uninstalledSinceListing(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	kc := testenv.Need(t).Cluster.Kubeconfig
	ns := makeNamespace(t, c)
	path, _ := podinfo(t, "1.0.0")
	for _, name := range []string{"stays", "goes"} {
		if _, err := testenv.HelmCLI(ctx, kc, "helm4", "install", name, path, "--namespace", ns); err != nil {
			t.Fatal(err)
		}
	}
	metas := &metav1.PartialObjectMetadataList{}
	metas.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := c.List(ctx, metas, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"}); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.HelmCLI(ctx, kc, "helm4", "uninstall", "goes", "--namespace", ns); err != nil {
		t.Fatal(err)
	}
	got, err := e.readLatest(latestRecords(metas.Items), ListOptions{StorageNamespace: ns})
	if err != nil {
		t.Fatalf("a release uninstalled since the listing: %v", err)
	}
	if len(got) != 1 || got[0].Name != "stays" {
		t.Errorf("listed %+v, want release stays alone", got)
	}
}
