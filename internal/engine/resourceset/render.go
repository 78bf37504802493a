package resourceset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/template"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// renderError is err of the template at path, `resources[2]` or
// `resources_template`, rendered with the input at position input (-1: none,
// or before any input): a *fielderr.Error on the part of the spec that
// renders it, whose message names the input (`with inputs[1]: `).
func renderError(path string, input int, err error) error {
	if input >= 0 {
		err = fmt.Errorf("with inputs[%d]: %w", input, err)
	}
	return &fielderr.Error{Path: path, Err: err}
}

// renderer holds the parsed templates of a spec. Each template is parsed once
// and executed once per input: flux-operator parses again for every input,
// which is most of its render time on large matrices.
type renderer struct {
	current   map[string]any
	resources []*template.Template
	fast      []*fastTemplate // fast[i] renders resources[i], when not nil
	multi     *template.Template
	texts     map[string]*template.Template // see text
}

func newRenderer(spec *Spec) (*renderer, error) {
	r := &renderer{}
	fm := funcMap(func() any { return r.current })
	for i, res := range spec.Resources {
		src, err := yaml.Marshal(res)
		if err != nil {
			return nil, renderError(fielderr.Index("resources", i), -1, err)
		}
		t, err := newTemplate(fmt.Sprintf("resources[%d]", i), string(src), fm)
		if err != nil {
			return nil, renderError(fielderr.Index("resources", i), -1, err)
		}
		r.resources = append(r.resources, t)
		r.fast = append(r.fast, newFastTemplate(t, string(src)))
	}
	if strings.TrimSpace(spec.ResourcesTemplate) != "" {
		t, err := newTemplate("resources_template", spec.ResourcesTemplate, fm)
		if err != nil {
			return nil, renderError("resources_template", -1, err)
		}
		r.multi = t
	}
	return r, nil
}

// newTemplate parses src, and refuses it when it calls a function whose
// output changes from one render to the next (UnavailableFuncError), whether
// or not an input reaches the call.
func newTemplate(name, src string, fm template.FuncMap) (*template.Template, error) {
	t, err := template.New(name).
		Delims("<<", ">>").
		Option("missingkey=error").
		Funcs(fm).
		Parse(src)
	if err != nil {
		return nil, err
	}
	if err := checkFuncs(t); err != nil {
		return nil, err
	}
	return t, nil
}

// execute renders t with one input. Rendering is sequential: r.current is the
// input the `inputs` function returns.
func (r *renderer) execute(t *template.Template, input map[string]any, buf *bytes.Buffer) error {
	r.current = input
	buf.Reset()
	return t.Execute(buf, nil)
}

// text renders src, one string of a resource, with input; each string is
// parsed once.
func (r *renderer) text(src string, input map[string]any) (string, error) {
	t, ok := r.texts[src]
	if !ok {
		var err error
		if t, err = newTemplate("text", src, funcMap(func() any { return r.current })); err != nil {
			return "", err
		}
		if r.texts == nil {
			r.texts = map[string]*template.Template{}
		}
		r.texts[src] = t
	}
	var buf bytes.Buffer
	err := r.execute(t, input, &buf)
	return buf.String(), err
}

// Render renders the spec into the objects to apply, in order: resources before
// resources_template, input by input. Objects are deduplicated by group, kind,
// namespace and name (the first occurrence wins), objects annotated
// reconcile: disabled are dropped, and the owner labels and common metadata are
// set (common metadata wins). Namespaces are not defaulted here: that needs to
// know which kinds are namespaced (see Namespacer).
func Render(spec *Spec) ([]*unstructured.Unstructured, error) {
	objs, _, err := render(spec)
	if err != nil {
		return nil, objectError(spec, err)
	}
	return finish(objs, spec), nil
}

// finish deduplicates the rendered objects and sets their metadata.
func finish(objs []*unstructured.Unstructured, spec *Spec) []*unstructured.Unstructured {
	objs = dedupe(objs)
	for _, o := range objs {
		setMetadata(o, spec)
	}
	return objs
}

