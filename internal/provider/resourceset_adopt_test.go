package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/config"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// perCLI is a name unique to one run of a test under one CLI, for objects a
// test leaves in the cluster on purpose: accTestEach builds each CLI's case
// apart, so each run makes its own. It is a Terraform variable.
type perCLI string

func newPerCLI(prefix string) perCLI {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return perCLI(prefix + "-" + hex.EncodeToString(b))
}

func (p perCLI) String() string { return string(p) }

func (p perCLI) MarshalJSON() ([]byte, error) { return json.Marshal(p.String()) }

// lazyString checks a string against a value computed when the check runs.
type lazyString func() string

func (f lazyString) CheckValue(v any) error {
	if s, ok := v.(string); !ok || s != f() {
		return fmt.Errorf("expected %q, got %v", f(), v)
	}
	return nil
}

func (f lazyString) String() string { return f() }

func entryCheck(id func() string, adopted knownvalue.Check) knownvalue.Check {
	return knownvalue.ObjectExact(map[string]knownvalue.Check{
		"id": lazyString(id), "v": knownvalue.StringExact("v1"), "adopted": adopted, "step": knownvalue.Null(),
	})
}

// ownerLabelsOf returns the set an object's owner labels name, "" for none.
func ownerLabelsOf(t *testing.T, obj client.Object) string {
	t.Helper()
	if err := testClient(t).Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	l := obj.GetLabels()
	if l[resourceset.NameLabel] == "" && l[resourceset.NamespaceLabel] == "" {
		return ""
	}
	return l[resourceset.NamespaceLabel] + "/" + l[resourceset.NameLabel]
}

