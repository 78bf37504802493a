package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAccHelmRelease_destroyWithoutValuesFrom: a values_from object that is
// gone (not optional) does not block destroy: destroy uninstalls what is
// installed and needs no values.
func TestAccHelmRelease_destroyWithoutValuesFrom(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-vfgone")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		c := testClient(t)
		values := func() *corev1.ConfigMap {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo-values"},
				Data: map[string]string{"values.yaml": "replicaCount: 2\n"}}
		}
		config := releaseConfig(cacheDir, chartDir, ns, `
  values_from {
    kind = "ConfigMap"
    name = "podinfo-values"
  }`)
		return resource.TestCase{
			CheckDestroy: func(*terraform.State) error {
				if exists(t, "apps/v1", "Deployment", ns, "podinfo") {
					return fmt.Errorf("destroy left the Deployment")
				}
				return nil
			},
			Steps: []resource.TestStep{
				{
					PreConfig: func() {
						if err := c.Create(t.Context(), values()); err != nil {
							t.Fatal(err)
						}
					},
					Config: config,
				},
				{
					// Gone before the destroy.
					PreConfig: func() {
						if err := c.Delete(t.Context(), values()); err != nil {
							t.Fatal(err)
						}
					},
					Config:  config,
					Destroy: true,
				},
			},
		}
	})
}