// render renders the objects of Render, before finish, with a warning for
// each template-only string of resources that renders to a number, a boolean
// or null (retypedWarnings).
func render(spec *Spec) ([]*unstructured.Unstructured, []Warning, error) {
	r, err := newRenderer(spec)
	if err != nil {
		return nil, nil, err
	}
	inputs, err := spec.combinedInputs()
	if err != nil {
		return nil, nil, err
	}
	inputIndex := func(i int) int { return i }
	if len(inputs) == 0 {
		if len(spec.InputsFrom) > 0 {
			return nil, nil, nil // providers that export nothing: no object
		}
		// Everything renders once, and `inputs` is null, as in
		// flux-operator: `toYaml inputs` renders "null".
		inputs = []map[string]any{nil}
		inputIndex = func(int) int { return -1 }
	}

	// results[t][j] is template t (resources in order, then
	// resources_template) rendered with input j.
	ntmpl := len(r.resources)
	if r.multi != nil {
		ntmpl++
	}
	results := make([][]rendered, ntmpl)
	for t := range results {
		results[t] = make([]rendered, len(inputs))
	}
	if err := r.renderAll(spec, inputs, results); err != nil {
		return nil, nil, err
	}

	var out []*unstructured.Unstructured
	var warnings []Warning
	for t := range results {
		at := "resources_template"
		if t < len(r.resources) {
			at = fielderr.Index("resources", t)
		}
		var dropped []string
		for j, res := range results[t] {
			if res.err != nil {
				return nil, nil, renderError(at, inputIndex(j), res.err)
			}
			for _, o := range res.objs {
				if o.GetAnnotations()[ReconcileAnnotation] != DisabledValue {
					out = append(out, o)
				}
			}
			for _, o := range res.dropped {
				if d := describe(o); !slices.Contains(dropped, d) {
					dropped = append(dropped, d)
				}
			}
		}
		if len(dropped) > 0 {
			warnings = append(warnings, Warning{Path: at, Summary: "Kustomize file left out", Message: fmt.Sprintf(
				"%s renders %s of %s, a kustomize build file (kustomization.yaml), not an object to apply: "+
					"it is left out, as flux-operator leaves it out", at, strings.Join(dropped, ", "), kustomizeGroup)})
		}
	}
	warnings = append(warnings, retypedWarnings(spec, results[:len(r.resources)], inputs, inputIndex, r.text)...)
	return out, warnings, nil
}

// ResourceSetAPIVersion and ResourceSetKind name flux-operator's ResourceSet,
// the `provider` of the set's own inputs.
const (
	ResourceSetAPIVersion = "fluxcd.controlplane.io/v1"
	ResourceSetKind       = "ResourceSet"
)

// combinedInputs are the inputs the templates render with, combined by the
// set's input strategy (an unknown one is an error on
// `input_strategy.name`). Flatten, the default: the set's own inputs, each
// with a `provider` key naming the set (as flux-operator names a
// ResourceSet, the first of its input providers), then the inputs of
// InputsFrom once resolved, each naming its ResourceSetInputProvider.
// Permute: the cartesian product of the same sources (permutedInputs). The
// `provider` key replaces one an input has (providerKeyWarnings). The spec's
// inputs are not changed.
func (s *Spec) combinedInputs() ([]map[string]any, error) {
	if err := checkStrategy(s.InputStrategy, s.IncludeEmptyProviders); err != nil {
		return nil, err
	}
	if s.InputStrategy == InputStrategyPermute {
		return permutedInputs(s.sources(), s.IncludeEmptyProviders)
	}
	out := s.literalInputs()
	for _, src := range s.exported {
		out = append(out, src.inputs...)
	}
	return out, nil
}

// literalInputs are the set's own inputs, each with a `provider` key naming
// the set.
func (s *Spec) literalInputs() []map[string]any {
	out := make([]map[string]any, 0, len(s.Inputs))
	for _, in := range s.Inputs {
		in = maps.Clone(in)
		if in == nil {
			in = map[string]any{}
		}
		in["provider"] = map[string]any{
			"apiVersion": ResourceSetAPIVersion,
			"kind":       ResourceSetKind,
			"name":       s.Name,
			"namespace":  s.Namespace,
		}
		out = append(out, in)
	}
	return out
}

