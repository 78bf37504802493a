package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// identityServer is the provider's server configured against the test
// cluster, driven as a CLI drives it. Requests carry no identity, as those of
// the CLIs before Terraform 1.12 and OpenTofu 1.12 do, and as a state written
// before identities existed has none: each response must still carry one,
// or the framework fails the call ("Missing Resource Identity After ...").
type identityServer struct {
	t      *testing.T
	server tfprotov6.ProviderServer
	types  map[string]tftypes.Type // resource and identity types by name
}

func newIdentityServer(t *testing.T) *identityServer {
	t.Helper()
	env := testenv.Need(t)
	ctx := context.Background()
	server, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	ptyp := providerSchema().Type().TerraformType(ctx)
	pcfg, err := tfprotov6.NewDynamicValue(ptyp, valueOf(t, ptyp, map[string]any{
		"cache_dir":  t.TempDir(),
		"kubernetes": map[string]any{"config_path": env.Cluster.Kubeconfig},
	}))
	if err != nil {
		t.Fatal(err)
	}
	cresp, err := server.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{TerraformVersion: "1.5.7", Config: &pcfg})
	if err != nil || hasError(cresp.Diagnostics) {
		t.Fatalf("configure: %v %s", err, describe(cresp.Diagnostics))
	}
	s := &identityServer{t: t, server: server, types: map[string]tftypes.Type{
		"stevedore_helmrelease":  helmReleaseSchema().Type().TerraformType(ctx),
		"stevedore_resourceset":  resourceSetSchema().Type().TerraformType(ctx),
		"stevedore_helmrelease.": identityType("namespace", "release_name"),
		"stevedore_resourceset.": identityType("namespace", "name"),
	}}
	ids, err := server.GetResourceIdentitySchemas(ctx, &tfprotov6.GetResourceIdentitySchemasRequest{})
	if err != nil || hasError(ids.Diagnostics) {
		t.Fatalf("identity schemas: %v %s", err, describe(ids.Diagnostics))
	}
	for _, name := range []string{"stevedore_helmrelease", "stevedore_resourceset"} {
		if got := ids.IdentitySchemas[name].ValueType(); !got.Equal(s.types[name+"."]) {
			t.Fatalf("%s: identity type %s, want %s", name, got, s.types[name+"."])
		}
	}
	return s
}

func identityType(names ...string) tftypes.Type {
	attrs := map[string]tftypes.Type{}
	for _, n := range names {
		attrs[n] = tftypes.String
	}
	return tftypes.Object{AttributeTypes: attrs}
}

func (s *identityServer) value(typeName string, v map[string]any) *tfprotov6.DynamicValue {
	s.t.Helper()
	dv, err := tfprotov6.NewDynamicValue(s.types[typeName], valueOf(s.t, s.types[typeName], v))
	if err != nil {
		s.t.Fatal(err)
	}
	return &dv
}

// identity decodes id, failing unless it is there.
func (s *identityServer) identity(typeName, call string, id *tfprotov6.ResourceIdentityData) map[string]string {
	s.t.Helper()
	if id == nil || id.IdentityData == nil {
		s.t.Fatalf("%s returned no identity", call)
	}
	v, err := id.IdentityData.Unmarshal(s.types[typeName+"."])
	if err != nil {
		s.t.Fatal(err)
	}
	var attrs map[string]tftypes.Value
	if err := v.As(&attrs); err != nil {
		s.t.Fatalf("%s: identity %s: %v", call, v, err)
	}
	out := map[string]string{}
	for k, a := range attrs {
		var str string
		if err := a.As(&str); err != nil {
			s.t.Fatal(err)
		}
		out[k] = str
	}
	return out
}

func (s *identityServer) expectIdentity(typeName, call string, id *tfprotov6.ResourceIdentityData, want map[string]string) {
	s.t.Helper()
	got := s.identity(typeName, call, id)
	for k, w := range want {
		if got[k] != w {
			s.t.Errorf("%s: identity %v, want %v", call, got, want)
			return
		}
	}
}

