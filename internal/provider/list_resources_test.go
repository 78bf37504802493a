package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// TestListResources_schema: the provider serves the list resources
// stevedore_helmrelease and stevedore_resourceset, each with the filters of
// its data source (namespace, owner, label_selector, all optional), by the
// resources they list (which have identities), through NewServer as main.go
// serves it.
func TestListResources_schema(t *testing.T) {
	ctx := context.Background()
	server := NewServer("test")()
	resp, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || hasError(resp.Diagnostics) {
		t.Fatalf("GetProviderSchema: %v %s", err, describe(resp.Diagnostics))
	}
	ids, err := server.GetResourceIdentitySchemas(ctx, &tfprotov6.GetResourceIdentitySchemasRequest{})
	if err != nil || hasError(ids.Diagnostics) {
		t.Fatalf("GetResourceIdentitySchemas: %v %s", err, describe(ids.Diagnostics))
	}
	for _, name := range []string{"stevedore_helmrelease", "stevedore_resourceset"} {
		s, ok := resp.ListResourceSchemas[name]
		if !ok {
			t.Fatalf("no list resource %s: %v", name, resp.ListResourceSchemas)
		}
		if _, ok := resp.ResourceSchemas[name]; !ok {
			t.Errorf("list resource %s lists no resource of its name", name)
		}
		if _, ok := ids.IdentitySchemas[name]; !ok {
			t.Errorf("resource %s has no identity, which a list result needs", name)
		}
		var got []string
		for _, a := range s.Block.Attributes {
			if !a.Optional || a.Required || a.Computed {
				t.Errorf("%s: attribute %s is not optional only", name, a.Name)
			}
			if a.Description == "" {
				t.Errorf("%s: attribute %s has no description", name, a.Name)
			}
			got = append(got, a.Name)
		}
		if strings.Join(got, ",") != "label_selector,namespace,owner" {
			t.Errorf("%s: attributes %v, want label_selector, namespace, owner", name, got)
		}
		if !strings.Contains(s.Block.Description, "terraform query") {
			t.Errorf("%s: description does not say it is for terraform query: %q", name, s.Block.Description)
		}
	}
}

// TestListResources_validate: an unknown owner and a malformed label
// selector are errors of ValidateListResourceConfig (which Terraform sends
// before it lists), naming the attribute; good filters and no filter pass.
// The provider need not be configured: validation reads no cluster.
func TestListResources_validate(t *testing.T) {
	ctx := context.Background()
	server := NewServer("test")().(interface {
		ValidateListResourceConfig(context.Context, *tfprotov6.ValidateListResourceConfigRequest) (*tfprotov6.ValidateListResourceConfigResponse, error)
	})
	obj := tftypes.Object{AttributeTypes: map[string]tftypes.Type{
		"namespace": tftypes.String, "owner": tftypes.String, "label_selector": tftypes.String}}
	config := func(vals map[string]string) *tfprotov6.DynamicValue {
		attrs := map[string]tftypes.Value{}
		for k := range obj.AttributeTypes {
			attrs[k] = tftypes.NewValue(tftypes.String, nil)
			if v, ok := vals[k]; ok {
				attrs[k] = tftypes.NewValue(tftypes.String, v)
			}
		}
		dv, err := tfprotov6.NewDynamicValue(obj, tftypes.NewValue(obj, attrs))
		if err != nil {
			t.Fatal(err)
		}
		return &dv
	}
	for _, tc := range []struct {
		typ       string
		vals      map[string]string
		attr      string // "" when valid
		summary   string
		detailHas string
	}{
		{"stevedore_helmrelease", nil, "", "", ""},
		{"stevedore_helmrelease", map[string]string{"namespace": "apps", "owner": "flux", "label_selector": "name in (a,b),!x"}, "", "", ""},
		{"stevedore_helmrelease", map[string]string{"owner": "hashicorp"}, "owner", "Invalid Attribute Value Match", `value must be one of`},
		{"stevedore_helmrelease", map[string]string{"label_selector": "app in (a"}, "label_selector", "Invalid label selector", "is not a Kubernetes label selector"},
		{"stevedore_helmrelease", map[string]string{"namespace": ""}, "namespace", "Invalid Attribute Value Length", "at least 1"},
		{"stevedore_resourceset", map[string]string{"owner": "flux-operator"}, "", "", ""},
		{"stevedore_resourceset", map[string]string{"owner": "helm"}, "owner", "Invalid Attribute Value Match", `value must be one of`},
		{"stevedore_resourceset", map[string]string{"label_selector": "=x"}, "label_selector", "Invalid label selector", "is not a Kubernetes label selector"},
	} {
		resp, err := server.ValidateListResourceConfig(ctx, &tfprotov6.ValidateListResourceConfigRequest{TypeName: tc.typ, Config: config(tc.vals)})
		if err != nil {
			t.Fatal(err)
		}
		if tc.attr == "" {
			if len(resp.Diagnostics) != 0 {
				t.Errorf("%s %v: want no diagnostic, got %s", tc.typ, tc.vals, describe(resp.Diagnostics))
			}
			continue
		}
		if len(resp.Diagnostics) != 1 {
			t.Fatalf("%s %v: want one error, got %s", tc.typ, tc.vals, describe(resp.Diagnostics))
		}
		d := resp.Diagnostics[0]
		if d.Severity != tfprotov6.DiagnosticSeverityError || d.Summary != tc.summary || !strings.Contains(d.Detail, tc.detailHas) ||
			d.Attribute == nil || d.Attribute.String() != tftypes.NewAttributePath().WithAttributeName(tc.attr).String() {
			t.Errorf("%s %v: got %s at %v, want %q naming %s", tc.typ, tc.vals, describe(resp.Diagnostics), d.Attribute, tc.summary, tc.attr)
		}
	}
}