// providerKeyWarnings warn, on `inputs[N]`, of the inputs of spec whose
// `provider` key the set's reference replaces (combinedInputs).
func providerKeyWarnings(spec *Spec) []Warning {
	var out []Warning
	for i, in := range spec.Inputs {
		if _, ok := in["provider"]; ok {
			at := fielderr.Index("inputs", i)
			out = append(out, Warning{Path: at, Summary: "Input key replaced", Message: fmt.Sprintf(
				"%s has a key \"provider\": every input of the set gets provider = { apiVersion = %q, kind = %q, name = %q, namespace = %q } "+
					"instead, as flux-operator sets it, so templates read that. Rename the key to keep its value.",
				at, ResourceSetAPIVersion, ResourceSetKind, spec.Name, spec.Namespace)})
		}
	}
	return out
}

type rendered struct {
	objs []*unstructured.Unstructured
	// dropped are the kustomize Kustomizations the template rendered.
	dropped []*unstructured.Unstructured
	err     error
}

// parallelRenderThreshold is the number of renders below which one goroutine
// is faster than several.
const parallelRenderThreshold = 256

// renderAll fills results. Large matrices are split over GOMAXPROCS workers by
// input, each with its own parsed templates (a template's `inputs` is the
// renderer's current input, so a renderer is not shared); the result does not
// depend on the split.
func (r *renderer) renderAll(spec *Spec, inputs []map[string]any, results [][]rendered) error {
	workers := runtime.GOMAXPROCS(0)
	if n := len(inputs) * len(results); n < parallelRenderThreshold || workers < 2 {
		workers = 1
	}
	renderers := []*renderer{r}
	for len(renderers) < workers {
		w, err := newRenderer(spec)
		if err != nil {
			return err
		}
		renderers = append(renderers, w)
	}
	var wg sync.WaitGroup
	for w, rr := range renderers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			templates := rr.resources
			if rr.multi != nil {
				templates = append(slices.Clip(templates), rr.multi)
			}
			for t, tmpl := range templates {
				single := t < len(rr.resources)
				var fast *fastTemplate
				if single {
					fast = rr.fast[t]
				}
				for j := w; j < len(inputs); j += len(renderers) {
					if fast != nil {
						if o, ok := fast.render(rr, inputs[j], &buf); ok {
							results[t][j] = rendered{objs: []*unstructured.Unstructured{o}}
							continue
						}
					}
					results[t][j] = rr.render(tmpl, inputs[j], single, &buf)
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

func (r *renderer) render(t *template.Template, input map[string]any, single bool, buf *bytes.Buffer) rendered {
	if err := r.execute(t, input, buf); err != nil {
		return rendered{err: err}
	}
	objs, dropped, err := parseObjects(buf.Bytes(), !single)
	if err == nil && single && len(objs) != 1 {
		err = fmt.Errorf("renders %d objects, want exactly one (use resources_template for several)", len(objs))
	}
	return rendered{objs: objs, dropped: dropped, err: err}
}

// objectKey names an object in the cluster: group, kind, namespace and name
// (two versions of a kind are one object).
func objectKey(o *unstructured.Unstructured) string {
	return o.GroupVersionKind().Group + "/" + o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// dedupe keeps the first of the objects that name the same object in the
// cluster.
func dedupe(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	seen := make(map[string]bool, len(objs))
	out := objs[:0]
	for _, o := range objs {
		key := objectKey(o)
		if !seen[key] {
			seen[key] = true
			out = append(out, o)
		}
	}
	return out
}

// parseObjects reads the rendered YAML documents into objects. Unlike the ssa
// reader it drops nothing silently: an empty document is skipped, anything
// else must be an object with apiVersion, kind and name. A multi-document
// template is read as flux-operator reads it: a list (a document with a kind
// and an `items` array, `kind: List`) is its items, a list without a kind is
// an error, and a kustomize Kustomization is left out, in dropped.
func parseObjects(rendered []byte, multi bool) (objs, dropped []*unstructured.Unstructured, err error) {
	if singleYAMLDocument(rendered) {
		// Most renders are one object of `resources`: convert it without the
		// stream decoder, whose buffers were most of a render's allocations.
		raw, err := yaml.YAMLToJSON(rendered)
		if err != nil {
			return nil, nil, fmt.Errorf("rendered YAML is invalid: %w", err)
		}
		return appendObject(nil, nil, raw, multi, 0)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(rendered), 4096)
	for doc := 0; ; doc++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, dropped, nil
			}
			return nil, nil, fmt.Errorf("rendered YAML is invalid: %w", err)
		}
		if objs, dropped, err = appendObject(objs, dropped, raw, multi, doc); err != nil {
			return nil, nil, err
		}
	}
}

// singleYAMLDocument is true when rendered is YAML with no document
// separator: no line starts with "---" (the separator of apimachinery's YAML
// reader), and it does not start as JSON, which the stream decoder reads as a
// stream of JSON values.
func singleYAMLDocument(rendered []byte) bool {
	t := bytes.TrimLeft(rendered, " \t\r\n")
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return false
	}
	return !bytes.HasPrefix(rendered, []byte("---")) && !bytes.Contains(rendered, []byte("\n---"))
}