// apply plans and applies config over prior (nil: a create), with no
// identity, as an older CLI does, and returns the new state.
func (s *identityServer) apply(typeName string, prior, config *tfprotov6.DynamicValue, want map[string]string) *tfprotov6.DynamicValue {
	s.t.Helper()
	ctx := context.Background()
	typ := s.types[typeName]
	proposed := config
	if prior == nil {
		null, _ := tfprotov6.NewDynamicValue(typ, tftypes.NewValue(typ, nil))
		prior = &null
	} else {
		proposed = s.proposed(typeName, prior, config)
	}
	plan, err := s.server.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{
		TypeName: typeName, PriorState: prior, ProposedNewState: proposed, Config: config,
	})
	if err != nil || hasError(plan.Diagnostics) {
		s.t.Fatalf("plan: %v %s", err, describe(plan.Diagnostics))
	}
	applied, err := s.server.ApplyResourceChange(ctx, &tfprotov6.ApplyResourceChangeRequest{
		TypeName: typeName, PriorState: prior, PlannedState: plan.PlannedState, Config: config, PlannedPrivate: plan.PlannedPrivate,
	})
	if err != nil || hasError(applied.Diagnostics) {
		s.t.Fatalf("apply: %v %s", err, describe(applied.Diagnostics))
	}
	s.expectIdentity(typeName, "apply", applied.NewIdentity, want)
	return applied.NewState
}

// destroy plans and applies the destruction of state.
func (s *identityServer) destroy(typeName string, state *tfprotov6.DynamicValue) {
	s.t.Helper()
	ctx := context.Background()
	typ := s.types[typeName]
	null, _ := tfprotov6.NewDynamicValue(typ, tftypes.NewValue(typ, nil))
	plan, err := s.server.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{
		TypeName: typeName, PriorState: state, ProposedNewState: &null, Config: &null,
	})
	if err != nil || hasError(plan.Diagnostics) {
		s.t.Fatalf("plan destroy: %v %s", err, describe(plan.Diagnostics))
	}
	applied, err := s.server.ApplyResourceChange(ctx, &tfprotov6.ApplyResourceChangeRequest{
		TypeName: typeName, PriorState: state, PlannedState: plan.PlannedState, Config: &null, PlannedPrivate: plan.PlannedPrivate,
	})
	if err != nil || hasError(applied.Diagnostics) {
		s.t.Fatalf("destroy: %v %s", err, describe(applied.Diagnostics))
	}
}

// proposed is what a CLI proposes for an update: the configuration, with
// the prior state's values where the configuration has none.
func (s *identityServer) proposed(typeName string, prior, config *tfprotov6.DynamicValue) *tfprotov6.DynamicValue {
	s.t.Helper()
	typ := s.types[typeName]
	pv, err := prior.Unmarshal(typ)
	if err != nil {
		s.t.Fatal(err)
	}
	cv, err := config.Unmarshal(typ)
	if err != nil {
		s.t.Fatal(err)
	}
	var p, c map[string]tftypes.Value
	if err := pv.As(&p); err != nil {
		s.t.Fatal(err)
	}
	if err := cv.As(&c); err != nil {
		s.t.Fatal(err)
	}
	for k, v := range c {
		if v.IsNull() {
			c[k] = p[k]
		}
	}
	dv, err := tfprotov6.NewDynamicValue(typ, tftypes.NewValue(typ, c))
	if err != nil {
		s.t.Fatal(err)
	}
	return &dv
}

// read refreshes state with no identity, and returns the new state.
func (s *identityServer) read(typeName string, state *tfprotov6.DynamicValue, want map[string]string) *tfprotov6.DynamicValue {
	s.t.Helper()
	resp, err := s.server.ReadResource(context.Background(), &tfprotov6.ReadResourceRequest{TypeName: typeName, CurrentState: state})
	if err != nil || hasError(resp.Diagnostics) {
		s.t.Fatalf("read: %v %s", err, describe(resp.Diagnostics))
	}
	s.expectIdentity(typeName, "read", resp.NewIdentity, want)
	return resp.NewState
}

