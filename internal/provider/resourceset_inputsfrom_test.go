package provider

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// inputsFromConfig is a set whose inputs are a literal one, those of the
// provider alpha (by name) and those of the providers labeled app=demo,
// tier=web (by selector); extra is added to the configuration.
func inputsFromConfig(ns, extra string) string {
	return providerBlock("") + fmt.Sprintf(`
resource "stevedore_resourceset" "from" {
  name      = "from"
  namespace = %[1]q
  inputs    = [{ tenant = "literal" }]
  inputs_from {
    name = "alpha"
  }
  inputs_from {
    api_version = "fluxcd.controlplane.io/v1"
    kind        = "ResourceSetInputProvider"
    selector {
      match_labels = { app = "demo" }
      match_expressions {
        key      = "tier"
        operator = "In"
        values   = ["web"]
      }
    }
  }
  input_strategy {
    name = "Flatten"
  }
  resources_template = <<-EOT
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: cm-<< inputs.tenant >>
    data:
      provider: "<< if hasKey inputs "provider" >><< inputs.provider.kind >>/<< inputs.provider.name >><< else >>none<< end >>"
  EOT
}
%[2]s
`, ns, extra)
}

// configMapData is data[key] of the ConfigMap ns/name, "" when it is missing.
func configMapData(t *testing.T, ns, name, key string) string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	if err := testClient(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return ""
	}
	v, _, _ := unstructured.NestedString(u.Object, "data", key)
	return v
}

// inputs_from by name and by selector joins the providers' exported inputs to
// the literal ones (each with `provider`, the set's own for literal ones); a provider whose exported inputs
// change shows its new object in the next plan, and the apply converges.
// Entries with both name and selector, or neither, and a missing provider
// are errors naming inputs_from[N].
func TestAccResourceSet_inputsFrom(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		const rs = "stevedore_resourceset.from"
		c := testClient(t)
		testenv.InstallInputProviderCRD(t, c)
		ns := uniqueNamespace(t, "inputs-from")
		entry := func(name string) knownvalue.Check {
			return knownvalue.ObjectExact(map[string]knownvalue.Check{
				"id": knownvalue.StringExact(ns + "_" + name + "__ConfigMap"), "v": knownvalue.StringExact("v1"),
				"adopted": knownvalue.Bool(false), "step": knownvalue.Null(),
			})
		}
		reset := func() {
			testenv.SetInputProvider(t, c, ns, "alpha", nil, map[string]any{"id": "a1", "tenant": "alpha"})
			testenv.SetInputProvider(t, c, ns, "beta", map[string]string{"app": "demo", "tier": "web"}, map[string]any{"id": "b1", "tenant": "beta"})
			testenv.SetInputProvider(t, c, ns, "gamma", map[string]string{"app": "demo", "tier": "db"}, map[string]any{"id": "g1", "tenant": "gamma"})
		}
		return resource.TestCase{
			CheckDestroy: func(*terraform.State) error {
				for _, name := range []string{"cm-alpha", "cm-beta", "cm-beta2", "cm-literal"} {
					if exists(t, "v1", "ConfigMap", ns, name) {
						return fmt.Errorf("ConfigMap %s/%s still exists", ns, name)
					}
				}
				return nil
			},
			Steps: []resource.TestStep{
				{
					PreConfig: reset,
					Config: inputsFromConfig(ns, `
resource "stevedore_resourceset" "bad" {
  name      = "bad"
  namespace = "default"
  inputs_from {
    name = "alpha"
  }
  inputs_from {
    name = "beta"
    selector {
      match_labels = { app = "demo" }
    }
  }
  inputs_from {
    kind = "ResourceSetInputProvider"
  }
  resources = [{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "x" } }]
}
`),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(`(?s)inputs_from\[1\]: set either name or selector, not\s+both.*inputs_from\[2\]: set name or\s+selector`),
				},
				{
					Config: inputsFromConfig(ns, fmt.Sprintf(`
resource "stevedore_resourceset" "bad" {
  name      = "bad"
  namespace = %q
  inputs_from {
    name = "alpha"
  }
  inputs_from {
    name = "gone"
  }
  resources = [{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "x" } }]
}
`, ns)),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(`inputs_from\[1\]: ResourceSetInputProvider\s+` + ns + `/gone\s+not\s+found`),
				},
				{
					Config: inputsFromConfig(ns, `
resource "stevedore_resourceset" "bad" {
  name      = "bad"
  namespace = "default"
  inputs_from {
    name = "alpha"
  }
  input_strategy {
    name = "Zip"
  }
  resources = [{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "x" } }]
}
`),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(`input_strategy\.name:\s+must\s+be\s+"Flatten"\s+or\s+"Permute",\s+got\s+"Zip"`),
				},
				{
					// Errors first: the harness destroys with the last step's
					// configuration.
					PreConfig: reset,
					Config:    inputsFromConfig(ns, ""),
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), knownvalue.ListExact([]knownvalue.Check{
							entry("cm-alpha"), entry("cm-beta"), entry("cm-literal"),
						})),
					},
					Check: resource.ComposeTestCheckFunc(
						func(*terraform.State) error {
							for name, want := range map[string]string{
								"cm-alpha": "ResourceSetInputProvider/alpha", "cm-beta": "ResourceSetInputProvider/beta", "cm-literal": "ResourceSet/from",
							} {
								if got := configMapData(t, ns, name, "provider"); got != want {
									return fmt.Errorf("%s: data.provider = %q, want %q", name, got, want)
								}
							}
							return nil
						},
						checkExists(t, false, "v1", "ConfigMap", ns, "cm-gamma"),
					),
				},
				{
					// beta exports a second input: the plan shows its object.
					PreConfig: func() {
						testenv.SetInputProvider(t, c, ns, "beta", map[string]string{"app": "demo", "tier": "web"},
							map[string]any{"id": "b1", "tenant": "beta"}, map[string]any{"id": "b2", "tenant": "beta2"})
					},
					Config: inputsFromConfig(ns, ""),
					ConfigPlanChecks: resource.ConfigPlanChecks{
						PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction(rs, plancheck.ResourceActionUpdate),
							plancheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), knownvalue.ListExact([]knownvalue.Check{
								entry("cm-alpha"), entry("cm-beta2"), entry("cm-beta"), entry("cm-literal"),
							})),
						},
					},
					Check: checkExists(t, true, "v1", "ConfigMap", ns, "cm-beta2"),
				},
				{
					// beta exports nothing any more: its objects are pruned.
					PreConfig: func() {
						testenv.SetInputProvider(t, c, ns, "beta", map[string]string{"app": "demo", "tier": "web"})
					},
					Config: inputsFromConfig(ns, ""),
					ConfigPlanChecks: resource.ConfigPlanChecks{
						PreApply: []plancheck.PlanCheck{
							plancheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), knownvalue.ListExact([]knownvalue.Check{
								entry("cm-alpha"), entry("cm-literal"),
							})),
						},
					},
					Check: resource.ComposeTestCheckFunc(
						checkExists(t, false, "v1", "ConfigMap", ns, "cm-beta"),
						checkExists(t, false, "v1", "ConfigMap", ns, "cm-beta2"),
					),
				},
			},
		}
	})
}

