package release

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/go-openapi/jsonpointer"
	"helm.sh/helm/v4/pkg/postrenderer"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	//lint:ignore SA1019 kustomize's label and patch transformers have no other entry point in API v0; Flux's post-renderer uses them too
	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// Origin labels: every object a release renders carries the name and namespace
// of the resource that made it, as helm-controller labels objects with its
// HelmRelease's.
const (
	OriginNameLabel      = kube.ReleaseNameLabel
	OriginNamespaceLabel = kube.ReleaseNamespaceLabel
)

// renderStep is one stage of the post-rendering chain.
type renderStep func(*bytes.Buffer) (*bytes.Buffer, error)

// postRenderChain runs its steps in order, each on the previous one's output.
type postRenderChain []renderStep

// Run implements Helm's postrenderer.PostRenderer.
func (c postRenderChain) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	out := in
	for _, step := range c {
		var err error
		if out, err = step(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// newPostRenderer returns the post-renderer of spec: what the user asked for
// (renderChain), then the origin labels. The origin labels are always added,
// also without post-renderers, as helm-controller does, so that every object
// of a release says where it came from.
func newPostRenderer(spec *Spec) postrenderer.PostRenderer {
	chain := renderChain(spec)
	name, namespace := spec.Name, spec.Namespace
	chain = append(chain, func(in *bytes.Buffer) (*bytes.Buffer, error) {
		out, err := addOriginLabels(in.Bytes(), name, namespace)
		if err != nil {
			return nil, fmt.Errorf("origin labels: %w", err)
		}
		return bytes.NewBuffer(out), nil
	})
	return chain
}

// renderChain is what spec asks to be post-rendered onto its objects: each
// kustomize post-renderer in order (userPostRenderers), then common_metadata
// (commonMetadataStep), under the origin labels as helm-controller's. A
// release adds its origin labels after it (newPostRenderer); a template
// (Template) runs it alone, as `helm template` has no origin.
func renderChain(spec *Spec) postRenderChain {
	chain := userPostRenderers(spec)
	if step := commonMetadataStep(spec.CommonMetadata); step != nil {
		chain = append(chain, step)
	}
	return chain
}

// userPostRenderers is the chain of spec's post_renderers, in order, without
// common_metadata and the origin labels.
func userPostRenderers(spec *Spec) postRenderChain {
	var chain postRenderChain
	for i, pr := range spec.PostRenderers {
		if pr.Kustomize == nil {
			continue
		}
		k, field := pr.Kustomize, fmt.Sprintf("post_renderers[%d].kustomize", i)
		chain = append(chain, func(in *bytes.Buffer) (*bytes.Buffer, error) {
			out, err := runKustomize(k, in.Bytes())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			return bytes.NewBuffer(out), nil
		})
	}
	return chain
}

// kustomizeMu serialises kustomize builds: kustomize has had concurrent map
// access bugs (kubernetes-sigs/kustomize#3659), and many releases of one
// provider process render at once.
var kustomizeMu sync.Mutex

// helmOutput is the in-memory file the rendered manifest is written to.
const helmOutput = "helm-output.yaml"

// runKustomize builds a kustomization of the rendered manifest with k's
// patches and images, on an in-memory filesystem.
func runKustomize(k *Kustomize, manifest []byte) ([]byte, error) {
	empty, err := isEmptyManifest(manifest)
	if err != nil {
		return nil, err
	}
	if empty {
		// kustomize rejects a kustomization without resources; a chart that
		// renders only hooks has nothing to patch.
		return manifest, nil
	}
	fs := filesys.MakeFsInMemory()
	if err := fs.WriteFile(helmOutput, manifest); err != nil {
		return nil, err
	}
	kust, err := json.Marshal(kustomizationOf(k))
	if err != nil {
		return nil, err
	}
	if err := fs.WriteFile("kustomization.yaml", kust); err != nil {
		return nil, err
	}

	kustomizeMu.Lock()
	defer kustomizeMu.Unlock()
	kz := krusty.MakeKustomizer(&krusty.Options{
		// Keep the chart's order: Helm sorts for install itself, and a stable
		// manifest keeps the release's stored manifest stable.
		Reorder:          krusty.ReorderOptionNone,
		LoadRestrictions: kustypes.LoadRestrictionsNone,
		PluginConfig:     kustypes.DisabledPluginConfig(),
	})
	m, err := kz.Run(fs, ".")
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}

// kustomizationOf is the kustomization.yaml of one kustomize post-renderer.
func kustomizationOf(k *Kustomize) *kustypes.Kustomization {
	cfg := &kustypes.Kustomization{
		TypeMeta:  kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
		Resources: []string{helmOutput},
	}
	for _, p := range k.Patches {
		cfg.Patches = append(cfg.Patches, kustypes.Patch{Patch: p.Patch, Target: kustSelector(p.Target)})
	}
	for _, img := range k.Images {
		cfg.Images = append(cfg.Images, kustypes.Image{
			Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest,
		})
	}
	return cfg
}

func kustSelector(s *KustomizeSelector) *kustypes.Selector {
	if s == nil {
		return nil
	}
	sel := &kustypes.Selector{LabelSelector: s.LabelSelector, AnnotationSelector: s.AnnotationSelector}
	sel.Group, sel.Version, sel.Kind = s.Group, s.Version, s.Kind
	sel.Name, sel.Namespace = s.Name, s.Namespace
	return sel
}

// addOriginLabels puts the origin labels on every object's metadata.labels
// (not on selectors or pod templates), with kustomize's label transformer as
// helm-controller does.
func addOriginLabels(manifest []byte, name, namespace string) ([]byte, error) {
	m, err := resMapFactory().NewResMapFromBytes(manifest)
	if err != nil {
		return nil, err
	}
	if m.Size() == 0 {
		return manifest, nil
	}
	t := builtins.LabelTransformerPlugin{
		Labels:     map[string]string{OriginNameLabel: name, OriginNamespaceLabel: namespace},
		FieldSpecs: []kustypes.FieldSpec{{Path: "metadata/labels", CreateIfNotPresent: true}},
	}
	if err := t.Transform(m); err != nil {
		return nil, err
	}
	return m.AsYaml()
}

func resMapFactory() *resmap.Factory {
	return resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory())
}

// isEmptyManifest says whether manifest holds no object (only separators,
// comments or empty documents).
func isEmptyManifest(manifest []byte) (bool, error) {
	nodes, err := provider.NewDefaultDepProvider().GetResourceFactory().RNodesFromBytes(manifest)
	if err != nil {
		return false, err
	}
	for _, n := range nodes {
		if !n.IsNilOrEmpty() {
			return false, nil
		}
	}
	return true, nil
}

// The digest's JSON has the shape of helm-controller's v2 API
// (spec.postRenderers), field for field and in the same order, so that it is
// stable across refactorings of our Go types and comparable with Flux's.
type (
	digestPostRenderer struct {
		Kustomize *digestKustomize `json:"kustomize,omitempty"`
	}
	digestKustomize struct {
		Patches []digestPatch `json:"patches,omitempty"`
		Images  []digestImage `json:"images,omitempty"`
	}
	digestPatch struct {
		Patch  string          `json:"patch,omitempty"`
		Target *digestSelector `json:"target,omitempty"`
	}
	digestSelector struct {
		Group              string `json:"group,omitempty"`
		Version            string `json:"version,omitempty"`
		Kind               string `json:"kind,omitempty"`
		Namespace          string `json:"namespace,omitempty"`
		Name               string `json:"name,omitempty"`
		AnnotationSelector string `json:"annotationSelector,omitempty"`
		LabelSelector      string `json:"labelSelector,omitempty"`
	}
	digestImage struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	}
)

