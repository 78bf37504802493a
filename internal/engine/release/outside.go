package release

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// changedOutside explains a release in storage that this resource did not
// make, against cur, the latest release it made: which revision, by what
// (Helm's description), and at which keys its values differ from the values
// apply will give it back. Only keys are named: a value may be a secret.
//
// The release is named as its import ID names it, by storage namespace;
// chart is this configuration's chart, `name@version`, named when the
// release's differs.
func changedOutside(rls *helmrelease.Release, cur *Snapshot, values map[string]any, storageNS, chart string) string {
	if rls == nil || cur == nil {
		return ""
	}
	what := "changed by another client"
	switch {
	case GivenDescription(rls) != "":
		// The other client's own description (`helm upgrade --description`,
		// a helm_release's): quoted, as it may read like anything.
		what = fmt.Sprintf("described %q by another client", rls.Info.Description)
	case rls.Info != nil && rls.Info.Description != "":
		what = rls.Info.Description + ", by another client"
	}
	msg := fmt.Sprintf("release %s in storage namespace %s was changed outside stevedore: revision %d (%s), expected revision %d",
		rls.Name, storageNS, rls.Version, what, cur.Version)
	if rls.Chart != nil && rls.Chart.Metadata != nil {
		if got := rls.Chart.Metadata.Name + "@" + rls.Chart.Metadata.Version; got != chart {
			msg += fmt.Sprintf("; its chart is %s, not %s", got, chart)
		}
	}
	if keys := differingKeys(rls.Config, values); len(keys) > 0 {
		msg += "; its values differ at " + strings.Join(keys, ", ")
	}
	return msg + "; apply will upgrade it back to this configuration"
}

// differingKeys lists the dotted paths (Helm's --set form) at which a and b
// hold different values, sorted. Maps are walked; anything else is a leaf.
func differingKeys(a, b map[string]any) []string {
	var out []string
	var walk func(prefix string, x, y map[string]any)
	walk = func(prefix string, x, y map[string]any) {
		keys := map[string]bool{}
		for k := range x {
			keys[k] = true
		}
		for k := range y {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			xv, xok := x[k]
			yv, yok := y[k]
			xm, xIsMap := xv.(map[string]any)
			ym, yIsMap := yv.(map[string]any)
			switch {
			case xIsMap && yIsMap, xIsMap && !yok, yIsMap && !xok:
				walk(prefix+k+".", xm, ym)
			case xok != yok || !reflect.DeepEqual(xv, yv):
				out = append(out, prefix+k)
			}
		}
	}
	// As Helm stores values (JSON), so that an int and the float64 it is
	// read back as compare equal.
	walk("", normalizeValues(a), normalizeValues(b))
	return out
}
