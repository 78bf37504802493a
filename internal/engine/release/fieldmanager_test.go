package release

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// Two engines of one process with different field managers (two provider
// configurations, an alias): Helm 4 keeps its field manager in one package
// variable (kube.ManagedFieldsManager), and releases installed and upgraded
// by both at once are each written under their own engine's manager only.
func TestEngines_writeUnderTheirOwnFieldManager(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	kc := testenv.Need(t).Cluster.Kubeconfig
	_, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	managers := []string{"team-a", "team-b"}
	engines := map[string]*Engine{}
	for _, m := range managers {
		engines[m] = New(kube.NewFactory(kube.Config{ConfigPaths: []string{kc}}, m))
	}
	const perManager = 3
	for _, replicas := range []int{1, 2} { // install, then upgrade
		var wg sync.WaitGroup
		errs := make(chan error, len(managers)*perManager)
		for _, m := range managers {
			for i := range perManager {
				wg.Add(1)
				go func() {
					defer wg.Done()
					name := fmt.Sprintf("%s-%d", m, i)
					spec := &Spec{Name: name, Namespace: ns, Timeout: time.Minute, ChartPath: path, ChartDigest: digest,
						Values: map[string]any{"replicaCount": replicas}}
					st, err := engines[m].Observe(ctx, spec, nil)
					if err == nil {
						_, err = engines[m].Reconcile(ctx, spec, st)
					}
					if err != nil {
						errs <- fmt.Errorf("%s: %w", name, err)
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, m := range managers {
			for i := range perManager {
				name := fmt.Sprintf("%s-%d", m, i)
				for _, kind := range []string{"Deployment", "Service"} {
					apiVersion := map[string]string{"Deployment": "apps/v1", "Service": "v1"}[kind]
					if got := writers(t, c, apiVersion, kind, ns, name); !slices.Equal(got, []string{m}) {
						t.Errorf("after replicas=%d: %s %s/%s is written by %v, want %s only", replicas, kind, ns, name, got, m)
					}
				}
			}
		}
	}
}

// writers are the managers of an object's fields, but the controllers'
// (status and other subresources, kube-controller-manager).
func writers(t *testing.T, c client.Client, apiVersion, kind, ns, name string) []string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	if err := c.Get(testenv.Context(t), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range u.GetManagedFields() {
		if f.Subresource == "" && f.Manager != "kube-controller-manager" {
			out = append(out, f.Manager)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