// TestAccResourceSet_inputsFromExample applies the documented example, in a
// namespace of its own, with a provider by name and one by selector.
func TestAccResourceSet_inputsFromExample(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		src, err := os.ReadFile("../../examples/resources/stevedore_resourceset/inputs_from.tf")
		if err != nil {
			t.Fatal(err)
		}
		c := testClient(t)
		testenv.InstallInputProviderCRD(t, c)
		ns := uniqueNamespace(t, "rs-inputs-from-example")
		testenv.SetInputProvider(t, c, ns, "podinfo-pull-requests", nil, map[string]any{"id": "42", "branch": "feat"})
		testenv.SetInputProvider(t, c, ns, "podinfo-dev", map[string]string{"app": "podinfo", "environment": "dev"}, map[string]any{"id": "7", "branch": "dev"})
		testenv.SetInputProvider(t, c, ns, "podinfo-prod", map[string]string{"app": "podinfo", "environment": "prod"}, map[string]any{"id": "9", "branch": "prod"})
		config := providerBlock("") + strings.Replace(string(src), `namespace = "apps"`, fmt.Sprintf("namespace = %q", ns), 1)
		return resource.TestCase{
			Steps: []resource.TestStep{{
				Config: config,
				Check: func(*terraform.State) error {
					for name, want := range map[string]string{
						"preview-main": "ResourceSet/previews", "preview-42": "ResourceSetInputProvider/podinfo-pull-requests", "preview-7": "ResourceSetInputProvider/podinfo-dev",
					} {
						if got := configMapData(t, ns, name, "source"); got != want {
							return fmt.Errorf("%s: data.source = %q, want %q", name, got, want)
						}
					}
					if exists(t, "v1", "ConfigMap", ns, "preview-9") {
						return fmt.Errorf("preview-9 rendered: environment prod is not selected")
					}
					return nil
				},
			}},
		}
	})
}

