package release

import (
	"sync"

	"golang.org/x/sync/singleflight"

	helmkube "helm.sh/helm/v4/pkg/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/openapi/cached"
	"k8s.io/kubectl/pkg/validation"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// Helm validates every object it builds for an install or upgrade with
// kubectl's schema (Build with validation), which first asks whether the API
// server validates fields itself (the fieldValidation parameter, on every
// API server since Kubernetes 1.27): it parses the OpenAPI v3 document of
// the object's group version to find out, again for each Build, because
// kubectl caches the answer in a verifier that Helm makes anew for each. On a
// chart of a few objects that parse is most of an install's CPU. The answer
// does not change while the provider runs, so fieldValidationFactory keeps
// it for the process: an object of a kind the server validates is left to
// the server, as kubectl's schema itself does; any other kind is validated by
// kubectl's schema as before.
type fieldValidationFactory struct {
	helmkube.Factory
	f *kube.Factory
}

// serverValidates is the process-wide set of the kinds, by API server, that
// the server validates fields of. Only answers "yes" are kept: a kind not
// served yet (its CRD comes with the chart) is asked again.
var serverValidates sync.Map // key: host + " " + GroupVersionKind.String()

// keepServerValidates turns fieldValidationFactory on; off only in
// BenchmarkPlanInstallPreview, which measures what it saves.
var keepServerValidates = true

func (v fieldValidationFactory) Validator(directive string) (validation.Schema, error) {
	next, err := v.Factory.Validator(directive)
	if err != nil || directive != metav1.FieldValidationStrict || !keepServerValidates {
		return next, err
	}
	return &serverValidatedSchema{next: next, f: v.f}, nil
}

type serverValidatedSchema struct {
	next validation.Schema
	f    *kube.Factory

	once     sync.Once
	verifier resource.Verifier
	host     string
}

func (s *serverValidatedSchema) ValidateBytes(data []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil || tm.Kind == "" || tm.APIVersion == "" {
		return s.next.ValidateBytes(data) // kubectl's schema says what is wrong
	}
	gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	s.once.Do(s.init)
	if s.verifier == nil {
		return s.next.ValidateBytes(data)
	}
	key := s.host + " " + gvk.String()
	if _, ok := serverValidates.Load(key); ok {
		return nil
	}
	// One question at a time per kind: the verifier reads and parses the
	// OpenAPI document of the kind's group version (several MB of JSON for
	// v1 or apps/v1), and the previews of a plan's releases, run in
	// parallel, would each parse it at once, for the provider's peak memory.
	supported, _, _ := serverValidatesAsked.Do(key, func() (any, error) {
		if s.verifier.HasSupport(gvk) == nil {
			serverValidates.Store(key, true)
			return true, nil
		}
		return false, nil
	})
	if supported.(bool) {
		return nil
	}
	return s.next.ValidateBytes(data)
}

// serverValidatesAsked asks the verifier once at a time per key of
// serverValidates.
var serverValidatesAsked singleflight.Group

// init builds the verifier kubectl's schema uses, once per Build.
func (s *serverValidatedSchema) init() {
	rc, err := s.f.RESTConfig()
	if err != nil {
		return
	}
	dyn, err := s.f.Dynamic()
	if err != nil {
		return
	}
	disc, err := s.f.Discovery()
	if err != nil {
		return
	}
	s.host = rc.Host
	s.verifier = resource.NewQueryParamVerifierV3(dyn, cached.NewClient(disc.OpenAPIV3()), resource.QueryParamFieldValidation)
}