// importRefused imports by identity, which must fail with an error whose
// detail says want.
func (s *identityServer) importRefused(typeName string, identity map[string]any, want string) {
	s.t.Helper()
	dv, err := tfprotov6.NewDynamicValue(s.types[typeName+"."], valueOf(s.t, s.types[typeName+"."], identity))
	if err != nil {
		s.t.Fatal(err)
	}
	resp, err := s.server.ImportResourceState(context.Background(), &tfprotov6.ImportResourceStateRequest{TypeName: typeName,
		Identity: &tfprotov6.ResourceIdentityData{IdentityData: &dv}})
	if err != nil || !hasError(resp.Diagnostics) || !strings.Contains(describe(resp.Diagnostics), want) {
		s.t.Fatalf("import by identity %v: %v %s, want an error that says %q", identity, err, describe(resp.Diagnostics), want)
	}
}

// importBy imports by ID, or by identity when id is empty, and checks the
// identity imported and the state's attrs.
func (s *identityServer) importBy(typeName, id string, identity map[string]any, want map[string]string, attrs map[string]string) {
	s.t.Helper()
	req := &tfprotov6.ImportResourceStateRequest{TypeName: typeName, ID: id}
	if id == "" {
		dv, err := tfprotov6.NewDynamicValue(s.types[typeName+"."], valueOf(s.t, s.types[typeName+"."], identity))
		if err != nil {
			s.t.Fatal(err)
		}
		req.Identity = &tfprotov6.ResourceIdentityData{IdentityData: &dv}
	}
	resp, err := s.server.ImportResourceState(context.Background(), req)
	if err != nil || hasError(resp.Diagnostics) || len(resp.ImportedResources) != 1 {
		s.t.Fatalf("import %q %v: %v %s", id, identity, err, describe(resp.Diagnostics))
	}
	imp := resp.ImportedResources[0]
	s.expectIdentity(typeName, "import "+id, imp.Identity, want)
	v, err := imp.State.Unmarshal(s.types[typeName])
	if err != nil {
		s.t.Fatal(err)
	}
	var got map[string]tftypes.Value
	if err := v.As(&got); err != nil {
		s.t.Fatal(err)
	}
	for k, w := range attrs {
		var str string
		if err := got[k].As(&str); err != nil || str != w {
			s.t.Errorf("import %q %v: %s = %s, want %q", id, identity, k, got[k], w)
		}
	}
}