// The reported data loss: a Namespace holding a ConfigMap and a Secret exists
// before the set; the set's first apply fails on an invalid name after it
// applied the Namespace; the fixed configuration replaces the tainted set,
// whose destroy must not delete the Namespace it adopted. The plan shows the
// adoption: true for the Namespace, false for the ConfigMap the set creates,
// and unknown at the replace, where the Namespace carries the set's owner
// labels from the failed apply. An object that joins the set later is adopted
// too, and keeps its data when it leaves. Destroy keeps every adopted object,
// without the owner labels, and deletes what the set created.
func TestAccResourceSet_failedCreateKeepsAdoptedObjects(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) tfresource.TestCase {
		const rs = "stevedore_resourceset.adopt"
		ctx := context.Background()
		prefix := newPerCLI("ad")
		ns := func() string { return prefix.String() + "-team-g" }
		vars := config.Variables{"prefix": prefix}
		cfg := func(configMaps ...string) string {
			var cms string
			for _, name := range configMaps {
				cms += fmt.Sprintf(`
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = %q, namespace = "${var.prefix}-team-g" }, data = { managed = "yes" } },`, name)
			}
			return providerBlock("") + `
variable "prefix" { type = string }

resource "stevedore_resourceset" "adopt" {
  name      = "adopt"
  namespace = "default"
  resources = [
    { apiVersion = "v1", kind = "Namespace", metadata = { name = "${var.prefix}-team-g" } },` + cms + `
  ]
}
`
		}
		// failing adds a namespace the set creates, holding a ConfigMap whose
		// name has a typo. The plan's dry run cannot see the typo (the namespace
		// does not exist yet), so the apply fails after applying both
		// namespaces: a failed first apply that adopted team-g. (A typo in
		// team-g itself, which exists, is refused at plan, before anything.)
		failing := func() string {
			return strings.Replace(cfg(), `},
  ]`, `},
    { apiVersion = "v1", kind = "Namespace", metadata = { name = "${var.prefix}-team-g-new" } },
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "Bad_Name", namespace = "${var.prefix}-team-g-new" }, data = { managed = "yes" } },
  ]`, 1)
		}
		nsID := func() string { return "_" + ns() + "__Namespace" }
		cmID := func(name string) func() string { return func() string { return ns() + "_" + name + "__ConfigMap" } }
		namespace := func() *corev1.Namespace {
			o := &corev1.Namespace{}
			o.Name = ns()
			return o
		}
		inNamespace := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns(), Name: name} }
		configMap := func(name string) *corev1.ConfigMap { return &corev1.ConfigMap{ObjectMeta: inNamespace(name)} }
		// untouched checks that the objects made outside Terraform are there, with
		// their data and no owner labels.
		untouched := func() error {
			c := testClient(t)
			if o := ownerLabelsOf(t, namespace()); o != "" {
				return fmt.Errorf("Namespace %s has the owner labels of %s", ns(), o)
			}
			cm := configMap("precious")
			if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
				return fmt.Errorf("ConfigMap precious: %w", err)
			}
			if !maps.Equal(cm.Data, map[string]string{"keep": "me"}) {
				return fmt.Errorf("ConfigMap precious data %v", cm.Data)
			}
			sec := &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: "db-password"}, sec); err != nil {
				return fmt.Errorf("Secret db-password: %w", err)
			}
			return nil
		}

		// The adopted namespaces outlive the set on purpose.
		t.Cleanup(func() {
			for _, name := range []string{"-team-g", "-team-g-new"} {
				o := &corev1.Namespace{}
				o.Name = prefix.String() + name
				_ = client.IgnoreNotFound(testClient(t).Delete(ctx, o))
			}
		})
		return tfresource.TestCase{
			CheckDestroy: func(*terraform.State) error {
				if err := untouched(); err != nil {
					return fmt.Errorf("after destroy: %w", err)
				}
				if o := ownerLabelsOf(t, configMap("legacy")); o != "" {
					return fmt.Errorf("ConfigMap legacy has the owner labels of %s", o)
				}
				if exists(t, "v1", "ConfigMap", ns(), "settings") {
					return fmt.Errorf("the ConfigMap the set created survived destroy")
				}
				return nil
			},
			Steps: []tfresource.TestStep{
				{
					PreConfig: func() {
						c := testClient(t)
						for _, o := range []client.Object{
							namespace(),
							&corev1.ConfigMap{ObjectMeta: inNamespace("precious"), Data: map[string]string{"keep": "me"}},
							&corev1.Secret{ObjectMeta: inNamespace("db-password"), StringData: map[string]string{"password": "s3cret"}},
						} {
							if err := c.Create(ctx, o); err != nil {
								t.Fatal(err)
							}
						}
					},
					Config:          failing(),
					ConfigVariables: vars,
					ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(rs, plancheck.ResourceActionCreate),
						plancheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), knownvalue.ListExact([]knownvalue.Check{
							entryCheck(func() string { return "_" + ns() + "-new__Namespace" }, knownvalue.Bool(false)),
							entryCheck(nsID, knownvalue.Bool(true)),
							entryCheck(func() string { return ns() + "-new_Bad_Name__ConfigMap" }, knownvalue.Bool(false)),
						})),
					}},
					ExpectError: wrapped(`Resource set apply failed.*resourceset default/adopt: apply:.*Bad_Name`),
				},
				{
					Config:          cfg("settings"),
					ConfigVariables: vars,
					ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(rs, plancheck.ResourceActionDestroyBeforeCreate),
						plancheck.ExpectUnknownValue(rs, tfjsonpath.New("inventory").AtSliceIndex(0).AtMapKey("adopted")),
						plancheck.ExpectKnownValue(rs, tfjsonpath.New("inventory").AtSliceIndex(1).AtMapKey("adopted"), knownvalue.Bool(false)),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), knownvalue.ListExact([]knownvalue.Check{
							entryCheck(nsID, knownvalue.Bool(true)),
							entryCheck(cmID("settings"), knownvalue.Bool(false)),
						})),
					},
					Check: tfresource.ComposeTestCheckFunc(
						func(*terraform.State) error {
							if exists(t, "v1", "ConfigMap", ns(), "precious") && exists(t, "v1", "Secret", ns(), "db-password") {
								return nil
							}
							return fmt.Errorf("the replace deleted the objects in the adopted Namespace %s", ns())
						},
						func(*terraform.State) error {
							if o := ownerLabelsOf(t, namespace()); o != "default/adopt" {
								return fmt.Errorf("Namespace owner labels %q", o)
							}
							return nil
						},
					),
				},
				{
					// A ConfigMap made outside Terraform joins the set: adopted.
					PreConfig: func() {
						cm := configMap("legacy")
						cm.Data = map[string]string{"theirs": "keep"}
						if err := testClient(t).Create(ctx, cm); err != nil {
							t.Fatal(err)
						}
					},
					Config:          cfg("legacy", "settings"),
					ConfigVariables: vars,
					ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(rs, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), knownvalue.ListExact([]knownvalue.Check{
							entryCheck(nsID, knownvalue.Bool(true)),
							entryCheck(cmID("legacy"), knownvalue.Bool(true)),
							entryCheck(cmID("settings"), knownvalue.Bool(false)),
						})),
					}},
				},
				{
					// It leaves the set: prune keeps it and its data.
					Config:          cfg("settings"),
					ConfigVariables: vars,
					Check: func(*terraform.State) error {
						cm := configMap("legacy")
						if o := ownerLabelsOf(t, cm); o != "" {
							return fmt.Errorf("pruned adopted ConfigMap keeps the owner labels of %s", o)
						}
						if !maps.Equal(cm.Data, map[string]string{"theirs": "keep", "managed": "yes"}) {
							return fmt.Errorf("pruned adopted ConfigMap data %v", cm.Data)
						}
						return nil
					},
				},
			},
		}
	})
}

