package release

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	//lint:ignore SA1019 kustomize's label and annotation transformers have no other entry point in API v0; Flux's post-renderer uses them too
	"sigs.k8s.io/kustomize/api/builtins"
	kustypes "sigs.k8s.io/kustomize/api/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// CommonMetadata is helm-controller's spec.commonMetadata (1.4+): labels and
// annotations put on every object the release renders, after the
// post_renderers and before the origin labels, with kustomize's label and
// annotation transformers on metadata only (not on selectors or pod
// templates), as helm-controller's CommonRenderer does. Hooks get them when
// the post-render strategy gives the post-renderers hooks (combined,
// separate); CRDs in the chart's crds/ are not post-rendered.
type CommonMetadata struct {
	Labels      map[string]string
	Annotations map[string]string
}

// empty says that c sets nothing: the same as no common_metadata.
func (c CommonMetadata) empty() bool { return len(c.Labels) == 0 && len(c.Annotations) == 0 }

// commonMetadataStep is the post-rendering step of c, nil when c is empty.
func commonMetadataStep(c CommonMetadata) renderStep {
	if c.empty() {
		return nil
	}
	return func(in *bytes.Buffer) (*bytes.Buffer, error) {
		out, err := addCommonMetadata(in.Bytes(), c)
		if err != nil {
			return nil, fmt.Errorf("common_metadata: %w", err)
		}
		return bytes.NewBuffer(out), nil
	}
}

// addCommonMetadata sets c's labels and annotations on every object of
// manifest, over what the chart and the post-renderers set.
func addCommonMetadata(manifest []byte, c CommonMetadata) ([]byte, error) {
	m, err := resMapFactory().NewResMapFromBytes(manifest)
	if err != nil {
		return nil, err
	}
	if m.Size() == 0 {
		return manifest, nil
	}
	if len(c.Labels) > 0 {
		t := builtins.LabelTransformerPlugin{Labels: c.Labels,
			FieldSpecs: []kustypes.FieldSpec{{Path: "metadata/labels", CreateIfNotPresent: true}}}
		if err := t.Transform(m); err != nil {
			return nil, err
		}
	}
	if len(c.Annotations) > 0 {
		t := builtins.AnnotationsTransformerPlugin{Annotations: c.Annotations,
			FieldSpecs: []kustypes.FieldSpec{{Path: "metadata/annotations", CreateIfNotPresent: true}}}
		if err := t.Transform(m); err != nil {
			return nil, err
		}
	}
	return m.AsYaml()
}

// renderDigest is the digest of what the spec post-renders with: the
// post_renderers' digest (postRenderersDigest) when common_metadata sets
// nothing, so that releases without it keep their digest; otherwise the
// digest of both, in the shape of helm-controller's v2 API. A new digest
// upgrades the release, as a new observedPostRenderersDigest or
// observedCommonMetadataDigest does in helm-controller.
func renderDigest(spec *Spec) string {
	if spec.CommonMetadata.empty() {
		return postRenderersDigest(spec.PostRenderers)
	}
	type commonMetadata struct {
		Annotations map[string]string `json:"annotations,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
	}
	list := make([]digestPostRenderer, 0, len(spec.PostRenderers))
	for _, pr := range spec.PostRenderers {
		list = append(list, digestPostRenderer{Kustomize: digestKustomizeOf(pr.Kustomize)})
	}
	doc := struct {
		PostRenderers  []digestPostRenderer `json:"postRenderers"`
		CommonMetadata commonMetadata       `json:"commonMetadata"`
	}{list, commonMetadata{Annotations: spec.CommonMetadata.Annotations, Labels: spec.CommonMetadata.Labels}}
	// Maps encode with sorted keys: the digest is stable.
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(doc); err != nil {
		panic(fmt.Sprintf("post-render digest: %v", err)) // strings only: cannot fail
	}
	sum := sha256.Sum256(buf.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Keys common_metadata may not set: the origin labels and every other
// stevedore.dev key, which say who owns an object (docs/guides/safety.md:
// a label of another owner would make the object look like a resource
// set's, or another release's), and Helm's ownership label and annotations,
// which Helm writes itself over whatever the chart renders.
var reservedHelmKeys = map[string]bool{
	helmManagedByLabel:             true,
	helmReleaseNameAnnotation:      true,
	helmReleaseNamespaceAnnotation: true,
}

func reservedKey(k string) bool {
	return strings.HasPrefix(k, kube.OwnerGroup+"/") || reservedHelmKeys[k]
}

// ValidateCommonMetadata checks c without a cluster (validateCommonMetadata):
// each problem is a *fielderr.Error on its attribute, joined.
func ValidateCommonMetadata(c CommonMetadata) error {
	return errors.Join(validateCommonMetadata(c)...)
}

// validateCommonMetadata checks c as the API server checks labels and
// annotations, and refuses the keys that record ownership.
func validateCommonMetadata(c CommonMetadata) []error {
	var errs []error
	check := func(attr string, m map[string]string, label bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if reservedKey(k) {
				errs = append(errs, &fielderr.Error{Path: "common_metadata." + attr,
					Err: fmt.Errorf("%q records who owns the release's objects (stevedore's origin and owner keys, Helm's ownership metadata) and cannot be set here", k)})
				continue
			}
			if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
				errs = append(errs, &fielderr.Error{Path: "common_metadata." + attr,
					Err: fmt.Errorf("key %q: %s", k, strings.Join(msgs, "; "))})
				continue
			}
			if label {
				if msgs := validation.IsValidLabelValue(m[k]); len(msgs) > 0 {
					errs = append(errs, &fielderr.Error{Path: "common_metadata." + attr,
						Err: fmt.Errorf("label %q: value %q: %s", k, m[k], strings.Join(msgs, "; "))})
				}
			}
		}
	}
	check("labels", c.Labels, true)
	check("annotations", c.Annotations, false)
	return errs
}
