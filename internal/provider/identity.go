package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// Resource identity (Terraform 1.12+, OpenTofu 1.12+): what an `import`
// block's `identity` names, set from the state on every create, read, update
// and import, so that a state written by any CLI, or before identities
// existed, gets one at its next refresh. CLIs before 1.12 neither send nor
// keep identities; the framework serves them as before.

var (
	_ resource.ResourceWithIdentity = (*helmReleaseResource)(nil)
	_ resource.ResourceWithIdentity = (*resourceSetResource)(nil)
)

// helmReleaseIdentity names a release as Helm locates it, and as
// hashicorp/helm 3.x names its helm_release: `namespace` is the namespace of
// Helm's release storage (the resource's `storage_namespace`, which is its
// `namespace` unless set otherwise), and `release_name` the release's name.
// The two name one release in the cluster, and each of them changes only
// with a replacement, so the identity never changes in place: the plan of
// an update keeps the prior identity (the framework's default).
//
// It has helm_release's attributes and no others, because OpenTofu (1.12)
// keeps the source's identity on a resource that a `moved` block brings over
// from another type and reads it with this schema: one attribute more and
// the move fails ("attribute ... is required").
type helmReleaseIdentity struct {
	Namespace   types.String `tfsdk:"namespace"`
	ReleaseName types.String `tfsdk:"release_name"`
}

// defaultIdentityNamespace is the namespace of an import block's identity
// that names none, as for helm_release.
const defaultIdentityNamespace = "default"

func (r *helmReleaseResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{
		Attributes: map[string]identityschema.Attribute{
			"namespace": identityschema.StringAttribute{
				OptionalForImport: true,
				Description: "The namespace of Helm's release storage: the resource's `storage_namespace`, which is its `namespace` " +
					"unless set otherwise. Default for import: `" + defaultIdentityNamespace + "`, as for helm_release.",
			},
			"release_name": identityschema.StringAttribute{
				RequiredForImport: true,
				Description:       "The Helm release name.",
			},
		},
	}
}

// setReleaseIdentity sets ident from m. It leaves ident as it is while any
// of its values is not known (a state that cannot tell yet).
func setReleaseIdentity(ctx context.Context, ident *tfsdk.ResourceIdentity, m *helmReleaseModel) diag.Diagnostics {
	if ident == nil || !knownText(m.StorageNamespace, m.ReleaseName) {
		return nil
	}
	return ident.Set(ctx, helmReleaseIdentity{Namespace: m.StorageNamespace, ReleaseName: m.ReleaseName})
}

// releaseImportIdentity reads an import block's identity into an import ID
// that names the release explicitly, with the resource's namespace that of
// the storage. The ID's name and target namespace are placeholders until
// importedFrom completes them from the release found.
func releaseImportIdentity(ctx context.Context, ident *tfsdk.ResourceIdentity) (release.ImportID, diag.Diagnostics) {
	var v helmReleaseIdentity
	diags := ident.Get(ctx, &v)
	if diags.HasError() {
		return release.ImportID{}, diags
	}
	ns := v.Namespace.ValueString()
	if ns == "" {
		ns = defaultIdentityNamespace
	}
	rel := v.ReleaseName.ValueString()
	// The extended ID's own checks (Kubernetes names, Helm's release name
	// limit) apply to the identity's values.
	id, err := release.ParseImportID(ns + "/" + rel + ",storage_namespace=" + ns + ",release_name=" + rel)
	if err != nil {
		diags.AddError("Invalid import identity", err.Error())
		return release.ImportID{}, diags
	}
	return id, diags
}

// importedFrom completes an ID read from an identity with the release found:
// the target namespace is where its objects are, when that is not the
// namespace, and the name is the release name, less the `<target_namespace>-`
// that Flux's rule puts before the name, so that a configuration translated
// from a HelmRelease (or from a helm_release) plans nothing. A release whose
// name Flux's rule does not give keeps it as `release_name`, which the
// configuration then sets.
func importedFrom(id release.ImportID, objectsNS string) release.ImportID {
	id.TargetNamespace, id.Name = "", id.ReleaseName
	if objectsNS != "" && objectsNS != id.Namespace {
		id.TargetNamespace = objectsNS
		if rest, ok := strings.CutPrefix(id.ReleaseName, objectsNS+"-"); ok && dnsSubdomain.MatchString(rest) {
			id.Name = rest
		}
	}
	return id
}

// resourceSetIdentity names a set as its import ID does: `namespace` and
// `name`, both of which replace the set when they change.
type resourceSetIdentity struct {
	Namespace types.String `tfsdk:"namespace"`
	Name      types.String `tfsdk:"name"`
}

func (r *resourceSetResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{
		Attributes: map[string]identityschema.Attribute{
			"namespace": identityschema.StringAttribute{RequiredForImport: true, Description: "The set's `namespace`."},
			"name":      identityschema.StringAttribute{RequiredForImport: true, Description: "The set's `name`."},
		},
	}
}

// setResourceSetIdentity sets ident from m, as setReleaseIdentity does.
func setResourceSetIdentity(ctx context.Context, ident *tfsdk.ResourceIdentity, m *resourceSetModel) diag.Diagnostics {
	if ident == nil || !knownText(m.Namespace, m.Name) {
		return nil
	}
	return ident.Set(ctx, resourceSetIdentity{Namespace: m.Namespace, Name: m.Name})
}

// resourceSetImportID is the import ID an import block's identity names.
func resourceSetImportID(ctx context.Context, ident *tfsdk.ResourceIdentity) (string, diag.Diagnostics) {
	var v resourceSetIdentity
	diags := ident.Get(ctx, &v)
	return v.Namespace.ValueString() + "/" + v.Name.ValueString(), diags
}

// knownText reports whether every value is known and not empty.
func knownText(vs ...types.String) bool {
	for _, v := range vs {
		if v.IsUnknown() || v.ValueString() == "" {
			return false
		}
	}
	return true
}