// postRenderersDigest is `sha256:<hex>` of the canonical JSON of prs. No
// post-renderers (nil or empty) is the digest of an empty list, so that the
// two never differ in state.
func postRenderersDigest(prs []PostRenderer) string {
	list := make([]digestPostRenderer, 0, len(prs))
	for _, pr := range prs {
		list = append(list, digestPostRenderer{Kustomize: digestKustomizeOf(pr.Kustomize)})
	}
	// json.Encoder, as helm-controller's postrender.Digest: it ends the
	// document with a newline. Struct fields encode in declaration order.
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(list); err != nil {
		panic(fmt.Sprintf("post-renderers digest: %v", err)) // strings only: cannot fail
	}
	sum := sha256.Sum256(buf.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:])
}

func digestKustomizeOf(k *Kustomize) *digestKustomize {
	if k == nil {
		return nil
	}
	d := &digestKustomize{}
	for _, p := range k.Patches {
		dp := digestPatch{Patch: p.Patch}
		if t := p.Target; t != nil {
			dp.Target = &digestSelector{
				Group: t.Group, Version: t.Version, Kind: t.Kind, Namespace: t.Namespace, Name: t.Name,
				AnnotationSelector: t.AnnotationSelector, LabelSelector: t.LabelSelector,
			}
		}
		d.Patches = append(d.Patches, dp)
	}
	for _, img := range k.Images {
		d.Images = append(d.Images, digestImage(img))
	}
	return d
}