// TestHelmReleaseIdentity_everyResponse: create, refresh, update and both
// imports of a release return its identity when the request carries none;
// a refresh that finds the release gone removes it from state without the
// framework's "Missing Resource Identity After Read".
func TestHelmReleaseIdentity_everyResponse(t *testing.T) {
	t.Parallel()
	s := newIdentityServer(t)
	const typ = "stevedore_helmrelease"
	fs, apps := uniqueNamespace(t, "flux-system"), uniqueNamespace(t, "apps")
	tgz, err := testenv.PackageChart(podinfoSrc(), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	config := func(timeout any) *tfprotov6.DynamicValue {
		return s.value(typ, map[string]any{
			"name": "podinfo", "namespace": fs, "target_namespace": apps, "timeout": timeout,
			"chart": map[string]any{"path": tgz, "digest": "sha256:" + hex.EncodeToString(sum[:])},
		})
	}
	rel := apps + "-podinfo"
	want := map[string]string{"namespace": fs, "release_name": rel}

	state := s.apply(typ, nil, config(nil), want)
	state = s.read(typ, state, want)
	state = s.apply(typ, state, config("4m"), want)
	s.importBy(typ, fs+"/podinfo@"+apps, nil, want, map[string]string{"name": "podinfo", "target_namespace": apps})
	// An identity refuses this instance's own release (it carries an owner
	// ID: ImportState's ownership check). One as a helm_release has it, of
	// a release Flux made: the target namespace is where the objects are,
	// and the name follows from the release name.
	s.importRefused(typ, map[string]any{"namespace": fs, "release_name": rel}, "stevedore does not take over a release")
	other, err := testenv.FluxInstall(testenv.Need(t).Cluster.Kubeconfig, fs, "other", apps, tgz, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.importBy(typ, "", map[string]any{"namespace": fs, "release_name": other}, map[string]string{"namespace": fs, "release_name": other},
		map[string]string{"name": "other", "target_namespace": apps, "release_name": other, "storage_namespace": fs})

	if err := testenv.HelmUninstall(testenv.Need(t).Cluster.Kubeconfig, fs, rel); err != nil {
		t.Fatal(err)
	}
	resp, err := s.server.ReadResource(context.Background(), &tfprotov6.ReadResourceRequest{TypeName: typ, CurrentState: state})
	if err != nil || hasError(resp.Diagnostics) {
		t.Fatalf("read of a release gone: %v %s", err, describe(resp.Diagnostics))
	}
	if v, err := resp.NewState.Unmarshal(s.types[typ]); err != nil || !v.IsNull() {
		t.Fatalf("read of a release gone: state %v (%v), want it removed", v, err)
	}
	s.expectIdentity(typ, "read of a release gone", resp.NewIdentity, want)
}

// TestResourceSetIdentity_everyResponse: create, refresh, update and both
// imports of a set return its identity when the request carries none.
func TestResourceSetIdentity_everyResponse(t *testing.T) {
	t.Parallel()
	s := newIdentityServer(t)
	const typ = "stevedore_resourceset"
	ns := uniqueNamespace(t, "rs-identity")
	config := func(value string) *tfprotov6.DynamicValue {
		v := s.value(typ, map[string]any{"name": "identity", "namespace": ns, "resources_template": `apiVersion: v1
kind: ConfigMap
metadata: {name: one}
data: {a: "` + value + `"}
`})
		return v
	}
	want := map[string]string{"namespace": ns, "name": "identity"}
	state := s.apply(typ, nil, config("b"), want)
	state = s.read(typ, state, want)
	state = s.apply(typ, state, config("c"), want)
	state = s.read(typ, state, want)
	s.importBy(typ, ns+"/identity", nil, want, want)
	s.importBy(typ, "", map[string]any{"namespace": ns, "name": "identity"}, want, want)
	s.destroy(typ, state)
	if exists(t, "v1", "ConfigMap", ns, "one") {
		t.Errorf("ConfigMap %s/one left after destroy", ns)
	}
}

// TestHelmReleaseIdentity_importedFrom: an identity's release, found with its
// objects in a namespace, is the resource whose names Flux's rules turn into
// that release where they can (the round trip through release.ReleaseName),
// and a resource named as the release, which then sets release_name, where
// they cannot.
func TestHelmReleaseIdentity_importedFrom(t *testing.T) {
	long := "release-name-with-very-long-name-which-is-longer-than-53-characters"
	for _, c := range []struct {
		ns, rel, objects, name, target string
		roundTrip                      bool
	}{
		{"apps", "podinfo", "apps", "podinfo", "", true},
		{"flux-system", "apps-podinfo", "apps", "podinfo", "apps", true},
		{"flux-system", "podinfo", "apps", "podinfo", "apps", false}, // hand-installed: release_name set
		{"flux-system", "apps-", "apps", "apps-", "apps", false},     // nothing after the prefix
		{"apps", "apps-podinfo", "apps", "apps-podinfo", "", true},   // no target namespace: no prefix to take
		{"apps", "release-name-with-very-long-name-which-i-788ca0d0d7b0", "apps", "release-name-with-very-long-name-which-i-788ca0d0d7b0", "", true},
	} {
		id := importedFrom(release.ImportID{Namespace: c.ns, Name: c.rel, ReleaseName: c.rel, StorageNamespace: c.ns}, c.objects)
		if id.Name != c.name || id.TargetNamespace != c.target || id.ReleaseName != c.rel || id.StorageNamespace != c.ns {
			t.Errorf("%s/%s in %s: %+v, want name %q, target %q", c.ns, c.rel, c.objects, id, c.name, c.target)
		}
		flux := release.ReleaseName(&release.Spec{Name: id.Name, Namespace: id.Namespace, TargetNamespace: id.TargetNamespace})
		if (flux == c.rel) != c.roundTrip {
			t.Errorf("%s/%s in %s: Flux's release name of %+v is %q", c.ns, c.rel, c.objects, id, flux)
		}
	}
	// The default release of a long name is shortened with a hash: the name
	// cannot be recovered, and the import names the resource as the release
	// (the last case). The configuration's long name gives the same release
	// name, so its plan changes name in place and replaces nothing.
	if got := release.ReleaseName(&release.Spec{Name: long}); got != "release-name-with-very-long-name-which-i-788ca0d0d7b0" {
		t.Fatalf("test vector: %s", got)
	}
}

// TestHelmReleaseIdentity_invalidIdentity: an import identity whose values
// are no Kubernetes or Helm names is refused before anything is read.
func TestHelmReleaseIdentity_invalidIdentity(t *testing.T) {
	ctx := context.Background()
	r := &helmReleaseResource{}
	identity := releaseIdentity(t)
	for _, v := range []map[string]any{
		{"namespace": "Apps", "release_name": "podinfo"},
		{"namespace": "apps", "release_name": "a-release-name-that-is-longer-than-helm-allows-53-chars"},
		{"namespace": "no/such", "release_name": "podinfo"},
	} {
		req := resource.ImportStateRequest{Identity: identity(v)}
		resp := &resource.ImportStateResponse{}
		r.ImportState(ctx, req, resp)
		if !resp.Diagnostics.HasError() || resp.Diagnostics[0].Summary() != "Invalid import identity" {
			t.Errorf("%v: diagnostics %v", v, resp.Diagnostics)
		}
	}
}

// TestHelmReleaseIdentity_importIdentityDefaultsNamespace: an import
// identity without namespace names a release stored in "default", as for
// helm_release, and the resource's namespace is where the release is stored.
func TestHelmReleaseIdentity_importIdentityDefaultsNamespace(t *testing.T) {
	ctx := context.Background()
	identity := releaseIdentity(t)
	for _, c := range []struct {
		identity map[string]any
		ns       string
	}{
		{map[string]any{"namespace": nil, "release_name": "podinfo"}, "default"},
		{map[string]any{"namespace": "apps", "release_name": "podinfo"}, "apps"},
	} {
		id, diags := releaseImportIdentity(ctx, identity(c.identity))
		if diags.HasError() {
			t.Fatalf("%v: %v", c.identity, diags)
		}
		if id.Namespace != c.ns || id.StorageNamespace != c.ns || id.ReleaseName != "podinfo" {
			t.Errorf("%v: import ID %+v, want namespace and storage namespace %s, release podinfo", c.identity, id, c.ns)
		}
	}
}

// releaseIdentity makes release identities of the values given.
func releaseIdentity(t *testing.T) func(map[string]any) *tfsdk.ResourceIdentity {
	ctx := context.Background()
	var resp resource.IdentitySchemaResponse
	(&helmReleaseResource{}).IdentitySchema(ctx, resource.IdentitySchemaRequest{}, &resp)
	typ := resp.IdentitySchema.Type().TerraformType(ctx)
	return func(v map[string]any) *tfsdk.ResourceIdentity {
		return &tfsdk.ResourceIdentity{Schema: resp.IdentitySchema, Raw: valueOf(t, typ, v)}
	}
}