// An apply whose providers exported other inputs since the plan applies
// nothing and says so, rather than returning objects the plan did not show.
func TestResourceSetApply_inputsChangedSincePlan(t *testing.T) {
	ctx := context.Background()
	c := testClient(t)
	testenv.InstallInputProviderCRD(t, c)
	ns := uniqueNamespace(t, "inputs-changed")
	testenv.SetInputProvider(t, c, ns, "p", nil, map[string]any{"tenant": "a"})

	elem := inputsFromElemType().(types.ObjectType)
	ref := types.ObjectValueMust(elem.AttrTypes, map[string]attr.Value{
		"api_version": types.StringNull(), "kind": types.StringNull(), "name": types.StringValue("p"),
		"selector": types.ObjectNull(elem.AttrTypes["selector"].(types.ObjectType).AttrTypes),
	})
	strategy := resourceSetSchema().Blocks["input_strategy"].Type().(types.ObjectType)
	model := func() resourceSetModel {
		return resourceSetModel{
			Name: types.StringValue("rs"), Namespace: types.StringValue(ns),
			Inputs: types.DynamicNull(), Resources: types.DynamicNull(), Steps: types.DynamicNull(),
			ResourcesTemplate: types.StringValue("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-<< inputs.tenant >>\n"),
			Wait:              types.BoolValue(false), Timeout: types.StringValue("5m"),
			ServiceAccountName: types.StringNull(), Force: types.BoolValue(false), TakeOverFrom: types.ListNull(types.StringType),
			InputsFrom:    types.ListValueMust(elem, []attr.Value{ref}),
			InputStrategy: types.ObjectNull(strategy.AttrTypes),
			Inventory:     types.ListUnknown(inventoryEntryType), Drift: types.ListUnknown(driftEntryType),
			Changes: types.ListUnknown(driftEntryType), Conditions: types.ListUnknown(conditionType),
		}
	}
	f := kube.NewFactory(kube.Config{ConfigPaths: []string{testenv.Need(t).Cluster.Kubeconfig}}, "test")
	data := &providerData{}
	data.setCluster(f)
	r := &resourceSetResource{data: data}
	plan := func() string {
		m := model()
		spec, known, diags := specFrom(ctx, &m)
		if !known || diags.HasError() {
			t.Fatal(diags)
		}
		res, err := r.engine().Plan(ctx, spec, nil, resourceset.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Manifests
	}

	planned := plan()
	testenv.SetInputProvider(t, c, ns, "p", nil, map[string]any{"tenant": "b"})
	m := model()
	m.Manifests = types.StringValue(planned)
	var diags diag.Diagnostics
	r.apply(ctx, &m, nil, nil, nil, "", &diags)
	if !diags.HasError() || !strings.Contains(fmt.Sprint(diags), "Inputs changed since the plan") {
		t.Fatalf("diagnostics %v", diags)
	}
	if exists(t, "v1", "ConfigMap", ns, "cm-a") || exists(t, "v1", "ConfigMap", ns, "cm-b") {
		t.Fatal("an apply whose inputs changed since the plan applied objects")
	}
	if n := len(m.Inventory.Elements()); n != 0 {
		t.Fatalf("inventory of %d entries after a failed apply that applied nothing", n)
	}

	planned = plan()
	m = model()
	m.Manifests = types.StringValue(planned)
	diags = nil
	r.apply(ctx, &m, nil, nil, nil, "", &diags)
	if diags.HasError() {
		t.Fatal(diags)
	}
	if m.Manifests.ValueString() != planned || !exists(t, "v1", "ConfigMap", ns, "cm-b") {
		t.Fatalf("apply: manifests %q, want %q", m.Manifests.ValueString(), planned)
	}
	prev, _ := inventoryEntries(ctx, m.Inventory)
	if _, err := r.engine().Delete(ctx, &resourceset.Spec{Name: "rs", Namespace: ns}, prev); err != nil {
		t.Fatal(err)
	}
}

// input_strategy Permute: the cartesian product of the set's inputs and each
// provider's, each under its normalized name, with flux-operator's ids (the
// Adler-32 checksums of "perm=<i>/git_tag=0/oci_tag=<j>", computed outside
// Go). A provider that exports fewer inputs prunes the objects of the
// permutations that left; a bad strategy name is an error on
// input_strategy.name.
func TestAccResourceSet_inputsFromPermute(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		const rs = "stevedore_resourceset.perm"
		c := testClient(t)
		testenv.InstallInputProviderCRD(t, c)
		ns := uniqueNamespace(t, "inputs-permute")
		testenv.SetInputProvider(t, c, ns, "git-tag", nil, map[string]any{"id": "g1", "tag": "v1"})
		testenv.SetInputProvider(t, c, ns, "oci-tag", nil, map[string]any{"id": "o1", "n": "0"}, map[string]any{"id": "o2", "n": "1"})
		config := func(strategy string) string {
			return providerBlock("") + fmt.Sprintf(`
resource "stevedore_resourceset" "perm" {
  name      = "perm"
  namespace = %q
  inputs    = [{ tenant = "a" }, { tenant = "b" }]
  inputs_from {
    name = "git-tag"
  }
  inputs_from {
    name = "oci-tag"
  }
  input_strategy {
    name = %q
  }
  resources_template = <<-EOT
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: cm-<< inputs.perm.tenant >>-<< inputs.oci_tag.n >>
    data:
      id: << inputs.id | quote >>
      tag: << inputs.git_tag.tag >>
      from: << inputs.perm.provider.kind >>/<< inputs.git_tag.provider.name >>/<< inputs.oci_tag.id >>
  EOT
}
`, ns, strategy)
		}
		entries := func(names ...string) knownvalue.Check {
			var out []knownvalue.Check
			for _, name := range names {
				out = append(out, knownvalue.ObjectExact(map[string]knownvalue.Check{
					"id": knownvalue.StringExact(ns + "_" + name + "__ConfigMap"), "v": knownvalue.StringExact("v1"),
					"adopted": knownvalue.Bool(false), "step": knownvalue.Null(),
				}))
			}
			return knownvalue.ListExact(out)
		}
		want := func(cms map[string][2]string) resource.TestCheckFunc {
			return func(*terraform.State) error {
				for name, w := range cms {
					if got := configMapData(t, ns, name, "id"); got != w[0] {
						return fmt.Errorf("%s: data.id = %q, want %q", name, got, w[0])
					}
					if got := configMapData(t, ns, name, "from"); got != "ResourceSet/git-tag/"+w[1] {
						return fmt.Errorf("%s: data.from = %q", name, got)
					}
				}
				return nil
			}
		}
		return resource.TestCase{
			CheckDestroy: func(*terraform.State) error {
				for _, name := range []string{"cm-a-0", "cm-a-1", "cm-b-0", "cm-b-1"} {
					if exists(t, "v1", "ConfigMap", ns, name) {
						return fmt.Errorf("ConfigMap %s/%s still exists", ns, name)
					}
				}
				return nil
			},
			Steps: []resource.TestStep{
				{
					Config:      config("Cartesian"),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(`input_strategy\.name:\s+must\s+be\s+"Flatten"\s+or\s+"Permute",\s+got\s+"Cartesian"`),
				},
				{
					Config: config("Permute"),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), entries("cm-a-0", "cm-a-1", "cm-b-0", "cm-b-1")),
					}},
					Check: want(map[string][2]string{
						"cm-a-0": {"2100103439", "o1"}, "cm-a-1": {"2100168976", "o2"},
						"cm-b-0": {"2101479696", "o1"}, "cm-b-1": {"2101545233", "o2"},
					}),
				},
				{
					// oci-tag exports one input: the permutations with its
					// second leave the set, and are pruned.
					PreConfig: func() {
						testenv.SetInputProvider(t, c, ns, "oci-tag", nil, map[string]any{"id": "o1", "n": "0"})
					},
					Config: config("Permute"),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(rs, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), entries("cm-a-0", "cm-b-0")),
					}},
					Check: resource.ComposeTestCheckFunc(
						want(map[string][2]string{"cm-a-0": {"2100103439", "o1"}, "cm-b-0": {"2101479696", "o1"}}),
						checkExists(t, false, "v1", "ConfigMap", ns, "cm-a-1"),
						checkExists(t, false, "v1", "ConfigMap", ns, "cm-b-1"),
					),
				},
			},
		}
	})
}
