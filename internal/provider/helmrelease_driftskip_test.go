package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAccHelmRelease_driftSkipMissesNothing: refresh dry-runs only the objects
// written since the last clean check (their fingerprints are in private
// state), and no write is missed: a status-only update plans nothing (and is
// not dry-run: the fingerprint covers everything but the status), and
// another manager's label edit after a status write, a scale, another
// manager's edit and a delete-and-recreate with other content each show as
// drift and are corrected.
func TestAccHelmRelease_driftSkipMissesNothing(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-skip")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		ctx := context.Background()
		c := testClient(t)
		id := func(kind, group string) string { return ns + "_podinfo_" + group + "_" + kind }
		cfg := releaseConfig(cacheDir, chartDir, ns, `values = { replicaCount = 1 }`)
		depKey := client.ObjectKey{Namespace: ns, Name: "podinfo"}
		corrected := plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate)

		return resource.TestCase{
			Steps: []resource.TestStep{
				{Config: cfg},
				{
					// Written, but not by a change to what the release sets.
					PreConfig: func() {
						testenv.WriteDeploymentStatus(t, c, depKey)
					},
					Config:           cfg,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				},
				{
					// A status write, and then another manager's edit of a
					// label the chart sets: the status write does not hide
					// the edit.
					PreConfig: func() {
						testenv.WriteDeploymentStatus(t, c, depKey)
						dep := &appsv1.Deployment{}
						if err := c.Get(ctx, depKey, dep); err != nil {
							t.Fatal(err)
						}
						dep.Labels["app.kubernetes.io/name"] = "edited"
						if err := c.Update(ctx, dep, client.FieldOwner("someone-else")); err != nil {
							t.Fatal(err)
						}
					},
					Config: cfg,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						corrected,
						expectPriorDrift(releaseAddr, map[string][]string{id("Deployment", "apps"): {`/metadata/labels/app.kubernetes.io~1name="edited"->"podinfo"`}}),
					}},
				},
				{
					PreConfig: func() {
						testenv.ScaleDeployment(t, c, depKey, 4)
					},
					Config: cfg,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						corrected,
						expectPriorDrift(releaseAddr, map[string][]string{id("Deployment", "apps"): {`/spec/replicas=4->1`}}),
					}},
				},
				{
					PreConfig: func() {
						c := testClient(t)
						cm := &corev1.ConfigMap{}
						if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, cm); err != nil {
							t.Fatal(err)
						}
						cm.Data["greeting"] = "edited"
						if err := c.Update(ctx, cm, client.FieldOwner("someone-else")); err != nil {
							t.Fatal(err)
						}
					},
					Config: cfg,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						corrected,
						expectPriorDrift(releaseAddr, map[string][]string{id("ConfigMap", ""): {`/data/greeting="edited"->"hello"`}}),
					}},
				},
				{
					// Same name, a new object (new UID) with another target port.
					PreConfig: func() {
						c := testClient(t)
						svc := &corev1.Service{}
						if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, svc); err != nil {
							t.Fatal(err)
						}
						if err := c.Delete(ctx, svc); err != nil {
							t.Fatal(err)
						}
						again := &corev1.Service{
							ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo", Labels: svc.Labels, Annotations: svc.Annotations},
							Spec:       corev1.ServiceSpec{Selector: svc.Spec.Selector, Ports: []corev1.ServicePort{{Name: "http", Port: 9898, TargetPort: intstr.FromInt32(9999), Protocol: corev1.ProtocolTCP}}},
						}
						if err := c.Create(ctx, again, client.FieldOwner("someone-else")); err != nil {
							t.Fatal(err)
						}
					},
					Config: cfg,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						corrected,
						expectPriorDrift(releaseAddr, map[string][]string{id("Service", ""): {`/spec/ports/0/targetPort=9999->"http"`}}),
					}},
				},
			},
		}
	})
}
