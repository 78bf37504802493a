package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	chartutil "helm.sh/helm/v4/pkg/chart/common"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// TemplateOptions are what `helm template` is told beyond the release: the
// cluster it assumes, and what it prints.
type TemplateOptions struct {
	// KubeVersion is the Kubernetes version the chart sees
	// (.Capabilities.KubeVersion); "" is Helm's default.
	KubeVersion string
	// APIVersions are added to Helm's default API versions
	// (.Capabilities.APIVersions): `group/version` or `group/version/Kind`.
	APIVersions []string
	// IncludeCRDs prints the chart's crds/ first, as --include-crds.
	IncludeCRDs bool
	// SkipTests leaves out the test hooks, as --skip-tests.
	SkipTests bool
}

// Templated is a chart rendered without a cluster.
type Templated struct {
	// Manifest is what `helm template` prints: the release's manifest (after
	// the post-renderers), then each hook with its `# Source:` line.
	Manifest string
	// Objects are the documents of Manifest that hold an object, in order.
	Objects []TemplatedObject
	// Notes are the chart's rendered NOTES.txt.
	Notes                               string
	ChartName, ChartVersion, AppVersion string
	// ConfigDigest is the digest of the values, as the release's.
	ConfigDigest string
}

// TemplatedObject is one document of a Templated manifest.
type TemplatedObject struct {
	Object *unstructured.Unstructured
	// Manifest is the document as rendered, comments included.
	Manifest string
}

// Template renders spec's chart as `helm template` does: Helm's install
// action in client-only dry-run mode (ClientOnly, DryRun, Replace), with
// the release name ReleaseName(spec), the namespace TargetNamespace (else
// Namespace), the values composed as a release's and checked against the
// chart's values.schema.json unless Install.DisableSchemaValidation says so
// (as the release's install, newInstall), and what a release post-renders
// (renderChain: the post_renderers, then common_metadata) under its
// post_render_strategy, defaulted as a release's; the origin labels a
// release adds after them are not: `helm template` has none. It contacts no
// cluster, so spec may have no values_from. The chart path and digest are
// checked as a release's.
func Template(ctx context.Context, spec *Spec, opts TemplateOptions) (*Templated, error) {
	if len(spec.ValuesFrom) > 0 {
		return nil, fielderr.Wrap("values_from", errors.New("values_from reads the cluster: a template takes inline values only"))
	}
	// What a release refuses to put on its objects, a template does not show.
	if err := ValidateCommonMetadata(spec.CommonMetadata); err != nil {
		return nil, err
	}
	ch, err := loadChart(spec.ChartPath)
	if err != nil {
		return nil, err
	}
	if err := checkChartDigest(spec); err != nil {
		return nil, err
	}
	values, _, err := composeValues(ctx, nil, spec)
	if err != nil {
		return nil, err
	}
	in := action.NewInstall(action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler)))
	in.DryRunStrategy, in.Replace = action.DryRunClient, true
	in.ReleaseName = ReleaseName(spec)
	in.Namespace = releaseNamespace(spec)
	in.IncludeCRDs = opts.IncludeCRDs
	if opts.KubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(opts.KubeVersion)
		if err != nil {
			return nil, fielderr.Wrap("kube_version", err)
		}
		in.KubeVersion = kv
	}
	in.APIVersions = chartutil.VersionSet(opts.APIVersions)
	in.SkipSchemaValidation = spec.Install.DisableSchemaValidation
	if chain := renderChain(spec); len(chain) > 0 {
		in.PostRenderer = chain
		in.PostRenderStrategy = action.PostRenderStrategy(spec.withDefaults().PostRenderStrategy)
	}
	rel, err := runRelease(in.RunWithContext(ctx, ch, values))
	if err != nil {
		return nil, postRenderClash(spec.withDefaults(), actionFailed("template", err))
	}
	// What helm template prints (cmd/helm/template.go).
	var b bytes.Buffer
	fmt.Fprintln(&b, strings.TrimSpace(rel.Manifest))
	for _, h := range rel.Hooks {
		if opts.SkipTests && isTestHook(h) {
			continue
		}
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	out := &Templated{
		Manifest: b.String(), Notes: rel.Info.Notes,
		ChartName: ch.Name(), ChartVersion: ch.Metadata.Version, AppVersion: ch.Metadata.AppVersion,
		ConfigDigest: DigestValues(values),
	}
	if out.Objects, err = templatedObjects(out.Manifest); err != nil {
		return nil, err
	}
	return out, nil
}

// templatedObjects splits a manifest into its documents, as Helm splits a
// release's, and keeps those that hold an object.
func templatedObjects(manifest string) ([]TemplatedObject, error) {
	docs := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var out []TemplatedObject
	for _, k := range keys {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(docs[k]), &obj); err != nil {
			return nil, fmt.Errorf("rendered manifest, document %s: %w", strings.TrimPrefix(k, "manifest-"), err)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, TemplatedObject{Object: &unstructured.Unstructured{Object: obj}, Manifest: strings.TrimSpace(docs[k]) + "\n"})
	}
	return out, nil
}
