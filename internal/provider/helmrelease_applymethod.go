package provider

import (
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// planApplyMethod sets the planned `status.apply_method` of a plan whose
// apply installs or upgrades (the engine's Plan.ApplyMethod, unknown when
// the engine cannot promise it) and says, before apply, what the write
// will take: the objects whose client-side managed fields Helm moves to
// our server-side apply entry when the release moves to server-side apply,
// and the fields it forces away from other field managers. from is the
// state's method, "" on create.
func planApplyMethod(m *helmReleaseModel, from string, p *release.Plan, diags *diag.Diagnostics) {
	m.ApplyMethod = types.StringUnknown()
	if p.ApplyMethod != "" {
		m.ApplyMethod = types.StringValue(p.ApplyMethod)
	}
	id := m.ID.ValueString()
	pv := p.Preview
	if pv == nil || pv.Unknown != "" {
		return
	}
	if from == release.ApplyMethodCSA && p.ApplyMethod == release.ApplyMethodSSA {
		diags.AddWarning("Release moves to server-side apply",
			about(release.Kind, id, "the upgrade writes with server-side apply (status.apply_method csa -> ssa), as "+
				"upgrade.server_side_apply says; Helm moves the client-side managed fields of %s into the field manager's "+
				"server-side apply entry first. Later upgrades and rollbacks to this revision stay server-side (auto).",
				listOrNone(pv.Migrated, "no object (none has client-side fields of the field manager)")))
	}
	if len(pv.Conflicts) > 0 {
		actionWord := "upgrade"
		if from == "" {
			actionWord = "install"
		}
		diags.AddWarning("Apply takes fields from other field managers",
			about(release.Kind, id, "the "+actionWord+"'s server-side apply forces these fields, owned by other field managers, "+
				"to the chart's values (their changes are in `changes`): %s. Whoever else writes them (a controller, "+
				"kubectl) will see them changed back; set them through the chart's values, or leave them out of the chart.",
				conflictList(pv.Conflicts)))
	}
}

// conflictList names each field, its object and its manager, in one line.
func conflictList(cs []kube.FieldConflict) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s %s (manager %q)", c.ID, c.Field, c.Manager))
	}
	return strings.Join(parts, "; ")
}

func listOrNone(l []string, none string) string {
	if len(l) == 0 {
		return none
	}
	return strings.Join(l, ", ")
}

// warnForceUnderSSA says, at validate, that `force` adds nothing to an
// action that always writes server-side: conflicts are forced anyway, and
// Helm refuses to replace objects under server-side apply (helm-controller
// maps force the same way).
func warnForceUnderSSA(diags *diag.Diagnostics, spec *release.Spec) {
	for _, a := range []struct {
		block string
		force bool
		mode  string
	}{{"upgrade", spec.Upgrade.Force, spec.Upgrade.ServerSideApply}, {"rollback", spec.Rollback.Force, spec.Rollback.ServerSideApply}} {
		if a.force && a.mode == release.SSAEnabled {
			diags.AddAttributeWarning(path.Root(a.block).AtName("force"), "force has no effect under server-side apply",
				fmt.Sprintf("%s.server_side_apply is %q: the %s always forces field conflicts, and Helm does not replace objects "+
					"under server-side apply; force only replaces objects whose patch fails under client-side apply.", a.block, release.SSAEnabled, a.block))
		}
	}
}