// A set refuses, at plan, an object another set owns, naming the owner; the
// owner's object stays as it was.
func TestAccResourceSet_refusesObjectOwnedByAnotherSet(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) tfresource.TestCase {
		// The ConfigMap lives in a namespace of this run's own, so that the
		// other CLI's run at the same time, or -count=2, meets its own.
		ns := uniqueNamespace(t, "owned")
		set := func(name, from string) string {
			return fmt.Sprintf(`
resource "stevedore_resourceset" %q {
  name      = %q
  namespace = %q
  resources = [{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "owned-shared" }, data = { from = %q } }]
}
`, name, name, ns, from)
		}
		a := providerBlock("") + set("own-a", "a")
		return tfresource.TestCase{
			CheckDestroy: func(*terraform.State) error {
				if exists(t, "v1", "ConfigMap", ns, "owned-shared") {
					return fmt.Errorf("ConfigMap owned-shared survived destroy")
				}
				return nil
			},
			Steps: []tfresource.TestStep{
				{Config: a},
				{
					Config:      a + set("own-b", "b"),
					ExpectError: wrapped(`resourceset ` + ns + `/own-b: resources: ConfigMap/` + ns + `/owned-shared is owned by stevedore_resourceset ` + ns + `/own-a \(owner [0-9a-f]{32}\); remove it from one of the sets`),
				},
				{
					Config: a,
					Check: func(*terraform.State) error {
						var cm corev1.ConfigMap
						if err := testClient(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "owned-shared"}, &cm); err != nil {
							return err
						}
						if cm.Data["from"] != "a" || cm.Labels[resourceset.NameLabel] != "own-a" {
							return fmt.Errorf("own-a's ConfigMap changed: data %v labels %v", cm.Data, cm.Labels)
						}
						return nil
					},
				},
			},
		}
	})
}

// State written before inventory entries had `adopted` upgrades with every
// entry not adopted, and the rest as it was.
func TestResourceSetUpgradeState_fromV0EntriesNotAdopted(t *testing.T) {
	ctx := context.Background()
	old := `{
  "id": "default/tenants", "name": "tenants", "namespace": "default",
  "inputs": null,
  "resources": {"value": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}],
                "type": ["tuple", [["object", {"apiVersion": "string", "kind": "string", "metadata": ["object", {"name": "string"}]}]]]},
  "resources_template": null, "wait": false, "timeout": "5m", "service_account_name": null, "force": false,
  "common_metadata": null, "dependencies": [],
  "inventory": [{"id": "_a__Namespace", "v": "v1"}],
  "manifests": "apiVersion: v1\n", "drift": [],
  "conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "Applied 1 objects"}]
}`
	r := &resourceSetResource{}
	up, ok := r.UpgradeState(ctx)[0]
	if !ok {
		t.Fatal("no upgrader from version 0")
	}
	var resp resource.UpgradeStateResponse
	up.StateUpgrader(ctx, resource.UpgradeStateRequest{RawState: &tfprotov6.RawState{JSON: []byte(old)}}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	v, err := resp.DynamicValue.Unmarshal(resourceSetSchema().Type().TerraformType(ctx))
	if err != nil {
		t.Fatalf("the upgraded state does not fit the schema: %v", err)
	}
	var attrs map[string]tftypes.Value
	if err := v.As(&attrs); err != nil {
		t.Fatal(err)
	}
	var entries []tftypes.Value
	if err := attrs["inventory"].As(&entries); err != nil || len(entries) != 1 {
		t.Fatalf("inventory %v, %v", attrs["inventory"], err)
	}
	var entry map[string]tftypes.Value
	if err := entries[0].As(&entry); err != nil {
		t.Fatal(err)
	}
	var id string
	var adopted bool
	if err := entry["id"].As(&id); err != nil || id != "_a__Namespace" {
		t.Fatalf("id %q, %v", id, err)
	}
	if err := entry["adopted"].As(&adopted); err != nil || !entry["adopted"].IsKnown() || entry["adopted"].IsNull() || adopted {
		t.Fatalf("adopted %v, %v", entry["adopted"], err)
	}
	var timeout string
	if err := attrs["timeout"].As(&timeout); err != nil || timeout != "5m" {
		t.Fatalf("timeout %q, %v", timeout, err)
	}
}
