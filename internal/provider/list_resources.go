package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	listschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// The list resources (Terraform 1.14+: `list` blocks in .tfquery.hcl files,
// `terraform query`) are the second face of the listings the data sources
// stevedore_helmreleases and stevedore_resourcesets are: the same filters
// (listFilterDocs), the same engine call (release.Engine.List,
// resourceset.Engine.List), and, with include_resource (which
// `terraform query -generate-config-out` sets), the resource as the import
// that the generated import block makes reads it (importRelease, importSet).
// OpenTofu has no list resources: its CLI never asks for them.

var (
	_ list.ListResourceWithConfigure = (*helmReleaseListResource)(nil)
	_ list.ListResourceWithConfigure = (*resourceSetListResource)(nil)
)

// NewHelmReleaseListResource is the stevedore_helmrelease list resource.
func NewHelmReleaseListResource() list.ListResource {
	return &helmReleaseListResource{listResource{typeName: "_helmrelease"}}
}

// NewResourceSetListResource is the stevedore_resourceset list resource.
func NewResourceSetListResource() list.ListResource {
	return &resourceSetListResource{listResource{typeName: "_resourceset"}}
}

// listResource is what the list resources share: their type name, the
// provider's data and the reading of their filters.
type listResource struct {
	typeName string
	data     *providerData
}

func (l *listResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + l.typeName
}

func (l *listResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	l.data = providerDataOf(req.ProviderData, &resp.Diagnostics)
}

// readConfig reads the filters of a list block's `config`, with the label
// selector parsed (validate refused a malformed one already).
func (l *listResource) readConfig(ctx context.Context, req list.ListRequest) (listFilterModel, labels.Selector, diag.Diagnostics) {
	var f listFilterModel
	diags := req.Config.Get(ctx, &f)
	if diags.HasError() {
		return f, nil, diags
	}
	if l.data == nil || l.data.unknown {
		diags.AddError("Provider not configured", "terraform query needs a known provider configuration")
		return f, nil, diags
	}
	sel, err := f.selector()
	if err != nil {
		diags.AddAttributeError(path.Root("label_selector"), "Invalid label selector", err.Error())
	}
	return f, sel, diags
}

// listSchema is a list resource's schema: the filters of d, described by desc.
func listSchema(desc string, d listFilterDocs) listschema.Schema {
	return listschema.Schema{Description: desc, Attributes: listResourceFilterAttributes(d)}
}

// helmReleaseListResource lists the Helm releases in the cluster as
// stevedore_helmrelease instances.
type helmReleaseListResource struct{ listResource }

func (l *helmReleaseListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = listSchema("The Helm releases in the cluster (every namespace's the provider may list, or one's), read from "+
		"Helm storage as the `stevedore_helmreleases` data source reads them: each with its identity (the storage namespace "+
		"and release name), a display name that says who made it (the helm CLI, Flux, stevedore) and its chart and version, "+
		"and, with `include_resource` (which `terraform query -generate-config-out` sets), the `stevedore_helmrelease` as "+
		"the import by that identity reads it. A release another `stevedore_helmrelease` instance owns is listed with a "+
		"warning: the import by identity refuses it. Terraform 1.14+; OpenTofu has no list resources (use the data source "+
		"with `for_each` there).", releaseFilterDocs)
}

func (l *helmReleaseListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	r := &helmReleaseResource{data: l.data}
	streamListed(ctx, l.listResource, req, stream, "Cannot list the Helm releases",
		func(f listFilterModel, sel labels.Selector) ([]release.Listed, error) {
			return l.data.releases.List(ctx, release.ListOptions{StorageNamespace: f.Namespace.ValueString(),
				Owner: f.Owner.ValueString(), Selector: sel, NamespaceMustExist: true})
		},
		func([]release.Listed) func(release.Listed) list.ListResult {
			return func(rel release.Listed) list.ListResult { return r.listResult(ctx, req, rel) }
		})
}