// ValidatePostRenderers checks the post-renderers without a cluster or a chart:
// every patch parses as kustomize parses it (a strategic merge patch, or a JSON
// 6902 operation list with a target), selectors parse, images are named. The
// error joins one *fielderr.Error per problem, each naming its attribute.
func ValidatePostRenderers(prs []PostRenderer) error {
	var errs []error
	for i, pr := range prs {
		if pr.Kustomize == nil {
			continue
		}
		base := fmt.Sprintf("post_renderers[%d].kustomize", i)
		for j, p := range pr.Kustomize.Patches {
			errs = append(errs, validatePatch(fmt.Sprintf("%s.patches[%d]", base, j), p)...)
		}
		for j, img := range pr.Kustomize.Images {
			if strings.TrimSpace(img.Name) == "" {
				errs = append(errs, validationError(fmt.Sprintf("%s.images[%d].name", base, j), "must name the image to replace"))
			}
		}
	}
	return errors.Join(errs...)
}

func validationError(field, format string, args ...any) *fielderr.Error {
	return &fielderr.Error{Path: field, Err: fmt.Errorf(format, args...)}
}

// validatePatch checks one patch entry; field names the entry.
func validatePatch(field string, p KustomizePatch) []error {
	errs := validateSelector(field+".target", p.Target)
	patchField := field + ".patch"
	if strings.TrimSpace(p.Patch) == "" {
		return append(errs, validationError(patchField, "must not be empty"))
	}
	docs, err := yamlDocuments(p.Patch)
	if err != nil {
		return append(errs, validationError(patchField, "not YAML or JSON: %v", err))
	}
	if len(docs) == 1 {
		if ops, ok := docs[0].([]any); ok {
			if p.Target == nil {
				errs = append(errs, validationError(field+".target", "a JSON 6902 patch needs a target"))
			}
			return append(errs, validateJSON6902(patchField, ops)...)
		}
	}
	if p.Target != nil && len(docs) > 1 {
		return append(errs, validationError(patchField, "a strategic merge patch with a target must be one document, not %d", len(docs)))
	}
	for k, d := range docs {
		if err := validateStrategicMerge(d); err != nil {
			return append(errs, validationError(patchField, "document %d: %v", k, err))
		}
	}
	// kustomize's own parser last, so that what passes here also parses at
	// apply.
	if err := kustomizeParsesPatch(p.Patch); err != nil {
		errs = append(errs, &fielderr.Error{Path: patchField, Err: err})
	}
	return errs
}