// TestReleaseDisplayName: a release's display name says where it is, its
// chart and version, its status, and who made it (with the HelmRelease or
// stevedore_helmrelease its objects name).
func TestReleaseDisplayName(t *testing.T) {
	for _, tc := range []struct {
		l    release.Listed
		want string
	}{
		{release.Listed{Name: "web", StorageNamespace: "apps", ChartName: "podinfo", ChartVersion: "6.5.3", Status: "deployed", Owner: "helm"},
			"apps/web: chart podinfo 6.5.3, deployed, made by helm"},
		{release.Listed{Name: "apps-web", StorageNamespace: "flux-system", ChartName: "podinfo", ChartVersion: "1.1.0", Status: "failed",
			Owner: "flux", OwnerName: "flux-system/web"},
			"flux-system/apps-web: chart podinfo 1.1.0, failed, made by flux (HelmRelease flux-system/web)"},
		{release.Listed{Name: "web", StorageNamespace: "apps", ChartName: "podinfo", ChartVersion: "1.0.0", Status: "deployed",
			Owner: "stevedore", OwnerName: "apps/web", OwnerID: "abc"},
			"apps/web: chart podinfo 1.0.0, deployed, made by stevedore (stevedore_helmrelease apps/web)"},
	} {
		if got := releaseDisplayName(tc.l); got != tc.want {
			t.Errorf("releaseDisplayName(%+v) = %q, want %q", tc.l, got, tc.want)
		}
	}
}

// TestSetDisplayName: a set's display name says where it is, how many
// objects it has, and who made it, with a stevedore set's owner IDs.
func TestSetDisplayName(t *testing.T) {
	for _, tc := range []struct {
		s    resourceset.ListedSet
		want string
	}{
		{resourceset.ListedSet{Namespace: "apps", Name: "web", Owner: "stevedore", OwnerIDs: []string{"a", "b"}, Objects: 3},
			"apps/web: 3 object(s), made by stevedore (owner a, b)"},
		{resourceset.ListedSet{Namespace: "t", Name: "tenants", Owner: "flux-operator", Objects: 1},
			"t/tenants: 1 object(s), made by flux-operator"},
	} {
		if got := setDisplayName(tc.s); got != tc.want {
			t.Errorf("setDisplayName(%+v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

// TestSecretsOf: the Secrets among a set's resources and its steps'
// resources, in the set's namespace unless they name theirs; nothing else.
func TestSecretsOf(t *testing.T) {
	dyn := func(v []any) types.Dynamic {
		d, err := dynamicList(v)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	m := resourceSetModel{Namespace: types.StringValue("apps"),
		Resources: dyn([]any{
			map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "a"}},
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "b"}},
		}),
		Steps: dyn([]any{map[string]any{"name": "s", "resources": []any{
			map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "c", "namespace": "other"}},
		}}}),
	}
	if got := strings.Join(secretsOf(m), ","); got != "apps/a,other/c" {
		t.Errorf("secretsOf = %q, want apps/a,other/c", got)
	}
	if got := secretsOf(resourceSetModel{Resources: types.DynamicNull(), Steps: types.DynamicNull()}); len(got) != 0 {
		t.Errorf("secretsOf of no resources = %v", got)
	}
}