// streamListed is a list resource's List: it reads the filters, lists with
// them (an error ends the listing, summarized as summary), and streams the
// result that resultOf, given all that was listed, makes of each.
func streamListed[T any](ctx context.Context, l listResource, req list.ListRequest, stream *list.ListResultsStream, summary string,
	listWith func(listFilterModel, labels.Selector) ([]T, error), resultOf func([]T) func(T) list.ListResult) {
	f, sel, diags := l.readConfig(ctx, req)
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	got, err := listWith(f, sel)
	if err != nil {
		addError(&diags, summary, err)
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	result := resultOf(got)
	stream.Results = func(push func(list.ListResult) bool) {
		for _, item := range got {
			if !push(result(item)) {
				return
			}
		}
	}
}

// listResult is the result of the listed release rel: its identity, its
// display name, and with include_resource the state its import by identity
// reads (importRelease), whose warnings it carries. A release that import
// cannot read is listed with a warning that says why, not an error, which
// would end the listing of the others.
func (r *helmReleaseResource) listResult(ctx context.Context, req list.ListRequest, rel release.Listed) list.ListResult {
	res := req.NewListResult(ctx)
	res.DisplayName = releaseDisplayName(rel)
	ident := helmReleaseIdentity{Namespace: types.StringValue(rel.StorageNamespace), ReleaseName: types.StringValue(rel.Name)}
	if res.Diagnostics.Append(res.Identity.Set(ctx, ident)...); res.Diagnostics.HasError() {
		return res
	}
	if rel.OwnerID != "" {
		res.Diagnostics.AddWarning("Release owned by a stevedore_helmrelease",
			fmt.Sprintf("release %s in storage namespace %s is owned by a stevedore_helmrelease instance (owner %s%s): an import "+
				"block by its identity refuses it, so that another configuration's release is never taken; leave it to that "+
				"configuration, or, if it is this one's (an apply killed before it saved state), import it with the ID %q.",
				rel.Name, rel.StorageNamespace, rel.OwnerID, ownerNameText(rel.OwnerName), rel.ImportID.String()))
	}
	if !req.IncludeResource {
		return res
	}
	id, diags := releaseImportIdentity(ctx, res.Identity)
	if !diags.HasError() {
		var m helmReleaseModel
		m, _, _, diags = r.importRelease(ctx, id, "", true)
		if !diags.HasError() {
			diags.Append(setModel(ctx, res.Resource, &m)...)
		}
	}
	return withResource(res, diags, fmt.Sprintf("release %s in storage namespace %s", rel.Name, rel.StorageNamespace))
}

// withResource is res with the diagnostics of reading its resource, diags:
// their warnings, or, when it could not be read, no result but a warning
// that says why, so that one item does not end the listing (Terraform stops
// at a result's first error) nor generate a configuration block of nothing.
func withResource(res list.ListResult, diags diag.Diagnostics, what string) list.ListResult {
	if !diags.HasError() {
		res.Diagnostics.Append(diags...)
		return res
	}
	var out diag.Diagnostics
	for _, d := range diags {
		if d.Severity() == diag.SeverityError {
			out.AddWarning("Not listed: "+d.Summary(), fmt.Sprintf("%s is not listed, since it cannot be read as its import would read it: %s", what, d.Detail()))
			continue
		}
		out.Append(d)
	}
	return list.ListResult{Diagnostics: out}
}

// releaseDisplayName says which release rel is, its chart and version, and
// who made it.
func releaseDisplayName(rel release.Listed) string {
	who := rel.Owner
	switch {
	case rel.Owner == kube.TakeOverFlux && rel.OwnerName != "":
		who += " (HelmRelease " + rel.OwnerName + ")"
	case rel.Owner == kube.ListedStevedore && rel.OwnerName != "":
		who += " (stevedore_helmrelease " + rel.OwnerName + ")"
	}
	return fmt.Sprintf("%s/%s: chart %s %s, %s, made by %s", rel.StorageNamespace, rel.Name, rel.ChartName, rel.ChartVersion, rel.Status, who)
}

func ownerNameText(name string) string {
	if name == "" {
		return ""
	}
	return ", stevedore_helmrelease " + name
}

// resourceSetListResource lists the resource sets in the cluster as
// stevedore_resourceset instances.
type resourceSetListResource struct{ listResource }

func (l *resourceSetListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = listSchema("The resource sets in the cluster, `stevedore_resourceset`s and flux-operator ResourceSets, as the "+
		"`stevedore_resourcesets` data source lists them: each with its identity (namespace and name), a display name that "+
		"says who made it and how many objects it has, and, with `include_resource` (which `terraform query "+
		"-generate-config-out` sets), the `stevedore_resourceset` as the import by that identity reads it: a stevedore set's "+
		"`resources` as it applied them, a flux-operator ResourceSet's spec with `take_over_from = [\"flux-operator\"]`. A "+
		"Secret among them is named in a warning: its data is then in the generated file. Terraform 1.14+; OpenTofu has no "+
		"list resources (use the data source with `for_each` there).", setFilterDocs)
}

func (l *resourceSetListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	r := &resourceSetResource{data: l.data}
	streamListed(ctx, l.listResource, req, stream, "Cannot list the resource sets",
		func(f listFilterModel, sel labels.Selector) ([]resourceset.ListedSet, error) {
			return l.data.sets.List(ctx, resourceset.ListOptions{Namespace: f.Namespace.ValueString(),
				Owner: f.Owner.ValueString(), Selector: sel, NamespaceMustExist: true})
		},
		func(got []resourceset.ListedSet) func(resourceset.ListedSet) list.ListResult {
			stevedore := map[string]bool{}
			for _, s := range got {
				if s.Owner == kube.ListedStevedore {
					stevedore[s.Namespace+"/"+s.Name] = true
				}
			}
			return func(s resourceset.ListedSet) list.ListResult {
				switch {
				case !s.Importable:
					// Objects whose labels name no namespace or no name:
					// nothing to identify.
					return list.ListResult{Diagnostics: warning("Resource set not listed", fmt.Sprintf(
						"%d object(s) carry the labels of a stevedore set with no namespace or no name (%q/%q): no import names them",
						s.Objects, s.Namespace, s.Name))}
				case s.Owner == kube.TakeOverFluxOperator && stevedore[s.Namespace+"/"+s.Name]:
					// Its identity would name the stevedore set (importSet).
					return list.ListResult{Diagnostics: warning("Resource set not listed", fmt.Sprintf(
						"flux-operator ResourceSet %s/%s has the namespace and name of a stevedore set, which its identity names: "+
							"import it by the ID %q", s.Namespace, s.Name, resourceset.ImportIDOf(s)))}
				default:
					return r.listResult(ctx, req, s)
				}
			}
		})
}

// listResult is the result of the listed set s, as the release's is.
func (r *resourceSetResource) listResult(ctx context.Context, req list.ListRequest, s resourceset.ListedSet) list.ListResult {
	res := req.NewListResult(ctx)
	res.DisplayName = setDisplayName(s)
	ident := resourceSetIdentity{Namespace: types.StringValue(s.Namespace), Name: types.StringValue(s.Name)}
	if res.Diagnostics.Append(res.Identity.Set(ctx, ident)...); res.Diagnostics.HasError() {
		return res
	}
	if !req.IncludeResource {
		return res
	}
	m, _, diags := r.importSet(ctx, s.Namespace+"/"+s.Name, true)
	if !diags.HasError() {
		diags.Append(res.Resource.Set(ctx, &m)...)
		for _, secret := range secretsOf(m) {
			diags.AddWarning("Secret data in the generated configuration", fmt.Sprintf(
				"Secret %s of resource set %s/%s is written with its data into the configuration that `terraform query "+
					"-generate-config-out` writes (the file named by that option), in plain text: do not commit it as it "+
					"is; move the data to a sensitive variable or a source outside the file first.", secret, s.Namespace, s.Name))
		}
	}
	return withResource(res, diags, fmt.Sprintf("resource set %s/%s", s.Namespace, s.Name))
}

// setDisplayName says which set s is, who made it and how many objects it has.
func setDisplayName(s resourceset.ListedSet) string {
	who := s.Owner
	if len(s.OwnerIDs) > 0 {
		who += " (owner " + strings.Join(s.OwnerIDs, ", ") + ")"
	}
	return fmt.Sprintf("%s/%s: %d object(s), made by %s", s.Namespace, s.Name, s.Objects, who)
}

// secretsOf are the `<namespace>/<name>` of the Secrets among m's resources
// and its steps' resources.
func secretsOf(m resourceSetModel) []string {
	var objs []map[string]any
	if o, err := goObjects(m.Resources, "resources"); err == nil {
		objs = append(objs, o...)
	}
	if steps, err := goObjects(m.Steps, "steps"); err == nil {
		for _, st := range steps {
			if rs, ok := st["resources"].([]any); ok {
				for _, o := range rs {
					if om, ok := o.(map[string]any); ok {
						objs = append(objs, om)
					}
				}
			}
		}
	}
	var out []string
	for _, o := range objs {
		if o["kind"] != "Secret" {
			continue
		}
		md, _ := o["metadata"].(map[string]any)
		ns, _ := md["namespace"].(string)
		name, _ := md["name"].(string)
		if ns == "" {
			ns = m.Namespace.ValueString()
		}
		out = append(out, ns+"/"+name)
	}
	return out
}

// warning is one warning diagnostic.
func warning(summary, detail string) diag.Diagnostics {
	var d diag.Diagnostics
	d.AddWarning(summary, detail)
	return d
}
