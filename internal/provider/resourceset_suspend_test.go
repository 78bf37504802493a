package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// TestAccResourceSet_suspend: flux-operator's `fluxcd.controlplane.io/reconcile:
// disabled` on a ResourceSet. A suspended set cannot be created; once
// applied, a suspended set's configuration change is saved without applying
// or pruning anything (the inventory and manifests stay), drift is refreshed
// but not corrected (the plan is empty), and unsuspending applies what is
// pending in one apply. Destroy of a suspended set deletes nothing.
func TestAccResourceSet_suspend(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) tfresource.TestCase {
		const rs = "stevedore_resourceset.paused"
		ns := uniqueNamespace(t, "rs-suspend")
		c := testClient(t)
		config := func(value string, suspend bool, tenants ...string) string {
			var in []string
			for _, t := range tenants {
				in = append(in, fmt.Sprintf("{ tenant = %q }", t))
			}
			return providerBlock("") + fmt.Sprintf(`
resource "stevedore_resourceset" "paused" {
  name      = "paused"
  namespace = %[1]q
  suspend   = %[2]t
  inputs    = [%[3]s]
  resources = [{
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = "cm-<< inputs.tenant >>" }
    data       = { v = %[4]q }
  }]
}
`, ns, suspend, strings.Join(in, ", "), value)
		}
		entry := func(name string) knownvalue.Check {
			return knownvalue.ObjectExact(map[string]knownvalue.Check{
				"id": knownvalue.StringExact(ns + "_" + name + "__ConfigMap"), "v": knownvalue.StringExact("v1"),
				"adopted": knownvalue.Bool(false), "step": knownvalue.Null(),
			})
		}
		data := func(name, want string) tfresource.TestCheckFunc {
			return func(*terraform.State) error {
				if got := configMapData(t, ns, name, "v"); got != want {
					return fmt.Errorf("ConfigMap %s: data.v = %q, want %q", name, got, want)
				}
				return nil
			}
		}
		return tfresource.TestCase{
			CheckDestroy: func(*terraform.State) error {
				// Left in the cluster, with the set's labels, by the destroy
				// of the suspended set.
				for _, name := range []string{"cm-a", "cm-c"} {
					var cm corev1.ConfigMap
					if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
						return fmt.Errorf("destroy of a suspended set deleted ConfigMap %s: %w", name, err)
					}
					if cm.Labels[kube.SetNameLabel] != "paused" {
						return fmt.Errorf("ConfigMap %s lost the set's labels: %v", name, cm.Labels)
					}
				}
				deleteObjects(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-a"}},
					&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-c"}})
				return nil
			},
			Steps: []tfresource.TestStep{
				{
					Config:      config("one", true, "a"),
					ExpectError: regexp.MustCompile(`Cannot create a suspended resource set`),
				},
				{
					Config: config("one", false, "a", "b"),
					Check:  tfresource.ComposeTestCheckFunc(data("cm-a", "one"), data("cm-b", "one")),
				},
				{
					Config: config("one", true, "a", "b"),
					ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(rs, plancheck.ResourceActionUpdate),
					}},
				},
				{
					// Drift of a suspended set is read, and left.
					PreConfig: func() { editConfigMap(t, ns, "cm-a", "edited") },
					Config:    config("one", true, "a", "b"),
					ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						expectPriorDrift(rs, map[string][]string{ns + "_cm-a__ConfigMap": {`/data/v="edited"->"one"`}}),
						plancheck.ExpectEmptyPlan(),
					}},
					Check: data("cm-a", "edited"),
				},
				{
					// A new value and b replaced by c, while suspended: the
					// plan keeps the inventory, manifests and drift, and the
					// apply neither applies nor prunes. The refreshes that
					// follow do not take the pending change for drift.
					Config: config("two", true, "a", "c"),
					ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(rs, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), knownvalue.ListExact([]knownvalue.Check{entry("cm-a"), entry("cm-b")})),
						plancheck.ExpectKnownValue(rs, tfjsonpath.New("manifests"), knownvalue.StringRegexp(regexp.MustCompile(`v: one`))),
					}},
					Check: tfresource.ComposeTestCheckFunc(data("cm-a", "edited"), data("cm-b", "one"),
						checkExists(t, false, "v1", "ConfigMap", ns, "cm-c")),
				},
				{
					Config: config("two", true, "a", "c"),
					ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						expectPriorDrift(rs, map[string][]string{ns + "_cm-a__ConfigMap": {`/data/v="edited"->"one"`}}),
						plancheck.ExpectEmptyPlan(),
					}},
				},
				{
					// Unsuspended: one apply applies what is pending, prunes
					// b and corrects the drift.
					Config: config("two", false, "a", "c"),
					ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), knownvalue.ListExact([]knownvalue.Check{entry("cm-a"), entry("cm-c")})),
						plancheck.ExpectKnownValue(rs, tfjsonpath.New("drift"), knownvalue.ListSizeExact(0)),
					}},
					Check: tfresource.ComposeTestCheckFunc(data("cm-a", "two"), data("cm-c", "two"),
						checkExists(t, false, "v1", "ConfigMap", ns, "cm-b")),
				},
				// Suspended again: the destroy that ends the case leaves cm-a
				// and cm-c (CheckDestroy).
				{Config: config("two", true, "a", "c")},
			},
		}
	})
}