// appendObject appends the object of one rendered document, in JSON, to objs;
// an empty document appends nothing. With multi (resources_template), a list
// appends its items, and a kustomize Kustomization goes to dropped. doc is
// the document's index in the rendered stream, for errors.
func appendObject(objs, dropped []*unstructured.Unstructured, raw []byte, multi bool, doc int) ([]*unstructured.Unstructured, []*unstructured.Unstructured, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return objs, dropped, nil // an empty document, as `---` between conditionals leaves
	}
	// apimachinery's JSON keeps integers int64, as the API server would.
	var m map[string]any
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, nil, fmt.Errorf("rendered document is not an object: %w", err)
	}
	o := &unstructured.Unstructured{Object: m}
	if multi && o.IsList() && o.GetKind() == "" {
		// flux-operator's reader (fluxcd/pkg/ssa's ReadObjects) decodes a
		// document into an Unstructured, which refuses one without a kind
		// before the reader looks for items.
		return nil, nil, fmt.Errorf("rendered document %d (counting from 0) has items but no kind: "+
			"flux-operator fails on it (Object 'Kind' is missing); give it kind: List to render its items", doc)
	}
	if multi && o.IsList() {
		// The items are taken as they are: not lists again, nor left out
		// when they are Kustomizations, as in flux-operator.
		var items []*unstructured.Unstructured
		err := o.EachListItem(func(item k8sruntime.Object) error {
			u := item.(*unstructured.Unstructured)
			if err := checkObject(u); err != nil {
				return fmt.Errorf("rendered %s, items[%d]: %w", o.GetKind(), len(items), err)
			}
			items = append(items, u)
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		return append(objs, items...), dropped, nil
	}
	if multi && isKustomization(o) {
		return objs, append(dropped, o), nil
	}
	if err := checkObject(o); err != nil {
		return nil, nil, err
	}
	return append(objs, o), dropped, nil
}

// kustomizeGroup is the API group of kustomize's build files.
const kustomizeGroup = "kustomize.config.k8s.io"

// isKustomization is true of a kustomization.yaml (not Flux's Kustomization).
func isKustomization(o *unstructured.Unstructured) bool {
	return strings.EqualFold(o.GetKind(), "Kustomization") && o.GroupVersionKind().Group == kustomizeGroup
}

func checkObject(o *unstructured.Unstructured) error {
	var missing []string
	if o.GetAPIVersion() == "" {
		missing = append(missing, "apiVersion")
	}
	if o.GetKind() == "" {
		missing = append(missing, "kind")
	}
	if o.GetName() == "" {
		missing = append(missing, "metadata.name")
	}
	if len(missing) > 0 {
		return fmt.Errorf("rendered object %s has no %s", describe(o), strings.Join(missing, ", "))
	}
	return nil
}

func describe(o *unstructured.Unstructured) string {
	s := o.GetKind()
	if s == "" {
		s = "<no kind>"
	}
	if ns := o.GetNamespace(); ns != "" {
		s += "/" + ns
	}
	name := o.GetName()
	if name == "" {
		name = "<no name>"
	}
	return s + "/" + name
}

func setMetadata(o *unstructured.Unstructured, spec *Spec) {
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, ownerLabels(spec))
	maps.Copy(labels, spec.CommonMetadata.Labels)
	o.SetLabels(labels)
	if len(spec.CommonMetadata.Annotations) > 0 {
		ann := o.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		maps.Copy(ann, spec.CommonMetadata.Annotations)
		o.SetAnnotations(ann)
	}
}
