package testenv

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// minimalCRD is a CRD of group and kind at version (namespaced, any content,
// a status subresource): no Flux controller runs in the test cluster, tests
// write the objects themselves.
func minimalCRD(group, version, kind string) string {
	lower := strings.ToLower(kind)
	return fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[2]ss.%[3]s}
spec:
  group: %[3]s
  scope: Namespaced
  names: {kind: %[1]s, plural: %[2]ss, singular: %[2]s, listKind: %[1]sList}
  versions:
  - name: %[4]s
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, kind, lower, group, version)
}

// InstallFluxCRDs creates the CRDs of Flux's HelmRelease
// (helm.toolkit.fluxcd.io/v2) and of the sources a HelmRelease's chart comes
// from (source.toolkit.fluxcd.io/v1 HelmRepository, HelmChart,
// OCIRepository), unless they exist, and polls until they are Established.
func InstallFluxCRDs(t testing.TB, c client.Client) {
	installCRD(t, c, minimalCRD("helm.toolkit.fluxcd.io", "v2", "HelmRelease"))
	for _, kind := range []string{"HelmRepository", "HelmChart", "OCIRepository"} {
		installCRD(t, c, minimalCRD("source.toolkit.fluxcd.io", "v1", kind))
	}
}
