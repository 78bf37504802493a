package release

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// TestFluxChartSource: the chart source of the HelmRelease that made a
// release, read from it and its source objects, for each way a HelmRelease
// names its chart; and why there is none.
func TestFluxChartSource(t *testing.T) {
	e, c := newEngine(t)
	testenv.InstallFluxCRDs(t, c)
	ctx := context.Background()
	fs, apps := makeNamespace(t, c), makeNamespace(t, c)
	archive, _ := podinfo(t, "1.0.0")
	rel, err := testenv.FluxInstall(testenv.Need(t).Cluster.Kubeconfig, fs, "podinfo", apps, archive, nil)
	if err != nil {
		t.Fatal(err)
	}
	imp, err := e.Import(ctx, fs, rel)
	if err != nil {
		t.Fatal(err)
	}
	put := func(apiVersion, kind, name string, spec map[string]any) {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace(fs)
		u.SetName(name)
		_ = c.Delete(ctx, u)
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	const src, helm = "source.toolkit.fluxcd.io/v1", "helm.toolkit.fluxcd.io/v2"
	put(src, "HelmRepository", "https", map[string]any{"url": "https://charts.example.com/", "secretRef": map[string]any{"name": "creds"}})
	put(src, "HelmRepository", "oci", map[string]any{"type": "oci", "url": "oci://ghcr.io/example/charts"})
	put(src, "OCIRepository", "podinfo", map[string]any{"url": "oci://ghcr.io/example/charts/podinfo", "ref": map[string]any{"semver": ">=1.0.0"},
		"provider": "aws"})
	put(src, "OCIRepository", "other", map[string]any{"url": "oci://ghcr.io/example/charts/other"})
	put(src, "HelmChart", "podinfo", map[string]any{"chart": "podinfo", "version": "1.0.0",
		"sourceRef": map[string]any{"kind": "HelmRepository", "name": "oci"}})
	template := func(kind, name, version string) map[string]any {
		return map[string]any{"spec": map[string]any{"chart": "podinfo", "version": version, "sourceRef": map[string]any{"kind": kind, "name": name}}}
	}
	for _, tc := range []struct {
		name string
		spec map[string]any // nil: no HelmRelease
		want *ChartSource
		why  string
	}{
		{name: "no HelmRelease"},
		{name: "HelmRepository with credentials", spec: map[string]any{"targetNamespace": apps, "chart": template("HelmRepository", "https", "1.0.0")},
			want: &ChartSource{Repository: "https://charts.example.com", Chart: "podinfo", Version: "1.0.0",
				From:  "HelmRelease " + fs + "/podinfo, HelmRepository " + fs + "/https",
				Notes: []string{"HelmRepository " + fs + "/https authenticates with Secret creds: give the credentials in the provider's registries"}}},
		{name: "OCI HelmRepository and a range", spec: map[string]any{"targetNamespace": apps, "chart": template("HelmRepository", "oci", "1.x")},
			want: &ChartSource{Repository: "oci://ghcr.io/example/charts", Chart: "podinfo", Version: "1.0.0",
				From:  "HelmRelease " + fs + "/podinfo, HelmRepository " + fs + "/oci",
				Notes: []string{`Flux follows version "1.x"; the block pins 1.0.0, the version Helm recorded: write "1.x" to follow it`}}},
		{name: "chartRef OCIRepository", spec: map[string]any{"targetNamespace": apps, "chartRef": map[string]any{"kind": "OCIRepository", "name": "podinfo"}},
			want: &ChartSource{Repository: "oci://ghcr.io/example/charts", Chart: "podinfo", Version: "1.0.0",
				From: "HelmRelease " + fs + "/podinfo, OCIRepository " + fs + "/podinfo",
				Notes: []string{"OCIRepository " + fs + "/podinfo authenticates as the aws workload identity: give credentials in the provider's registries",
					`Flux follows version ">=1.0.0"; the block pins 1.0.0, the version Helm recorded: write ">=1.0.0" to follow it`}}},
		{name: "chartRef HelmChart", spec: map[string]any{"targetNamespace": apps, "chartRef": map[string]any{"kind": "HelmChart", "name": "podinfo"}},
			want: &ChartSource{Repository: "oci://ghcr.io/example/charts", Chart: "podinfo", Version: "1.0.0",
				From: "HelmRelease " + fs + "/podinfo, HelmChart " + fs + "/podinfo, HelmRepository " + fs + "/oci"}},
		{name: "GitRepository", spec: map[string]any{"targetNamespace": apps, "chart": template("GitRepository", "repo", "")},
			why: "the chart comes from GitRepository " + fs + "/repo, a path in a source an inline chart does not name"},
		{name: "another chart", spec: map[string]any{"targetNamespace": apps, "chartRef": map[string]any{"kind": "OCIRepository", "name": "other"}},
			why: "OCIRepository " + fs + "/other serves oci://ghcr.io/example/charts/other, and the release has chart \"podinfo\""},
		{name: "missing source", spec: map[string]any{"targetNamespace": apps, "chart": template("HelmRepository", "absent", "")},
			why: "there is no HelmRepository " + fs + "/absent"},
		{name: "another release", spec: map[string]any{"chart": template("HelmRepository", "https", "")},
			why: "HelmRelease " + fs + "/podinfo makes release podinfo in storage namespace " + fs + ", not this one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hr := &unstructured.Unstructured{}
			hr.SetAPIVersion(helm)
			hr.SetKind("HelmRelease")
			hr.SetNamespace(fs)
			hr.SetName("podinfo")
			_ = c.Delete(ctx, hr)
			if tc.spec != nil {
				put(helm, "HelmRelease", "podinfo", tc.spec)
			}
			got, why := e.FluxChartSource(ctx, fs, "podinfo", imp)
			if tc.want == nil {
				if got != nil || !strings.HasPrefix(why, tc.why) || (tc.why == "") != (why == "") {
					t.Fatalf("got %+v, %q; want nil, %q", got, why, tc.why)
				}
				return
			}
			if why != "" || got == nil || got.Repository != tc.want.Repository || got.Chart != tc.want.Chart || got.Version != tc.want.Version ||
				got.From != tc.want.From || strings.Join(got.Notes, "\n") != strings.Join(tc.want.Notes, "\n") {
				t.Fatalf("got %+v, %q\nwant %+v", got, why, tc.want)
			}
		})
	}
}

