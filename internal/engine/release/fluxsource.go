package release

import (
	"context"
	"fmt"
	"path"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The API groups of the Flux objects a HelmRelease's chart comes from.
const (
	fluxHelmGroup   = "helm.toolkit.fluxcd.io"
	fluxSourceGroup = "source.toolkit.fluxcd.io"
)

// ChartSource is where a release's chart comes from, as an inline chart block
// names it: the Helm or OCI repository, the chart name and the version Helm
// recorded.
type ChartSource struct {
	Repository, Chart, Version string
	// From names the objects it was read from, as "HelmRelease ns/name,
	// HelmRepository ns/name".
	From string
	// Notes say what the block does not carry over from them and a user
	// writes by hand: credentials, a version range, verification.
	Notes []string
}

// FluxChartSource reads the chart source of the Flux HelmRelease
// hrNamespace/hrName, when it is the one that made the imported release:
// the HelmRelease's chart template and its HelmRepository (spec.chart), or
// its OCIRepository or HelmChart (spec.chartRef), as source-controller reads
// them. The version is the one Helm recorded, so that the block plans
// nothing; a range the HelmRelease follows is a note. It returns nil and ""
// when there is no such HelmRelease (or the API server does not serve the
// kind), and nil and the reason when the HelmRelease made another release or
// its source cannot be read or is not a Helm or OCI repository (a
// GitRepository or Bucket path).
func (e *Engine) FluxChartSource(ctx context.Context, hrNamespace, hrName string, imp *Imported) (*ChartSource, string) {
	if e.noFlux.Load() {
		return nil, ""
	}
	c, err := e.kube.Client()
	if err != nil {
		return nil, err.Error()
	}
	hrRef := fmt.Sprintf("HelmRelease %s/%s", hrNamespace, hrName)
	hr, err := getFlux(ctx, c, fluxHelmGroup, "HelmRelease", hrNamespace, hrName)
	if meta.IsNoMatchError(err) {
		e.noFlux.Store(true)
		return nil, ""
	}
	if apierrors.IsNotFound(err) {
		return nil, ""
	}
	if err != nil {
		return nil, fluxReadFailure(hrRef, err)
	}
	spec := hr.Object["spec"]
	str := func(obj any, fields ...string) string {
		m, _ := obj.(map[string]any)
		s, _, _ := unstructured.NestedString(m, fields...)
		return s
	}
	made := &Spec{Name: hrName, Namespace: hrNamespace, TargetNamespace: str(spec, "targetNamespace"),
		ReleaseName: str(spec, "releaseName"), StorageNamespace: str(spec, "storageNamespace")}
	if name, storage := ReleaseName(made), StorageNamespace(made); name != imp.Status.ReleaseName || storage != imp.Status.StorageNamespace {
		return nil, fmt.Sprintf("%s makes release %s in storage namespace %s, not this one", hrRef, name, storage)
	}
	src := &ChartSource{Chart: imp.Status.ChartName, Version: imp.Status.ChartVersion, From: hrRef}
	want := ""
	switch tmpl, _, _ := unstructured.NestedMap(hr.Object, "spec", "chart", "spec"); {
	case tmpl != nil:
		if got := str(tmpl, "chart"); got != src.Chart {
			return nil, fmt.Sprintf("%s names chart %q, and the release has chart %q", hrRef, got, src.Chart)
		}
		want = str(tmpl, "version")
		if _, ok := tmpl["verify"]; ok {
			src.Notes = append(src.Notes, hrRef+" verifies the chart: write chart.verify")
		}
		if why := src.fromRepository(ctx, c, hrNamespace, tmpl); why != "" {
			return nil, why
		}
	default:
		kind, ns, name := str(spec, "chartRef", "kind"), str(spec, "chartRef", "namespace"), str(spec, "chartRef", "name")
		if ns == "" {
			ns = hrNamespace
		}
		switch kind {
		case "OCIRepository":
			ref := fmt.Sprintf("OCIRepository %s/%s", ns, name)
			repo, err := getFlux(ctx, c, fluxSourceGroup, kind, ns, name)
			if err != nil {
				return nil, fluxReadFailure(ref, err)
			}
			url := str(repo.Object["spec"], "url")
			if path.Base(url) != src.Chart {
				return nil, fmt.Sprintf("%s serves %s, and the release has chart %q", ref, url, src.Chart)
			}
			src.Repository, src.From = path.Dir(strings.TrimSuffix(url, "/")), src.From+", "+ref
			if strings.HasPrefix(url, "oci://") {
				src.Repository = "oci://" + path.Dir(strings.TrimPrefix(url, "oci://"))
			}
			want = str(repo.Object["spec"], "ref", "semver")
			if want == "" {
				want = str(repo.Object["spec"], "ref", "tag")
			}
			src.credentials(repo, ref)
		case "HelmChart":
			ref := fmt.Sprintf("HelmChart %s/%s", ns, name)
			hc, err := getFlux(ctx, c, fluxSourceGroup, kind, ns, name)
			if err != nil {
				return nil, fluxReadFailure(ref, err)
			}
			hcSpec, _, _ := unstructured.NestedMap(hc.Object, "spec")
			if got := str(hcSpec, "chart"); got != src.Chart {
				return nil, fmt.Sprintf("%s names chart %q, and the release has chart %q", ref, got, src.Chart)
			}
			want, src.From = str(hcSpec, "version"), src.From+", "+ref
			if why := src.fromRepository(ctx, c, ns, hcSpec); why != "" {
				return nil, why
			}
		case "":
			return nil, hrRef + " names no chart (spec.chart or spec.chartRef)"
		default:
			return nil, fmt.Sprintf("%s takes its chart from a %s, which an inline chart does not name", hrRef, kind)
		}
	}
	if want != "" && want != "*" && want != src.Version {
		src.Notes = append(src.Notes, fmt.Sprintf("Flux follows version %q; the block pins %s, the version Helm recorded: write %q to follow it",
			want, src.Version, want))
	}
	return src, ""
}

// fromRepository sets the repository of a chart template (a HelmRelease's
// spec.chart.spec or a HelmChart's spec) from the HelmRepository its
// sourceRef names; it returns why it cannot, "" when it can.
func (src *ChartSource) fromRepository(ctx context.Context, c client.Client, defaultNS string, tmpl map[string]any) string {
	kind, _, _ := unstructured.NestedString(tmpl, "sourceRef", "kind")
	name, _, _ := unstructured.NestedString(tmpl, "sourceRef", "name")
	ns, _, _ := unstructured.NestedString(tmpl, "sourceRef", "namespace")
	if ns == "" {
		ns = defaultNS
	}
	ref := fmt.Sprintf("%s %s/%s", kind, ns, name)
	if kind != "HelmRepository" {
		return fmt.Sprintf("the chart comes from %s, a path in a source an inline chart does not name: "+
			"build it with a stevedore_helmchart_artifact from a local checkout", ref)
	}
	repo, err := getFlux(ctx, c, fluxSourceGroup, kind, ns, name)
	if err != nil {
		return fluxReadFailure(ref, err)
	}
	url, _, _ := unstructured.NestedString(repo.Object, "spec", "url")
	if url == "" {
		return ref + " has no spec.url"
	}
	src.Repository, src.From = strings.TrimSuffix(url, "/"), src.From+", "+ref
	src.credentials(repo, ref)
	return ""
}

// credentials notes the credentials a Flux source takes from a Secret or a
// cloud provider: the block does not carry them, the provider's registries
// do.
func (src *ChartSource) credentials(repo *unstructured.Unstructured, ref string) {
	secret, _, _ := unstructured.NestedString(repo.Object, "spec", "secretRef", "name")
	provider, _, _ := unstructured.NestedString(repo.Object, "spec", "provider")
	switch {
	case secret != "":
		src.Notes = append(src.Notes, fmt.Sprintf("%s authenticates with Secret %s: give the credentials in the provider's registries",
			ref, secret))
	case provider != "" && provider != "generic":
		src.Notes = append(src.Notes, fmt.Sprintf("%s authenticates as the %s workload identity: give credentials in the provider's registries",
			ref, provider))
	}
}

// getFlux reads the namespaced object of Flux's group and kind at the version
// the API server prefers.
func getFlux(ctx context.Context, c client.Client, group, kind, ns, name string) (*unstructured.Unstructured, error) {
	m, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: kind})
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.GroupVersionKind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return nil, err
	}
	return u, nil
}

// fluxReadFailure says why the Flux object ref could not be read.
func fluxReadFailure(ref string, err error) string {
	switch {
	case meta.IsNoMatchError(err):
		return fmt.Sprintf("the cluster does not serve Flux's %s", strings.Fields(ref)[0])
	case apierrors.IsNotFound(err):
		return "there is no " + ref
	default:
		return fmt.Sprintf("cannot read %s: %v", ref, err)
	}
}
