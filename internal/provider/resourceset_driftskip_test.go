package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAccResourceSet_driftSkipMissesNothing: refresh of a set dry-runs only
// the objects written since the last clean check (fingerprints in private
// state), and misses no write: a status-only update plans nothing; a scale,
// another manager's edit, and a delete-and-recreate with other content each
// show as drift, which apply corrects.
func TestAccResourceSet_driftSkipMissesNothing(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "rs-skip")
		ctx := context.Background()
		c := testClient(t)
		const rs = "stevedore_resourceset.skip"
		cfg := providerBlock("") + fmt.Sprintf(`
resource "stevedore_resourceset" "skip" {
  name      = "skip"
  namespace = %[1]q
  resources_template = <<-EOT
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: %[1]s}
    spec:
      replicas: 1
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: nginx:1.27}]}
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: conf, namespace: %[1]s}
    data: {k: v}
  EOT
}
`, ns)
		depKey, confKey := client.ObjectKey{Namespace: ns, Name: "web"}, client.ObjectKey{Namespace: ns, Name: "conf"}
		drifted := func(id, change string) resource.ConfigPlanChecks {
			return resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(rs, plancheck.ResourceActionUpdate),
				plancheck.ExpectKnownValue(rs, tfjsonpath.New("drift"), knownvalue.ListSizeExact(0)),
				expectPriorDrift(rs, map[string][]string{id: {change}}),
			}}
		}

		return resource.TestCase{
			Steps: []resource.TestStep{
				{Config: cfg},
				{
					PreConfig: func() {
						testenv.WriteDeploymentStatus(t, c, depKey)
					},
					Config:           cfg,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				},
				{
					PreConfig: func() {
						testenv.ScaleDeployment(t, c, depKey, 4)
					},
					Config:           cfg,
					ConfigPlanChecks: drifted(ns+"_web_apps_Deployment", `/spec/replicas=4->1`),
				},
				{
					PreConfig: func() {
						c := testClient(t)
						cm := &corev1.ConfigMap{}
						if err := c.Get(ctx, confKey, cm); err != nil {
							t.Fatal(err)
						}
						cm.Data["k"] = "edited"
						if err := c.Update(ctx, cm, client.FieldOwner("someone-else")); err != nil {
							t.Fatal(err)
						}
					},
					Config:           cfg,
					ConfigPlanChecks: drifted(ns+"_conf__ConfigMap", `/data/k="edited"->"v"`),
				},
				{
					// Same name, a new object (new UID), other data.
					PreConfig: func() {
						c := testClient(t)
						cm := &corev1.ConfigMap{}
						if err := c.Get(ctx, confKey, cm); err != nil {
							t.Fatal(err)
						}
						if err := c.Delete(ctx, cm); err != nil {
							t.Fatal(err)
						}
						again := &corev1.ConfigMap{Data: map[string]string{"k": "other"}}
						again.Namespace, again.Name, again.Labels, again.Annotations = ns, "conf", cm.Labels, cm.Annotations
						if err := c.Create(ctx, again, client.FieldOwner("someone-else")); err != nil {
							t.Fatal(err)
						}
					},
					Config:           cfg,
					ConfigPlanChecks: drifted(ns+"_conf__ConfigMap", `/data/k="other"->"v"`),
				},
			},
		}
	})
}
