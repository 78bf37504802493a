package provider

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// TestAccHelmRelease_planShowsNoPhantomMetadataChanges: templates that render
// an empty `annotations:` or `labels:` key (a `range` over an empty map
// under it) or empty maps keep Helm's ownership label and annotations through
// an upgrade, and the plan of the upgrade shows only the changed data, as
// the upgrade does.
func TestAccHelmRelease_planShowsNoPhantomMetadataChanges(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-emptymeta")
		cacheDir := t.TempDir()
		chartDir := filepath.Join(t.TempDir(), "emptymeta")
		rangeNone := "\n    {{- range $k, $v := .Values.none }}\n    {{ $k }}: {{ $v | quote }}\n    {{- end }}\n"
		cm := func(name, meta string) string {
			return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-" + name + "\n" + meta +
				"data:\n  v: {{ .Values.v | quote }}\n"
		}
		testenv.WriteFiles(t, chartDir, map[string]string{
			"Chart.yaml":                      "apiVersion: v2\nname: emptymeta\nversion: 0.1.0\n",
			"values.yaml":                     "v: one\nnone: {}\n",
			"templates/null-annotations.yaml": cm("null-annotations", "  annotations:"+rangeNone),
			"templates/null-labels.yaml":      cm("null-labels", "  labels:"+rangeNone+"  annotations:"+rangeNone),
			"templates/empty.yaml":            cm("empty", "  labels: {}\n  annotations: {}\n"),
		})
		config := func(v string) string { return releaseConfig(cacheDir, chartDir, ns, `  values = { v = "`+v+`" }`) }
		upgraded := knownvalue.ListExact([]knownvalue.Check{
			change(ns+"_podinfo-empty__ConfigMap", "update", op("replace", "/data/v", `"one"`, `"two"`)),
			change(ns+"_podinfo-null-annotations__ConfigMap", "update", op("replace", "/data/v", `"one"`, `"two"`)),
			change(ns+"_podinfo-null-labels__ConfigMap", "update", op("replace", "/data/v", `"one"`, `"two"`)),
		})
		return resource.TestCase{
			Steps: []resource.TestStep{
				{Config: config("one")},
				{
					Config: config("two"),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("changes"), upgraded),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("changes"), upgraded),
					},
				},
			},
		}
	})
}