// editConfigMap sets data.v of the ConfigMap ns/name, as another writer.
func editConfigMap(t *testing.T, ns, name, v string) {
	t.Helper()
	c := testClient(t)
	cm := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["v"] = v
	if err := c.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
}

// planSuspendedSet refuses to create or replace a suspended set, on
// `suspend`, and otherwise warns that the apply is skipped, saying when the
// configuration changed, and keeps the set's computed attributes.
func TestPlanSuspendedSet(t *testing.T) {
	state := &resourceSetModel{ID: types.StringValue("ns/set"), Inputs: types.DynamicNull(), Resources: types.DynamicNull(),
		ResourcesTemplate: types.StringValue("kind: A"), Inventory: inventoryValue(nil, nil), Manifests: types.StringValue("kind: A\n"),
		Drift: driftValue([]kube.Drift{{ID: "ns_a__ConfigMap", Type: "update"}}), Changes: types.ListNull(driftEntryType),
		Conditions: types.ListNull(conditionType), InputsFrom: types.ListValueMust(inputsFromElemType(), nil),
		InputStrategy: types.ObjectNull(inputStrategyAttrTypes()), TakeOverFrom: types.ListNull(types.StringType), Steps: types.DynamicNull(),
		Wait: types.BoolValue(false), Timeout: types.StringValue("5m"), Force: types.BoolValue(false), ServiceAccountName: types.StringNull()}
	plan := func(template string) *resourceSetModel {
		p := *state
		p.ResourcesTemplate = types.StringValue(template)
		p.Manifests, p.Drift = types.StringUnknown(), emptyDrift()
		return &p
	}
	for _, tc := range []struct {
		name    string
		plan    *resourceSetModel
		state   *resourceSetModel
		replace bool
		err     string
		warning string
	}{
		{name: "create", plan: plan("kind: A"), err: "Cannot create a suspended resource set"},
		{name: "replace", plan: plan("kind: A"), state: state, replace: true, err: "Cannot replace a suspended resource set"},
		{name: "unchanged", plan: plan("kind: A"), state: state,
			warning: "suspend is set: the apply is skipped (nothing applied, nothing pruned), and destroy leaves the set's objects in the cluster"},
		{name: "changed", plan: plan("kind: B"), state: state,
			warning: "the configuration changed since the last apply: it is saved, and applied once suspend is unset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &resource.ModifyPlanResponse{}
			if tc.replace {
				resp.RequiresReplace = append(resp.RequiresReplace, path.Root("name"))
			}
			planSuspendedSet(tc.plan, tc.state, resp)
			diags := resp.Diagnostics
			if tc.err != "" {
				if diags.ErrorsCount() != 1 || diags.Errors()[0].Summary() != tc.err {
					t.Fatalf("diagnostics %v, want the error %q", diags, tc.err)
				}
				if d, ok := diags.Errors()[0].(interface{ Path() path.Path }); !ok || !d.Path().Equal(path.Root("suspend")) {
					t.Fatalf("error not on suspend: %v", diags.Errors()[0])
				}
				return
			}
			if diags.HasError() || diags.WarningsCount() != 1 || diags.Warnings()[0].Summary() != "Resource set suspended" ||
				!strings.Contains(diags.Warnings()[0].Detail(), tc.warning) {
				t.Fatalf("diagnostics %v, want a warning with %q", diags, tc.warning)
			}
			if tc.name == "unchanged" && strings.Contains(diags.Warnings()[0].Detail(), "changed") {
				t.Fatalf("an unchanged configuration is said to have changed: %s", diags.Warnings()[0].Detail())
			}
			if !tc.plan.Manifests.Equal(state.Manifests) || !tc.plan.Drift.Equal(state.Drift) || !tc.plan.Inventory.Equal(state.Inventory) {
				t.Fatalf("the plan does not keep the state's computed attributes: %+v", tc.plan)
			}
		})
	}
}
