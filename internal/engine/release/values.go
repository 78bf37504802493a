package release

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluxcd/pkg/apis/meta"
	fluxchartutil "github.com/fluxcd/pkg/chartutil"
	"github.com/go-logr/logr"
	"github.com/opencontainers/go-digest"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	helmchartutil "helm.sh/helm/v4/pkg/chart/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DigestValues is the config digest of values: `sha256:<hex>` of the values
// as YAML with keys sorted recursively, fluxcd/pkg/chartutil's DigestValues
// with the canonical algorithm, so that ours equals helm-controller's for the
// same values. Empty and nil values digest the empty string.
//
// The values pass through JSON first, as helm-controller's always have (a
// HelmRelease's values and Helm's stored config are JSON): numbers become
// float64, so that 1000000 digests the same whether it came from
// configuration as an int or from Helm storage as a float64.
func DigestValues(values map[string]any) string {
	return fluxchartutil.DigestValues(digest.Canonical, normalizeValues(values)).String()
}

// composeValues is the values of a release, layered in this order, the
// only place that layers them (its table test pins it):
//
//  1. values_from, in order (a target_path reference set into the result so
//     far, Helm --set style, or verbatim with literal, as helm
//     --set-literal), as helm-controller merges them;
//  2. the inline layer on top (InlineValues): the documents of `values`,
//     then set, set_list and set_sensitive set into them, as hashicorp/helm's
//     helm_release sets them. It wins over values_from, but for one case
//     that helm-controller has too, both merging with fluxcd/pkg/chartutil's
//     ChartValuesFromReferences: a target_path whose parent map only the
//     inline layer has (no earlier values_from entry made a map there) is
//     written into the inline layer itself, so that there the target_path
//     value wins (TestComposeValues_asHelmController pins both);
//  3. values_wo (Spec.ValuesWriteOnly) over everything.
//
// digested is the values without the paths values_wo sets, which the config
// digest covers (values itself without values_wo).
func composeValues(ctx context.Context, c client.Client, spec *Spec) (values, digested map[string]any, err error) {
	values, err = composeReadValues(ctx, c, spec)
	if err != nil || len(spec.ValuesWriteOnly) == 0 {
		return values, values, err
	}
	values = MergeValues(values, deepCopyValues(spec.ValuesWriteOnly))
	return values, withoutWriteOnly(values, spec.ValuesWriteOnly), nil
}

// composeReadValues reads the values_from objects and merges them with the
// inline layer as helm-controller does, with fluxcd/pkg/chartutil's
// ChartValuesFromReferences: references in order (a target_path reference set
// into the result so far, Helm --set style), then the inline layer on top.
//
// Before handing over it checks every reference itself, because the library
// tolerates a missing key on an optional reference (we do not: optional means
// the object may be missing, a typo in the key is still an error) and because
// its errors do not say which entry failed; ours name `values_from[i]`.
func composeReadValues(ctx context.Context, c client.Client, spec *Spec) (map[string]any, error) {
	inline, err := InlineValues(spec.Values, spec.Sets)
	if err != nil {
		return nil, err
	}
	if len(spec.ValuesFrom) == 0 {
		if inline == nil {
			inline = map[string]any{}
		}
		return inline, nil
	}
	reader := &cachedReader{Client: c, objs: map[types.NamespacedName]map[string]client.Object{}}
	refs := make([]meta.ValuesReference, 0, len(spec.ValuesFrom))
	for i, ref := range spec.ValuesFrom {
		field := fmt.Sprintf("values_from[%d]", i)
		key := ref.ValuesKey
		nn := types.NamespacedName{Namespace: spec.Namespace, Name: ref.Name}
		data, found, err := reader.value(ctx, ref.Kind, nn, key)
		switch {
		case err != nil && apierrors.IsNotFound(err):
			if ref.Optional {
				continue
			}
			return nil, &fielderr.Error{Path: field, Err: fmt.Errorf("%s %s %w", ref.Kind, nn, ErrValuesFromMissing)}
		case err != nil:
			return nil, fmt.Errorf("%s: read %s %s: %w", field, ref.Kind, nn, err)
		case !found:
			return nil, &fielderr.Error{Path: field + ".values_key", Err: fmt.Errorf("%s %s has no key %q", ref.Kind, nn, key)}
		}
		// Check the data as the library will use it, to blame the right entry.
		if ref.TargetPath != "" {
			if err := setAtPath(ref, data); err != nil {
				return nil, &fielderr.Error{Path: field + ".target_path",
					Err: fmt.Errorf("%s %s key %q cannot be set at %q: %w", ref.Kind, nn, key, ref.TargetPath, hideSecret(ref.Kind, err))}
			}
		} else if _, err := helmchartutil.ReadValues([]byte(data)); err != nil {
			return nil, &fielderr.Error{Path: field,
				Err: fmt.Errorf("%s %s key %q is not a YAML mapping: %w", ref.Kind, nn, key, hideSecret(ref.Kind, err))}
		}
		refs = append(refs, meta.ValuesReference{
			Kind: ref.Kind, Name: ref.Name, ValuesKey: key, TargetPath: ref.TargetPath,
			Literal: ref.Literal,
		})
	}
	// inline is a copy of its own, as helm-controller hands the library a
	// freshly decoded map: the library writes into it where a target_path
	// lands in an inline map no earlier reference set, and that is part of
	// the result helm-controller computes (and digests).
	values, err := fluxchartutil.ChartValuesFromReferences(ctx, logr.Discard(), reader, spec.Namespace, inline, refs...)
	if err != nil {
		return nil, &fielderr.Error{Path: "values_from", Err: err}
	}
	return values.AsMap(), nil
}

