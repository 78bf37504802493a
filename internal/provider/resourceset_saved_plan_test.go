package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestCLI_resourceSetSavedPlanAndWritesAfterIt: an apply leaves alone the
// objects nobody wrote since the plan's refresh found them in sync (their
// fingerprints, in the plan's private state), and looks again at every
// other one.
//   - A saved plan changes one object of a set; between the plan and its
//     apply, another manager labels a second one, which is not drift. The
//     apply changes the first, leaves the label, and the next plan is empty.
//   - A saved plan changes the first object again; between the plan and its
//     apply, another manager edits the second and deletes a third. The CLI's
//     plan at apply now shows more changes than the saved plan did, and the
//     CLI refuses the apply before the provider writes anything: nothing is
//     applied that was not planned. A new plan shows the three changes, its
//     apply makes them, and the next plan is empty.
func TestCLI_resourceSetSavedPlanAndWritesAfterIt(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ctx := context.Background()
		kc := testClient(t)
		ns := uniqueNamespace(t, "rs-saved-"+c.name)
		config := func(v string) string {
			return providerBlock("") + fmt.Sprintf(`
resource "stevedore_resourceset" "saved" {
  name      = "saved"
  namespace = %[1]q
  inputs    = [{ name = "changed", v = %[2]q }, { name = "edited", v = "1" }, { name = "deleted", v = "1" }]
  resources_template = <<-EOT
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: << inputs.name >>, namespace: %[1]s}
    data: {v: "<< inputs.v >>"}
  EOT
}
`, ns, v)
		}
		data := func(name string) (string, bool) {
			t.Helper()
			cm := &corev1.ConfigMap{}
			err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)
			if apierrors.IsNotFound(err) {
				return "", false
			}
			if err != nil {
				t.Fatal(err)
			}
			return cm.Data["v"], true
		}
		w := newWorkspace(t, c, config("1"))
		w.must("apply", "-auto-approve", "-input=false")
		w.planEmpty()
		editConfigMap := func(name string, edit func(*corev1.ConfigMap)) {
			t.Helper()
			cm := &corev1.ConfigMap{}
			if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
				t.Fatal(err)
			}
			edit(cm)
			if err := kc.Update(ctx, cm, client.FieldOwner("someone-else")); err != nil {
				t.Fatal(err)
			}
		}
		want := func(step string, values map[string]string) {
			t.Helper()
			for name, v := range values {
				got, ok := data(name)
				if v == "" && ok || v != "" && (!ok || got != v) {
					t.Fatalf("%s: ConfigMap %s: v=%q (exists %v), want %q (\"\" for gone)", step, name, got, ok, v)
				}
			}
		}

		w.write(config("2"))
		if out, code := w.run("plan", "-input=false", "-detailed-exitcode", "-out=change.tfplan"); code != 2 {
			t.Fatalf("plan of the change: exit %d, want 2\n%s", code, out)
		}
		editConfigMap("edited", func(cm *corev1.ConfigMap) { cm.Labels["example.com/team"] = "a" })
		w.must("apply", "-input=false", "change.tfplan")
		want("saved plan, a label added since", map[string]string{"changed": "2", "edited": "1", "deleted": "1"})
		labelled := &corev1.ConfigMap{}
		if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "edited"}, labelled); err != nil || labelled.Labels["example.com/team"] != "a" {
			t.Fatalf("another manager's label is gone after the apply: %v, %v", labelled.Labels, err)
		}
		w.planEmpty()

		w.write(config("3"))
		if out, code := w.run("plan", "-input=false", "-detailed-exitcode", "-out=change.tfplan"); code != 2 {
			t.Fatalf("plan of the change: exit %d, want 2\n%s", code, out)
		}
		editConfigMap("edited", func(cm *corev1.ConfigMap) { cm.Data["v"] = "by someone else" })
		deleted := &corev1.ConfigMap{}
		deleted.Namespace, deleted.Name = ns, "deleted"
		if err := kc.Delete(ctx, deleted); err != nil {
			t.Fatal(err)
		}
		out, code := w.run("apply", "-input=false", "change.tfplan")
		if code == 0 || !strings.Contains(out, "stevedore_resourceset.saved") {
			t.Fatalf("apply of a saved plan after writes it does not show: exit %d, want a refusal naming the set\n%s", code, out)
		}
		want("saved plan refused", map[string]string{"changed": "2", "edited": "by someone else", "deleted": ""})
		w.must("apply", "-auto-approve", "-input=false")
		want("new plan applied", map[string]string{"changed": "3", "edited": "1", "deleted": "1"})
		w.planEmpty()
	})
}