// yamlDocuments decodes the documents of text (YAML or JSON), skipping empty
// ones.
func yamlDocuments(text string) ([]any, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
	var docs []any
	for {
		var d any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
}

// validateStrategicMerge checks one strategic merge patch document: kustomize
// needs its kind and metadata.name, also with a target (which then selects
// instead of them).
func validateStrategicMerge(doc any) error {
	m, ok := doc.(map[string]any)
	if !ok {
		return fmt.Errorf("not a strategic merge patch (a mapping) nor a JSON 6902 patch (a list of operations)")
	}
	kind, _ := m["kind"].(string)
	md, _ := m["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if kind == "" || name == "" {
		return fmt.Errorf("a strategic merge patch needs kind and metadata.name (with a target they are not used to select)")
	}
	return nil
}

// kustomizeParsesPatch runs kustomize's patch parser.
func kustomizeParsesPatch(text string) error {
	cfg, err := yaml.Marshal(map[string]string{"patch": text})
	if err != nil {
		return err
	}
	h := resmap.NewPluginHelpers(nil, nil, resMapFactory(), kustypes.DisabledPluginConfig())
	if err := builtins.NewPatchTransformerPlugin().Config(h, cfg); err != nil {
		return errors.New(kustomizeErrorLine(err.Error()))
	}
	return nil
}

// firstLine drops what kustomize appends to its errors (the patch text again).
func kustomizeErrorLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// validateJSON6902 checks each operation as RFC 6902 defines it; kustomize's
// parser accepts any list of objects and fails only when it applies one.
func validateJSON6902(field string, ops []any) []error {
	var errs []error
	for k, raw := range ops {
		at := fmt.Sprintf("operation %d", k)
		op, ok := raw.(map[string]any)
		if !ok {
			errs = append(errs, validationError(field, "%s: not an object", at))
			continue
		}
		name, _ := op["op"].(string)
		if name == "" {
			errs = append(errs, validationError(field, "%s: missing op", at))
			continue
		}
		if err := checkOpPointer(op, "path"); err != nil {
			errs = append(errs, validationError(field, "%s (%s): %v", at, name, err))
		}
		switch name {
		case "add", "replace", "test":
			if _, ok := op["value"]; !ok {
				errs = append(errs, validationError(field, "%s (%s): missing value", at, name))
			}
		case "move", "copy":
			if err := checkOpPointer(op, "from"); err != nil {
				errs = append(errs, validationError(field, "%s (%s): %v", at, name, err))
			}
		case "remove":
		default:
			errs = append(errs, validationError(field, "%s: unknown op %q (add, remove, replace, move, copy or test)", at, name))
		}
	}
	return errs
}

// checkOpPointer checks that op[key] is a JSON pointer.
func checkOpPointer(op map[string]any, key string) error {
	s, ok := op[key].(string)
	if !ok {
		return fmt.Errorf("missing %s", key)
	}
	if _, err := jsonpointer.New(s); err != nil {
		return fmt.Errorf("%s %q: %w", key, s, err)
	}
	return nil
}

// validateSelector checks a patch target: kustomize reads its names as regular
// expressions and its selectors as label selectors.
func validateSelector(field string, s *KustomizeSelector) []error {
	if s == nil {
		return nil
	}
	var errs []error
	for _, f := range []struct{ attr, v string }{
		{"group", s.Group}, {"version", s.Version}, {"kind", s.Kind},
		{"name", s.Name}, {"namespace", s.Namespace},
	} {
		if _, err := regexp.Compile(f.v); err != nil {
			errs = append(errs, &fielderr.Error{Path: field + "." + f.attr, Err: err})
		}
	}
	for _, f := range []struct{ attr, v string }{
		{"label_selector", s.LabelSelector}, {"annotation_selector", s.AnnotationSelector},
	} {
		if _, err := labels.Parse(f.v); err != nil {
			errs = append(errs, &fielderr.Error{Path: field + "." + f.attr, Err: err})
		}
	}
	return errs
}
