package resourceset

import (
	"fmt"
	"testing"
)

// BenchmarkRender renders 1,000 inputs x 3 resources (a Namespace, a
// ServiceAccount and a RoleBinding per tenant). flux-operator's builder
// (BuildResourceSet, v0.59.0) took 1.17 s on this matrix on a 2-core machine,
// where this took 40 ms (docs/development/performance.md).
func BenchmarkRender(b *testing.B) {
	inputs := make([]map[string]any, 1000)
	for i := range inputs {
		inputs[i] = map[string]any{"tenant": fmt.Sprintf("tenant-%04d", i), "replicas": i % 5}
	}
	spec := &Spec{
		Name: "bench", Namespace: "flux-system", Inputs: inputs,
		Resources: []map[string]any{
			mustMap(b, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: << inputs.tenant >>\n  labels:\n    slug: << inputs.tenant | slugify >>\n"),
			mustMap(b, "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: flux\n  namespace: << inputs.tenant >>\n"),
			mustMap(b, `
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: flux, namespace: << inputs.tenant >>}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{kind: ServiceAccount, name: flux, namespace: << inputs.tenant >>}]
`),
		},
	}
	b.ReportAllocs()
	for b.Loop() {
		objs, err := Render(spec)
		if err != nil {
			b.Fatal(err)
		}
		if len(objs) != 3000 {
			b.Fatalf("rendered %d objects", len(objs))
		}
	}
}