// setAtPath sets data at ref's target path in empty values as the library
// will set it: verbatim for a literal reference (helm --set-literal, Flux's
// `literal`), else with Helm's --set parser.
func setAtPath(ref ValuesReference, data string) error {
	if ref.Literal {
		return fluxchartutil.ReplacePathLiteralValue(helmchartutil.Values{}, ref.TargetPath, data)
	}
	return fluxchartutil.ReplacePathValue(helmchartutil.Values{}, ref.TargetPath, data)
}

// hideSecret keeps parser messages, which may quote the data, out of errors
// about Secrets: secrets never appear in diagnostics.
func hideSecret(kind string, err error) error {
	if kind == "Secret" {
		return errors.New("parse error (details hidden: the data is secret)")
	}
	return err
}

// cachedReader serves Gets of ConfigMaps and Secrets from what it already
// read, so that the checks above and the library see the same data and each
// object is read once.
type cachedReader struct {
	client.Client
	objs map[types.NamespacedName]map[string]client.Object // by kind
}

func (r *cachedReader) fetch(ctx context.Context, kind string, nn types.NamespacedName) (client.Object, error) {
	if o, ok := r.objs[nn][kind]; ok {
		return o, nil
	}
	var obj client.Object
	switch kind {
	case "Secret":
		obj = &corev1.Secret{}
	default:
		obj = &corev1.ConfigMap{}
	}
	if err := r.Client.Get(ctx, nn, obj); err != nil {
		return nil, err
	}
	if r.objs[nn] == nil {
		r.objs[nn] = map[string]client.Object{}
	}
	r.objs[nn][kind] = obj
	return obj, nil
}

func (r *cachedReader) value(ctx context.Context, kind string, nn types.NamespacedName, key string) (string, bool, error) {
	obj, err := r.fetch(ctx, kind, nn)
	if err != nil {
		return "", false, err
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		v, ok := o.Data[key]
		return string(v), ok, nil
	case *corev1.ConfigMap:
		v, ok := o.Data[key]
		return v, ok, nil
	}
	return "", false, nil
}

// Get implements client.Reader for the library: cached ConfigMaps and
// Secrets, anything else from the cluster.
func (r *cachedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	var kind string
	switch obj.(type) {
	case *corev1.Secret:
		kind = "Secret"
	case *corev1.ConfigMap:
		kind = "ConfigMap"
	default:
		return r.Client.Get(ctx, key, obj, opts...)
	}
	cached, err := r.fetch(ctx, kind, key)
	if err != nil {
		return err
	}
	switch dst := obj.(type) {
	case *corev1.Secret:
		cached.(*corev1.Secret).DeepCopyInto(dst)
	case *corev1.ConfigMap:
		cached.(*corev1.ConfigMap).DeepCopyInto(dst)
	}
	return nil
}

// deepCopyValues copies the maps and lists of a values tree: the library
// writes target_path values into nested maps it may share with its input, and
// the input is the caller's spec.
func deepCopyValues(v map[string]any) map[string]any {
	if v == nil {
		return nil
	}
	out := make(map[string]any, len(v))
	for k, e := range v {
		out[k] = deepCopyValue(e)
	}
	return out
}

func deepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return deepCopyValues(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopyValue(e)
		}
		return out
	default:
		return v
	}
}

// ErrValuesFromMissing is a values_from object, not optional, that is not in
// the cluster. At plan it is no error: another resource of the same apply may
// create it (Plan.ValuesMissing).
var ErrValuesFromMissing = errors.New("not found")

// MergeValues deep-merges b over a as Helm merges `-f` files (and
// hashicorp/helm its `values` list): maps merge key by key, anything else in
// b replaces what a has. Neither argument is modified; the result shares
// their unmerged subtrees.
func MergeValues(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = MergeValues(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// withoutWriteOnly is values without the leaves mask sets (a map in mask over a
// map in values recurses; anything else drops the key): what the config
// digest covers when write-only values are merged in. values is not
// modified.
func withoutWriteOnly(values, mask map[string]any) map[string]any {
	out := make(map[string]any, len(values))
	for k, v := range values {
		m, masked := mask[k]
		switch {
		case !masked:
			out[k] = v
		default:
			sub, ok1 := m.(map[string]any)
			vm, ok2 := v.(map[string]any)
			if ok1 && ok2 {
				out[k] = withoutWriteOnly(vm, sub)
			}
		}
	}
	return out
}