// TestImport_recordWithoutChart: a release whose latest record has lost its
// chart (a corrupted or hand-edited record) is an error naming the release,
// from the import, the plan of a configuration that imported it before, and
// the listing; nothing panics. Not parallel, and the broken record is
// deleted before it returns: TestList lists every namespace of the cluster,
// where a broken record fails the listing.
func TestImport_recordWithoutChart(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	defer func() {
		if err := c.DeleteAllOf(ctx, &corev1.Secret{}, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": "broken"}); err != nil {
			t.Errorf("delete the broken record: %v", err)
		}
	}()
	path, digest := podinfo(t, "1.0.0")
	spec := &Spec{Name: "broken", Namespace: ns, Timeout: time.Minute, ChartPath: path, ChartDigest: digest}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.DropReleaseChart(testenv.Need(t).Cluster.Kubeconfig, ns, "broken"); err != nil {
		t.Fatal(err)
	}
	names := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "broken") || !strings.Contains(err.Error(), ns) || !strings.Contains(err.Error(), "incomplete") {
			t.Errorf("%s: %v, want an error naming release broken in %s as incomplete", what, err, ns)
		}
	}
	_, err = e.Import(ctx, ns, "broken")
	names("import", err)
	_, err = e.Plan(ctx, spec, st)
	names("plan", err)
	_, err = e.List(ctx, ListOptions{StorageNamespace: ns})
	names("list", err)
}
